package memory_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orca-agent/orca/memory"
	"github.com/orca-agent/orca/workspace"
)

func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The files come in their order, the closest to the work last; Claude
// Code's only when asked for; a rule with paths is a PathRule, not a file.
func TestRead(t *testing.T) {
	root, user, claude := t.TempDir(), t.TempDir(), t.TempDir()
	write(t, claude, "CLAUDE.md", "user claude")
	write(t, user, "orca/ORCA.md", "user orca")
	write(t, root, "AGENTS.md", "agents")
	write(t, root, "CLAUDE.md", "project claude")
	write(t, root, ".claude/rules/go.md", "---\npaths: \"**/*.go\"\n---\ngo rule")
	write(t, root, ".orca/ORCA.md", "project orca @notes.md")
	write(t, root, ".orca/notes.md", "imported")
	for _, claudeToo := range []bool{true, false} {
		files, rules, warns := memory.Read(memory.Folders{Root: root, ConfigDir: user, ClaudeDir: claude, Claude: claudeToo})
		var paths []string
		for _, f := range files {
			paths = append(paths, f.Path)
		}
		want := []string{filepath.Join(claude, "CLAUDE.md"), filepath.Join(user, "orca", "ORCA.md"), "AGENTS.md", "CLAUDE.md", ".orca/ORCA.md"}
		wantRules := 1
		if !claudeToo {
			want, wantRules = []string{filepath.Join(user, "orca", "ORCA.md"), "AGENTS.md", ".orca/ORCA.md"}, 0
		}
		if !slices.Equal(paths, want) || len(rules) != wantRules || len(warns) != 0 {
			t.Errorf("claude %v: files %v, rules %+v, warnings %v", claudeToo, paths, rules, warns)
		}
		if last := files[len(files)-1]; !strings.Contains(last.Text, "imported") {
			t.Errorf("the import was not read: %q", last.Text)
		}
		prompt := memory.SystemPrompt("base", "", files)
		if !strings.HasPrefix(prompt, "base\n\n# Memory files") || !strings.Contains(prompt, `<memory file=".orca/ORCA.md"`) {
			t.Errorf("prompt: %q", prompt)
		}
	}
}

// A subfolder's memory file and a matching rule are added once per
// execution, for the paths a call works on in the workspace; a path
// outside it adds nothing.
func TestNested(t *testing.T) {
	root := t.TempDir()
	write(t, root, "pkg/sub/AGENTS.md", "sub instructions")
	write(t, root, "pkg/sub/a.go", "package sub")
	fs, err := workspace.OpenLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	nm := memory.NewNested([]string{"AGENTS.md"}, []memory.PathRule{{File: ".claude/rules/go.md", Paths: []string{"**/*.go"}, Text: "go rule"}})
	first := nm.For(fs, "exec-1", []string{"pkg/sub/a.go"})
	if !strings.Contains(first, "sub instructions") || !strings.Contains(first, "go rule") {
		t.Errorf("first call added %q", first)
	}
	if again := nm.For(fs, "exec-1", []string{filepath.Join(root, "pkg/sub/a.go")}); again != "" {
		t.Errorf("the same execution got them again: %q", again)
	}
	if other := nm.For(fs, "exec-2", []string{"pkg/sub/a.go"}); other != first {
		t.Errorf("another execution got %q", other)
	}
	if outside := nm.For(fs, "exec-3", []string{filepath.Join(filepath.Dir(root), "x.go")}); outside != "" {
		t.Errorf("a path outside the workspace added %q", outside)
	}
	if memory.NewNested(nil, nil) != nil || (*memory.Nested)(nil).For(fs, "k", []string{"a"}) != "" {
		t.Error("a loader of nothing loads something")
	}
}
