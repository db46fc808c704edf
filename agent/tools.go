package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/middleware"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/subagent"
	"github.com/orca-agent/orca/tool"
)

// runTools runs every tool use of the assistant message, in order, and
// returns the user message carrying one result per use. Once the context is
// done, the remaining uses are answered as cancelled without running.
//
// Each result is recorded as soon as its call ends (Request.Record, a user
// message of its own), so that a crash in the middle of the calls loses
// none that ended: a resumed session knows which ran. false means
// recording failed (and ended the turn).
func (t *turn) runTools(content []llm.Block, uses int) (llm.Message, bool) {
	results := make([]llm.Block, 0, uses)
	for i := range content {
		b := &content[i]
		if b.Type != llm.BlockToolUse {
			continue
		}
		var r llm.Block
		if why := t.notRun(); why != "" {
			r = llm.ToolResultBlock(b.ID, why, true)
		} else {
			t.res.ToolCalls++
			res := t.runTool(b)
			if t.res.Parked != nil {
				// Parked: no result for it, nor for the calls after it;
				// the turn stops, and runs them when someone decided.
				t.res.ToolCalls--
				return llm.Message{Role: llm.RoleUser, Content: results}, true
			}
			r = llm.ToolResultBlock(b.ID, res.Content, res.IsError)
		}
		results = append(results, r)
		if t.req.Record != nil {
			rec := Recorded{Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{r}}, Usage: t.res.Usage, Spent: t.turnSpent()}
			if err := t.req.Record(rec); err != nil {
				t.res.Err = fmt.Errorf("recording the transcript: %w", err)
				t.finish(StopFailed)
				return llm.Message{Role: llm.RoleUser, Content: results}, false
			}
		}
	}
	return llm.Message{Role: llm.RoleUser, Content: results}, true
}

// notRun says why the next tool call of the turn must not run — the turn
// was cancelled or ended by a hook, a budget is exhausted — as its
// observation; "" if it may run.
func (t *turn) notRun() string {
	switch d, exhausted := t.limits.Exhausted(t.spent()); {
	case t.ctx.Err() != nil:
		why := "the turn was cancelled (" + context.Cause(t.ctx).Error() + ")"
		if errors.Is(context.Cause(t.ctx), ErrInterrupted) {
			why = "the user interrupted the turn"
		}
		return "Not run: " + why + "."
	case exhausted:
		return fmt.Sprintf("Not run: the session's %s budget is exhausted.", strings.ReplaceAll(string(d), "_", " "))
	case t.ended != "":
		return "Not run: the turn was " + t.ended + "."
	}
	return ""
}

// runTool takes one tool call through the pipeline Executor's doc draws
// and returns the observation. Nothing runs before it is allowed.
func (t *turn) runTool(b *llm.Block) tool.Result {
	call := &tool.Call{ID: b.ID, Name: b.Name, Input: b.Input, Scope: t.res.Scope}
	var start time.Time
	if t.observed() {
		start = time.Now()
		var d tool.Display
		if tl, ok := t.rt.tools.Lookup(b.Name); ok {
			d = tool.DisplayOf(tl, b.Input)
		}
		t.emit(event.ToolExecStarted, &event.ToolData{Iteration: t.res.Iterations, ToolUseID: b.ID, ToolName: b.Name, Input: b.Input, Summary: d.Summary, Detail: d.Detail})
	}
	r := t.pipeline(call)
	var saved string
	r.Content, saved = t.capResult(call.ID, call.Name, r.Content)
	if t.observed() {
		name := event.ToolExecCompleted
		if r.IsError {
			name = event.ToolExecFailed
		}
		t.emit(name, &event.ToolData{
			Iteration: t.res.Iterations, ToolUseID: call.ID, ToolName: call.Name, Input: call.Input,
			Output: r.Content, IsError: r.IsError, Duration: time.Since(start), SavedTo: saved,
		})
	}
	return r
}

