package subagent_test

import (
	"cmp"
	"context"
	"fmt"
	"testing"

	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/subagent"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/tool/tooltest"
)

// forker forks no model: a fork answers at once, or, on the prompt
// "wait", when its context ends; the subagent "missing" does not exist.
type forker struct{ m *subagent.Manager }

func (f forker) Fork(_ context.Context, agent, prompt string, _ bool) (*subagent.Fork, error) {
	if agent == "missing" {
		return nil, fmt.Errorf("no subagent %q", agent)
	}
	return &subagent.Fork{Agent: cmp.Or(agent, subagent.GeneralPurpose.Name), Run: func(ctx context.Context) (string, error) {
		if prompt == "wait" {
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "done: " + prompt, nil
	}}, nil
}

func (f forker) Tasks() *subagent.Manager { return f.m }

// Task, AgentOutput and TaskStop keep the tool contract (tooltest), with
// the runtime's Forker in their calls' context and background tasks of
// the caller's to read and stop.
func TestConformance(t *testing.T) {
	m := subagent.NewManager()
	t.Cleanup(func() { m.Close() })
	f := forker{m}
	in := scope.Scope{RuntimeID: "rt", SessionID: "s1", TurnID: "t1"}
	owner := subagent.Owner(in)
	start := func(answer string) string {
		t.Helper()
		id, err := m.Start(owner, "reviewer", "Review the diff", func(ctx context.Context) (string, error) {
			if answer == "" {
				<-ctx.Done()
				return "", ctx.Err()
			}
			return answer, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	finished, running := start("looks good"), start("")
	if info, _ := m.Wait(t.Context(), owner, finished); info.Status != subagent.Completed {
		t.Fatalf("the finished task: %+v", info)
	}
	stoppable := []string{start(""), start("")}

	var task, output, stop tool.Tool
	for _, p := range []tool.Provider{subagent.TaskProvider(), subagent.BackgroundProvider()} {
		tools, err := p.Tools(tool.Env{Subagents: []tool.Subagent{{Name: "reviewer", Description: "Reviews diffs.", Tools: []string{"Read", "Grep"}}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools {
			switch tl.Name() {
			case "Task":
				task = tl
			case "AgentOutput":
				output = tl
			case "TaskStop":
				stop = tl
			}
		}
	}
	withForker := func(ctx context.Context) context.Context { return subagent.WithForker(ctx, f) }
	summary := func(s string) *tool.Display { return &tool.Display{Summary: s} }

	t.Run("Task", func(t *testing.T) {
		tooltest.Run(t, task, tooltest.Case{
			Inputs: []tooltest.Input{
				{JSON: `{"description": "Review the diff", "prompt": "Review the staged diff.", "subagent_type": "reviewer"}`, Display: summary("Review the diff (reviewer)")},
				{JSON: `{"description": "Build it", "prompt": "Run the build.", "subagent_type": "general-purpose", "run_in_background": true}`, Display: summary("Build it (general-purpose, in the background)")},
				{JSON: `{"description": "Count files", "prompt": "Count the Go files.", "subagent_type": "general-purpose", "output_schema": {"type": "object", "properties": {"n": {"type": "integer"}}}}`},
				{JSON: `{"description": "Ask nobody", "prompt": "Hello?", "subagent_type": "missing"}`},
			},
			Invalid: []string{
				`{"description": "x", "prompt": "y"}`,
				`{"description": "x", "prompt": "y", "subagent_type": "reviewer", "run_in_background": "yes"}`,
				`{"description": "x", "prompt": "y", "subagent_type": "reviewer", "model": "opus"}`,
			},
			Blocking: `{"description": "Wait", "prompt": "wait", "subagent_type": "general-purpose"}`,
			Context:  withForker,
			Scope:    in,
		})
	})
	t.Run("AgentOutput", func(t *testing.T) {
		tooltest.Run(t, output, tooltest.Case{
			Inputs: []tooltest.Input{
				{JSON: `{"task_id": "` + finished + `"}`, Display: summary(finished)},
				{JSON: `{"task_id": "` + running + `", "block": false}`},
				{JSON: `{"task_id": "` + running + `", "timeout": 10}`},
				{JSON: `{"task_id": "no-such-task"}`},
			},
			Invalid:  []string{`{}`, `{"task_id": 1}`, `{"task_id": "x", "timeout": -1}`, `{"task_id": "x", "timeout": 600001}`, `{"task_id": "x", "wait": true}`},
			Blocking: `{"task_id": "` + running + `"}`,
			Context:  withForker,
			Scope:    in,
		})
	})
	t.Run("TaskStop", func(t *testing.T) {
		tooltest.Run(t, stop, tooltest.Case{
			Inputs: []tooltest.Input{
				{JSON: `{"task_id": "` + stoppable[0] + `"}`, Display: summary(stoppable[0])},
				{JSON: `{"shell_id": "` + stoppable[1] + `"}`, Display: summary(stoppable[1])},
				{JSON: `{"task_id": "no-such-task"}`},
				{JSON: `{}`},
			},
			Invalid: []string{`{"task_id": 5}`, `{"task_id": "x", "signal": "KILL"}`},
			Context: withForker,
			Scope:   in,
		})
	})
}
