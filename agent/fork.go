package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/subagent"
	"github.com/orca-agent/orca/tool"
)

// DefaultMaxDepth is how deep forks may nest: a fork of a fork of a fork
// is refused with an observation.
const DefaultMaxDepth = 3

// child returns the runtime a subagent runs on: the definition's prompt,
// model (through Definition.ModelAliases) and tools
// (subagent.Definition.Allows) over the parent's collaborators (client,
// workspace, hooks, middleware, bus, policy, approvals, tasks). It is
// built once per subagent and shares the parent's tool values.
func (r *Runtime) child(d subagent.Definition) (*Runtime, error) {
	if c, ok := r.children.Load(d.Name); ok {
		return c.(*Runtime), nil
	}
	def := r.def
	def.Name, def.SystemPrompt, def.Verify = d.Name, d.Prompt, ""
	model, known := r.def.ModelAliases[d.Model]
	unresolved := !known && slices.Contains(subagent.ModelAliases(), d.Model)
	switch {
	case known:
		def.Model = model
	case d.Model != "" && !unresolved:
		def.Model = d.Model
	}
	c := &Runtime{id: r.id + "/" + d.Name, def: def, client: r.client, fs: r.fs, logger: r.logger, transcripts: r.transcripts, nested: r.nested, windows: r.windows, chain: r.chain, remote: r.remote,
		svc: r.svc, hooks: r.hooks, mw: r.mw, bus: r.bus, policy: r.policy, guard: r.guard, approver: r.approver, elicitor: r.elicitor, notifier: r.notifier, approvals: r.approvals,
		tasks: r.tasks, subagents: r.subagents, tools: tool.NewRegistry()}
	if r.breakers != nil {
		// Breakers of its own: its model may be another than the
		// parent's (model: haiku), which fails on its own.
		c.breakers = make([]breaker, len(r.breakers))
	}
	for _, tl := range r.tools.Tools() {
		if !d.Allows(tool.TraitsOf(tl).Names(tl.Name())...) {
			continue
		}
		if err := c.tools.Add(tl); err != nil {
			return nil, err
		}
	}
	actual, loaded := r.children.LoadOrStore(d.Name, c)
	if unresolved && !loaded {
		r.logger.Warn("subagent model alias stands for no model of this provider: the subagent runs on its parent's model; "+
			`name one in the settings' "modelAliases"`, "subagent", d.Name, "file", d.Path, "alias", d.Model, "model", def.Model)
	}
	return actual.(*Runtime), nil
}

// forker is the subagent.Forker the runtime hands a tool that forks
// (tool.Traits.Forks): it starts forks of the turn t on behalf of call.
type forker struct {
	t    *turn
	call *tool.Call
}

// Tasks implements subagent.Forker.
func (f *forker) Tasks() *subagent.Manager { return f.t.rt.tasks }

// background is the tool.Background of a call: its work is a task of the
// call's owner in the runtime's task manager, beside its subagent tasks.
type background struct{ tasks *subagent.Manager }

func (b background) Start(call *tool.Call, kind, description string, run func(ctx context.Context, out io.Writer) error) (string, error) {
	return b.tasks.StartOutput(subagent.Owner(call.Scope), kind, description, run)
}

