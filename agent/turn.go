package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/middleware"
	"github.com/orca-agent/orca/tool"
)

// turn is the state of one execution.
type turn struct {
	e   *Executor
	rt  *Runtime
	ctx context.Context
	req *Request
	res *Result
	// msgs is History followed by this turn's messages (after a
	// compaction: the compacted history followed by them).
	msgs []llm.Message
	// histLen is how many messages of msgs came before the turn (0 after a
	// compaction); recorded is how many have been recorded.
	histLen, recorded int
	// recs is what flush gives Record, reused from call to call.
	recs []Recorded
	// input is the index in msgs of the turn's input message; pairsChecked
	// how much of msgs the pairing check has seen.
	input, pairsChecked int
	start               time.Time
	limits              budget.Limits
	cost                float64
	// answeredBy is the model that served the last model call.
	answeredBy string
	// onDelta emits a model call's deltas (made once per turn; the
	// iteration is read when a delta comes, during its call).
	onDelta func(llm.Delta)
	// next is what the iteration's first model call takes when someone
	// watches (nil once taken, and when no one does).
	next *iteration
	// generate are the llm_execution chain's final calls: without
	// deltas, and with onDelta (see attempt).
	generate [2]middleware.LLMNext
	// link is the link of the fallback chain the model call in progress
	// goes to (0: Collaborators.Client); streamed, whether any of its
	// answer streamed (with a chain only).
	link     int
	streamed bool
	// media is what takesAllMedia found of model.
	media struct {
		model      string
		known, all bool
	}
	// outside: the execution is one tool call made outside any turn
	// (Runtime.CallTool): no conversation of its own, nothing to park.
	outside bool

	// The loop's concerns, each a type of its own beside its code.
	sizing                   // context.go: the prompt's size, as counted and estimated
	continuations            // verify.go: STOP continuations, revisions, a hook's end
	stepState                // step.go: the effects started, a step's pause
	forkAccount              // fork.go: the tool calls of foreground forks
	typedOutput              // output.go: the turn's Output and its corrections
	replyLog                 // transcript.go: what the provider said of each answer
	cutAt                    // cutoff.go: the output token limit an answer was cut at
	calls         callIDSet  // callid.go: the conversation's tool call ids
	prices        priceCache // price.go: the price of the turn's model
	sent          sentCopy   // sent.go: the copy the llm_request middleware get
	grants        grantList  // grants.go: rules granted for the rest of the turn
}

// instruct sends the agent back to work with an instruction.
func (t *turn) instruct(from hook.Name, by, instruction string) {
	t.msgs = append(t.msgs, llm.Message{Role: llm.RoleUser, Content: []llm.Block{
		llm.TextBlock(fmt.Sprintf("<hook-instruction hook=%q by=%q>\n%s\n</hook-instruction>", from, by, instruction)),
	}})
}

// observed reports whether anyone receives this turn's events; when no one
// does, the executor does not build them.
func (t *turn) observed() bool { return t.req.OnEvent != nil || t.rt.bus.Watched() }

func (t *turn) emit(name event.Name, data any) {
	if !t.observed() {
		return
	}
	var now time.Time
	if t.e.Now == nil {
		now = t.clock()
	}
	t.emitAt(name, data, now)
}

// clock is the time now: the turn's start plus the monotonic clock's time
// since, which costs a third less than time.Now (a wall and a monotonic
// read) on hosts whose clock reads are slow, and keeps the turn's times in
// order if the wall clock is set back during it.
func (t *turn) clock() time.Time {
	if t.start.IsZero() {
		return time.Now()
	}
	return t.start.Add(time.Since(t.start))
}

// emitAt is emit of an event that happened at now, a time its caller has
// read already (the start or end of what a duration measures: one clock
// read serves both), unless the executor has a clock of its own.
func (t *turn) emitAt(name event.Name, data any, now time.Time) {
	if !t.observed() {
		return
	}
	if t.e.Now != nil {
		now = t.e.Now()
	}
	e := event.Event{Name: name, Time: now, Scope: t.res.Scope, Data: data}
	if t.rt.bus.Watched() {
		t.rt.bus.Publish(e)
	}
	if t.req.OnEvent != nil {
		t.req.OnEvent(e)
	}
}

// common is the envelope of this turn's hook payloads.
func (t *turn) common() hook.Common {
	c := t.rt.common(t.res.Scope)
	if t.res.Fork() {
		c.Agent = t.rt.def.Name
	}
	if ts := t.rt.transcripts; ts != nil {
		switch {
		case t.res.Fork():
			c.TranscriptPath = ts.sessionPath(t.res.SessionID)
		case t.outside:
			// The session's conversation as its last turn left it: a call
			// from outside adds nothing to it.
			c.TranscriptPath = ts.lastPath(t.res.SessionID)
		default:
			c.TranscriptPath = t.ownTranscript()
		}
	}
	return c
}