func (t *turn) pipeline(call *tool.Call) tool.Result {
	rt := t.rt
	if rt.mw.Has(middleware.ToolRequest) {
		c, err := rt.mw.ApplyToolRequest(t.ctx, call)
		if err != nil {
			return tool.Errorf("%v", err)
		}
		call = c
	}
	tl, ok := rt.tools.Lookup(call.Name)
	if !ok {
		return tool.Result{Content: rt.tools.Validate(call.Name, call.Input).Error(), IsError: true}
	}
	if err := rt.tools.Validate(call.Name, call.Input); err != nil {
		return tool.Errorf("%v", err)
	}

	hookSays, hookBy := hook.Continue, ""
	var preContext []string
	if rt.hooks.Has(hook.PreToolUse) {
		out := t.runHook(&hook.PreToolUsePayload{Common: t.common(), ToolCall: t.hookCall(call)})
		if out.EndTurn != "" {
			return t.blocked(call, "hook:"+out.By, fmt.Sprintf("Not run: the turn was %s.", t.ended))
		}
		if out.Action == hook.Block {
			r := t.blocked(call, "hook:"+out.By, fmt.Sprintf("Blocked by hook %s: %s", out.By, out.Reason))
			r.Content += contextSuffix(hook.PreToolUse, out.Context)
			return r
		}
		if out.Rewritten {
			args := out.Payload.(*hook.PreToolUsePayload).Arguments
			if err := rt.tools.Validate(call.Name, args); err != nil {
				return t.blocked(call, "hook:"+out.By, fmt.Sprintf("Blocked: a PRE_TOOL_USE hook rewrote the arguments of %s, and the result is invalid: %v", call.Name, err))
			}
			call.Input = args
		}
		hookSays, hookBy, preContext = out.Action, out.By, out.Context
	}

	if r, ok := t.authorize(call, tl, hookSays, hookBy); !ok {
		r.Content += contextSuffix(hook.PreToolUse, preContext)
		return r
	}

	ctx := t.ctx
	if tool.TraitsOf(tl).Forks {
		ctx = subagent.WithForker(ctx, &forker{t: t, call: call})
		ctx = tool.WithGranter(ctx, t)
	}
	var res tool.Result
	if rt.mw.Has(middleware.ToolExecution) {
		var failures []middleware.Failure
		res, failures = rt.mw.ExecuteTool(ctx, call, func(ctx context.Context, c *tool.Call) (tool.Result, error) {
			return tool.Run(ctx, tl, c), nil
		})
		t.middlewareFailed(failures)
	} else {
		res = tool.Run(ctx, tl, call)
	}

	res.Content += contextSuffix(hook.PreToolUse, preContext)
	if !res.IsError && rt.nested != nil {
		res.Content += t.nestedMemoryFor(tl, call)
	}
	switch {
	case !res.IsError && rt.hooks.Has(hook.PostToolUse):
		p := &hook.PostToolUsePayload{Common: t.common(), ToolCall: t.hookCall(call), Output: res.Content}
		if res.Response != nil {
			if b, err := json.Marshal(res.Response); err == nil && len(b) > 0 && b[0] == '{' {
				p.Response = b
			}
		}
		out := t.runHook(p)
		if out.Action == hook.Block {
			res.Content += fmt.Sprintf("\n\n<hook-feedback hook=%q by=%q>\n%s\n</hook-feedback>", hook.PostToolUse, out.By, out.Reason)
		}
		res.Content += contextSuffix(hook.PostToolUse, out.Context)
	case res.IsError && rt.hooks.Has(hook.PostToolUseFailure):
		out := t.runHook(&hook.PostToolUseFailurePayload{Common: t.common(), ToolCall: t.hookCall(call), Error: res.Content,
			Interrupted: errors.Is(context.Cause(t.ctx), ErrInterrupted)})
		res.Content += contextSuffix(hook.PostToolUseFailure, out.Context)
	}
	return res
}

func (t *turn) middlewareFailed(failures []middleware.Failure) {
	for _, f := range failures {
		t.emit(event.MiddlewareFailed, &event.MiddlewareFailedData{Chain: f.Chain, Middleware: f.Middleware, Error: f.Err.Error()})
	}
}

func (t *turn) hookCall(c *tool.Call) hook.ToolCall {
	tc := hook.ToolCall{ToolName: c.Name, ToolUseID: c.ID, Arguments: c.Input}
	if tl, ok := t.rt.tools.Lookup(c.Name); ok {
		a := tool.AccessOf(tl, c.Input)
		tc.Reads, tc.Writes, tc.Command = a.Reads, a.Writes, a.Command
	}
	return tc
}

func contextSuffix(n hook.Name, ctx []string) string {
	var s string
	for _, c := range ctx {
		s += "\n\n" + hookContext(n, c)
	}
	return s
}

// blocked reports a refused call and returns its observation.
func (t *turn) blocked(call *tool.Call, by, reason string) tool.Result {
	t.emit(event.ToolBlocked, &event.ToolBlockedData{Iteration: t.res.Iterations, ToolUseID: call.ID, ToolName: call.Name, Input: call.Input, By: by, Reason: reason})
	return tool.Result{Content: reason, IsError: true}
}

