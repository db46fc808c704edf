package app

import (
	"strings"
	"testing"
)

// The apiKeyHelper runs in the folder given, and its output is the key; a
// helper that fails is an error with its exit status and the end of what
// it wrote on standard error, cut to the last 500 bytes.
func TestKeyHelperRuns(t *testing.T) {
	dir := t.TempDir()
	key, err := keyHelper(`printf 'sk-%s\n' "$(basename "$PWD")"`, dir)(t.Context())
	if want := "sk-" + dir[strings.LastIndex(dir, "/")+1:] + "\n"; err != nil || key != want {
		t.Errorf("key %q, %v; want %q", key, err, want)
	}
	_, err = keyHelper(`echo 'vault: permission denied' >&2; exit 3`, dir)(t.Context())
	if err == nil || !strings.Contains(err.Error(), "exit status 3: vault: permission denied") {
		t.Errorf("a failing helper: %v", err)
	}
	_, err = keyHelper(`head -c 2000 /dev/zero | tr '\0' x >&2; echo ' the end' >&2; exit 1`, dir)(t.Context())
	msg := err.Error()
	_, tail, cut := strings.Cut(msg, "exit status 1: …")
	if !cut || !strings.HasSuffix(tail, "x the end") || len(tail) > 500 {
		t.Errorf("a helper with a long stderr: %.160s… (its stderr's part: %d bytes)", msg, len(tail))
	}
}
