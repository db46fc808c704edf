package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
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

// runTools runs every tool use of the assistant message and returns the
// user message carrying one result per use, in the order of the uses.
// Once the context is done, the remaining uses are answered as cancelled
// without running.
//
// Consecutive uses of tools that may run beside each other (parallel:
// read-only, not forking, not Exclusive) form a batch: each call is
// admitted in order (tool_request middleware, validation, PRE_TOOL_USE
// hooks, policy, approval — one approval prompt at a time), then the
// admitted calls run at once, at most Definition.MaxParallelTools of them,
// and what follows a call (POST_TOOL_USE hooks, events) is done here, one
// call at a time, as they end. A use of any other tool waits for the batch
// before it and runs alone: the model's order of changes is kept, and a
// read it asked for after a write sees the write.
//
// Each result is recorded (Request.Record, a user message of its own) as
// soon as it and every result before it are in, so that a crash in the
// middle of the calls loses none of a prefix that ended: a resumed session
// knows which ran (only read-only calls can have ended unrecorded). The
// results that are in at the same moment are recorded together (one
// call of Record) — with the model's answer that asked for the calls, if
// it is not recorded yet (calls a crash may run again unasked: see
// rerunnable); the answer is recorded by the time runTools returns, in
// any case. false means recording failed (and ended the turn).
func (t *turn) runTools(content []llm.Block, uses int) (_ llm.Message, ok bool) {
	b := batch{t: t, results: make([]llm.Block, 0, uses), ok: true}
	defer func() {
		if b.ok {
			b.recordSince(b.recorded) // the answer, if no result took it
		}
		ok = b.ok
	}()
	for i := range content {
		u := &content[i]
		if u.Type != llm.BlockToolUse {
			continue
		}
		if !b.ok {
			break
		}
		tl, found := t.rt.tools.Lookup(u.Name)
		if !found {
			// A call by another name of a tool (Claude Code's TaskOutput
			// for AgentOutput) is the tool's call, under its name; the
			// response keeps the model's words.
			var name string
			if tl, name, found = t.rt.tools.Resolve(u.Name); found {
				alias := *u
				alias.Name = name
				u = &alias
			}
		}
		if !found || !t.parallel(tl) {
			if !b.flush() {
				break
			}
		}
		k := b.slot()
		if t.cut != 0 {
			// The response was cut off: its calls' input may be cut too,
			// and the model asked for them together; none runs.
			t.res.ToolCalls++
			rec := t.started(u, tl, false)
			why := "Not run: your response was cut off at " + t.limitText() + " before it was complete, so none of its tool calls ran. " +
				"Make them again with less in each: long content in parts, over several calls."
			b.done(k, t.closeCall(&rec.Call, rec, t.blocked(&rec.Call, "max_tokens", why), nil))
			continue
		}
		if !found && t.out != nil && t.out.def != nil && u.Name == OutputToolName {
			b.done(k, result{Block: t.acceptOutput(u)})
			continue
		}
		if why := t.notRun(); why != "" {
			b.done(k, result{Block: llm.ToolResultBlock(u.ID, why, true)})
			continue
		}
		if !found {
			if c := t.clientTool(u.Name); c != nil {
				if err := c.check(u.Input); err != nil {
					b.done(k, result{Block: llm.ToolResultBlock(u.ID, fmt.Sprintf("Invalid input for %s: %v", u.Name, err), true)})
					continue
				}
				// The caller runs it, and the valid calls of its tools
				// after it; the calls admitted before it run first, the
				// others after it once the caller has answered.
				b.flush()
				b.results = b.results[:k]
				for _, c := range content[i:] {
					if ct := t.clientTool(c.Name); c.Type == llm.BlockToolUse && ct != nil && ct.check(c.Input) == nil {
						t.res.ClientCalls = append(t.res.ClientCalls, c)
					}
				}
				return b.message(), b.ok
			}
		}
		if len(b.jobs) == 0 && t.stepping() && t.effects > 0 {
			// The step's effect has run: this call and those after it
			// are the next steps'; none of them started.
			b.results = b.results[:k]
			t.paused = true
			t.readsNext = found && t.parallel(tl) && t.rt.def.MaxParallelTools > 1
			return b.message(), b.ok
		}
		t.res.ToolCalls++
		rec := t.started(u, tl, found && t.parallel(tl) && t.rt.def.MaxParallelTools > 1)
		a, res, admitted := t.admit(&rec.Call, tl)
		if t.res.Parked != nil {
			// Parked: no result for it, nor for the calls after it; the
			// turn stops, and runs them when someone decided. The calls
			// admitted before it run first.
			t.res.ToolCalls--
			b.flush()
			b.results = b.results[:k]
			return b.message(), b.ok
		}
		switch {
		case !admitted:
			b.done(k, t.closeCall(&rec.Call, rec, res, nil))
		case t.parallel(a.tl) && t.rt.def.MaxParallelTools > 1:
			b.jobs = append(b.jobs, job{slot: k, a: a, rec: rec})
		default:
			if b.flush() {
				t.effects++
				res, failures := t.execute(a)
				b.done(k, t.ran(&a, rec, res, failures))
			}
		}
	}
	b.flush()
	return b.message(), b.ok
}

