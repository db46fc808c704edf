package lsp

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/sandbox"
	"github.com/orca-agent/orca/workspace"
)

// ServersEnv names the folder whose bin/ holds real language servers —
// gopls, typescript-language-server, pyright-langserver — for the tests
// that run them (.ci/run installs them); without it they skip.
const ServersEnv = "ORCA_LANGUAGE_SERVERS"

// realServers returns the Known servers found in $ORCA_LANGUAGE_SERVERS/bin.
func realServers(t *testing.T) []Server {
	t.Helper()
	dir := os.Getenv(ServersEnv)
	if dir == "" {
		t.Skip(ServersEnv + " names no folder of language servers")
	}
	servers := Detected(func(name string) (string, error) {
		p := filepath.Join(dir, "bin", name)
		_, err := os.Stat(p)
		return p, err
	})
	var names []string
	for _, s := range servers {
		names = append(names, s.Name)
	}
	if strings.Join(names, " ") != "gopls typescript-language-server pyright" {
		t.Fatalf("%s/bin has %v, want gopls, typescript-language-server and pyright", dir, names)
	}
	return servers
}

// sandboxed returns the runner of the workspace's commands, as app makes
// it: the OS sandbox, the workspace and its cache writable.
func sandboxed(t *testing.T, root string) *sandbox.Runner {
	if err := sandbox.Available(); err != nil {
		t.Logf("no OS sandbox here (%v): the servers run without it", err)
		return &sandbox.Runner{Disabled: true}
	}
	cache := sandbox.WorkspaceCache(root)
	r := &sandbox.Runner{Policy: sandbox.WorkspacePolicy(root, ""), Env: sandbox.CacheEnv(nil, cache)}
	r.Policy.Writable = append(r.Policy.Writable, cache)
	return r
}