// ownTranscript brings the file of this execution's conversation up to
// date and returns its path: "" if the runtime keeps no transcripts or
// the file cannot be written (which is logged; the hook runs without).
func (t *turn) ownTranscript() string {
	ts := t.rt.transcripts
	if ts == nil {
		return ""
	}
	path := ts.sessionPath(t.res.SessionID)
	if t.res.Fork() {
		path = ts.forkPath(t.res.SessionID, t.res.ExecutionID)
	}
	p, err := ts.sync(path, t.res.SessionID, t.rt.fs.Root(), t.msgs, func(i int) (replyMeta, bool) {
		m, ok := t.replies[i]
		return m, ok
	})
	if err != nil {
		t.rt.logger.Warn("hooks get no transcript", "session", t.res.SessionID, "err", err)
	}
	return p
}

// runHook runs a hook and reports its failures as hook_failed events.
func (t *turn) runHook(p hook.Payload) hook.Outcome { return t.runHookIn(nil, p) }

// runHookIn is runHook in the hook.Frame f (nil: the registry's own).
func (t *turn) runHookIn(f *hook.Frame, p hook.Payload) hook.Outcome {
	out := t.rt.hooks.RunIn(t.ctx, f, p)
	if len(out.Failures)+len(out.Messages) > 0 {
		id := toolUseIDOf(p)
		for _, f := range out.Failures {
			t.emit(event.HookFailed, &event.HookFailedData{ToolUseID: id, Hook: string(f.Hook), Handler: f.Handler, Error: f.Err.Error(), Violation: f.Violation, FailClosed: f.FailClosed})
			LogViolation(t.rt.logger, f)
		}
		for _, m := range out.Messages {
			t.emit(event.HookMessage, &event.HookMessageData{ToolUseID: id, Hook: string(p.Hook()), Handler: m.Handler, Message: m.Text})
		}
	}
	if out.EndTurn != "" && t.ended == "" {
		t.ended = fmt.Sprintf("ended by hook %s: %s", out.By, out.EndTurn)
	}
	return out
}

// LogViolation logs f as an error on logger when it is a contract
// violation — a handler that answered what its hook does not allow, a
// mistake in its program rather than a failure of the moment — so that it
// is seen where the program logs, not only as a hook_failed event; the
// decision was ignored (or, fail-closed, blocked the call).
func LogViolation(logger *slog.Logger, f hook.Failure) {
	if !f.Violation || logger == nil {
		return
	}
	what := "its decision was ignored"
	if f.FailClosed {
		what = "fail-closed: it blocked"
	}
	logger.Error("a hook handler answered outside its hook's contract; "+what, "hook", string(f.Hook), "handler", f.Handler, "err", f.Err)
}

// toolUseIDOf returns the call a tool hook's payload is about, or "".
func toolUseIDOf(p hook.Payload) string {
	switch p := p.(type) {
	case *hook.PreToolUsePayload:
		return p.ToolUseID
	case *hook.PostToolUsePayload:
		return p.ToolUseID
	case *hook.PostToolUseFailurePayload:
		return p.ToolUseID
	case *hook.PermissionRequestPayload:
		return p.ToolUseID
	}
	return ""
}

// hookContext is how context a hook added is shown to the model.
func hookContext(n hook.Name, c string) string {
	return fmt.Sprintf("<hook-context hook=%q>\n%s\n</hook-context>", n, c)
}

// contextBlocks turns context added by hooks into text blocks.
func contextBlocks(hookName hook.Name, ctx []string) []llm.Block {
	out := make([]llm.Block, len(ctx))
	for i, c := range ctx {
		out[i] = llm.TextBlock(hookContext(hookName, c))
	}
	return out
}