// parallel reports whether calls of tl may run beside other calls of the
// same response.
func (t *turn) parallel(tl tool.Tool) bool {
	tr := tool.TraitsOf(tl)
	return tr.ReadOnly && !tr.Forks && !tr.Exclusive
}

// batch is the results of one response's tool uses, in the model's order
// (a slot not filled yet is the zero Block), and the admitted calls
// waiting to run together (jobs).
type batch struct {
	t       *turn
	results []llm.Block
	// shown is, slot by slot, the media blocks following a result (nil
	// until a result shows any: text-only turns pay nothing for them).
	shown    [][]llm.Block
	recorded int
	jobs     []job
	// ok is false once recording failed (the turn ended).
	ok bool
}

// job is an admitted call of a batch and its slot in the results.
type job struct {
	slot  int
	a     admitted
	rec   *callRec
	res   tool.Result
	fails []middleware.Failure
}

// slot reserves the next result.
func (b *batch) slot() int {
	b.results = append(b.results, llm.Block{})
	return len(b.results) - 1
}

// message is the results that are in, in order, each followed by the
// media it showed.
func (b *batch) message() llm.Message {
	if b.shown == nil {
		out := b.results[:0]
		for _, r := range b.results {
			if r.Type != "" {
				out = append(out, r)
			}
		}
		return llm.Message{Role: llm.RoleUser, Content: out}
	}
	var out []llm.Block
	for k, r := range b.results {
		if r.Type != "" {
			out = append(out, r)
			out = append(out, b.shown[k]...)
		}
	}
	return llm.Message{Role: llm.RoleUser, Content: out}
}

// result is a call's result block and the media blocks that follow it.
type result struct {
	llm.Block
	media []llm.Block
}

// done fills slot k and records every result of the prefix that is in.
func (b *batch) done(k int, r result) {
	b.fill(k, r)
	b.record()
}

// fill fills slot k.
func (b *batch) fill(k int, r result) {
	b.results[k] = r.Block
	if r.media != nil {
		if b.shown == nil {
			b.shown = make([][]llm.Block, cap(b.results))
		}
		b.shown[k] = r.media
	}
}

// record records the results of the prefix that are in and not recorded
// yet, each a message of its own, in one call of Record — after the
// turn's messages not recorded yet (the answer that asked for the calls:
// see runTools).
func (b *batch) record() {
	from := b.recorded
	for b.ok && b.recorded < len(b.results) && b.results[b.recorded].Type != "" {
		b.recorded++
	}
	if b.recorded > from {
		b.recordSince(from)
	}
}

// recordSince records the results from from to b.recorded after the
// turn's messages not recorded yet, if there is any of either.
func (b *batch) recordSince(from int) {
	t := b.t
	if !b.ok || t.req.Record == nil || b.recorded == from && t.recorded >= len(t.msgs) {
		return
	}
	spent := t.turnSpent()
	recs := t.unrecorded(t.recs[:0], spent, false)
	for k := from; k < b.recorded; k++ {
		content := []llm.Block{b.results[k]}
		if b.shown != nil && b.shown[k] != nil {
			content = append(content, b.shown[k]...)
		}
		recs = append(recs, Recorded{Message: llm.Message{Role: llm.RoleUser, Content: content}, Usage: t.res.Usage, Spent: spent})
	}
	b.ok = t.commit(recs)
}