// authorize applies the permission precedence deny > ask > allow to what
// the PRE_TOOL_USE hooks (hookBy deciding) and the policy said, and asks
// for approval when the answer is ask. A hook's allow answers an ask as
// an approval would, once; it never beats a deny (a rule, built-in
// protection). A hook's defer parks the call for a person. It returns
// false with the denial's observation when the call must not run.
func (t *turn) authorize(call *tool.Call, tl tool.Tool, hookSays hook.Action, hookBy string) (tool.Result, bool) {
	rt := t.rt
	preq := policy.RequestFor(tl, call.Input, rt.fs)
	pol := rt.policy
	if pol == nil {
		// Without a policy every call is allowed, except what built-in
		// protection refuses: calls that write paths or run commands go
		// through a bypass-mode policy, which denies only that.
		if len(preq.Access.Writes) > 0 || preq.Access.Command != "" {
			pol = rt.guard
		} else if hookSays != hook.RequestPermission && hookSays != hook.Defer {
			return tool.Result{}, true
		}
	}
	verdict := policy.Verdict{Decision: policy.Allow, Reason: "no policy is set"}
	if pol != nil {
		verdict = pol.Decide(preq)
	}
	if verdict.Decision == policy.Deny {
		return t.blocked(call, "policy", verdict.Reason), false
	}
	if t.req.Approved[call.ID] && (verdict.Decision == policy.Ask || hookSays == hook.Defer || hookSays == hook.RequestPermission) {
		t.emit(event.ApprovalResolved, &event.ApprovalData{ToolUseID: call.ID, ToolName: call.Name, Input: call.Input, Reason: "approved while the session was parked", Allowed: true, Scope: string(policy.ScopeOnce), By: "parked"})
		return tool.Result{}, true
	}
	if hookSays == hook.Defer {
		reason := fmt.Sprintf("a PRE_TOOL_USE hook (%s) deferred the call to a person", hookBy)
		if why := t.cannotWait(); why != "" {
			return t.blocked(call, "hook:"+hookBy, fmt.Sprintf("Not run: %s, and %s.", reason, why)), false
		}
		t.emit(event.ApprovalRequested, &event.ApprovalData{ToolUseID: call.ID, ToolName: call.Name, Input: call.Input, Reason: reason})
		t.res.Parked = &Parked{ToolUseID: call.ID, ToolName: call.Name, Input: call.Input, Reason: reason, Rules: verdict.Suggestions}
		t.emit(event.ApprovalResolved, &event.ApprovalData{ToolUseID: call.ID, ToolName: call.Name, Input: call.Input, Reason: "parked: a person decides later", By: "hook:" + hookBy})
		return tool.Result{Content: "parked", IsError: true}, false
	}
	if hookSays == hook.RequestPermission && verdict.Decision == policy.Allow {
		verdict = policy.Verdict{Decision: policy.Ask, Reason: "a PRE_TOOL_USE hook asked for permission", Rule: "hook"}
	}
	if verdict.Decision != policy.Ask {
		return tool.Result{}, true
	}
	if t.approved(preq) {
		return tool.Result{}, true
	}
	if hookSays == hook.Allow {
		// The hook's allow is the approval the ask wanted.
		t.emit(event.ApprovalResolved, &event.ApprovalData{ToolUseID: call.ID, ToolName: call.Name, Input: call.Input, Reason: "allowed by a PRE_TOOL_USE hook", Allowed: true, Scope: string(policy.ScopeOnce), By: "hook:" + hookBy})
		return tool.Result{}, true
	}

	t.emit(event.ApprovalRequested, &event.ApprovalData{ToolUseID: call.ID, ToolName: call.Name, Input: call.Input, Reason: verdict.Reason})
	resolve := func(allowed bool, scope, by, reason string) (tool.Result, bool) {
		t.emit(event.ApprovalResolved, &event.ApprovalData{ToolUseID: call.ID, ToolName: call.Name, Input: call.Input, Reason: reason, Allowed: allowed, Scope: scope, By: by})
		if allowed {
			return tool.Result{}, true
		}
		return t.blocked(call, by, reason), false
	}
	if rt.hooks.Has(hook.PermissionRequest) {
		out := t.runHook(&hook.PermissionRequestPayload{Common: t.common(), ToolCall: t.hookCall(call), Reason: verdict.Reason, Suggestion: verdict.Suggest})
		if out.EndTurn != "" {
			return resolve(false, "", "hook:"+out.By, fmt.Sprintf("Not run: the turn was %s.", t.ended))
		}
		switch out.Action {
		case hook.Allow:
			if out.Rewritten {
				// Allowed with a new input: the approval is of that input,
				// which must be valid and which the policy must not deny.
				args := out.Payload.(*hook.PermissionRequestPayload).Arguments
				if err := rt.tools.Validate(call.Name, args); err != nil {
					return resolve(false, "", "hook:"+out.By, fmt.Sprintf("Blocked: a PERMISSION_REQUEST hook rewrote the arguments of %s, and the result is invalid: %v", call.Name, err))
				}
				judge := pol
				if judge == nil {
					judge = rt.guard
				}
				if judge != nil {
					if v := judge.Decide(policy.RequestFor(tl, args, rt.fs)); v.Decision == policy.Deny {
						return resolve(false, "", "policy", v.Reason)
					}
				}
				call.Input = args
			}
			return resolve(true, string(policy.ScopeOnce), "hook:"+out.By, out.Reason)
		case hook.Deny:
			return resolve(false, "", "hook:"+out.By, fmt.Sprintf("Denied by hook %s: %s", out.By, out.Reason))
		}
	}
	a, err := rt.approver.Approve(t.ctx, policy.ApprovalRequest{Scope: t.res.Scope, ToolName: call.Name, ToolUseID: call.ID, Input: call.Input, Access: preq.Access, Display: tool.DisplayOf(tl, call.Input), Verdict: verdict})
	if err != nil {
		if t.ctx.Err() != nil {
			// Ctrl-C at the question: the turn ends as interrupted, and
			// the call's observation says why, as notRun does.
			return resolve(false, "", "approver", t.notRun())
		}
		return resolve(false, "", "approver", fmt.Sprintf("Not run: asking for approval of %s failed: %v", call.Name, err))
	}
	if why := t.cannotWait(); a.Park && why != "" {
		return resolve(false, "", "approver", fmt.Sprintf("Not run: %s needs a person's approval, and %s.", call.Name, why))
	}
	if a.Park {
		t.res.Parked = &Parked{ToolUseID: call.ID, ToolName: call.Name, Input: call.Input, Reason: verdict.Reason, Rules: verdict.Suggestions}
		t.emit(event.ApprovalResolved, &event.ApprovalData{ToolUseID: call.ID, ToolName: call.Name, Input: call.Input, Reason: "parked: a person decides later", By: "approver"})
		return tool.Result{Content: "parked", IsError: true}, false
	}
	if !a.Allow {
		reason := a.Reason
		if reason == "" {
			reason = fmt.Sprintf("The user denied %s.", call.Name)
		}
		return resolve(false, "", "approver", reason)
	}
	if (a.Scope == policy.ScopeSession || a.Scope == policy.ScopeAgent) && len(verdict.Suggestions) > 0 {
		if err := rt.approvals.Grant(t.ctx, t.res.Root(), t.res.SessionID, a.Scope, verdict.Suggestions); err != nil {
			rt.logger.Warn("could not store an approval", "session", t.res.SessionID, "rules", verdict.Suggestions, "err", err)
		}
	}
	return resolve(true, string(a.Scope), "approver", a.Reason)
}

// cannotWait says why this execution cannot park a call for a person to
// decide ("" if it can): a subagent's turn cannot, nor can a call made
// outside any turn (Runtime.CallTool), which has no turn to stop.
func (t *turn) cannotWait() string {
	switch {
	case t.res.Fork():
		return "a subagent's calls cannot wait for one; report back instead"
	case t.outside:
		return "a call made outside a turn cannot wait for one"
	}
	return ""
}

// resume runs Request.Resume: their results join History's last message
// when it answers the same assistant message (History is not modified).
// false means the turn ended.
func (t *turn) resume() bool {
	results, ok := t.runTools(t.req.Resume, len(t.req.Resume))
	if last := len(t.msgs) - 1; last >= 0 && hasResults(t.msgs[last]) {
		merged := t.msgs[last]
		merged.Content = append(append([]llm.Block(nil), merged.Content...), results.Content...)
		t.msgs[last] = merged
	} else {
		t.msgs = append(t.msgs, results)
	}
	if ok && t.req.Record != nil {
		t.recorded = len(t.msgs)
	}
	if ok && t.res.Parked != nil {
		t.finish(StopAwaitingApproval)
		return false
	}
	return ok && !t.stopped()
}
