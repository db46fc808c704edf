package builtin_test

import (
	"context"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/tool/builtin"
	"github.com/orca-agent/orca/tool/tooltest"
	"github.com/orca-agent/orca/web"
	"github.com/orca-agent/orca/workspace"
)

// Every built-in tool keeps the tool contract (tooltest), with the calls
// a model makes of it, over a workspace of a few files.
func TestConformance(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"a.txt":       "alpha\nbeta\ngamma\n",
		"e.txt":       "one foo, two foo\n",
		"src/main.go": "package main\n\nfunc main() {}\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fsys, err := workspace.OpenLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	root := fsys.Root()

	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" || r.URL.Query().Get("q") == "hang" {
			<-r.Context().Done()
			return
		}
		if r.URL.Path == "/search" {
			w.Write([]byte(`{"results": [{"title": "A page", "url": "https://a.example/", "content": "about a"}]}`))
			return
		}
		w.Write([]byte("<p>a page</p>"))
	}))
	t.Cleanup(site.Close)

	tools := map[string]tool.Tool{}
	env := tool.Env{RuntimeID: "rt", FS: fsys, Logger: slog.New(slog.DiscardHandler)}
	for _, p := range []tool.Provider{builtin.FilesProvider(), builtin.ShellProvider(), builtin.TodoProvider(), builtin.WebProvider(builtin.WebOptions{Search: &web.SearXNG{URL: site.URL}})} {
		ts, err := p.Tools(env)
		if err != nil {
			t.Fatalf("provider %s: %v", p.Name(), err)
		}
		for _, tl := range ts {
			tools[tl.Name()] = tl
		}
	}

	reads := func(paths ...string) *tool.Access { return &tool.Access{Reads: paths} }
	writes := func(paths ...string) *tool.Access { return &tool.Access{Writes: paths} }
	summary := func(s string) *tool.Display { return &tool.Display{Summary: s} }
	cases := map[string]tooltest.Case{
		"Read": {
			Inputs: []tooltest.Input{
				{JSON: `{"file_path": "a.txt"}`, Access: reads("a.txt"), Display: summary("a.txt")},
				{JSON: `{"file_path": "a.txt", "offset": 2, "limit": 1}`, Access: reads("a.txt"), Display: summary("a.txt from line 2 (1 line)")},
				{JSON: `{"file_path": "` + filepath.Join(root, "src", "main.go") + `"}`, Access: reads(filepath.Join(root, "src", "main.go"))},
				{JSON: `{"file_path": "missing.txt"}`},
			},
			Invalid: []string{`{}`, `{"file_path": 3}`, `{"file_path": "a.txt", "limit": 0}`, `{"file_path": "a.txt", "offset": -1}`, `{"file_path": "a.txt", "lines": 3}`},
		},
		"Write": {
			Inputs: []tooltest.Input{
				{JSON: `{"file_path": "out/new.txt", "content": "new\n"}`, Access: writes("out/new.txt"), Display: summary("out/new.txt")},
				{JSON: `{"file_path": "empty.txt", "content": ""}`},
			},
			Invalid: []string{`{"file_path": "x.txt"}`, `{"content": "x"}`, `{"file_path": "x.txt", "content": 1}`},
		},
		"Edit": {
			Inputs: []tooltest.Input{
				{JSON: `{"file_path": "e.txt", "old_string": "one", "new_string": "1"}`, Access: writes("e.txt"), Display: summary("e.txt")},
				{JSON: `{"file_path": "e.txt", "old_string": "foo", "new_string": "bar", "replace_all": true}`, Display: summary("e.txt (all occurrences)")},
			},
			Invalid: []string{`{"file_path": "e.txt", "old_string": "a"}`, `{"file_path": "e.txt", "old_string": "a", "new_string": "b", "replace_all": "yes"}`},
		},
		"Glob": {
			Inputs: []tooltest.Input{
				{JSON: `{"pattern": "**/*.go"}`, Access: reads("."), Display: summary("**/*.go")},
				{JSON: `{"pattern": "*.go", "path": "src"}`, Access: reads("src"), Display: summary("*.go in src")},
			},
			Invalid: []string{`{}`, `{"pattern": ["*.go"]}`, `{"pattern": "*", "depth": 2}`},
		},
		"Grep": {
			Inputs: []tooltest.Input{
				{JSON: `{"pattern": "beta"}`, Access: reads("."), Display: summary(`"beta"`)},
				{JSON: `{"pattern": "func \\w+", "path": "src", "glob": "*.go", "output_mode": "content", "-n": true, "-C": 1}`, Access: reads("src"), Display: summary(`"func \w+" in src (*.go)`)},
				{JSON: `{"pattern": "ALPHA", "-i": true, "output_mode": "count"}`},
			},
			Invalid: []string{`{}`, `{"pattern": "x", "output_mode": "lines"}`, `{"pattern": "x", "-C": -1}`},
		},
		"Bash": {
			Inputs: []tooltest.Input{
				{JSON: `{"command": "echo hi", "description": "Say hi"}`, Access: &tool.Access{Command: "echo hi"}, Display: summary("echo hi")},
				{JSON: `{"command": "cat a.txt |\n  wc -l", "timeout": 10000}`, Access: &tool.Access{Command: "cat a.txt |\n  wc -l"}, Display: summary("cat a.txt | …")},
				{JSON: `{"command": "exit 3"}`},
				{JSON: `{"command": "sleep 60", "run_in_background": true, "description": "Wait a minute"}`},
			},
			Invalid:  []string{`{}`, `{"command": "ls", "timeout": -1}`, `{"command": "ls", "run_in_background": "yes"}`, `{"command": "ls", "cwd": "/"}`},
			Blocking: `{"command": "sleep 60"}`,
		},
		"TodoWrite": {
			Inputs: []tooltest.Input{
				{JSON: `{"todos": [{"content": "Read the code", "status": "completed", "activeForm": "Reading the code"}, {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"}]}`,
					Display: &tool.Display{Detail: "☒ Read the code\n◐ Fix the bug\n"}},
				{JSON: `{"todos": []}`},
			},
			Invalid: []string{`{}`, `{"todos": [{"content": "x", "status": "later", "activeForm": "x"}]}`, `{"todos": [{"content": "", "status": "pending", "activeForm": "x"}]}`},
		},
		"WebFetch": {
			Inputs: []tooltest.Input{
				{JSON: `{"url": "` + site.URL + `/a"}`, Display: summary(site.URL + "/a")},
				{JSON: `{"url": "` + site.URL + `/b", "prompt": "What is it?\nSay it."}`, Display: summary(site.URL + `/b (asking: What is it?\nSay it.)`)},
				{JSON: `{"url": "http://169.254.169.254/latest/meta-data/"}`},
			},
			Invalid:  []string{`{}`, `{"url": 1}`, `{"url": "https://example.com", "timeout": 3}`},
			Blocking: `{"url": "` + site.URL + `/hang"}`,
			Context: func(ctx context.Context) context.Context {
				return tool.WithPermitter(ctx, &permitter{hosts: []string{"127.0.0.1"}})
			},
		},
		"WebSearch": {
			Inputs: []tooltest.Input{
				{JSON: `{"query": "a page"}`, Display: summary(`"a page"`)},
				{JSON: `{"query": "a page", "allowed_domains": ["a.example"], "blocked_domains": ["b.example"]}`, Display: summary(`"a page" on a.example not on b.example`)},
			},
			Invalid:  []string{`{}`, `{"query": "x"}`, `{"query": "go", "allowed_domains": "a.example"}`},
			Blocking: `{"query": "hang"}`,
		},
	}
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		tl := tools[name]
		c, ok := cases[name]
		if !ok {
			t.Errorf("no conformance case for the built-in tool %s", name)
			continue
		}
		t.Run(name, func(t *testing.T) { tooltest.Run(t, tl, c) })
	}
	for name := range cases {
		if tools[name] == nil {
			t.Errorf("a conformance case for %s, which is no built-in tool", name)
		}
	}
}