// flush runs the waiting jobs at once, at most MaxParallelTools at a
// time, and finishes each here as it ends: the calls that end meanwhile
// are finished with it and their results recorded together, in one call
// of Record (one write, not one each after the other). It reports b.ok.
func (b *batch) flush() bool {
	jobs := b.jobs
	b.jobs = b.jobs[:0]
	if len(jobs) == 0 {
		return b.ok
	}
	t := b.t
	t.effects++ // the group is one effect
	if len(jobs) == 1 {
		j := &jobs[0]
		j.res, j.fails = t.execute(j.a)
		b.finish(j)
		b.record()
		return b.ok
	}
	todo := make(chan *job)
	ended := make(chan *job)
	workers := min(len(jobs), t.rt.def.MaxParallelTools)
	for range workers {
		go func() {
			for j := range todo {
				j.res, j.fails = t.execute(j.a)
				ended <- j
			}
		}()
	}
	go func() {
		for i := range jobs {
			todo <- &jobs[i]
		}
		close(todo)
	}()
	for left := len(jobs); left > 0; {
		b.finish(<-ended)
		left--
		if left > 0 {
			// A call that has ended but not yet said so (its goroutine
			// waits for a processor: two short reads end together) gets
			// the turn to, before the results in are recorded.
			runtime.Gosched()
		}
		for more := true; more && left > 0; {
			select {
			case j := <-ended:
				b.finish(j)
				left--
			default:
				more = false
			}
		}
		b.record()
	}
	return b.ok
}

// finish does what follows a job's call, and fills its slot.
func (b *batch) finish(j *job) {
	b.fill(j.slot, b.t.ran(&j.a, j.rec, j.res, j.fails))
}

// clientTool is the turn's client tool called name, unless the runtime
// has a tool of that name.
func (t *turn) clientTool(name string) *ClientTool {
	for i := range t.req.ClientTools {
		if c := &t.req.ClientTools[i]; c.Name == name {
			if _, ours := t.rt.tools.Lookup(name); ours {
				return nil
			}
			return c
		}
	}
	return nil
}

// check checks a call's input against c's schema (any JSON object
// without one).
func (c *ClientTool) check(in json.RawMessage) error {
	if c.Schema == nil {
		if !json.Valid(in) || len(bytes.TrimSpace(in)) == 0 || bytes.TrimSpace(in)[0] != '{' {
			return errors.New("want a JSON object")
		}
		return nil
	}
	return c.Schema.Validate(in)
}

// definition is c as the model is shown it.
func (c *ClientTool) definition() llm.ToolDefinition {
	d := llm.ToolDefinition{Name: c.Name, Description: c.Description, InputSchema: json.RawMessage(`{"type":"object"}`)}
	if c.Schema != nil {
		d.InputSchema = c.Schema.Raw()
	}
	return d
}

