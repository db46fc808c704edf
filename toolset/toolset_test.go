package toolset_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/toolset"
)

// A runtime built with the default set gets it in order; every tool's
// schema is closed and its description is more than a line.
func TestDefaultSet(t *testing.T) {
	for _, providers := range [][]tool.Provider{toolset.Default()} {
		rt, err := agent.New(agent.Definition{Name: "a", ToolProviders: providers}, agent.Collaborators{Client: script.New(), Workspace: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"Read", "Write", "Edit", "Glob", "Grep", "Bash", "TodoWrite", "WebFetch", "WebSearch", "Task", "Skill", "AgentOutput", "TaskStop"}
		if got := rt.Tools().Names(); !slices.Equal(got, want) {
			t.Errorf("tools %v, want %v", got, want)
		}
		for _, d := range rt.Tools().Definitions() {
			var schema map[string]any
			if err := json.Unmarshal(d.InputSchema, &schema); err != nil {
				t.Fatalf("%s: schema is not JSON: %v", d.Name, err)
			}
			if schema["additionalProperties"] != false {
				t.Errorf("%s: schema allows additional properties", d.Name)
			}
			if len(d.Description) < 60 {
				t.Errorf("%s: description is too thin: %q", d.Name, d.Description)
			}
		}
		rt.Close()
	}
}

// Every default tool declares its traits: the policy and the UIs have
// nothing else to go by.
func TestDefaultToolsDeclareTraits(t *testing.T) {
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "a"}, agent.Collaborators{Client: script.New(), Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	in := func(s string) json.RawMessage { return json.RawMessage(s) }
	for _, tc := range []struct {
		name     string
		input    json.RawMessage
		readOnly bool
		access   tool.Access
		summary  string
	}{
		{"Read", in(`{"file_path":"a.go","offset":3}`), true, tool.Access{Reads: []string{"a.go"}}, "a.go from line 3"},
		{"Write", in(`{"file_path":"b.go","content":""}`), false, tool.Access{Writes: []string{"b.go"}}, "b.go"},
		{"Edit", in(`{"file_path":"c.go","old_string":"a","new_string":"b"}`), false, tool.Access{Writes: []string{"c.go"}}, "c.go"},
		{"Glob", in(`{"pattern":"**/*.go"}`), true, tool.Access{Reads: []string{"."}}, "**/*.go"},
		{"Grep", in(`{"pattern":"x","path":"src"}`), true, tool.Access{Reads: []string{"src"}}, `"x" in src`},
		{"Bash", in(`{"command":"go test ./..."}`), false, tool.Access{Command: "go test ./..."}, "go test ./..."},
		{"TodoWrite", in(`{"todos":[]}`), true, tool.Access{}, ""},
		{"Task", in(`{"description":"d","prompt":"p","subagent_type":"general-purpose"}`), true, tool.Access{}, "d (general-purpose)"},
		{"Skill", in(`{"skill":"x","args":"a b"}`), false, tool.Access{}, "x a b"},
		{"AgentOutput", in(`{"task_id":"task_1"}`), true, tool.Access{}, "task_1"},
		{"TaskStop", in(`{"task_id":"task_1"}`), true, tool.Access{}, "task_1"},
	} {
		tl, ok := rt.Tools().Lookup(tc.name)
		if !ok {
			t.Fatalf("no %s", tc.name)
		}
		tr, a, d := tool.TraitsOf(tl), tool.AccessOf(tl, tc.input), tool.DisplayOf(tl, tc.input)
		if tr.ReadOnly != tc.readOnly || !slices.Equal(a.Reads, tc.access.Reads) || !slices.Equal(a.Writes, tc.access.Writes) || a.Command != tc.access.Command || d.Summary != tc.summary {
			t.Errorf("%s: traits %+v, access %+v, display %+v; want read-only %v, access %+v, summary %q", tc.name, tr, a, d, tc.readOnly, tc.access, tc.summary)
		}
	}
}
