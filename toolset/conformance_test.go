package toolset_test

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/orca-agent/orca/subagent"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/tool/tooltest"
	"github.com/orca-agent/orca/toolset"
	"github.com/orca-agent/orca/workspace"
)

// forker forks no model: every fork answers at once.
type forker struct{ m *subagent.Manager }

func (f forker) Fork(_ context.Context, agent, _ string, _ bool) (*subagent.Fork, error) {
	return &subagent.Fork{Agent: cmp.Or(agent, subagent.GeneralPurpose.Name), Run: func(context.Context) (string, error) { return "done", nil }}, nil
}

func (f forker) Tasks() *subagent.Manager { return f.m }

// Every tool of the default set, as one runtime's providers build it,
// keeps the tool contract (tooltest); a tool added to the set without a
// case here fails. (Each tool's own package runs the kit with more calls.)
func TestConformance(t *testing.T) {
	fsys, err := workspace.OpenLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	if err := fsys.WriteFile("a.txt", []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := subagent.NewManager()
	t.Cleanup(func() { m.Close() })
	withForker := func(ctx context.Context) context.Context { return subagent.WithForker(ctx, forker{m}) }

	cases := map[string]tooltest.Case{
		"Read":        {Inputs: []tooltest.Input{{JSON: `{"file_path": "a.txt"}`}}, Invalid: []string{`{}`}},
		"Write":       {Inputs: []tooltest.Input{{JSON: `{"file_path": "b.txt", "content": "beta\n"}`}}, Invalid: []string{`{"file_path": "b.txt"}`}},
		"Edit":        {Inputs: []tooltest.Input{{JSON: `{"file_path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"}`}}, Invalid: []string{`{"file_path": "a.txt"}`}},
		"Glob":        {Inputs: []tooltest.Input{{JSON: `{"pattern": "*.txt"}`}}, Invalid: []string{`{}`}},
		"Grep":        {Inputs: []tooltest.Input{{JSON: `{"pattern": "alpha", "output_mode": "content"}`}}, Invalid: []string{`{"pattern": "a", "output_mode": "all"}`}},
		"Bash":        {Inputs: []tooltest.Input{{JSON: `{"command": "echo hi"}`}}, Invalid: []string{`{}`}, Blocking: `{"command": "sleep 60"}`},
		"TodoWrite":   {Inputs: []tooltest.Input{{JSON: `{"todos": [{"content": "Test", "status": "pending", "activeForm": "Testing"}]}`}}, Invalid: []string{`{}`}},
		"WebFetch":    {Inputs: []tooltest.Input{{JSON: `{"url": "http://127.0.0.1:9/"}`}}, Invalid: []string{`{}`}},
		"WebSearch":   {Inputs: []tooltest.Input{{JSON: `{"query": "orca agent runtime"}`}}, Invalid: []string{`{"query": "x"}`}},
		"Task":        {Inputs: []tooltest.Input{{JSON: `{"description": "Look", "prompt": "Look around.", "subagent_type": "general-purpose"}`}}, Invalid: []string{`{"prompt": "x"}`}, Context: withForker},
		"Skill":       {Inputs: []tooltest.Input{{JSON: `{"skill": "none"}`}}, Invalid: []string{`{}`}, Context: withForker},
		"AgentOutput": {Inputs: []tooltest.Input{{JSON: `{"task_id": "none", "block": false}`}}, Invalid: []string{`{}`}, Context: withForker},
		"TaskStop":    {Inputs: []tooltest.Input{{JSON: `{"task_id": "none"}`}}, Invalid: []string{`{"task_id": 1}`}, Context: withForker},
	}
	env := tool.Env{RuntimeID: "rt", FS: fsys, Logger: slog.New(slog.DiscardHandler)}
	var names []string
	for _, p := range toolset.Default() {
		tools, err := p.Tools(env)
		if err != nil {
			t.Fatalf("provider %s: %v", p.Name(), err)
		}
		for _, tl := range tools {
			names = append(names, tl.Name())
			c, ok := cases[tl.Name()]
			if !ok {
				t.Errorf("the default tool %s has no conformance case", tl.Name())
				continue
			}
			t.Run(tl.Name(), func(t *testing.T) { tooltest.Run(t, tl, c) })
		}
	}
	for name := range cases {
		if !slices.Contains(names, name) {
			t.Errorf("a conformance case for %s, which is no default tool", name)
		}
	}
}