// notRun says why the next tool call of the turn must not run — the turn
// was cancelled or ended by a hook, a budget is exhausted — as its
// observation; "" if it may run.
func (t *turn) notRun() string {
	switch d, exhausted := t.over(); {
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
	tl, _ := t.rt.tools.Lookup(b.Name)
	rec := t.started(b, tl, false)
	a, r, ok := t.admit(&rec.Call, tl)
	if !ok {
		r.Content = t.closeCall(&rec.Call, rec, r, nil).Content
		return r
	}
	res, failures := t.execute(a)
	res.Content = t.ran(&a, rec, res, failures).Content
	return res
}

// ran does what follows an admitted call that ran: its middleware's
// failures told, its POST_TOOL_USE hooks, its end told with the
// observation capped; it returns the call's result block.
func (t *turn) ran(a *admitted, rec *callRec, res tool.Result, failures []middleware.Failure) result {
	if a.asker != nil {
		failures = append(failures, a.asker.spent()...)
	}
	t.middlewareFailed(a.call.ID, failures)
	return t.closeCall(a.call, rec, t.after(*a, res), a)
}

// callRec is what the pipeline keeps of one call: the call, when it
// started and, when someone watches, the data of its end's event.
type callRec struct {
	tool.Call
	start time.Time
	ended *event.ToolData // nil when no one watches
}

// watchedCall is a callRec and its events' data in one allocation (a
// listener may keep the events; neither changes once sent).
type watchedCall struct {
	callRec
	started event.ToolStartedData
	ended   event.ToolData
}

// started makes the call of tool use b, of tool tl (nil: no tool has its
// name), and tells it started — parallel: beside the response's other
// parallel calls.
func (t *turn) started(b *llm.Block, tl tool.Tool, parallel bool) *callRec {
	call := tool.Call{ID: b.ID, Name: b.Name, Input: b.Input, Scope: t.res.Scope}
	if !t.observed() {
		return &callRec{Call: call}
	}
	w := &watchedCall{callRec: callRec{Call: call, start: t.clock()}}
	w.callRec.ended = &w.ended
	var d tool.Display
	if tl != nil {
		d = tool.DisplayOf(tl, b.Input)
	}
	w.started = event.ToolStartedData{Iteration: t.res.Iterations, ToolUseID: b.ID, ToolName: b.Name, Input: b.Input, Summary: d.Summary, Detail: d.Detail, Parallel: parallel}
	t.emitAt(event.ToolExecStarted, &w.started, w.start)
	return &w.callRec
}

// closeCall caps the observation r of call (rec's, or what the tool_request
// chain made of it), tells the call ended (a of an admitted call: what let
// it run) and returns its result block and the media blocks that follow it.
func (t *turn) closeCall(call *tool.Call, rec *callRec, r tool.Result, a *admitted) result {
	var saved string
	r.Content, saved = t.capResult(call.ID, call.Name, r.Content)
	if t.observed() {
		name := event.ToolExecCompleted
		if r.IsError {
			name = event.ToolExecFailed
		}
		d := rec.ended
		if d == nil {
			d = new(event.ToolData) // someone watches since the call started
		}
		end := t.clock()
		*d = event.ToolData{
			Iteration: t.res.Iterations, ToolUseID: call.ID, ToolName: call.Name, Input: call.Input,
			Output: r.Content, IsError: r.IsError, SavedTo: saved,
		}
		if len(r.Media) > 0 {
			d.Attachments = llm.Attachments(r.Media)
		}
		if !rec.start.IsZero() {
			d.Duration = end.Sub(rec.start)
		}
		if a != nil {
			d.AllowedBy, d.RewrittenBy = a.allowed, a.rewritten
		}
		t.emitAt(name, d, end)
	}
	res := result{Block: llm.ToolResultBlock(call.ID, r.Content, r.IsError)}
	for _, m := range r.Media {
		if m == nil {
			continue
		}
		p := llm.MediaBlock(m)
		if err := freshMedia(&p); err != nil {
			// A tool's media no provider would take: said, not sent (the
			// conversation stays one the providers take).
			res.Content = strings.TrimSpace(res.Content + "\n[not shown: " + err.Error() + "]")
			continue
		}
		p.ToolUseID = call.ID
		res.media = append(res.media, p)
	}
	return res
}

// admitted is a call that admission let through: its tool, and what the
// PRE_TOOL_USE hooks added for the model.
type admitted struct {
	call *tool.Call
	tl   tool.Tool
	pre  []string
	// allowed is what let it run, rewritten what changed its input.
	allowed   event.Decision
	rewritten []string
	// hooks holds the call's tool hook payloads and frames, when it has
	// PRE_TOOL_USE hooks (nil otherwise; after makes its own).
	hooks *toolHooks
	// asker asks the model the call's own questions, for a tool that asks
	// one (tool.Traits.AsksModel; nil otherwise): made on the turn's
	// goroutine, which counts what they spent when the call has run.
	asker *callAsker
}

// toolHooks are the payloads of a call's tool hooks and the frames their
// runs use, in one allocation (a handler may keep a payload or its
// context; the runtime changes neither once sent).
type toolHooks struct {
	pre         hook.PreToolUsePayload
	post        hook.PostToolUsePayload
	preF, postF hook.Frame
}

// admit takes call, of tool tl (nil: no tool has its name), through the
// tool_request chain, validation, the PRE_TOOL_USE hooks, the policy and
// approval. false comes with the observation of a call that must not run.
func (t *turn) admit(call *tool.Call, tl tool.Tool) (admitted, tool.Result, bool) {
	rt := t.rt
	var rewritten []string
	if rt.mw.HasFor(middleware.ToolRequest, call) {
		c, err := rt.mw.ApplyToolRequest(t.ctx, call)
		if err != nil {
			return admitted{}, tool.Errorf("%v", err), false
		}
		if c != call && (c.Name != call.Name || !bytes.Equal(c.Input, call.Input)) {
			rewritten = append(rewritten, "middleware:tool_request")
		}
		if c.ID != call.ID {
			// The result answers the model's call: its id is the model's.
			cc := *c
			cc.ID = call.ID
			c = &cc
		}
		if c.Name != call.Name {
			tl, _ = rt.tools.Lookup(c.Name)
		}
		call = c
	}
	if tl == nil {
		return admitted{}, tool.Result{Content: rt.tools.Validate(call.Name, call.Input).Error(), IsError: true}, false
	}
	if err := rt.tools.Validate(call.Name, call.Input); err != nil {
		return admitted{}, tool.Errorf("%v", err), false
	}

	hookSays, hookBy := hook.Continue, ""
	var preContext []string
	var hooks *toolHooks
	if rt.hooks.Has(hook.PreToolUse) {
		hooks = &toolHooks{pre: hook.PreToolUsePayload{Common: t.common(), ToolCall: t.hookCall(call, tl)}}
		out := t.runHookIn(&hooks.preF, &hooks.pre)
		if out.EndTurn != "" {
			return admitted{}, t.blocked(call, "hook:"+out.By, fmt.Sprintf("Not run: the turn was %s.", t.ended)), false
		}
		if out.Action == hook.Block {
			r := t.blocked(call, "hook:"+out.By, fmt.Sprintf("Blocked by hook %s: %s", out.By, out.Reason))
			r.Content += contextSuffix(hook.PreToolUse, out.Context)
			return admitted{}, r, false
		}
		if out.Rewritten {
			args := out.Payload.(*hook.PreToolUsePayload).Arguments
			if err := rt.tools.Validate(call.Name, args); err != nil {
				return admitted{}, t.blocked(call, "hook:"+out.By, fmt.Sprintf("Blocked: a PRE_TOOL_USE hook rewrote the arguments of %s, and the result is invalid: %v", call.Name, err)), false
			}
			call.Input = args
			for _, by := range out.RewrittenBy {
				rewritten = append(rewritten, "hook:"+by)
			}
		}
		hookSays, hookBy, preContext = out.Action, out.By, out.Context
	}

	var d decided
	if r, ok := t.authorize(call, tl, hookSays, hookBy, &d); !ok {
		r.Content += contextSuffix(hook.PreToolUse, preContext)
		return admitted{}, r, false
	}
	a := admitted{call: call, tl: tl, pre: preContext, allowed: d.allowed, rewritten: append(rewritten, d.rewritten...), hooks: hooks}
	if tool.TraitsOf(tl).AsksModel {
		a.asker = t.newAsker(call.Name)
	}
	return a, tool.Result{}, true
}

// decided is what authorize says of a call it let run.
type decided struct {
	allowed   event.Decision
	rewritten []string
}

func (d *decided) by(by, rule, reason string) {
	d.allowed = event.Decision{By: by, Rule: rule, Reason: reason}
}

// execute runs an admitted call through the tool_execution chain. It
// touches no state of the turn but the nested memory (which locks), so
// that calls of tools that may run in parallel run at once.
func (t *turn) execute(a admitted) (tool.Result, []middleware.Failure) {
	rt, call, tl := t.rt, a.call, a.tl
	ctx := t.ctx
	switch traits := tool.TraitsOf(tl); {
	case traits.Forks:
		ctx = subagent.WithForker(ctx, &forker{t: t, call: call})
		ctx = tool.WithGranter(ctx, t)
	case traits.Background:
		ctx = tool.WithBackground(ctx, background{rt.tasks})
	}
	traits := tool.TraitsOf(tl)
	if traits.Elicits {
		ctx = t.withElicitor(ctx, call)
	}
	ended := func() {}
	if traits.Reports {
		ctx, ended = t.withProgress(ctx, call)
	}
	if a.asker != nil {
		ctx = tool.WithAsker(ctx, a.asker)
	}
	if traits.ChecksRules {
		ctx = tool.WithPermitter(ctx, callPermitter{t: t, tl: tl})
	}
	var res tool.Result
	var failures []middleware.Failure
	if rt.mw.HasFor(middleware.ToolExecution, call) {
		res, failures = rt.mw.ExecuteTool(ctx, call, func(ctx context.Context, c *tool.Call) (tool.Result, error) {
			return tool.Run(ctx, tl, c), nil
		})
	} else {
		res = tool.Run(ctx, tl, call)
	}
	ended()
	res.Content += contextSuffix(hook.PreToolUse, a.pre)
	if !res.IsError && rt.nested != nil {
		res.Content += t.nestedMemoryFor(tl, call)
	}
	return res, failures
}

// after runs the POST_TOOL_USE (or POST_TOOL_USE_FAILURE) hooks of an
// executed call and returns its observation.
func (t *turn) after(a admitted, res tool.Result) tool.Result {
	rt, call := t.rt, a.call
	switch {
	case !res.IsError && rt.hooks.Has(hook.PostToolUse):
		h := a.hooks
		if h == nil {
			h = new(toolHooks)
		}
		p := &h.post
		*p = hook.PostToolUsePayload{Common: t.common(), ToolCall: t.hookCall(call, a.tl), Output: res.Content}
		if res.Response != nil {
			if b, err := json.Marshal(res.Response); err == nil && len(b) > 0 && b[0] == '{' {
				p.Response = b
			}
		}
		out := t.runHookIn(&h.postF, p)
		if out.Rewritten {
			// The observation the hook made of it (a redaction): the model
			// sees that, the tool's own result is not kept.
			res.Content = out.Payload.(*hook.PostToolUsePayload).Output
		}
		if out.Action == hook.Block {
			res.Content += fmt.Sprintf("\n\n<hook-feedback hook=%q by=%q>\n%s\n</hook-feedback>", hook.PostToolUse, out.By, out.Reason)
		}
		res.Content += contextSuffix(hook.PostToolUse, out.Context)
	case res.IsError && rt.hooks.Has(hook.PostToolUseFailure):
		out := t.runHook(&hook.PostToolUseFailurePayload{Common: t.common(), ToolCall: t.hookCall(call, a.tl), Error: res.Content,
			Interrupted: errors.Is(context.Cause(t.ctx), ErrInterrupted)})
		res.Content += contextSuffix(hook.PostToolUseFailure, out.Context)
	}
	return res
}

func (t *turn) middlewareFailed(toolUseID string, failures []middleware.Failure) {
	for _, f := range failures {
		t.emit(event.MiddlewareFailed, &event.MiddlewareFailedData{ToolUseID: toolUseID, Chain: f.Chain, Middleware: f.Middleware, Error: f.Err.Error()})
	}
}

// hookCall is call c of tool tl as the tool hooks see it.
func (t *turn) hookCall(c *tool.Call, tl tool.Tool) hook.ToolCall {
	tc := hook.ToolCall{ToolName: c.Name, ToolUseID: c.ID, Arguments: c.Input}
	if tl != nil {
		a := tool.AccessOf(tl, c.Input)
		tc.Reads, tc.Writes, tc.Command = a.Reads, a.Writes, a.Command
		tc.Aliases = tool.TraitsOf(tl).Aliases
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
func (t *turn) authorize(call *tool.Call, tl tool.Tool, hookSays hook.Action, hookBy string, d *decided) (tool.Result, bool) {
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
			d.by("none", "", "no policy is set")
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
		d.by("parked", string(policy.ScopeOnce), "approved while the session was parked")
		return tool.Result{}, true
	}
	if (hookSays == hook.Defer || hookSays == hook.RequestPermission) && pol != nil {
		// A person is to decide, unless the policy's mode asks no one.
		if v := pol.Asking(policy.Verdict{Decision: policy.Ask, Rule: "hook", Reason: fmt.Sprintf("Not run: a PRE_TOOL_USE hook (%s) asked for a person's decision", hookBy)}); v.Decision == policy.Deny {
			return t.blocked(call, "hook:"+hookBy, v.Reason), false
		}
	}
	if hookSays == hook.Defer {
		reason := fmt.Sprintf("a PRE_TOOL_USE hook (%s) deferred the call to a person", hookBy)
		if why := t.cannotWait(); why != "" {
			return t.blocked(call, "hook:"+hookBy, fmt.Sprintf("Not run: %s, and %s.", reason, why)), false
		}
		t.emit(event.ApprovalRequested, &event.ApprovalData{ToolUseID: call.ID, ToolName: call.Name, Input: call.Input, Reason: reason})
		t.res.Parked = &Parked{ToolUseID: call.ID, ToolName: call.Name, Input: call.Input, Reason: reason, Rules: verdict.Suggestions}
		t.notifyPermission(call.Name)
		t.emit(event.ApprovalResolved, &event.ApprovalData{ToolUseID: call.ID, ToolName: call.Name, Input: call.Input, Reason: "parked: a person decides later", By: "hook:" + hookBy})
		return tool.Result{Content: "parked", IsError: true}, false
	}
	if hookSays == hook.RequestPermission && verdict.Decision == policy.Allow {
		verdict = policy.Verdict{Decision: policy.Ask, Reason: "a PRE_TOOL_USE hook asked for permission", Rule: "hook"}
	}
	if verdict.Decision != policy.Ask {
		d.by("policy", verdict.Rule, verdict.Reason)
		return tool.Result{}, true
	}
	if t.approved(preq) {
		d.by("approval", "", "an earlier \"always allow\" approval, or a rule granted for the turn, covers it")
		return tool.Result{}, true
	}
	if hookSays == hook.Allow {
		// The hook's allow is the approval the ask wanted.
		t.emit(event.ApprovalResolved, &event.ApprovalData{ToolUseID: call.ID, ToolName: call.Name, Input: call.Input, Reason: "allowed by a PRE_TOOL_USE hook", Allowed: true, Scope: string(policy.ScopeOnce), By: "hook:" + hookBy})
		d.by("hook:"+hookBy, "", "allowed by a PRE_TOOL_USE hook")
		return tool.Result{}, true
	}

	t.emit(event.ApprovalRequested, &event.ApprovalData{ToolUseID: call.ID, ToolName: call.Name, Input: call.Input, Reason: verdict.Reason})
	resolve := func(allowed bool, scope, by, reason string) (tool.Result, bool) {
		t.emit(event.ApprovalResolved, &event.ApprovalData{ToolUseID: call.ID, ToolName: call.Name, Input: call.Input, Reason: reason, Allowed: allowed, Scope: scope, By: by})
		if allowed {
			d.by(by, scope, reason)
			return tool.Result{}, true
		}
		return t.blocked(call, by, reason), false
	}
	if rt.hooks.Has(hook.PermissionRequest) {
		out := t.runHook(&hook.PermissionRequestPayload{Common: t.common(), ToolCall: t.hookCall(call, tl), Reason: verdict.Reason, Suggestion: verdict.Suggest})
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
				for _, by := range out.RewrittenBy {
					d.rewritten = append(d.rewritten, "hook:"+by)
				}
			}
			return resolve(true, string(policy.ScopeOnce), "hook:"+out.By, out.Reason)
		case hook.Deny:
			return resolve(false, "", "hook:"+out.By, fmt.Sprintf("Denied by hook %s: %s", out.By, out.Reason))
		}
	}
	// A person is told before the approver asks, except where no one is
	// asked now: Headless refuses, and Parking parks (told below).
	_, headless := rt.approver.(policy.Headless)
	_, parking := rt.approver.(policy.Parking)
	if !headless && !parking {
		t.notifyPermission(call.Name)
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
		if parking {
			t.notifyPermission(call.Name)
		}
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

// notifyPermission tells the runtime's Notifier that a call of tool waits
// for a person's approval.
func (t *turn) notifyPermission(tool string) {
	if n := t.rt.notifier; n != nil {
		n.Notify(hook.Notification{Common: t.common(), Type: hook.NotifyPermission, Title: "orca",
			Message: "orca needs your permission to use " + tool})
	}
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
	if ok && t.halting() {
		t.finish(t.halted())
		return false
	}
	return ok && !t.stopped()
}
