package tool_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/orca-agent/orca/tool"
)

// A call of a tool by an alias is an unknown tool's, told the name to call
// instead; so is a name that differs only in case. An alias must say
// which tool it means: the registry refuses one that is another tool's
// name or alias.
func TestAliases(t *testing.T) {
	noop := func(context.Context, struct{}) (string, error) { return "ok", nil }
	r := tool.NewRegistry()
	if err := r.Add(tool.New("AgentOutput", "reads a task's output", noop, tool.Aliases("TaskOutput", "BashOutput"))); err != nil {
		t.Fatal(err)
	}
	if err := r.Add(rawTool{name: "Read", schema: pathSchema}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"BashOutput": "this runtime's AgentOutput does what BashOutput does elsewhere",
		"TaskOutput": "this runtime's AgentOutput does what TaskOutput does elsewhere",
		"read":       "did you mean Read?",
		"Nope":       "available tools: AgentOutput, Read",
	} {
		err := r.Validate(name, nil)
		if !errors.Is(err, tool.ErrUnknownTool) || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate(%s) = %v, want it to say %q", name, err, want)
		}
		if res := r.Call(t.Context(), &tool.Call{Name: name}); !res.IsError || !strings.Contains(res.Content, want) {
			t.Errorf("Call(%s) = %+v", name, res)
		}
	}
	if strings.Contains(r.Validate("Nope", nil).Error(), "did you mean") {
		t.Error("a name like no tool's got a suggestion")
	}
	for _, tc := range []struct {
		tool tool.Tool
		want string
	}{
		{tool.New("Shell", "", noop, tool.Aliases("Read")), `alias "Read" is the name of a registered tool`},
		{tool.New("Output", "", noop, tool.Aliases("BashOutput")), `alias "BashOutput" is an alias of the registered tool "AgentOutput" too`},
		{tool.New("TaskOutput", "", noop), `the name is an alias of the registered tool "AgentOutput"`},
		{tool.New("Odd", "", noop, tool.Aliases("two words")), `alias "two words"`},
		{tool.New("Same", "", noop, tool.Aliases("Same")), `alias "Same"`},
	} {
		if err := r.Add(tc.tool); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Add(%s) = %v, want %q", tc.tool.Name(), err, tc.want)
		}
	}
	if got := tool.TraitsOf(mustLookup(t, r, "AgentOutput")).Names("AgentOutput"); strings.Join(got, ",") != "AgentOutput,TaskOutput,BashOutput" {
		t.Errorf("Names = %q", got)
	}
}

func mustLookup(t *testing.T, r *tool.Registry, name string) tool.Tool {
	t.Helper()
	tl, ok := r.Lookup(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	return tl
}