func (t *turn) run() {
	def := &t.rt.def
	t.start = time.Now()
	t.limits = def.Budget
	if t.req.Budget != nil {
		t.limits = *t.req.Budget
	}
	if st := t.req.Step; st != nil && t.req.Continue && st.Steps > 0 {
		// The turn goes on from its last step: its counts go on, and it
		// started already.
		t.res.Iterations, t.stops, t.revisions, t.corrections = st.Iterations, st.Stops, st.Revisions, st.Corrections
	} else {
		t.emit(event.TurnStarted, &event.TurnStartedData{Input: t.req.Input, Attachments: llm.Attachments(t.req.Media)})
	}
	t.out = t.rt.output
	if t.req.Output != nil {
		o, err := compileOutput(t.req.Output, t.rt.client)
		if err != nil {
			t.fail(fmt.Errorf("agent: %w", err))
			return
		}
		t.out = o
	}
	t.msgs = t.req.History
	t.histLen = len(t.req.History)
	t.recorded = len(t.req.History)
	t.promptTokens = t.req.PromptTokens
	if t.limits.WallTime > 0 {
		// The wall-time budget is a deadline: a model or tool call still
		// running when it passes is cancelled.
		left := t.limits.WallTime - t.req.Spent.WallTime
		var cancel context.CancelFunc
		t.ctx, cancel = context.WithTimeoutCause(t.ctx, max(left, 0), errWallTime)
		defer cancel()
	}

	input := []llm.Block{llm.TextBlock(t.req.Input)}
	for _, m := range t.req.Media {
		if m != nil {
			input = append(input, llm.MediaBlock(m))
		}
	}
	// Request.Context is what SESSION_START hooks added — for a fork,
	// what its SUBAGENT_START hooks added.
	from := hook.SessionStart
	if t.req.fork != nil {
		from = hook.SubagentStart
	}
	input = append(input, contextBlocks(from, t.req.Context)...)
	if f := t.req.fork; f != nil {
		t.grants.rules = f.grants
	}
	fresh := !t.req.Continue
	// A subagent's prompt is no user's: UserPromptSubmit is not run for it.
	if fresh && t.rt.hooks.Has(hook.UserPromptSubmit) && t.req.fork == nil {
		out := t.runHook(&hook.UserPromptSubmitPayload{Common: t.common(), Prompt: t.req.Input, Attachments: llm.Attachments(t.req.Media)})
		if t.endedByHook() {
			return
		}
		if out.Action == hook.Block {
			t.res.Reason = fmt.Sprintf("blocked by hook %s: %s", out.By, out.Reason)
			t.finish(StopBlocked)
			return
		}
		input[0].Text = out.Payload.(*hook.UserPromptSubmitPayload).Prompt
		input = append(input, contextBlocks(hook.UserPromptSubmit, out.Context)...)
	}
	if fresh && t.req.fork == nil {
		// The user invoking a tool's command ("/skill args").
		for _, x := range t.rt.expanders {
			ex, err := x.Expand(t.ctx, input[0].Text)
			if err != nil {
				t.fail(fmt.Errorf("the command %s: %w", commandName(input[0].Text), err))
				return
			}
			if ex != nil {
				input[0].Text = ex.Text
				if err := t.Grant(ex.Grants); err != nil {
					t.rt.logger.Warn("the grants of an invoked command are not valid rules", "err", err)
				}
				break
			}
		}
	}
	if fresh && t.rt.hooks.Has(hook.TurnStart) {
		out := t.runHook(&hook.TurnStartPayload{Common: t.common(), Input: input[0].Text})
		if t.endedByHook() {
			return
		}
		input = append(input, contextBlocks(hook.TurnStart, out.Context)...)
	}

	msgs := make([]llm.Message, len(t.req.History), len(t.req.History)+1+2*4)
	copy(msgs, t.req.History)
	t.msgs = msgs
	if len(t.req.Resume) > 0 && !t.resume() {
		return
	}
	if fresh {
		t.msgs = append(t.msgs, llm.Message{Role: llm.RoleUser, Content: input})
		t.input = len(t.msgs) - 1
	} else if t.goOn() {
		return
	}

	for t.res.Iterations < def.MaxIterations {
		if t.stopped() || t.endedByHook() || t.pause() {
			return
		}
		if d, ok := t.over(); ok {
			t.exhausted(d)
			return
		}
		t.res.Iterations++
		t.next = nil
		if t.observed() {
			t.next = &iteration{started: event.IterationStartedData{Iteration: t.res.Iterations}}
			t.emit(event.IterationStarted, &t.next.started)
		}
		t.injectQueued()
		if limit := int64(float64(t.window()) * def.CompactAt); def.CompactAt > 0 && t.estimate() > limit {
			if _, ok := t.makeRoom(TriggerAuto, limit); !ok || t.endedByHook() {
				return
			}
		}
		if !t.flush() {
			return
		}

		resp, err := t.callModel()
		t.effects++
		for errors.Is(err, llm.ErrPromptTooLong) && t.ctx.Err() == nil {
			// The provider refused the prompt: shrink it — never send the
			// same prompt again — or end the turn saying why; and keep
			// under the window it showed from then on.
			t.learnWindow(err)
			changed, ok := t.makeRoom(TriggerRecovery, 0)
			if !ok {
				return
			}
			if !changed {
				t.fail(fmt.Errorf("%w (it is about %d tokens; the context window is %d): %w", errNoRoom, t.estimate(), t.window(), err))
				return
			}
			if !t.flush() {
				return
			}
			resp, err = t.callModel()
		}
		if err != nil {
			if t.stopped() {
				return
			}
			t.fail(err)
			return
		}
		msg := resp.Message
		msg.Role = llm.RoleAssistant
		t.calls.unique(t.msgs, &msg)
		t.msgs = append(t.msgs, msg)
		if t.rt.transcripts != nil {
			if t.replies == nil {
				t.replies = map[int]replyMeta{}
			}
			t.replies[len(t.msgs)-1] = replyMeta{model: cmp.Or(resp.Model, t.model()), usage: resp.Usage}
		}
		uses := 0
		for _, b := range msg.Content {
			if b.Type == llm.BlockToolUse {
				uses++
			}
		}
		// An answer with calls is recorded before they run: a crash
		// then knows they started — but with their first results when a
		// crash may run each of them again unasked (runTools). One
		// without is recorded with the turn's end (finish), or before
		// the next model call — unless STOP hooks or a verification run
		// first (see Request.Record).
		var now bool
		switch {
		case t.req.Record == nil:
			now = true // nothing to write: flush only counts it
		case uses > 0:
			now = !t.rerunnable(msg.Content)
		default:
			now = t.checksAnswers()
		}
		if now && !t.flush() {
			return
		}
		if resp.StopReason == llm.StopRefusal {
			t.refused(resp)
			return
		}
		if t.cut != 0 && uses == 0 {
			// The answer was cut off: it stands as written, said so,
			// unverified and not taken as a structured output.
			t.res.Answer = msg.Text()
			t.res.Reason = "the answer was cut off at " + t.limitText()
			t.finish(StopMaxTokens)
			return
		}
		if uses > 0 {
			results, ok := t.runTools(msg.Content, uses)
			if len(results.Content) > 0 || !t.halting() {
				t.msgs = append(t.msgs, results)
			}
			if !ok {
				return
			}
			if t.halting() {
				if t.req.Record != nil {
					t.recorded = len(t.msgs)
				}
				t.finish(t.halted())
				return
			}
			if t.req.Record != nil {
				t.recorded = len(t.msgs) // result by result, as the calls ended
			}
			if t.stopped() || t.endedByHook() {
				return
			}
			if t.given == nil {
				if err := t.outputErr; err != nil {
					// The final-answer tool said what is wrong.
					t.outputErr = nil
					if !t.correct(err) {
						return
					}
				}
				continue
			}
			// The model answered through the final-answer tool.
		}
		answer := msg.Text()
		if t.out == nil && strings.TrimSpace(answer) == "" && t.res.Iterations < def.MaxIterations && !t.nudged() {
			// An empty response is no answer (models give one after tool
			// results, with nothing said): asked again, once.
			t.msgs = append(t.msgs, llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(EmptyResponseNote)}})
			continue
		}
		if t.out != nil {
			var v json.RawMessage
			var err error
			switch {
			case t.given != nil:
				v, t.given = t.given, nil
			case t.out.def != nil:
				err = fmt.Errorf("the answer came as text, not through %s", OutputToolName)
			default:
				v, err = t.out.value(answer)
			}
			if err != nil {
				if !t.correct(err) {
					return
				}
				t.msgs = append(t.msgs, llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(t.out.correction(err))}})
				continue
			}
			answer = string(v)
			t.res.Output = v
		}
		// The model answered. Messages the user sent meanwhile, or a STOP
		// hook, may send it back to work while iterations remain.
		if t.res.Iterations < def.MaxIterations {
			if queued := t.drainQueue(); len(queued) > 0 {
				t.msgs = append(t.msgs, llm.Message{Role: llm.RoleUser, Content: textBlocks(queued)})
				t.emit(event.UserMessageInjected, &event.UserMessageData{Iteration: t.res.Iterations, Messages: queued})
				continue
			}
			var out hook.Outcome
			stopHook := hook.Stop
			switch {
			case !t.res.Fork() && t.rt.hooks.Has(hook.Stop):
				out = t.runHook(&hook.StopPayload{Common: t.common(), Answer: answer, Iterations: t.res.Iterations, Continued: t.stops})
			case t.res.Fork() && t.rt.hooks.Has(hook.SubagentStop):
				stopHook = hook.SubagentStop
				out = t.runHook(&hook.SubagentStopPayload{Common: t.common(), Agent: def.Name, AgentID: t.res.ExecutionID, Answer: answer, Continued: t.stops, AgentTranscriptPath: t.ownTranscript()})
			}
			if out.Action == hook.Revise && out.EndTurn == "" {
				if t.stops < def.MaxContinuations {
					t.stops++
					t.instruct(stopHook, out.By, out.Instruction)
					continue
				}
				// The hook would loop on: the cap ends the turn, saying so.
				t.res.Reason = fmt.Sprintf("%s hooks sent the turn back %d times, the cap (agent.Definition.MaxContinuations); %s asked again", stopHook, t.stops, out.By)
				t.emit(event.HookMessage, &event.HookMessageData{Hook: string(stopHook), Handler: out.By,
					Message: fmt.Sprintf("asked to keep working after %d continuations; orca's cap ends the turn here", t.stops)})
			}
		}
		t.res.Answer = answer
		if t.ended != "" {
			// A STOP hook said stop now (continue: false): the answer
			// stands, unverified.
			t.res.Reason = t.ended
			t.finish(StopAnswered)
			return
		}
		if reason, more := t.verify(answer); more {
			continue
		} else if reason != StopAnswered {
			t.finish(reason)
			return
		}
		t.finish(StopAnswered)
		return
	}
	t.finish(StopMaxIterations)
}