// Fork implements subagent.Forker: it finds the subagent, checks the
// depth limit and runs SUBAGENT_START (which may block, rewrite the prompt,
// add context), then returns the fork to run on the subagent's runtime.
func (f *forker) Fork(ctx context.Context, agentType, prompt string, background bool) (*subagent.Fork, error) {
	t := f.t
	if agentType == "" {
		agentType = subagent.GeneralPurpose.Name
	}
	var def *subagent.Definition
	names := make([]string, len(t.rt.subagents))
	for i := range t.rt.subagents {
		names[i] = t.rt.subagents[i].Name
		if t.rt.subagents[i].Name == agentType {
			def = &t.rt.subagents[i]
		}
	}
	if def == nil {
		return nil, fmt.Errorf("%s: unknown subagent_type %q; available: %s", f.call.Name, agentType, strings.Join(names, ", "))
	}
	if t.res.Depth+1 > t.rt.def.MaxDepth {
		return nil, fmt.Errorf("%s: not started: forks may nest %d deep and this one would be %d deep; do the task yourself", f.call.Name, t.rt.def.MaxDepth, t.res.Depth+1)
	}
	var extra []string
	exec := newID("exec")
	if t.rt.hooks.Has(hook.SubagentStart) {
		out := t.runHook(&hook.SubagentStartPayload{Common: t.common(), Agent: def.Name, AgentID: exec, Prompt: prompt})
		if out.EndTurn != "" {
			return nil, fmt.Errorf("%s: subagent %s was not started: the turn was %s", f.call.Name, def.Name, t.ended)
		}
		if out.Action == hook.Block {
			r := t.blocked(f.call, "hook:"+out.By, fmt.Sprintf("Subagent %s was not started: blocked by hook %s: %s", def.Name, out.By, out.Reason))
			return nil, errors.New(r.Content)
		}
		prompt, extra = out.Payload.(*hook.SubagentStartPayload).Prompt, out.Context
	}
	if def.Remote != "" {
		return t.remoteFork(f.call, *def, prompt, background)
	}
	child, err := t.rt.child(*def)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", f.call.Name, err)
	}
	info := &forkInfo{agent: def.Name, toolUseID: f.call.ID, background: background, grants: tool.GrantsFrom(ctx), exec: exec}
	if schema := subagent.OutputSchemaFrom(ctx); schema != nil {
		info.output = &Output{Name: "task", Schema: schema}
		if _, err := compileOutput(info.output, t.rt.client); err != nil {
			return nil, fmt.Errorf("%s: the output_schema: %v", f.call.Name, err)
		}
	}
	if _, err := policy.ParseRules(info.grants, nil, nil); err != nil {
		return nil, fmt.Errorf("%s: the fork's granted tools: %v", f.call.Name, err)
	}
	if !background {
		return &subagent.Fork{Agent: def.Name, Run: func(ctx context.Context) (string, error) {
			return t.foreground(ctx, info, child, prompt, extra)
		}}, nil
	}
	// A background fork outlives the call, and maybe the turn: it takes
	// what it needs of the turn now, and its spending reaches the session
	// through Account when it ends.
	account, limits, spent := t.req.Account, t.limits, t.spent()
	return &subagent.Fork{Agent: def.Name, Run: func(ctx context.Context) (string, error) {
		res, err := t.fork(ctx, info, child, prompt, extra, limits, spent)
		if res != nil && account != nil {
			account(res.Spent, res.Usage)
		}
		return forkAnswer(res, err)
	}}, nil
}

// foreground runs a fork and waits for its answer; its spending is the
// invoking session's.
func (t *turn) foreground(ctx context.Context, f *forkInfo, child *Runtime, prompt string, extra []string) (string, error) {
	res, err := t.fork(ctx, f, child, prompt, extra, t.limits, t.spent())
	if res != nil {
		t.res.Usage = t.res.Usage.Add(res.Usage)
		t.cost += res.Spent.CostUSD
		t.forkCalls += res.ToolCalls
	}
	return forkAnswer(res, err)
}

// forkAnswer turns a fork's result into its answer, or the reason it has
// none.
func forkAnswer(res *Result, err error) (string, error) {
	switch {
	case res == nil:
		return "", err
	case res.StopReason == StopAnswered:
		return res.Answer, nil
	case res.Err != nil:
		return "", fmt.Errorf("%s: %w", res.StopReason, res.Err)
	case res.BudgetDimension != "":
		return "", fmt.Errorf("the session's %s budget is exhausted", res.BudgetDimension)
	case res.StopReason == StopRefused:
		return "", fmt.Errorf("the model refused: %s", res.Reason)
	case res.StopReason == StopMaxTokens && res.Answer != "":
		// What it wrote is worth having; the caller learns it is cut.
		return res.Answer + "\n\n[" + res.Reason + "]", nil
	}
	return "", fmt.Errorf("it ended %s", res.StopReason)
}

