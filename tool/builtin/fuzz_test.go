package builtin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

// FuzzFileTools calls Read, Write, Edit, Glob, Grep and TodoWrite with
// what a model may send — any strings and numbers in their fields — over
// a small workspace: each call is a result or an error observation, and
// none panics (the registry would turn a panic into an error; the test
// fails on one), nor writes outside the workspace.
func FuzzFileTools(f *testing.F) {
	for _, s := range []struct {
		tool        uint8
		a, b, c     string
		n, m        int
		flag, flag2 bool
	}{
		{0, "a.txt", "", "", 0, 0, false, false}, {0, "a.txt", "", "", 2, 1, false, false}, {0, "../x", "", "", -1, -5, false, false},
		{1, "new/n.txt", "hello\n", "", 0, 0, false, false}, {1, "/etc/x", "x", "", 0, 0, false, false},
		{2, "a.txt", "two", "2", 0, 0, true, false}, {2, "a.txt", "", "x", 0, 0, false, false}, {2, "a.txt", "line", "line", 0, 0, false, false},
		{3, "**/*.go", "", "", 0, 0, false, false}, {3, "{a,b}[", "sub", "", 0, 0, false, false}, {3, "[!]]*", ".", "", 0, 0, false, false},
		{4, "fo+", "", "*.txt", 2, 3, true, true}, {4, "(?i)ÜBER", "sub", "", 0, 0, false, false}, {4, "[", "", "", 0, 0, false, false},
		{4, `\bline\b`, "a.txt", "**/*", -1, 100, true, false}, {4, "a|b|c|", "", "{", 1, 0, false, true},
		{5, "do it", "in_progress", "", 0, 0, false, false},
	} {
		f.Add(s.tool, s.a, s.b, s.c, s.n, s.m, s.flag, s.flag2)
	}
	dir := f.TempDir()
	outside := f.TempDir()
	fsys, err := workspace.OpenLocal(dir)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { fsys.Close() })
	reg := newRegistry(f, fsys) // Bash among them, but not called
	reset := func(t *testing.T) {
		for rel, content := range map[string]string{"a.txt": "one\ntwo\nline two\n", "sub/b.go": "package b // über foo\n", "sub/c.txt": "fooo\x00bin"} {
			p := filepath.Join(dir, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		os.Symlink(outside, filepath.Join(dir, "out")) // a link out, as a cloned repository may hold
	}
	f.Fuzz(func(t *testing.T, which uint8, a, b, c string, n, m int, flag, flag2 bool) {
		reset(t)
		var name string
		var in map[string]any
		switch which % 6 {
		case 0:
			name, in = "Read", map[string]any{"file_path": a, "offset": n, "limit": m}
		case 1:
			name, in = "Write", map[string]any{"file_path": a, "content": b}
		case 2:
			name, in = "Edit", map[string]any{"file_path": a, "old_string": b, "new_string": c, "replace_all": flag}
		case 3:
			name, in = "Glob", map[string]any{"pattern": a, "path": b}
		case 4:
			modes := []string{"content", "files_with_matches", "count", "bogus"}
			name, in = "Grep", map[string]any{"pattern": a, "path": b, "glob": c, "-i": flag, "-n": flag2, "-A": n, "-B": m, "output_mode": modes[uint(n)%4], "head_limit": m, "multiline": flag2}
		case 5:
			name, in = "TodoWrite", map[string]any{"todos": []map[string]any{{"content": a, "status": b, "activeForm": c}}}
		}
		raw, err := json.Marshal(in)
		if err != nil {
			return
		}
		r := reg.Call(context.Background(), &tool.Call{ID: "c1", Name: name, Input: raw, Scope: scope.Scope{RuntimeID: "rt", SessionID: "s", TurnID: "t"}})
		if strings.Contains(r.Content, "failed: panic:") {
			t.Fatalf("%s %s: %s", name, raw, r.Content)
		}
		if entries, _ := os.ReadDir(outside); len(entries) != 0 {
			t.Fatalf("%s %s wrote outside the workspace: %v", name, raw, entries)
		}
	})
}