// rerunnable reports whether every call of content is one a crash may
// run again unasked: of a tool of the runtime's that is read-only,
// neither forks nor runs alone (its calls run at once), and is
// idempotent. A crash during such calls, before any is recorded, loses
// the model's answer too (not yet recorded: see runTools): the turn's
// retry asks the model again, as after a crash during the model call.
func (t *turn) rerunnable(content []llm.Block) bool {
	for i := range content {
		u := &content[i]
		if u.Type != llm.BlockToolUse {
			continue
		}
		tl, ok := t.rt.tools.Lookup(u.Name)
		if !ok || !t.parallel(tl) || !tool.TraitsOf(tl).Idempotent {
			return false
		}
	}
	return true
}

// checksAnswers reports whether something that may take long runs
// after an answer before the turn ends: STOP (a fork's SUBAGENT_STOP)
// hooks, a verification.
func (t *turn) checksAnswers() bool {
	stop := hook.Stop
	if t.res.Fork() {
		stop = hook.SubagentStop
	}
	return t.rt.hooks.Has(stop) || t.rt.def.Verify != "" || t.rt.hooks.Has(hook.PostVerify)
}

// halting reports whether runTools stopped before a call: parked for a
// decision, left for the caller (a client tool's), or paused at the end
// of its step.
func (t *turn) halting() bool {
	return t.res.Parked != nil || t.res.ClientCalls != nil || t.paused
}

