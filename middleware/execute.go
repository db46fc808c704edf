package middleware

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/tool"
)

// ExecuteTool runs call through the tool_execution chain, whose innermost
// next is final (the tool). It never fails: the outcome is a Result for the
// model, plus the middleware that failed after the tool had completed.
//
//   - The chain succeeds: its result.
//   - A middleware fails after the tool completed (returns an error,
//     panics, calls next twice): the tool's own result — not a
//     middleware's rewrite of it, since a chain that failed halfway cannot
//     be trusted to have shaped it — and one Failure per middleware that
//     raised an error of its own.
//   - The chain fails before the tool completed (a middleware refused or
//     broke, or final returned an error): an error Result whose content is
//     the error, which names the middleware that raised it.
//
// Middleware may not change the call on its way to next: the same
// *tool.Call must arrive, with the ID, Name, Input bytes, RuntimeID,
// SessionID and TurnID it had when the chain was entered (a copy of Input
// is taken then, so that an edit in place is caught too). With no
// middleware for the call (When), final is called directly, and an error
// it returns becomes an error Result.
func (r *Registry) ExecuteTool(ctx context.Context, call *tool.Call, final ToolNext) (tool.Result, []Failure) {
	var mws []entry[toolExecFn]
	if s := r.load(); s != nil {
		mws = forCall(s.toolExecution, call)
	}
	if len(mws) == 0 {
		res, err := final(ctx, call)
		if err != nil {
			return tool.Result{Content: err.Error(), IsError: true}, nil
		}
		return res, nil
	}
	o := &onion[*tool.Call, tool.Result, ToolNext, toolShape]{
		chain: ToolExecution, downstream: "tool",
		mws: mws, final: final, shape: takeToolShape(call),
	}
	res, failures, err := o.run(ctx, call)
	if err != nil {
		return tool.Result{Content: err.Error(), IsError: true}, failures
	}
	return res, failures
}

// ExecuteLLM runs req through the llm_execution chain, whose innermost next
// is final (one provider attempt). The caller retries around it, so that
// the chain runs once per attempt.
//
//   - The chain succeeds: its response.
//   - A middleware fails after the provider completed: the provider's own
//     response, a nil error, and one Failure per middleware that raised an
//     error of its own.
//   - The chain fails before the provider completed: the error. One that
//     final returned passes through unwrapped, so that llm.Retryable and
//     errors.Is(err, llm.ErrRateLimited) still see it; one a middleware
//     raised is an *Error naming it.
//
// Middleware may not change the request on its way to next. The check is
// shallow, to stay cheap on long conversations: next must receive the same
// *llm.Request with the same Model, System, MaxTokens and Metadata, and
// Messages and Tools of the same length starting at the same element. That
// catches replacing the request or any of those fields, appending to or
// reslicing Messages or Tools; it does not catch edits in place inside
// Messages or Tools (a block's text, a definition's schema). Such edits
// belong in llm_request middleware, where the cache guard checks them. A
// middleware that returns a nil response without an error fails with
// ErrNilResult. With no middleware, final is called directly.
func (r *Registry) ExecuteLLM(ctx context.Context, req *llm.Request, final LLMNext) (*llm.Response, []Failure, error) {
	s := r.load()
	if s == nil || len(s.llmExecution) == 0 {
		resp, err := final(ctx, req)
		return resp, nil, err
	}
	o := &onion[*llm.Request, *llm.Response, LLMNext, llmShape]{
		chain: LLMExecution, downstream: "provider",
		mws: s.llmExecution, final: final, shape: takeLLMShape(req),
		isNil: nilResponse,
	}
	return o.run(ctx, req)
}

func nilResponse(r *llm.Response) bool { return r == nil }

// shape is what an execution chain remembers of the request it was entered
// with, to tell whether next receives it unchanged.
type shape[Q any] interface {
	// changed says how q differs from the remembered request, or returns
	// "" if it does not.
	changed(q Q) string
}

