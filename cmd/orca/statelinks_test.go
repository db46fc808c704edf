package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A workspace whose state folder, or a file or folder in it, is a link
// out of the workspace (a cloned repository's .orca -> ~/x) is refused,
// with an error naming the link, and nothing is written where it leads.
// A link inside the workspace is followed.
func TestStateLinksOutAreRefused(t *testing.T) {
	t.Parallel()
	answer := writeScript(t, `{"text": "done"}`)
	o := options{configDir: t.TempDir(), getenv: noEnv}
	// setup makes a workspace and a folder outside it, and links name
	// (in the workspace) to the folder, or to target in it.
	setup := func(t *testing.T, name, target string) (ws, elsewhere string) {
		ws, elsewhere = t.TempDir(), t.TempDir()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(elsewhere, target), filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
		return ws, elsewhere
	}
	untouched := func(t *testing.T, elsewhere string) {
		t.Helper()
		if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Errorf("orca wrote where the link leads: %v", names)
		}
	}
	for _, tc := range []struct {
		name, link, target string
		args               []string
		says               string
	}{
		{"the state folder", ".orca", "", []string{"run", "--script", answer, "--json", "hi"}, `cannot open the session store: path is outside the workspace: ".orca" leads out through a symlink`},
		{"the store's WAL file", ".orca/orca.db-wal", "wal", []string{"run", "--script", answer, "--json", "hi"}, `".orca/orca.db-wal" leads out through a symlink`},
		{"the timelines' folder", ".orca/runs", "", []string{"run", "--script", answer, "--timeline", "--json", "hi"}, `".orca/runs" leads out through a symlink`},
		{"the checkpoints' folder", ".orca/rewind", "", []string{"run", "--script", answer, "--json", "hi"}, `cannot keep checkpoints: path is outside the workspace: ".orca/rewind" leads out through a symlink`},
		{"the checkpoints' folder, rewinding", ".orca/rewind", "", []string{"rewind", "--session", "s1"}, `".orca/rewind" leads out through a symlink`},
		{"the project MCP file", ".mcp.json", "mcp.json", []string{"mcp", "add", "--scope", "project", "files", "--", "cat"}, `".mcp.json" leads out through a symlink`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, elsewhere := setup(t, tc.link, tc.target)
			_, stderr, code := orcaWith(t, t.Context(), o, "", append(tc.args[:1:1], append([]string{"-w", ws}, tc.args[1:]...)...)...)
			if code == 0 || !strings.Contains(stderr, tc.says) || !strings.Contains(stderr, elsewhere) {
				t.Errorf("exit %d, stderr:\n%s\nwant a failure saying %s, to %s", code, stderr, tc.says, elsewhere)
			}
			untouched(t, elsewhere)
		})
	}

	t.Run("the transcripts hooks read", func(t *testing.T) {
		ws, elsewhere := setup(t, ".orca/transcripts", "")
		hooks := `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}`
		if err := os.MkdirAll(filepath.Join(ws, ".claude"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, ".claude", "settings.json"), []byte(hooks), 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := orcaWith(t, t.Context(), o, "", "run", "-w", ws, "--trust", "--script", answer, "--json", "hi")
		if code == 0 || !strings.Contains(stderr, `".orca/transcripts" leads out through a symlink, to `+elsewhere) {
			t.Errorf("exit %d, stderr:\n%s", code, stderr)
		}
		untouched(t, elsewhere)
	})

	t.Run("a link inside the workspace", func(t *testing.T) {
		ws := t.TempDir()
		if err := os.MkdirAll(filepath.Join(ws, "state", "orca"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("state", "orca"), filepath.Join(ws, ".orca")); err != nil {
			t.Fatal(err)
		}
		if _, stderr, code := orcaWith(t, t.Context(), o, "", "run", "-w", ws, "--script", answer, "--json", "hi"); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		for _, f := range []string{"orca.db", "workspace-id", ".gitignore"} {
			if _, err := os.Lstat(filepath.Join(ws, "state", "orca", f)); err != nil {
				t.Errorf("not kept where the link inside leads: %v", err)
			}
		}
		out, stderr, code := orcaWith(t, t.Context(), o, "", "sessions", "-w", ws, "--json")
		if code != 0 || !strings.Contains(out, `"turns": 1`) {
			t.Errorf("orca sessions: exit %d, %s%s", code, out, stderr)
		}
	})
}