// halted is how a turn ends whose runTools stopped before a call.
func (t *turn) halted() StopReason {
	switch {
	case t.res.Parked != nil:
		return StopAwaitingApproval
	case t.res.ClientCalls != nil:
		return StopClientTools
	}
	return StopPaused
}

// goOn prepares a turn that continues an earlier attempt (Request.
// Continue): its input is the last user message that is not only tool
// results. It reports whether the turn is over already: History ends with
// the model's answer, which is then the turn's.
func (t *turn) goOn() bool {
	for i := len(t.msgs) - 1; i >= 0; i-- {
		if m := t.msgs[i]; m.Role == llm.RoleUser && !hasResults(m) {
			t.input = i
			break
		}
	}
	last := len(t.msgs) - 1
	if last < 0 || t.msgs[last].Role != llm.RoleAssistant || len(t.msgs[last].ToolUses()) > 0 {
		return false
	}
	answer := t.msgs[last].Text()
	if t.out != nil && t.out.def == nil {
		if v, err := t.out.value(answer); err == nil {
			answer, t.res.Output = string(v), v
		}
	}
	t.res.Answer = answer
	t.finish(StopAnswered)
	return true
}

// model is the model of the turn's own calls: the request's (an alias of
// Definition.ModelAliases resolved), else the definition's.
func (t *turn) model() string { return modelOf(t.rt, t.req.Model) }

// correct counts one more answer sent back for not holding to the
// output schema, or ends the turn failed when the cap is reached.
func (t *turn) correct(err error) bool {
	if t.corrections >= MaxOutputCorrections {
		t.fail(fmt.Errorf("%w after %d corrections: %v", ErrInvalidOutput, t.corrections, err))
		return false
	}
	t.corrections++
	t.emit(event.OutputRejected, &event.OutputRejectedData{Iteration: t.res.Iterations, Correction: t.corrections, Error: err.Error()})
	return true
}

