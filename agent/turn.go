package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm"
)

// turn is the state of one execution.
type turn struct {
	e   *Executor
	rt  *Runtime
	ctx context.Context
	req *Request
	res *Result
	// msgs is History followed by this turn's messages.
	msgs []llm.Message
}

// observed reports whether anyone receives this turn's events; when no one
// does, the executor does not build them.
func (t *turn) observed() bool { return t.req.OnEvent != nil || t.rt.bus != nil }

func (t *turn) emit(name event.Name, data any) {
	if !t.observed() {
		return
	}
	now := time.Now
	if t.e.Now != nil {
		now = t.e.Now
	}
	e := event.Event{
		Name:        name,
		Time:        now(),
		RuntimeID:   t.res.RuntimeID,
		SessionID:   t.res.SessionID,
		TurnID:      t.res.TurnID,
		ExecutionID: t.res.ExecutionID,
		Data:        data,
	}
	if t.rt.bus != nil {
		t.rt.bus.Publish(e)
	}
	if t.req.OnEvent != nil {
		t.req.OnEvent(e)
	}
}

// common is the envelope of this turn's hook payloads.
func (t *turn) common() hook.Common {
	return hook.Common{RuntimeID: t.res.RuntimeID, SessionID: t.res.SessionID, TurnID: t.res.TurnID, Cwd: t.rt.fs.Root()}
}

// runHook runs a hook and reports its failures as hook_failed events.
func (t *turn) runHook(p hook.Payload) hook.Outcome {
	out := t.rt.hooks.Run(t.ctx, p)
	for _, f := range out.Failures {
		t.emit(event.HookFailed, &event.HookFailedData{Hook: string(f.Hook), Handler: f.Handler, Error: f.Err.Error(), Violation: f.Violation, FailClosed: f.FailClosed})
	}
	return out
}

// contextBlocks turns context added by hooks into text blocks.
func contextBlocks(hookName hook.Name, ctx []string) []llm.Block {
	out := make([]llm.Block, len(ctx))
	for i, c := range ctx {
		out[i] = llm.TextBlock(fmt.Sprintf("<hook-context hook=%q>\n%s\n</hook-context>", hookName, c))
	}
	return out
}

func (t *turn) run() {
	def := &t.rt.def
	t.emit(event.TurnStarted, &event.TurnStartedData{Input: t.req.Input})

	input := []llm.Block{llm.TextBlock(t.req.Input)}
	if t.rt.hooks.Has(hook.UserPromptSubmit) {
		out := t.runHook(&hook.UserPromptSubmitPayload{Common: t.common(), Prompt: t.req.Input})
		if out.Action == hook.Block {
			t.res.Reason = fmt.Sprintf("blocked by hook %s: %s", out.By, out.Reason)
			t.msgs = t.req.History
			t.finish(StopBlocked)
			return
		}
		input[0].Text = out.Payload.(*hook.UserPromptSubmitPayload).Prompt
		input = append(input, contextBlocks(hook.UserPromptSubmit, out.Context)...)
	}
	if t.rt.hooks.Has(hook.TurnStart) {
		out := t.runHook(&hook.TurnStartPayload{Common: t.common(), Input: input[0].Text})
		input = append(input, contextBlocks(hook.TurnStart, out.Context)...)
	}

	t.msgs = make([]llm.Message, len(t.req.History), len(t.req.History)+1+2*4)
	copy(t.msgs, t.req.History)
	t.msgs = append(t.msgs, llm.Message{Role: llm.RoleUser, Content: input})

	for t.res.Iterations < def.MaxIterations {
		if err := t.ctx.Err(); err != nil {
			t.fail(fmt.Errorf("turn cancelled before iteration %d: %w", t.res.Iterations+1, err))
			return
		}
		t.res.Iterations++
		t.emit(event.IterationStarted, &event.IterationStartedData{Iteration: t.res.Iterations})
		t.injectQueued()

		resp, err := t.callModel()
		if err != nil {
			t.fail(err)
			return
		}
		msg := resp.Message
		msg.Role = llm.RoleAssistant
		t.msgs = append(t.msgs, msg)

		uses := 0
		for _, b := range msg.Content {
			if b.Type == llm.BlockToolUse {
				uses++
			}
		}
		if uses > 0 {
			t.msgs = append(t.msgs, t.runTools(msg.Content, uses))
			if err := t.ctx.Err(); err != nil {
				t.fail(fmt.Errorf("turn cancelled during tool calls: %w", err))
				return
			}
			continue
		}
		// The model answered. Messages the user sent meanwhile, or a STOP
		// hook, may send it back to work while iterations remain.
		if t.res.Iterations < def.MaxIterations {
			if queued := t.drainQueue(); len(queued) > 0 {
				t.msgs = append(t.msgs, llm.Message{Role: llm.RoleUser, Content: textBlocks(queued)})
				t.emit(event.UserMessageInjected, &event.UserMessageData{Iteration: t.res.Iterations, Messages: queued})
				continue
			}
			if t.rt.hooks.Has(hook.Stop) {
				out := t.runHook(&hook.StopPayload{Common: t.common(), Answer: msg.Text(), Iterations: t.res.Iterations})
				if out.Action == hook.Revise {
					t.msgs = append(t.msgs, llm.Message{Role: llm.RoleUser, Content: []llm.Block{
						llm.TextBlock(fmt.Sprintf("<hook-instruction hook=%q by=%q>\n%s\n</hook-instruction>", hook.Stop, out.By, out.Instruction)),
					}})
					continue
				}
			}
		}
		t.res.Answer = msg.Text()
		t.finish(StopAnswered)
		return
	}
	t.finish(StopMaxIterations)
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
	last := &t.msgs[len(t.msgs)-1]
	last.Content = append(last.Content, textBlocks(queued)...)
	t.emit(event.UserMessageInjected, &event.UserMessageData{Iteration: t.res.Iterations, Messages: queued})
}

func (t *turn) drainQueue() []string {
	if t.rt.queues == nil {
		return nil
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
	t.res.StopReason = reason
	if len(t.msgs) > len(t.req.History) {
		t.res.Messages = t.msgs[len(t.req.History):]
	}
	if t.observed() {
		d := &event.TurnCompletedData{
			StopReason: string(reason),
			Answer:     t.res.Answer,
			Reason:     t.res.Reason,
			Iterations: t.res.Iterations,
			ToolCalls:  t.res.ToolCalls,
			Usage:      t.res.Usage,
		}
		if t.res.Err != nil {
			d.Error = t.res.Err.Error()
		}
		t.emit(event.TurnCompleted, d)
	}
}
