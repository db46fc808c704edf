package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/middleware"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/subagent"
	"github.com/orca-agent/orca/tool"
)

// A call from outside a turn takes the pipeline a model's call takes, in
// its order, and its events carry the session and no turn.
func TestCallToolRunsThePipeline(t *testing.T) {
	var b *bench
	approver := policy.ApproverFunc(func(ctx context.Context, req policy.ApprovalRequest) (policy.Approval, error) {
		b.log.add("approver:" + req.SessionID)
		return policy.Approval{Allow: true, Scope: policy.ScopeOnce}, nil
	})
	pol, err := policy.New(policy.ModeDefault, policy.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	b = newBench(t, pol, approver)
	b.svc.Middleware.RegisterToolRequest("req", func(ctx context.Context, c *tool.Call) (*tool.Call, error) {
		b.log.add("tool_request")
		return c, nil
	})
	b.svc.Middleware.RegisterToolExecution("exec", func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
		b.log.add("tool_execution")
		return next(ctx, c)
	})
	b.hook(hook.PreToolUse, "pre", hook.On(func(ctx context.Context, p *hook.PreToolUsePayload) (*hook.Decision, error) {
		b.log.add("PRE_TOOL_USE:" + p.SessionID + ":" + strings.Join(p.Writes, ","))
		return nil, nil
	}))
	b.hook(hook.PostToolUse, "post", hook.On(func(ctx context.Context, p *hook.PostToolUsePayload) (*hook.Decision, error) {
		b.log.add("POST_TOOL_USE")
		return &hook.Decision{Context: "post says hi"}, nil
	}))
	var mine []event.Event
	var spent budget.Spent
	res := b.rt.CallTool(t.Context(), agent.ToolRequest{SessionID: "s", ToolUseID: "w1", Name: "Write",
		Input:   raw(map[string]string{"file_path": "a.txt", "content": "from outside"}),
		OnEvent: func(e event.Event) { mine = append(mine, e) },
		Account: func(s budget.Spent, _ llm.Usage) { spent = s },
	})
	if res.IsError || !strings.Contains(res.Content, "post says hi") || b.file("a.txt") != "from outside" {
		t.Fatalf("result %+v, a.txt %q", res, b.file("a.txt"))
	}
	want := []string{"tool_request", "PRE_TOOL_USE:s:a.txt", "approver:s", "tool_execution", "POST_TOOL_USE"}
	if got := b.log.get(); !slices.Equal(got, want) {
		t.Errorf("order:\n got %v\nwant %v", got, want)
	}
	var names []string
	for _, e := range mine {
		names = append(names, string(e.Name))
		if e.SessionID != "s" || e.TurnID != "" || e.ExecutionID == "" || e.RuntimeID != b.rt.ID() {
			t.Errorf("%s: scope %+v", e.Name, e.Scope)
		}
	}
	if want := []string{"tool_exec_started", "approval_requested", "approval_resolved", "tool_exec_completed"}; !slices.Equal(names, want) {
		t.Errorf("events %v, want %v", names, want)
	}
	if spent.ToolCalls != 1 || spent.WallTime <= 0 {
		t.Errorf("accounted %+v, want one call", spent)
	}
	if b.svc.Bus.Flush(t.Context()); !slices.Contains(b.events.names(), "tool_exec_completed") {
		t.Errorf("the bus got %v", b.events.names())
	}
}