// fork runs a subagent execution of f on child with the parent's identity
// inherited: the user's session and turn, the root runtime, one level
// deeper. A foreground fork's events go where the turn's go; a background
// fork's to Request.OnBackgroundEvent (and the bus).
func (t *turn) fork(ctx context.Context, f *forkInfo, child *Runtime, prompt string, extra []string, limits budget.Limits, spent budget.Spent) (*Result, error) {
	onEvent := t.req.OnEvent
	if f.background {
		onEvent = t.req.OnBackgroundEvent
	}
	return t.e.execute(ctx, child, Request{
		SessionID:         t.res.SessionID,
		TurnID:            t.res.TurnID,
		Input:             prompt,
		Context:           extra,
		Budget:            &limits,
		Spent:             spent,
		OnEvent:           onEvent,
		OnBackgroundEvent: t.req.OnBackgroundEvent,
		Account:           t.req.Account,
		Output:            f.output,
		fork:              f,
	}, t.res.Child(child.id, cmp.Or(f.exec, newID("exec"))))
}

// runFork runs a fork's execution between its subagent_started and
// subagent_completed events.
func (t *turn) runFork(f *forkInfo) {
	t.emit(event.SubagentStarted, &event.SubagentData{Agent: f.agent, ToolUseID: f.toolUseID, Background: f.background, TaskID: subagent.TaskIDFrom(t.ctx)})
	t.run()
	if !t.observed() {
		return
	}
	res := t.res
	d := &event.SubagentData{Agent: f.agent, ToolUseID: f.toolUseID, Background: f.background, TaskID: subagent.TaskIDFrom(t.ctx),
		StopReason: string(res.StopReason), Answer: res.Answer, Iterations: res.Iterations, ToolCalls: res.ToolCalls, Usage: &res.Usage}
	if res.Err != nil {
		d.Error = res.Err.Error()
	}
	t.emit(event.SubagentCompleted, d)
}

// forkInfo says what started a fork, for its subagent_started and
// subagent_completed events.
type forkInfo struct {
	agent, toolUseID string
	background       bool
	// grants are permission rules the fork's turn is granted
	// (tool.WithGrants: a forked skill's allowed-tools).
	grants []string
	// exec is the fork's execution id, made before SUBAGENT_START so that
	// its hooks can name it (agent_id).
	exec string
	// output is the structured answer asked of the fork (Task's
	// output_schema), or nil.
	output *Output
}

// forkAccount counts the tool calls of foreground forks, which the
// invoking session's tool-call budget includes.
type forkAccount struct {
	forkCalls int
}

// remoteFork is the fork of a subagent that is a remote A2A agent: its
// task runs there (the runtime's Remote), bounded by its Timeout, between
// subagent_started and subagent_completed events, what it reports as it
// works the call's progress; a remote that fails, times out or asks for
// input is an error of the call, for the model.
func (t *turn) remoteFork(call *tool.Call, def subagent.Definition, prompt string, background bool) (*subagent.Fork, error) {
	if t.rt.remote == nil {
		return nil, fmt.Errorf("%s: subagent %s is the remote A2A agent at %s, and this runtime reaches no remote agents", call.Name, def.Name, def.Remote)
	}
	if background {
		return nil, fmt.Errorf("%s: subagent %s is a remote A2A agent, which runs in the foreground: call it without run_in_background", call.Name, def.Name)
	}
	return &subagent.Fork{Agent: def.Name, Run: func(ctx context.Context) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, cmp.Or(def.Timeout, subagent.DefaultRemoteTimeout))
		defer cancel()
		ctx, ended := t.withProgress(ctx, call)
		defer ended()
		t.emit(event.SubagentStarted, &event.SubagentData{Agent: def.Name, ToolUseID: call.ID, Background: background, TaskID: subagent.TaskIDFrom(ctx)})
		answer, err := t.rt.remote.Ask(ctx, def, prompt, func(msg string) { tool.Report(ctx, tool.Progress{Message: msg}) })
		if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("the remote agent %s did not answer within %s", def.Name, cmp.Or(def.Timeout, subagent.DefaultRemoteTimeout))
		}
		d := &event.SubagentData{Agent: def.Name, ToolUseID: call.ID, Background: background, TaskID: subagent.TaskIDFrom(ctx), StopReason: string(StopAnswered), Answer: answer}
		if err != nil {
			d.StopReason, d.Error = string(StopFailed), err.Error()
		}
		t.emit(event.SubagentCompleted, d)
		return answer, err
	}}, nil
}
