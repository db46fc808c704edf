package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/tool"
)

// ToolRequest asks for one tool call made outside any model's turn: by a
// program on a user's behalf, such as an MCP client of `orca mcp serve`.
type ToolRequest struct {
	// SessionID names the session the call is made in: its approvals, its
	// tool state (the todo list), its background tasks, the session_id
	// hooks see. Required.
	SessionID string
	// ToolUseID names the call in events, hooks and approvals; generated
	// if empty.
	ToolUseID string
	// Name is the tool's, Input its JSON arguments (empty: {}).
	Name  string
	Input json.RawMessage
	// OnEvent, if set, receives the call's events (and those of the
	// foreground forks it starts) in order, on the calling goroutine; the
	// runtime's bus receives them too. OnBackgroundEvent receives those of
	// the background forks it starts, as Request's does.
	OnEvent, OnBackgroundEvent func(event.Event)
	// Budget is the session's budget (nil: the definition's) and Spent
	// what the session has spent before the call: a call past a budget
	// does not run, and a wall-time budget is the call's deadline.
	Budget *budget.Limits
	Spent  budget.Spent
	// Account, if set, receives what the call spent once it ends — one
	// tool call, its wall time, and the model usage and calls of the
	// foreground forks it ran — and, later, what each background fork it
	// started spent when that one ends.
	Account func(spent budget.Spent, usage llm.Usage)
}

// CallTool runs one call of tool req.Name in session req.SessionID, outside
// any turn, through the pipeline a model's call takes (see Executor): the
// tool_request middleware, lookup and schema validation, PRE_TOOL_USE,
// the policy and approvals (built-in protection, the approver; a call
// that would be parked for a person is refused instead), the
// tool_execution middleware, the tool itself (its commands in the OS
// sandbox), POST_TOOL_USE or POST_TOOL_USE_FAILURE, with the same events
// and the result capped as a turn caps it. Nothing is added to the
// session's conversation: the call's identity has the session and an
// execution of its own, and no turn.
//
// Like a model's call, it never fails: a refused, invalid or failed call
// is a Result with IsError set, saying why.
func (r *Runtime) CallTool(ctx context.Context, req ToolRequest) tool.Result {
	if req.SessionID == "" {
		return tool.Errorf("agent: a tool call needs the session it is made in")
	}
	t := &turn{e: &Executor{}, rt: r, ctx: ctx, outside: true, start: time.Now(),
		req: &Request{SessionID: req.SessionID, OnEvent: req.OnEvent, OnBackgroundEvent: req.OnBackgroundEvent, Spent: req.Spent, Account: req.Account},
		res: &Result{Scope: scope.Scope{RuntimeID: r.id, SessionID: req.SessionID, ExecutionID: newID("exec")}}}
	t.limits = r.def.Budget
	if req.Budget != nil {
		t.limits = *req.Budget
	}
	if t.limits.WallTime > 0 {
		// As in a turn: the time the session has left is the deadline.
		var cancel context.CancelFunc
		t.ctx, cancel = context.WithTimeoutCause(t.ctx, max(t.limits.WallTime-req.Spent.WallTime, 0), errWallTime)
		defer cancel()
	}
	if why := t.notRun(); why != "" {
		return tool.Result{Content: why, IsError: true}
	}
	t.res.ToolCalls = 1
	res := t.runTool(&llm.Block{Type: llm.BlockToolUse, ID: cmp.Or(req.ToolUseID, newID("call")), Name: req.Name, Input: req.Input})
	if req.Account != nil {
		req.Account(t.turnSpent(), t.res.Usage)
	}
	return res
}

// fileExists reports whether path names a file that can be stat'ed.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