// What stops a model's call stops one from outside: validation, a
// PRE_TOOL_USE block, protection (in bypass mode too), a deny rule, a
// headless ask; an approver that would park is refused, since no turn can
// wait; a spent budget runs nothing. Each says why, and nothing is
// written.
func TestCallToolRefuses(t *testing.T) {
	pol, err := policy.New(policy.ModeDefault, policy.Rules{Deny: []policy.Rule{{Tool: "Write", Pattern: "denied.txt"}}})
	if err != nil {
		t.Fatal(err)
	}
	b := newBench(t, pol, nil)
	b.hook(hook.PreToolUse, "guard", hook.On(func(ctx context.Context, p *hook.PreToolUsePayload) (*hook.Decision, error) {
		if slices.Contains(p.Writes, "hooked.txt") {
			return &hook.Decision{Action: hook.Block, Reason: "hooked.txt is off limits"}, nil
		}
		return nil, nil
	}))
	bypass, err := policy.New(policy.ModeBypass, policy.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	bypassed := b.runtime(bypass, nil)
	parking := b.runtime(pol, policy.Parking{})
	write := func(path string) json.RawMessage { return raw(map[string]string{"file_path": path, "content": "x"}) }
	for _, c := range []struct {
		name string
		rt   *agent.Runtime
		req  agent.ToolRequest
		want string
		path string
	}{
		{"invalid", b.rt, agent.ToolRequest{Name: "Write", Input: json.RawMessage(`{"file_path": 7}`)}, "invalid tool input for Write: at the input: missing property 'content'", ""},
		{"unknown", b.rt, agent.ToolRequest{Name: "Nope"}, `unknown tool "Nope"`, ""},
		{"hook", b.rt, agent.ToolRequest{Name: "Write", Input: write("hooked.txt")}, "Blocked by hook guard: hooked.txt is off limits", "hooked.txt"},
		{"deny rule", b.rt, agent.ToolRequest{Name: "Write", Input: write("denied.txt")}, "denied.txt", "denied.txt"},
		{"headless ask", b.rt, agent.ToolRequest{Name: "Write", Input: write("asked.txt")}, "--allow", "asked.txt"},
		{"protected", bypassed, agent.ToolRequest{Name: "Write", Input: write(".orca/settings.json")}, ".orca", ".orca/settings.json"},
		{"parked", parking, agent.ToolRequest{Name: "Write", Input: write("parked.txt")}, "a call made outside a turn cannot wait for one", "parked.txt"},
		{"budget", bypassed, agent.ToolRequest{Name: "Write", Input: write("late.txt"), Budget: &budget.Limits{ToolCalls: 3}, Spent: budget.Spent{ToolCalls: 3}},
			"Not run: the session's tool calls budget is exhausted.", "late.txt"},
		{"no session", b.rt, agent.ToolRequest{Name: "Write", Input: write("nobody.txt")}, "needs the session", "nobody.txt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name != "no session" {
				c.req.SessionID = "s"
			}
			res := c.rt.CallTool(t.Context(), c.req)
			if !res.IsError || !strings.Contains(res.Content, c.want) {
				t.Errorf("result %+v, want an error saying %q", res, c.want)
			}
			if c.path != "" && !strings.HasPrefix(b.file(c.path), "<") {
				t.Errorf("%s was written: %q", c.path, b.file(c.path))
			}
		})
	}
}

// A tool that forks gets its Forker outside a turn too: Task runs a
// subagent in the session, and what the fork spent is accounted to the
// call.
func TestCallToolForks(t *testing.T) {
	b := newBench(t, nil, nil)
	b.model.Script(script.ForkRoute("s", subagent.GeneralPurpose.Name), script.Text("the fork's answer"))
	var mu sync.Mutex
	var spent budget.Spent
	res := b.rt.CallTool(t.Context(), agent.ToolRequest{SessionID: "s", Name: "Task",
		Input:   raw(map[string]string{"description": "d", "prompt": "look around", "subagent_type": subagent.GeneralPurpose.Name}),
		Account: func(s budget.Spent, _ llm.Usage) { mu.Lock(); spent = spent.Add(s); mu.Unlock() },
	})
	if res.IsError || !strings.Contains(res.Content, "the fork's answer") {
		t.Fatalf("Task: %+v", res)
	}
	calls := b.model.CallsTo(script.ForkRoute("s", subagent.GeneralPurpose.Name))
	if len(calls) != 1 || calls[0].Messages[0].Text() != "look around" {
		t.Errorf("the fork's model calls: %+v", calls)
	}
	mu.Lock()
	defer mu.Unlock()
	if spent.ToolCalls != 1 {
		t.Errorf("accounted %+v", spent)
	}
}