// TestRealServers: gopls, typescript-language-server and pyright, in the
// OS sandbox, report an edit that breaks their language with their own
// diagnostic, find a definition's file and line, and the references, the
// hover and the symbols of a file.
func TestRealServers(t *testing.T) {
	servers := realServers(t)
	cases := []struct {
		lang, def, use, broken, want string
		defLine, useLine, useCol     int
		hover                        string
	}{
		{lang: "go",
			def:    "package main\n\n// greet says hello.\nfunc greet(name string) string { return \"hi \" + name }\n",
			use:    "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(greet(\"you\"))\n}\n",
			broken: "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(greet(42))\n}\n",
			want:   "main.go:6:20: error: cannot use 42 (untyped int constant) as string value in argument to greet",
			// greet's name on line 6 of main.go, defined on line 4.
			defLine: 4, useLine: 6, useCol: 14, hover: "func greet(name string) string"},
		{lang: "ts",
			def:     "// greet says hello.\nexport function greet(name: string): string {\n  return 'hi ' + name\n}\n",
			use:     "import { greet } from './greet'\n\nconsole.log(greet('you'))\n",
			broken:  "import { greet } from './greet'\n\nconsole.log(greet(42))\n",
			want:    "main.ts:3:19: error: Argument of type 'number' is not assignable to parameter of type 'string'. [typescript 2345]",
			defLine: 2, useLine: 3, useCol: 13, hover: "greet(name: string): string"},
		{lang: "py",
			def:     "def greet(name: str) -> str:\n    \"\"\"Says hello.\"\"\"\n    return 'hi ' + name\n",
			use:     "from greet import greet\n\nprint(greet('you'))\n",
			broken:  "from greet import greet\n\nprint(greet(42))\n",
			want:    `main.py:3:13: error: Argument of type "Literal[42]" cannot be assigned to parameter "name" of type "str" in function "greet"`,
			defLine: 1, useLine: 3, useCol: 7, hover: "def greet(name: str) -> str"},
	}
	for _, c := range cases {
		t.Run(c.lang, func(t *testing.T) {
			root := t.TempDir()
			files := map[string]string{"greet." + c.lang: c.def, "main." + c.lang: c.use}
			if c.lang == "go" {
				files["go.mod"] = "module example.com/hello\n\ngo 1.22\n"
			}
			for name, text := range files {
				if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			fsys, err := workspace.OpenLocal(root)
			if err != nil {
				t.Fatal(err)
			}
			defer fsys.Close()
			s, err := New(servers, Options{FS: fsys, Runner: sandboxed(t, root), Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			main := "main." + c.lang

			if rep := s.Changed(ctx, []string{main}); len(rep.Diagnostics) != 0 || len(rep.Notes) != 0 {
				t.Errorf("the working code: %+v", rep)
			}
			if err := fsys.WriteFile(main, []byte(c.broken), 0o644); err != nil {
				t.Fatal(err)
			}
			rep := s.Changed(ctx, []string{main})
			if len(rep.Diagnostics) == 0 || !strings.Contains(rep.Diagnostics[0].String(), c.want) {
				t.Errorf("after the breaking edit: %+v\nwant %s", rep, c.want)
			}
			if !strings.Contains(rep.String(), c.want) {
				t.Errorf("the observation's block: %q", rep.String())
			}
			if err := fsys.WriteFile(main, []byte(c.use), 0o644); err != nil {
				t.Fatal(err)
			}
			if rep := s.Changed(ctx, []string{main}); !rep.Empty() {
				t.Errorf("fixed: %+v", rep)
			}

			locs, err := s.Definition(ctx, main, c.useLine, c.useCol)
			if err != nil || len(locs) == 0 || locs[0].Path != "greet."+c.lang || locs[0].Line != c.defLine {
				t.Errorf("definition: %v, %v; want greet.%s:%d", locs, err, c.lang, c.defLine)
			}
			refs, err := s.References(ctx, "greet."+c.lang, c.defLine, strings.Index(strings.Split(c.def, "\n")[c.defLine-1], "greet")+1)
			found := false
			for _, r := range refs {
				found = found || r.Path == main && r.Line == c.useLine
			}
			if err != nil || !found {
				t.Errorf("references: %v, %v; want %s:%d among them", refs, err, main, c.useLine)
			}
			h, err := s.Hover(ctx, main, c.useLine, c.useCol)
			if err != nil || !strings.Contains(h, c.hover) {
				t.Errorf("hover: %q, %v", h, err)
			}
			wsyms, err := s.WorkspaceSymbols(ctx, main, "greet")
			if err != nil || len(wsyms) == 0 || wsyms[0].Path != "greet."+c.lang || wsyms[0].Line != c.defLine {
				t.Errorf("workspace symbols: %+v, %v", wsyms, err)
			}
			syms, err := s.DocumentSymbols(ctx, "greet."+c.lang)
			if err != nil || len(syms) == 0 || syms[0].Name != "greet" || syms[0].Line != c.defLine {
				t.Errorf("symbols: %+v, %v", syms, err)
			}
		})
	}
}

// TestKilledServerIsANote: a server killed between two changes makes the
// second a note of the report, and is started again after its backoff.
func TestKilledServerIsANote(t *testing.T) {
	servers := realServers(t)
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/k\n\ngo 1.22\n"), 0o644)
	os.WriteFile(filepath.Join(root, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	fsys, err := workspace.OpenLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	s, err := New(servers[:1], Options{FS: fsys, Runner: sandboxed(t, root), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	s.Changed(ctx, []string{"main.go"})
	if !s.Running() {
		t.Fatal("gopls is not running")
	}
	srv := s.servers[0]
	srv.mu.Lock()
	c := srv.c
	srv.mu.Unlock()
	c.stop() // as a kill -9 from outside would
	<-c.exited
	fsys.WriteFile("main.go", []byte("package main\n\nfunc main() { x := 1 }\n"), 0o644)
	rep := s.Changed(ctx, []string{"main.go"})
	if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "Not checked (main.go): language server gopls exited") {
		t.Errorf("after the kill: %+v", rep)
	}
}
