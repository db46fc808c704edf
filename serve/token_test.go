package serve_test

import (
	"path/filepath"
	"testing"

	"github.com/orca-agent/orca/serve"
)

// The sign-in form names where the token is: the variable when it is set,
// else the file in the configuration folder — wherever XDG_CONFIG_HOME
// puts it — with the home folder written ~.
func TestTokenHint(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	none := func(string) string { return "" }
	if got := serve.TokenHint(filepath.Join(home, "cfg"), none); got != "~/cfg/orca/serve-token" {
		t.Errorf("hint %q", got)
	}
	elsewhere := t.TempDir()
	if got := serve.TokenHint(elsewhere, none); got != filepath.Join(elsewhere, "orca", "serve-token") {
		t.Errorf("hint %q", got)
	}
	set := func(k string) string {
		if k == serve.TokenEnv {
			return "0123456789abcdef0123"
		}
		return ""
	}
	if got := serve.TokenHint(elsewhere, set); got != "$ORCA_SERVE_TOKEN" {
		t.Errorf("hint %q", got)
	}
}
