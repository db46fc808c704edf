package agent

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/intercept"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/tool"
)

// StopReason says how a turn ended.
type StopReason string

// How a turn can end.
const (
	// StopAnswered: the model answered without asking for a tool.
	StopAnswered StopReason = "answered"
	// StopMaxIterations: the model was still asking for tools when the
	// iteration limit was reached (the tools of the last response ran).
	StopMaxIterations StopReason = "max_iterations"
	// StopFailed: the turn could not go on (a provider error that retries
	// did not cure, a cancelled context); Result.Err says why.
	StopFailed StopReason = "failed"
	// StopBlocked: the run was refused before it started (by an
	// interceptor); nothing ran.
	StopBlocked StopReason = "blocked"
)

// Request asks for one turn of a session.
type Request struct {
	// SessionID names the conversation; it is the trace id of every model
	// call and the key of per-session tool state. Required.
	SessionID string
	// TurnID names this turn; generated if empty.
	TurnID string
	// Input is the user's message.
	Input string
	// History is the conversation before this turn. It is not modified.
	History []llm.Message
	// OnEvent, if set, receives this execution's events in order, on the
	// goroutine that runs the turn: the per-execution stream. (The runtime's
	// bus, if any, receives them too.)
	OnEvent func(event.Event)
}

// Result says what a turn did.
type Result struct {
	RuntimeID   string
	SessionID   string
	TurnID      string
	ExecutionID string
	StopReason  StopReason
	// Answer is the text of the model's final message when the turn was
	// answered, and empty otherwise (text that came with tool calls is in
	// Messages).
	Answer string
	// Messages are the messages this turn added to the conversation: the
	// user's input, then each assistant message and the tool results that
	// answer it. Every tool use has its result, whatever the ending.
	Messages   []llm.Message
	Usage      llm.Usage
	Iterations int
	ToolCalls  int
	// Err is why the turn failed (StopFailed only).
	Err error
}

// Executor runs turns. The zero value is ready to use; an Executor is safe
// for concurrent use, on one runtime or many.
type Executor struct {
	// Now returns the time stamped on events; time.Now if nil.
	Now func() time.Time
}

// Executor is the delegate of intercept chains.
var _ intercept.Executor[*Runtime, Request, *Result] = (*Executor)(nil)

// NewExecutor returns an executor.
func NewExecutor() *Executor { return &Executor{} }

// Execute runs one turn of req.SessionID on rt. It returns a non-nil Result
// for every valid request; when the turn failed, the error is returned too
// (the same as Result.Err). Unknown tools, invalid arguments and tool
// failures are observations for the model, not failures of the turn.
func (e *Executor) Execute(ctx context.Context, rt *Runtime, req Request) (*Result, error) {
	if rt == nil {
		return nil, errors.New("agent: Execute on a nil runtime")
	}
	if req.SessionID == "" {
		return nil, errors.New("agent: request has no session id")
	}
	t := &turn{
		e:   e,
		rt:  rt,
		ctx: ctx,
		req: &req,
		res: &Result{
			RuntimeID:   rt.id,
			SessionID:   req.SessionID,
			TurnID:      req.TurnID,
			ExecutionID: newID("exec"),
		},
	}
	if t.res.TurnID == "" {
		t.res.TurnID = newID("turn")
	}
	t.run()
	return t.res, t.res.Err
}

func newID(prefix string) string {
	var b [8]byte
	v := rand.Uint64()
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	return prefix + "_" + hex.EncodeToString(b[:])
}

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

func (t *turn) run() {
	def := &t.rt.def
	t.emit(event.TurnStarted, &event.TurnStartedData{Input: t.req.Input})

	t.msgs = make([]llm.Message, len(t.req.History), len(t.req.History)+1+2*4)
	copy(t.msgs, t.req.History)
	t.msgs = append(t.msgs, llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(t.req.Input)}})

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
		if uses == 0 {
			// Messages the user sent while the model worked keep the turn
			// going, if there is an iteration left to answer them.
			if t.res.Iterations < def.MaxIterations {
				if queued := t.drainQueue(); len(queued) > 0 {
					t.msgs = append(t.msgs, llm.Message{Role: llm.RoleUser, Content: textBlocks(queued)})
					t.emit(event.UserMessageInjected, &event.UserMessageData{Iteration: t.res.Iterations, Messages: queued})
					continue
				}
			}
			t.res.Answer = msg.Text()
			t.finish(StopAnswered)
			return
		}
		t.msgs = append(t.msgs, t.runTools(msg.Content, uses))
		if err := t.ctx.Err(); err != nil {
			t.fail(fmt.Errorf("turn cancelled during tool calls: %w", err))
			return
		}
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