// acceptOutput answers a call of the final-answer tool: the value, if it
// holds, is the answer.
func (t *turn) acceptOutput(u *llm.Block) llm.Block {
	v, err := t.out.check(u.Input)
	if err != nil {
		t.outputErr = err
		return llm.ToolResultBlock(u.ID, t.out.correction(err), true)
	}
	t.given = v
	return llm.ToolResultBlock(u.ID, "Accepted: this is your answer.", false)
}

// endedByHook ends the turn as blocked if a hook ended it, and reports
// whether it did.
func (t *turn) endedByHook() bool {
	if t.ended == "" {
		return false
	}
	t.res.Reason = t.ended
	t.finish(StopBlocked)
	return true
}

// EmptyResponseNote is what the model is told when its response holds no
// text and no tool call: it is asked once more for its answer.
const EmptyResponseNote = "Your last response was empty: no text and no tool call. Answer the user now, or say what stops you."

// nudged reports whether the response just appended (the last message)
// answers EmptyResponseNote: the model is not asked a second time. The
// note leads its message (lines the user queued may follow it there).
func (t *turn) nudged() bool {
	n := len(t.msgs)
	if n < 2 {
		return false
	}
	prev := t.msgs[n-2]
	return prev.Role == llm.RoleUser && len(prev.Content) > 0 && prev.Content[0].Type == llm.BlockText && prev.Content[0].Text == EmptyResponseNote
}

// cutOff reports whether resp, the answer to a request for at most limit
// output tokens (0: the provider's default), was cut off there: the
// provider says so (llm.StopMaxTokens), or, for a response that calls
// tools, it used exactly the limit whatever it says (servers have reported
// such calls as complete, arguments cut in the middle included). Exactly:
// a client may raise the cap it sends (llm/anthropic adds the thinking
// budget), so more than the limit is no sign.
func cutOff(resp *llm.Response, limit int) bool {
	if resp.StopReason == llm.StopMaxTokens {
		return true
	}
	if limit <= 0 || resp.Usage.OutputTokens != int64(limit) {
		return false
	}
	for _, b := range resp.Message.Content {
		if b.Type == llm.BlockToolUse {
			return true
		}
	}
	return false
}

// refused ends the turn as StopRefused after the model's response (the
// last message) stopped with a refusal. Its text is not an answer, and its
// tool calls, if the refusal cut in after them, do not run: each is
// answered as not run, so that the conversation stays well formed.
func (t *turn) refused(resp *llm.Response) {
	t.res.Reason = resp.Refusal
	if t.res.Reason == "" {
		t.res.Reason = "the model refused to answer (its provider gave no reason)"
	}
	var results []llm.Block
	for _, b := range t.msgs[len(t.msgs)-1].Content { // the calls' ids as callIDSet.unique left them
		if b.Type == llm.BlockToolUse {
			results = append(results, llm.ToolResultBlock(b.ID, "Not run: the model's response ended in a refusal.", true))
		}
	}
	if len(results) > 0 {
		t.msgs = append(t.msgs, llm.Message{Role: llm.RoleUser, Content: results})
	}
	t.finish(StopRefused)
}

// errWallTime is the cause of the deadline the wall-time budget sets.
var errWallTime = errors.New("wall-time budget exhausted")

// stopped ends the turn if its context is done and reports whether it did:
// as interrupted, as out of wall time, or as failed.
func (t *turn) stopped() bool {
	if t.ctx.Err() == nil {
		return false
	}
	switch cause := context.Cause(t.ctx); {
	case errors.Is(cause, ErrInterrupted):
		t.finish(StopInterrupted)
	case errors.Is(cause, errWallTime):
		t.exhausted(budget.WallTime)
	default:
		t.fail(fmt.Errorf("turn cancelled after %d iterations: %w", t.res.Iterations, cause))
	}
	return true
}

// spent is what the session has spent, this turn included.
func (t *turn) spent() budget.Spent {
	return t.req.Spent.Add(t.turnSpent())
}

func (t *turn) turnSpent() budget.Spent {
	s := t.counted()
	s.WallTime = time.Since(t.start)
	return s
}

// counted is turnSpent but the wall time, which takes a clock read.
func (t *turn) counted() budget.Spent {
	return budget.Spent{Tokens: t.res.Usage.Total(), CostUSD: t.cost, ToolCalls: int64(t.res.ToolCalls + t.forkCalls)}
}

// over reports which of the session's budgets is exhausted, if one is.
// The clock is read only when the wall time has a limit (twice a step).
func (t *turn) over() (budget.Dimension, bool) {
	s := t.counted()
	if t.limits.WallTime > 0 {
		s.WallTime = time.Since(t.start)
	}
	return t.limits.Exhausted(t.req.Spent.Add(s))
}

func (t *turn) exhausted(d budget.Dimension) {
	t.res.BudgetDimension = d
	t.finish(StopBudgetExhausted)
}

