package lsp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/tool/tooltest"
)

// TestToolConformance: the LSP tool passes the tool kit, over a server
// already started (its connection is the Set's, not a call's).
func TestToolConformance(t *testing.T) {
	f := &fake{delay: 0}
	s, fsys := fakeSet(t, f, 0)
	defer s.Close()
	fsys.WriteFile("a.txt", []byte("word\n"), 0o644)
	if _, err := s.Hover(context.Background(), "a.txt", 1, 1); err != nil {
		t.Fatal(err)
	}
	reads := func(p string) *tool.Access { return &tool.Access{Reads: []string{p}} }
	summary := func(s string) *tool.Display { return &tool.Display{Summary: s} }
	tooltest.Run(t, Tool(s), tooltest.Case{
		Inputs: []tooltest.Input{
			{JSON: `{"operation": "hover", "filePath": "a.txt", "line": 1, "character": 2}`, Access: reads("a.txt"), Display: summary("hover a.txt:1:2")},
			{JSON: `{"operation": "goToDefinition", "filePath": "a.txt", "line": 1, "character": 1}`, Access: reads("a.txt")},
			{JSON: `{"operation": "documentSymbol", "filePath": "a.txt"}`, Display: summary("documentSymbol a.txt")},
			{JSON: `{"operation": "workspaceSymbol", "filePath": "a.txt", "query": "word"}`, Display: summary("workspaceSymbol a.txt word")},
			{JSON: `{"operation": "findReferences", "filePath": "missing.go", "line": 1, "character": 1}`},
			{JSON: `{"operation": "hover", "filePath": "a.txt"}`},
		},
		Invalid: []string{
			`{"filePath": "a.txt"}`,
			`{"operation": "rename", "filePath": "a.txt"}`,
			`{"operation": "hover", "filePath": "a.txt", "line": 0, "character": 1}`,
			`{"operation": "hover", "filePath": "a.txt", "line": 1, "character": 1, "newName": "x"}`,
		},
	})
}

// TestToolOutput: what the model reads of each operation, and of a file
// no server serves, a position not given, a server without the request.
func TestToolOutput(t *testing.T) {
	f := &fake{delay: 0}
	s, fsys := fakeSet(t, f, 0)
	defer s.Close()
	fsys.WriteFile("a.txt", []byte("one\ntwo words\n"), 0o644)
	run := func(in string) tool.Result {
		return Tool(s).Execute(context.Background(), &tool.Call{ID: "c", Name: "LSP", Input: json.RawMessage(in)})
	}
	for _, c := range []struct {
		in, want string
		isErr    bool
	}{
		{`{"operation": "hover", "filePath": "a.txt", "line": 2, "character": 5}`, "a fake hover", false},
		{`{"operation": "hover", "filePath": "a.txt"}`, "LSP hover: give the line and the character (from 1) of the symbol in a.txt", true},
		{`{"operation": "hover", "filePath": "a.txt", "line": 9, "character": 1}`, "LSP hover: line 9 is not in a.txt (2 lines)", true},
		{`{"operation": "documentSymbol", "filePath": "a.txt"}`, "the language server does not offer this: fake has no documentSymbolProvider", true},
		{`{"operation": "goToDefinition", "filePath": "main.go", "line": 1, "character": 1}`, "no language server for this file main.go (servers serve .txt files)", true},
		{`{"operation": "goToDefinition", "filePath": "../out.txt", "line": 1, "character": 1}`, "outside the workspace", true},
		{`{"operation": "workspaceSymbol", "filePath": "a.txt", "line": 2, "character": 7}`, "workspaceSymbol: the language server does not offer this", true},
	} {
		r := run(c.in)
		if r.IsError != c.isErr || !strings.Contains(r.Content, c.want) {
			t.Errorf("%s: %+v\nwant %q", c.in, r, c.want)
		}
	}
}

func TestListings(t *testing.T) {
	locs := []Location{{Path: "greet.go", Line: 4, Column: 6, Text: "func greet() {"}, {Path: "/usr/lib/go/src/fmt/print.go", Line: 10, Column: 1}}
	if got := listLocations("findReferences", locs); got != "2 references:\ngreet.go:4:6: func greet() {\n/usr/lib/go/src/fmt/print.go:10:1" {
		t.Errorf("references: %q", got)
	}
	if got := listLocations("goToDefinition", nil); got != "No definition found there." {
		t.Errorf("none: %q", got)
	}
	syms := []Symbol{{Name: "T", Kind: "struct", Location: Location{Path: "a.go", Line: 3}}, {Name: "f", Kind: "field", Detail: "int", Depth: 1, Location: Location{Path: "a.go", Line: 4}}}
	if got := listSymbols(syms, ""); got != "struct T — a.go:3\n  field f int — a.go:4" {
		t.Errorf("symbols: %q", got)
	}
}