// callModel makes one model call, retrying retryable failures with
// exponential backoff (or the provider's Retry-After hint).
func (t *turn) callModel() (*llm.Response, error) {
	def := &t.rt.def
	req := &llm.Request{
		Model:     def.Model,
		System:    def.SystemPrompt,
		Messages:  t.msgs,
		Tools:     t.rt.tools.Definitions(),
		MaxTokens: def.MaxTokens,
		Metadata:  llm.Metadata{TraceID: t.req.SessionID, Feature: llm.FeatureAgent, Component: def.Name},
	}
	var onDelta func(llm.Delta)
	if t.observed() {
		iter := t.res.Iterations
		onDelta = func(d llm.Delta) {
			t.emit(event.LLMDelta, &event.LLMDeltaData{Iteration: iter, Delta: d})
		}
	}
	for attempt := 1; ; attempt++ {
		if t.observed() {
			t.emit(event.LLMCallStarted, &event.LLMCallData{Iteration: t.res.Iterations, Feature: llm.FeatureAgent, Attempt: attempt})
		}
		start := time.Now()
		resp, err := t.rt.client.Generate(t.ctx, req, onDelta)
		if err == nil && resp == nil {
			err = errors.New("model client returned neither a response nor an error")
		}
		if err == nil {
			t.res.Usage = t.res.Usage.Add(resp.Usage)
			if t.observed() {
				u := resp.Usage
				t.emit(event.LLMCallCompleted, &event.LLMCallData{
					Iteration: t.res.Iterations, Feature: llm.FeatureAgent, Attempt: attempt,
					StopReason: resp.StopReason, Usage: &u, Text: resp.Message.Text(), Duration: time.Since(start),
				})
			}
			return resp, nil
		}
		retry := attempt <= def.MaxRetries && llm.Retryable(err) && t.ctx.Err() == nil
		t.emit(event.LLMCallFailed, &event.LLMCallData{
			Iteration: t.res.Iterations, Feature: llm.FeatureAgent, Attempt: attempt,
			Error: err.Error(), Retrying: retry, Duration: time.Since(start),
		})
		if !retry {
			return nil, fmt.Errorf("model call (iteration %d, attempt %d): %w", t.res.Iterations, attempt, err)
		}
		timer := time.NewTimer(backoff(attempt, err))
		select {
		case <-t.ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("model call (iteration %d): waiting to retry after %v: %w", t.res.Iterations, err, t.ctx.Err())
		case <-timer.C:
		}
	}
}

// backoff is 1s, 2s, 4s … capped at 30s, or the provider's hint if it
// gave one (capped at 60s).
func backoff(attempt int, err error) time.Duration {
	var le *llm.Error
	if errors.As(err, &le) && le.RetryAfter > 0 {
		return min(le.RetryAfter, time.Minute)
	}
	return min(time.Second<<(attempt-1), 30*time.Second)
}

// runTools runs every tool use of the assistant message, in order, and
// returns the user message carrying one result per use. Once the context is
// done, the remaining uses are answered as cancelled without running.
func (t *turn) runTools(content []llm.Block, uses int) llm.Message {
	results := make([]llm.Block, 0, uses)
	for i := range content {
		b := &content[i]
		if b.Type != llm.BlockToolUse {
			continue
		}
		if err := t.ctx.Err(); err != nil {
			results = append(results, llm.ToolResultBlock(b.ID, "not run: the turn was cancelled ("+err.Error()+")", true))
			continue
		}
		t.res.ToolCalls++
		call := &tool.Call{ID: b.ID, Name: b.Name, Input: b.Input, RuntimeID: t.res.RuntimeID, SessionID: t.res.SessionID, TurnID: t.res.TurnID}
		var start time.Time
		if t.observed() {
			start = time.Now()
			t.emit(event.ToolExecStarted, &event.ToolData{Iteration: t.res.Iterations, ToolUseID: b.ID, ToolName: b.Name, Input: b.Input})
		}
		r := t.rt.tools.Call(t.ctx, call)
		if t.observed() {
			name := event.ToolExecCompleted
			if r.IsError {
				name = event.ToolExecFailed
			}
			t.emit(name, &event.ToolData{
				Iteration: t.res.Iterations, ToolUseID: b.ID, ToolName: b.Name, Input: b.Input,
				Output: r.Content, IsError: r.IsError, Duration: time.Since(start),
			})
		}
		results = append(results, llm.ToolResultBlock(b.ID, r.Content, r.IsError))
	}
	return llm.Message{Role: llm.RoleUser, Content: results}
}

func (t *turn) fail(err error) {
	t.res.Err = err
	t.finish(StopFailed)
}

func (t *turn) finish(reason StopReason) {
	t.res.StopReason = reason
	t.res.Messages = t.msgs[len(t.req.History):]
	if t.observed() {
		d := &event.TurnCompletedData{
			StopReason: string(reason),
			Answer:     t.res.Answer,
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