// flush records the messages not recorded yet; on failure it fails the
// turn and returns false.
func (t *turn) flush() bool { return t.record(false) }

// record records the messages not recorded yet, in one call of Record;
// ending says the turn ends with them (Recorded.Ending). On failure it
// fails the turn and returns false.
func (t *turn) record(ending bool) bool {
	switch {
	case t.req.Record == nil:
		t.recorded = len(t.msgs)
		return true
	case t.recorded >= len(t.msgs):
		return true
	}
	return t.commit(t.unrecorded(t.recs[:0], t.turnSpent(), ending))
}

// unrecorded appends to recs the turn's messages not recorded yet, as
// Record takes them.
func (t *turn) unrecorded(recs []Recorded, spent budget.Spent, ending bool) []Recorded {
	for _, m := range t.msgs[t.recorded:] {
		rec := Recorded{Message: m, Usage: t.res.Usage, Spent: spent, Ending: ending}
		if m.Role == llm.RoleAssistant {
			rec.Model = t.answeredBy
		}
		recs = append(recs, rec)
	}
	return recs
}

// commit records recs, the turn's messages not recorded yet and what
// follows them, in one call of Record. On failure it fails the turn and
// returns false.
func (t *turn) commit(recs []Recorded) bool {
	err := t.req.Record(recs)
	clear(recs) // the messages are the conversation's: not held here
	t.recs = recs
	if err != nil {
		t.res.Err = fmt.Errorf("recording the transcript: %w", err)
		t.finish(StopFailed)
		return false
	}
	t.recorded = len(t.msgs)
	return true
}

// estimate is the size of the next prompt in tokens: the last call's
// prompt and answer as the provider counted them, plus about a token per
// four characters of what was added since; before any call, an estimate of
// the whole conversation.
func (t *turn) estimate() int64 {
	n := t.promptTokens
	from := t.sizedUpTo
	if n == 0 {
		from = 0
	}
	from = min(from, len(t.msgs))
	// The characters of msgs[from:] that no provider count covers, kept
	// from call to call (all but the last message, which injectQueued and
	// resume may still extend), so that a turn whose provider reports no
	// usage does not count its whole conversation at every step.
	if t.est.from != from || t.est.upTo < from || t.est.upTo > len(t.msgs) {
		t.est = estimateCache{from: from, upTo: from}
	}
	last := max(len(t.msgs)-1, from)
	for _, m := range t.msgs[t.est.upTo:last] {
		t.est.chars += messageChars(m)
	}
	t.est.upTo = last
	chars := t.est.chars
	if last < len(t.msgs) {
		chars += messageChars(t.msgs[last])
	}
	return n + int64(chars/4)
}

// estimateCache is what estimate counted: the characters of msgs[from:upTo].
type estimateCache struct{ from, upTo, chars int }

func messageChars(m llm.Message) int {
	var chars int
	for _, b := range m.Content {
		chars += len(b.Text) + len(b.Content) + len(b.Input)
		if b.Media != nil {
			chars += mediaChars(b.Media)
		}
	}
	return chars
}

// mediaChars is what an image or a document counts as in the estimate of
// a prompt's size, in characters of text (four to a token): an image as
// Anthropic prices it, width × height / 750 tokens (1,600 when its size
// is unknown); a PDF its bytes (a page of text is some 2 KB of PDF and
// 1,500 to 3,000 tokens, its text and the image of the page).
func mediaChars(m *llm.Media) int {
	switch {
	case m == nil:
		return 0
	case m.MediaType == llm.MediaPDF:
		return max(int(m.Size), len(m.Data), 8000)
	case m.Width > 0 && m.Height > 0:
		return max(m.Width*m.Height/750, 100) * 4
	}
	return 1600 * 4
}

// injectQueued moves the messages queued for the session into the last
// message of the transcript, which is the user's (the turn's input or the
// tool results of the previous iteration; both were built by this turn, so
// History is never touched).
func (t *turn) injectQueued() {
	queued := t.drainQueue()
	if len(queued) == 0 {
		return
	}
	if t.recorded >= len(t.msgs) {
		// The last message is recorded already (tool results are, as the
		// calls end): the messages go in one of their own.
		t.msgs = append(t.msgs, llm.Message{Role: llm.RoleUser, Content: textBlocks(queued)})
		t.emit(event.UserMessageInjected, &event.UserMessageData{Iteration: t.res.Iterations, Messages: queued})
		return
	}
	last := &t.msgs[len(t.msgs)-1]
	last.Content = append(last.Content, textBlocks(queued)...)
	t.emit(event.UserMessageInjected, &event.UserMessageData{Iteration: t.res.Iterations, Messages: queued})
}

