package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// No command hook may leave a goroutine behind, timed out or not.
func TestMain(m *testing.M) {
	// No Claude Code folder but the tests' own.
	os.Setenv("CLAUDE_CONFIG_DIR", "/nonexistent/orca-tests/claude")
	goleak.VerifyTestMain(m)
}

// writeFile writes content to dir/rel, creating folders, and returns the
// path.
func writeFile(t *testing.T, dir, rel, content string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