// onion is one run of an execution chain: its middleware, the final call,
// and the state that makes each next one-shot and keeps the completed
// result.
type onion[Q, R any, N ~func(context.Context, Q) (R, error), S shape[Q]] struct {
	chain      string
	downstream string // "tool" or "provider", for messages
	mws        []entry[func(context.Context, Q, N) (R, error)]
	final      N
	shape      S
	isNil      func(R) bool // reports a result that may not be returned without an error
	steps      []step[Q, R, N, S]
	stepBuf    [4]step[Q, R, N, S] // the steps of short chains, saving an allocation

	completed  atomic.Bool // final returned without an error
	finalPanic atomic.Bool // final did not return (a panic, runtime.Goexit)
	done       R           // final's result; written before completed is set

	mu       sync.Mutex // guards the error bookkeeping below, touched only on failures
	failures []Failure
}

// The states of a step's next.
const (
	fresh  int32 = iota // not called yet
	used                // called once
	closed              // its middleware returned without calling it
)

// step is the next handed to middleware i.
type step[Q, R any, N ~func(context.Context, Q) (R, error), S shape[Q]] struct {
	o       *onion[Q, R, N, S]
	i       int
	state   atomic.Int32
	nextErr error // what next returned, if an error; guarded by o.mu
}

func (o *onion[Q, R, N, S]) run(ctx context.Context, q Q) (R, []Failure, error) {
	if len(o.mws) <= len(o.stepBuf) {
		o.steps = o.stepBuf[:len(o.mws)]
	} else {
		o.steps = make([]step[Q, R, N, S], len(o.mws))
	}
	for i := range o.steps {
		o.steps[i].o, o.steps[i].i = o, i
	}
	res, err := o.invoke(ctx, 0, q)
	o.mu.Lock()
	failures := o.failures
	o.mu.Unlock()
	if !o.completed.Load() || (err == nil && len(failures) == 0) {
		return res, nil, err
	}
	if err != nil && len(failures) == 0 {
		// Every error is raised by someone; should the bookkeeping have
		// missed who, the outermost middleware answers for it rather than
		// the error being dropped with the result kept.
		failures = []Failure{{Chain: o.chain, Middleware: o.mws[0].name, Err: err}}
	}
	return o.done, failures, nil
}

// invoke enters middleware i. Whatever it returns or panics is settled in
// one place: here.
func (o *onion[Q, R, N, S]) invoke(ctx context.Context, i int, q Q) (res R, err error) {
	s := &o.steps[i]
	defer func() {
		s.state.CompareAndSwap(fresh, closed)
		// A panic of the tool or provider is not this middleware's: let it
		// go by untouched.
		if !o.finalPanic.Load() {
			if p := recover(); p != nil {
				var zero R
				res, err = zero, &PanicError{Value: p, Stack: debug.Stack()}
			}
		}
		if err == nil && o.isNil != nil && o.isNil(res) {
			err = ErrNilResult
		}
		if err != nil {
			err = o.blame(i, err)
		}
	}()
	return o.mws[i].fn(ctx, q, N(s.next))
}

// blame settles an error middleware i returned: passed on from its next,
// it stays as it is (and named after whoever raised it); raised by i, it is
// named after i and, if the final call had completed, recorded as a
// Failure.
func (o *onion[Q, R, N, S]) blame(i int, err error) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ne := o.steps[i].nextErr; ne != nil && errors.Is(err, ne) {
		return err
	}
	raw := err
	if me := (*Error)(nil); !errors.As(err, &me) || me.Chain != o.chain {
		err = &Error{Chain: o.chain, Middleware: o.mws[i].name, Err: err}
	}
	if o.completed.Load() {
		o.failures = append(o.failures, Failure{Chain: o.chain, Middleware: o.mws[i].name, Err: raw})
	}
	return err
}