func (t *turn) drainQueue() []string {
	if t.rt.queues == nil {
		return nil
	}
	if t.res.Fork() {
		return nil // the user's messages are for the session's own turn
	}
	return t.rt.queues.Drain(t.req.SessionID)
}

func textBlocks(msgs []string) []llm.Block {
	out := make([]llm.Block, len(msgs))
	for i, m := range msgs {
		out[i] = llm.TextBlock(m)
	}
	return out
}

func (t *turn) fail(err error) {
	t.res.Err = err
	t.finish(StopFailed)
}

func (t *turn) finish(reason StopReason) {
	if reason != StopFailed && t.recorded < len(t.msgs) && !t.record(true) {
		return // record finished the turn as failed
	}
	t.res.StopReason = reason
	if reason != StopAnswered {
		t.res.Output = nil
	}
	if len(t.msgs) > t.histLen {
		t.res.Messages = t.msgs[t.histLen:]
	}
	t.res.Transcript = t.msgs
	t.res.PromptTokens = t.promptTokens
	t.res.Spent = t.turnSpent()
	if st := t.req.Step; st != nil {
		t.res.Progress = Progress{Steps: st.Steps + 1, Iterations: t.res.Iterations, Stops: t.stops, Revisions: t.revisions,
			Corrections: t.corrections, CallsPending: reason == StopPaused && t.paused, ReadsNext: reason == StopPaused && t.paused && t.readsNext,
			TraceParent: st.TraceParent}
	}
	if t.req.OnEnd != nil {
		t.req.OnEnd(t.res)
	}
	if reason == StopPaused {
		return // the turn goes on: it has not ended
	}
	if t.observed() {
		d := &event.TurnCompletedData{
			StopReason: string(reason),
			Answer:     t.res.Answer,
			Output:     t.res.Output,
			Reason:     t.res.Reason,
			Iterations: t.res.Iterations,
			ToolCalls:  t.res.ToolCalls,
			Usage:      t.res.Usage,
			Budget:     string(t.res.BudgetDimension),
		}
		if t.res.Err != nil {
			d.Error = t.res.Err.Error()
		}
		t.emit(event.TurnCompleted, d)
	}
	if reason == StopFailed && !t.res.Fork() {
		t.notifyFailure(t.res.Err)
	}
}

// notifyFailure tells the runtime's Notifier that the user's turn ended
// because the model's provider failed with err (any other failure is no
// StopFailure).
func (t *turn) notifyFailure(err error) {
	var le *llm.Error
	if t.rt.notifier == nil || !errors.As(err, &le) {
		return
	}
	t.rt.notifier.Notify(hook.Notification{Common: t.common(), Type: hook.NotifyStopFailure, Title: "orca",
		Message: "orca's turn failed: " + err.Error(), ErrorType: stopFailureType(le.Kind), ErrorMessage: err.Error()})
}

// stopFailureType is Claude Code's StopFailure error_type of a provider
// failure of kind k.
func stopFailureType(k llm.ErrorKind) string {
	switch k {
	case llm.KindRateLimited:
		return "rate_limit"
	case llm.KindAuthentication:
		return "authentication_failed"
	case llm.KindInvalidRequest, llm.KindPromptTooLong:
		return "invalid_request"
	case llm.KindServer, llm.KindOverloaded:
		return "server_error"
	}
	return "unknown"
}

// commandName is the first word of an input that invokes a command.
func commandName(input string) string {
	name, _, _ := tool.SplitCommand(input)
	return "/" + name
}

// window is the context window of the turn's model, in tokens: the
// definition's (or the catalog's), or less where a refusal showed it is
// smaller.
func (t *turn) window() int64 {
	w := t.rt.def.ContextWindow
	if v, ok := t.rt.window(t.model()); ok {
		w = min(w, v)
	}
	return w
}

// learnWindow learns the window of the turn's model from err, a refusal of
// a prompt as too long: the window the provider names, or, where it names
// none, nine tenths of what the refused prompt is estimated at (the window
// is smaller than it). Compaction keeps under it from then on, for every
// turn of the runtime: one refusal, not one after every compaction.
func (t *turn) learnWindow(err error) {
	w := llm.StatedWindow(err)
	if w <= 0 {
		w = t.estimate() * 9 / 10
	}
	if w <= 0 || w >= t.window() {
		return
	}
	model := t.model()
	t.rt.learn(model, w)
	t.rt.logger.Warn("the model refused a prompt as too long: keeping under a smaller context window from now on", "model", model, "window", w, "was", t.rt.def.ContextWindow)
}
