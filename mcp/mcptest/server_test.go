package mcptest_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orca-agent/orca/mcp/mcptest"
)

// versions are the protocol versions the in-memory tests speak: the
// SDK's latest (sessionless, 2026-07-28) and the last one with initialize.
var versions = []string{"", "2025-11-25"}

// The tools do what they say, with the schemas and annotations a client
// maps to traits; the resources and the prompt are there.
func TestToolsResourcesPrompt(t *testing.T) {
	for _, v := range versions {
		t.Run("version="+v, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			cs := serve(t, mcptest.NewServer(mcptest.Faults{ErrorOnCall: 99}, mcptest.Options{Dir: dir}), nil, v).cs

			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]*mcp.Tool{}
			for _, tl := range tools.Tools {
				byName[tl.Name] = tl
			}
			names := slices.Sorted(func(yield func(string) bool) {
				for n := range byName {
					if !yield(n) {
						return
					}
				}
			})
			if want := []string{"add", "counter", "delete_note", "echo", "log", "sleep", "write_note"}; !slices.Equal(names, want) {
				t.Fatalf("tools %v, want %v", names, want)
			}
			type hints struct{ readOnly, destructive, idempotent bool }
			for name, want := range map[string]hints{
				"echo":        {readOnly: true, idempotent: true},
				"add":         {readOnly: true, idempotent: true},
				"counter":     {readOnly: true},
				"write_note":  {},
				"delete_note": {destructive: true, idempotent: true},
				"sleep":       {readOnly: true, idempotent: true},
				"log":         {readOnly: true},
			} {
				a := byName[name].Annotations
				got := hints{a.ReadOnlyHint, a.DestructiveHint == nil || *a.DestructiveHint, a.IdempotentHint}
				if want.readOnly {
					got.destructive = false // meaningless when read-only
				}
				if got != want {
					t.Errorf("%s: hints %+v, want %+v", name, got, want)
				}
			}
			schema, _ := json.Marshal(byName["write_note"].InputSchema)
			var s struct {
				Required   []string                   `json:"required"`
				Properties map[string]json.RawMessage `json:"properties"`
			}
			if err := json.Unmarshal(schema, &s); err != nil || len(s.Properties) != 2 || !slices.Contains(s.Required, "name") {
				t.Errorf("write_note's input schema: %s", schema)
			}
			if byName["add"].OutputSchema == nil {
				t.Error("add has no output schema")
			}

			if r, err := call(ctx, cs, "echo", map[string]any{"text": "hello"}); err != nil || textOf(r) != "hello" {
				t.Errorf("echo: %v, %v", r, err)
			}
			r, err := call(ctx, cs, "add", map[string]any{"a": 2, "b": 3.5})
			if sum, _ := r.StructuredContent.(map[string]any)["sum"]; err != nil || sum != 5.5 {
				t.Errorf("add: %v, %v", r, err)
			}
			r, err = call(ctx, cs, "counter", nil)
			if n, _ := r.StructuredContent.(map[string]any)["call"]; err != nil || n != 3.0 {
				t.Errorf("counter on the third call: %v, %v", r.StructuredContent, err)
			}
			if r, err := call(ctx, cs, "echo", map[string]any{}); err == nil && !r.IsError {
				t.Errorf("echo without its text: %v", r)
			}

			// write_note appends: twice is two lines, on disk.
			for i, want := range []float64{1, 2} {
				r, err := call(ctx, cs, "write_note", map[string]any{"name": "n.txt", "text": "line"})
				if got, _ := r.StructuredContent.(map[string]any)["lines"]; err != nil || got != want {
					t.Errorf("write_note %d: %v, %v", i, r, err)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "n.txt")); string(b) != "line\nline\n" {
				t.Errorf("the note holds %q", b)
			}
			if r, err := call(ctx, cs, "write_note", map[string]any{"name": "../out.txt", "text": "x"}); err != nil || !r.IsError {
				t.Errorf("write_note out of its folder: %v, %v", r, err)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "out.txt")); err == nil {
				t.Error("write_note wrote out of its folder")
			}

			rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mcptest://notes/n.txt"})
			if err != nil || rr.Contents[0].Text != "line\nline\n" {
				t.Errorf("the note's resource: %v, %v", rr, err)
			}
			if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mcptest://notes/none.txt"}); err == nil {
				t.Error("a note that is not there reads")
			}
			rr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mcptest://faults"})
			if err != nil || rr.Contents[0].Text == "" || !json.Valid([]byte(rr.Contents[0].Text)) {
				t.Errorf("the faults resource: %v, %v", rr, err)
			} else if f := (mcptest.Faults{}); json.Unmarshal([]byte(rr.Contents[0].Text), &f) != nil || f.ErrorOnCall != 99 {
				t.Errorf("the faults resource says %s", rr.Contents[0].Text)
			}
			res, err := cs.ListResources(ctx, nil)
			if err != nil || len(res.Resources) != 1 {
				t.Errorf("resources: %v, %v", res, err)
			}
			tpl, err := cs.ListResourceTemplates(ctx, nil)
			if err != nil || len(tpl.ResourceTemplates) != 1 {
				t.Errorf("resource templates: %v, %v", tpl, err)
			}

			// delete_note is idempotent: the second deletes nothing.
			for i, want := range []bool{true, false} {
				r, err := call(ctx, cs, "delete_note", map[string]any{"name": "n.txt"})
				if got, _ := r.StructuredContent.(map[string]any)["deleted"]; err != nil || got != want {
					t.Errorf("delete_note %d: %v, %v", i, r.StructuredContent, err)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "n.txt")); !os.IsNotExist(err) {
				t.Errorf("the note is still there: %v", err)
			}

			p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}})
			if err != nil || len(p.Messages) != 1 || p.Messages[0].Content.(*mcp.TextContent).Text != "Say hello to Ada." {
				t.Errorf("greet: %v, %v", p, err)
			}
			if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet"}); err == nil {
				t.Error("greet without a name")
			}
		})
	}
}

// Without a notes folder there are no note tools.
func TestNoDirNoNotes(t *testing.T) {
	cs := serve(t, mcptest.NewServer(mcptest.Faults{}, mcptest.Options{}), nil, "").cs
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name == "write_note" || tl.Name == "delete_note" {
			t.Errorf("%s offered without a folder", tl.Name)
		}
	}
}
