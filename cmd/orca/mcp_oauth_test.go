package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/mcp/mcptest"
)

// A remote MCP server behind OAuth, through the CLI: orca mcp list says
// it needs a sign-in; orca mcp login signs in (the authorization code
// flow, through $BROWSER: a browser that clicks "Allow") and keeps the
// sign-in in a file of the user's alone; a run then calls its tool, the
// tokens refreshed as they expire; no token is anywhere else — not in the
// workspace (its store included), not in what orca printed, not in the
// session's timeline; orca mcp logout forgets the sign-in.
func TestMCPSignInThroughTheCLI(t *testing.T) {
	srv := mcptest.NewOAuthServer(mcptest.Options{})
	t.Cleanup(srv.Close)
	srv.TokenLifetime = 5 * time.Second // under oauth2's margin: every use refreshes
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("BROWSER", exe)
	t.Setenv(asBrowser, "1")
	o := options{configDir: t.TempDir(), getenv: noEnv}
	writeFileAt(t, o.configDir, "orca/settings.json", `{"mcpServers": {"secure": {"type": "http", "url": "`+srv.URL+`"}}}`)
	ws := t.TempDir()
	var printed strings.Builder
	run := func(stdin string, args ...string) (string, string, int) {
		stdout, stderr, code := orcaWith(t, t.Context(), o, stdin, args...)
		printed.WriteString(stdout + stderr)
		return stdout, stderr, code
	}

	stdout, _, code := run("", "mcp", "list", "-w", ws)
	if code != exitTurn || !strings.Contains(stdout, "! secure (http): needs login: MCP server secure asks for authorization: sign in with orca mcp login secure") {
		t.Fatalf("before signing in: exit %d\n%s", code, stdout)
	}
	stdout, stderr, code := run("", "mcp", "login", "-w", ws, "secure")
	if code != 0 || !strings.Contains(stdout, "Signed in to secure: ") || !strings.Contains(stderr, "To sign in to secure, open:") {
		t.Fatalf("login: exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := filepath.Join(o.configDir, "orca", "mcp-auth")
	files, _ := filepath.Glob(filepath.Join(dir, "secure-*.json"))
	if len(files) != 1 {
		t.Fatalf("sign-in files: %v", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v %v", files[0], fi.Mode(), err)
	}

	refreshes := srv.Refreshes()
	// The agent's tools do not read the sign-ins: its commands see an
	// empty folder there (the path hidden from the rules, as a command
	// may build it), Read is refused.
	half := len(dir) / 2
	peek, _ := json.Marshal(map[string]any{"command": fmt.Sprintf("d=%q%q; ls -A \"$d\"; cat \"$d\"/*.json; echo done", dir[:half], dir[half:])})
	read, _ := json.Marshal(map[string]any{"file_path": files[0]})
	script := writeScript(t, `{"tool_calls": [{"name": "mcp__secure__echo", "input": {"text": "through OAuth"}}]}`,
		`{"tool_calls": [{"name": "Bash", "input": `+string(peek)+`}, {"name": "Read", "input": `+string(read)+`}]}`, `{"text": "It echoed."}`)
	stdout, stderr, code = run("", "run", "--script", script, "-w", ws, "--allow", "mcp__secure__echo", "--allow", "Bash", "--allow", "Read", "--json", "echo it")
	if code != 0 || !strings.Contains(stdout, "through OAuth") || !strings.Contains(stdout, "done") || strings.Contains(stdout, "access_token") ||
		strings.Contains(stdout, `"output":"`+filepath.Base(files[0])) || !strings.Contains(stdout, "secrets no tool of the agent reads or writes") {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if srv.Refreshes() == refreshes {
		t.Errorf("the expired token was not refreshed")
	}
	id := lastEvent(t, stdout).str("session_id")
	run("", "timeline", "-w", ws, "--session", id)
	run("", "timeline", "-w", ws, "--session", id, "--json")
	run("", "sessions", "show", "-w", ws, id, "--json")

	// The tokens are in the sign-in file, and nowhere else.
	kept, _ := os.ReadFile(files[0])
	issued := srv.Issued()
	if !strings.Contains(string(kept), issued[len(issued)-1]) {
		t.Errorf("the last token issued is not the one kept")
	}
	elsewhere := map[string]string{"what orca printed": printed.String()}
	filepath.WalkDir(ws, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(path)
			elsewhere[path] = string(b)
		}
		return nil
	})
	filepath.WalkDir(o.configDir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Dir(path) != dir {
			b, _ := os.ReadFile(path)
			elsewhere[path] = string(b)
		}
		return nil
	})
	for where, text := range elsewhere {
		for _, tok := range issued {
			if strings.Contains(text, tok) {
				t.Errorf("a token is in %s", where)
			}
		}
	}

	stdout, _, code = run("", "mcp", "logout", "secure")
	if code != 0 || stdout != "Forgot the sign-in to secure.\n" {
		t.Errorf("logout: exit %d\n%s", code, stdout)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(files) != 0 {
		t.Errorf("after logout: %v", files)
	}
	if stdout, _, code = run("", "mcp", "list", "-w", ws); code != exitTurn || !strings.Contains(stdout, "needs login") {
		t.Errorf("after logout: exit %d\n%s", code, stdout)
	}
}

// orca mcp login of a server that asks for no authorization says so,
// rather than that it signed in, and keeps nothing.
func TestMCPLoginNeedNot(t *testing.T) {
	h := mcptest.NewStreamableHandler(mcptest.Faults{}, mcptest.Options{})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); srv.Close() })
	o := options{configDir: t.TempDir(), getenv: noEnv}
	writeFileAt(t, o.configDir, "orca/settings.json", `{"mcpServers": {"open": {"type": "http", "url": "`+srv.URL+`"}}}`)
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "mcp", "login", "-w", t.TempDir(), "open")
	if code != 0 || !strings.HasPrefix(stdout, "open asks for no sign-in: it is up, with ") || strings.Contains(stderr, "To sign in") {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if files, _ := filepath.Glob(filepath.Join(o.configDir, "orca", "mcp-auth", "*")); len(files) != 0 {
		t.Errorf("kept: %v", files)
	}
}