// next proceeds from middleware s.i to the next one, or to final: once,
// with the request the chain was entered with, before s.i returns.
func (s *step[Q, R, N, S]) next(ctx context.Context, q Q) (R, error) {
	o := s.o
	var zero R
	if !s.state.CompareAndSwap(fresh, used) {
		if s.state.Load() == closed {
			return zero, o.misuse(s.i, ErrNextAfterReturn, "it was not passed on")
		}
		return zero, o.misuse(s.i, ErrNextTwice, "the second call was not passed on")
	}
	if what := o.shape.changed(q); what != "" {
		return zero, o.misuse(s.i, ErrRequestChanged, what+"; it was not passed on")
	}
	var res R
	var err error
	if j := s.i + 1; j < len(o.mws) {
		res, err = o.invoke(ctx, j, q)
	} else {
		res, err = o.callFinal(ctx, q)
	}
	if err != nil {
		o.mu.Lock()
		s.nextErr = err
		o.mu.Unlock()
	}
	return res, err
}

func (o *onion[Q, R, N, S]) misuse(i int, sentinel error, detail string) error {
	return &Error{Chain: o.chain, Middleware: o.mws[i].name, Err: fmt.Errorf("%w: %s to the %s", sentinel, detail, o.downstream)}
}

func (o *onion[Q, R, N, S]) callFinal(ctx context.Context, q Q) (res R, err error) {
	returned := false
	defer func() {
		if !returned {
			o.finalPanic.Store(true)
		}
	}()
	res, err = o.final(ctx, q)
	returned = true
	if err == nil {
		o.done = res
		o.completed.Store(true)
	}
	return res, err
}

// toolShape is a tool call as it entered the chain.
type toolShape struct {
	call                                   *tool.Call
	id, name, runtimeID, sessionID, turnID string
	input                                  []byte // a copy
}

func takeToolShape(c *tool.Call) toolShape {
	if c == nil {
		return toolShape{}
	}
	return toolShape{
		call: c, id: c.ID, name: c.Name,
		runtimeID: c.RuntimeID, sessionID: c.SessionID, turnID: c.TurnID,
		input: bytes.Clone(c.Input),
	}
}

func (s toolShape) changed(c *tool.Call) string {
	switch {
	case c != s.call:
		return "a different *tool.Call"
	case c == nil:
		return ""
	case c.ID != s.id:
		return "ID changed"
	case c.Name != s.name:
		return "Name changed"
	case !bytes.Equal(c.Input, s.input):
		return "Input changed"
	case c.RuntimeID != s.runtimeID || c.SessionID != s.sessionID || c.TurnID != s.turnID:
		return "RuntimeID, SessionID or TurnID changed"
	}
	return ""
}

// llmShape is the shallow shape of a model request as it entered the
// chain; see ExecuteLLM for what it does and does not see.
type llmShape struct {
	req           *llm.Request
	model, system string
	maxTokens     int
	meta          llm.Metadata
	nMsgs, nTools int
	msg0          *llm.Message
	tool0         *llm.ToolDefinition
}

func takeLLMShape(r *llm.Request) llmShape {
	s := llmShape{req: r}
	if r == nil {
		return s
	}
	s.model, s.system, s.maxTokens, s.meta = r.Model, r.System, r.MaxTokens, r.Metadata
	s.nMsgs, s.nTools = len(r.Messages), len(r.Tools)
	if s.nMsgs > 0 {
		s.msg0 = &r.Messages[0]
	}
	if s.nTools > 0 {
		s.tool0 = &r.Tools[0]
	}
	return s
}

func (s llmShape) changed(r *llm.Request) string {
	if r != s.req {
		return "a different *llm.Request"
	}
	t := takeLLMShape(r)
	switch {
	case t == s:
		return ""
	case t.model != s.model:
		return "Model changed"
	case t.system != s.system:
		return "System changed"
	case t.maxTokens != s.maxTokens:
		return "MaxTokens changed"
	case t.meta != s.meta:
		return "Metadata changed"
	case t.nMsgs != s.nMsgs || t.msg0 != s.msg0:
		return "Messages changed"
	}
	return "Tools changed"
}
