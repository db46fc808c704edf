package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/middleware"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/tool"
)

// recorder witnesses the order in which middleware and the final call run.
type recorder struct {
	mu  sync.Mutex
	log []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, s)
}

func (r *recorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log)
}

// fakeTool is the final call of a tool_execution chain.
type fakeTool struct {
	rec   *recorder
	calls atomic.Int32
}

func (f *fakeTool) run(ctx context.Context, c *tool.Call) (tool.Result, error) {
	f.calls.Add(1)
	if f.rec != nil {
		f.rec.add("tool")
	}
	return tool.Text("tool ran with " + string(c.Input)), nil
}

// fakeProvider is the final call of an llm_execution chain.
type fakeProvider struct {
	rec   *recorder
	calls atomic.Int32
	err   error
}

func (f *fakeProvider) run(ctx context.Context, q *llm.Request) (*llm.Response, error) {
	f.calls.Add(1)
	if f.rec != nil {
		f.rec.add("provider")
	}
	if f.err != nil {
		return nil, f.err
	}
	return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("answer")}}, StopReason: llm.StopEndTurn}, nil
}

func newCall() *tool.Call {
	return &tool.Call{ID: "tu1", Name: "Write", Input: json.RawMessage(`{"path":"a.txt"}`), Scope: scope.Scope{RuntimeID: "rt", SessionID: "s1", TurnID: "t1"}}
}

func TestExecutionOnionOrder(t *testing.T) {
	rec := &recorder{}
	r := middleware.NewRegistry()
	for _, m := range []struct {
		name string
		prio int
	}{{"inner", 100}, {"outer", -100}, {"middle-a", 0}, {"middle-b", 0}} {
		mustRegister(t)(r.RegisterToolExecution(m.name, func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
			rec.add("enter " + m.name)
			defer rec.add("leave " + m.name)
			return next(ctx, c)
		}, middleware.Priority(m.prio)))
		mustRegister(t)(r.RegisterLLMExecution(m.name, func(ctx context.Context, q *llm.Request, next middleware.LLMNext) (*llm.Response, error) {
			rec.add("enter " + m.name)
			defer rec.add("leave " + m.name)
			return next(ctx, q)
		}, middleware.Priority(m.prio)))
	}
	onion := func(final string) []string {
		return []string{
			"enter outer", "enter middle-a", "enter middle-b", "enter inner",
			final,
			"leave inner", "leave middle-b", "leave middle-a", "leave outer",
		}
	}
	ft := &fakeTool{rec: rec}
	res, failures := r.ExecuteTool(context.Background(), newCall(), ft.run)
	if res.IsError || failures != nil || !slices.Equal(rec.get(), onion("tool")) {
		t.Errorf("tool: %+v, %v\n got %q\nwant %q", res, failures, rec.get(), onion("tool"))
	}
	rec.log = nil
	fp := &fakeProvider{rec: rec}
	resp, failures, err := r.ExecuteLLM(context.Background(), &llm.Request{}, fp.run)
	if err != nil || resp.Message.Text() != "answer" || failures != nil || !slices.Equal(rec.get(), onion("provider")) {
		t.Errorf("llm: %v, %v\n got %q\nwant %q", err, failures, rec.get(), onion("provider"))
	}
	if got := r.Names(middleware.ToolExecution); !slices.Equal(got, []string{"outer", "middle-a", "middle-b", "inner"}) {
		t.Errorf("Names = %v", got)
	}
}

// Not calling next short-circuits: nothing inside runs, and the
// middleware's result is the chain's.
func TestShortCircuitUsesTheMiddlewareResult(t *testing.T) {
	r := middleware.NewRegistry()
	inner := 0
	mustRegister(t)(r.RegisterToolExecution("dry-run", func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
		return tool.Text("would write a.txt"), nil
	}))
	mustRegister(t)(r.RegisterToolExecution("inner", func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
		inner++
		return next(ctx, c)
	}, middleware.Priority(1)))
	cached := &llm.Response{StopReason: llm.StopEndTurn}
	mustRegister(t)(r.RegisterLLMExecution("cache", func(ctx context.Context, q *llm.Request, next middleware.LLMNext) (*llm.Response, error) {
		return cached, nil
	}))
	ft, fp := &fakeTool{}, &fakeProvider{}
	res, failures := r.ExecuteTool(context.Background(), newCall(), ft.run)
	if res.Content != "would write a.txt" || res.IsError || failures != nil || ft.calls.Load() != 0 || inner != 0 {
		t.Errorf("tool: %+v, %v, %d tool calls, %d inner", res, failures, ft.calls.Load(), inner)
	}
	resp, failures, err := r.ExecuteLLM(context.Background(), &llm.Request{}, fp.run)
	if resp != cached || err != nil || failures != nil || fp.calls.Load() != 0 {
		t.Errorf("llm: %v, %v, %v, %d provider calls", resp, failures, err, fp.calls.Load())
	}
}

func TestNextTwiceIsRefusedAndTheFirstResultKept(t *testing.T) {
	r := middleware.NewRegistry()
	var second error
	mustRegister(t)(r.RegisterToolExecution("retrier", func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
		if _, err := next(ctx, c); err != nil {
			return tool.Result{}, err
		}
		_, second = next(ctx, c)
		return tool.Result{}, second // the mistake, passed up
	}))
	ft := &fakeTool{}
	res, failures := r.ExecuteTool(context.Background(), newCall(), ft.run)
	checkNamed(t, second, middleware.ToolExecution, "retrier", middleware.ErrNextTwice)
	if ft.calls.Load() != 1 {
		t.Errorf("the tool ran %d times", ft.calls.Load())
	}
	if res.Content != `tool ran with {"path":"a.txt"}` || res.IsError {
		t.Errorf("result = %+v, want the tool's", res)
	}
	if len(failures) != 1 || failures[0].Middleware != "retrier" || !errors.Is(failures[0].Err, middleware.ErrNextTwice) {
		t.Errorf("failures = %v", failures)
	}

	var llmSecond error
	mustRegister(t)(r.RegisterLLMExecution("retrier", func(ctx context.Context, q *llm.Request, next middleware.LLMNext) (*llm.Response, error) {
		resp, _ := next(ctx, q)
		_, llmSecond = next(ctx, q)
		return resp, nil // ignoring the refusal is allowed; the provider still ran once
	}))
	fp := &fakeProvider{}
	resp, failures, err := r.ExecuteLLM(context.Background(), &llm.Request{}, fp.run)
	checkNamed(t, llmSecond, middleware.LLMExecution, "retrier", middleware.ErrNextTwice)
	if err != nil || resp == nil || failures != nil || fp.calls.Load() != 1 {
		t.Errorf("llm: %v, %v, %v, %d provider calls", resp, failures, err, fp.calls.Load())
	}
}

// The one-shot guard holds when goroutines race for next.
func TestNextTwiceConcurrently(t *testing.T) {
	r := middleware.NewRegistry()
	var refused atomic.Int32
	mustRegister(t)(r.RegisterToolExecution("fan-out", func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
		var wg sync.WaitGroup
		var res tool.Result
		var mu sync.Mutex
		for range 16 {
			wg.Go(func() {
				out, err := next(ctx, c)
				if errors.Is(err, middleware.ErrNextTwice) {
					refused.Add(1)
					return
				}
				mu.Lock()
				res = out
				mu.Unlock()
			})
		}
		wg.Wait()
		return res, nil
	}))
	ft := &fakeTool{}
	res, failures := r.ExecuteTool(context.Background(), newCall(), ft.run)
	if ft.calls.Load() != 1 || refused.Load() != 15 || res.IsError || failures != nil {
		t.Errorf("%d tool calls, %d refused, %+v, %v", ft.calls.Load(), refused.Load(), res, failures)
	}
}

func TestToolNextWithAChangedCallIsRefused(t *testing.T) {
	edits := map[string]func(c *tool.Call) *tool.Call{
		"a copy": func(c *tool.Call) *tool.Call {
			d := *c
			return &d
		},
		"input bytes in place": func(c *tool.Call) *tool.Call { c.Input[3] = 'P'; return c },
		"input replaced":       func(c *tool.Call) *tool.Call { c.Input = json.RawMessage(`{"path":"b.txt"}`); return c },
		"id":                   func(c *tool.Call) *tool.Call { c.ID = "tu2"; return c },
		"name":                 func(c *tool.Call) *tool.Call { c.Name = "Bash"; return c },
		"session":              func(c *tool.Call) *tool.Call { c.SessionID = "s2"; return c },
		"nil":                  func(c *tool.Call) *tool.Call { return nil },
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			r := middleware.NewRegistry()
			var refusal error
			mustRegister(t)(r.RegisterToolExecution("editor", func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
				res, err := next(ctx, edit(c))
				refusal = err
				return res, err
			}))
			ft := &fakeTool{}
			res, failures := r.ExecuteTool(context.Background(), newCall(), ft.run)
			checkNamed(t, refusal, middleware.ToolExecution, "editor", middleware.ErrRequestChanged)
			if ft.calls.Load() != 0 {
				t.Error("the changed call reached the tool")
			}
			if !res.IsError || !strings.Contains(res.Content, `"editor"`) || !strings.Contains(res.Content, "changed request") || failures != nil {
				t.Errorf("result = %+v, failures = %v", res, failures)
			}
		})
	}
}

func TestLLMNextWithAChangedRequestIsRefused(t *testing.T) {
	edits := map[string]func(q *llm.Request) *llm.Request{
		"a copy": func(q *llm.Request) *llm.Request {
			c := *q
			return &c
		},
		"model":         func(q *llm.Request) *llm.Request { q.Model = "bigger"; return q },
		"system":        func(q *llm.Request) *llm.Request { q.System = "x"; return q },
		"max tokens":    func(q *llm.Request) *llm.Request { q.MaxTokens++; return q },
		"metadata":      func(q *llm.Request) *llm.Request { q.Metadata.Feature = "other"; return q },
		"message added": func(q *llm.Request) *llm.Request { q.Messages = append(q.Messages, llm.Message{}); return q },
		"messages resliced": func(q *llm.Request) *llm.Request {
			q.Messages = q.Messages[1:]
			return q
		},
		"messages replaced": func(q *llm.Request) *llm.Request { q.Messages = slices.Clone(q.Messages); return q },
		"tools dropped":     func(q *llm.Request) *llm.Request { q.Tools = nil; return q },
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			r := middleware.NewRegistry()
			mustRegister(t)(r.RegisterLLMExecution("editor", func(ctx context.Context, q *llm.Request, next middleware.LLMNext) (*llm.Response, error) {
				return next(ctx, edit(q))
			}))
			fp := &fakeProvider{}
			resp, failures, err := r.ExecuteLLM(context.Background(), conversation(), fp.run)
			checkNamed(t, err, middleware.LLMExecution, "editor", middleware.ErrRequestChanged)
			if fp.calls.Load() != 0 || resp != nil || failures != nil {
				t.Errorf("provider calls %d, resp %v, failures %v", fp.calls.Load(), resp, failures)
			}
		})
	}
}

// The documented limit of the shallow check: an edit in place inside
// Messages is not seen by llm_execution (the cache guard of llm_request
// sees it).
func TestLLMNextDoesNotSeeEditsInsideMessages(t *testing.T) {
	r := middleware.NewRegistry()
	mustRegister(t)(r.RegisterLLMExecution("editor", func(ctx context.Context, q *llm.Request, next middleware.LLMNext) (*llm.Response, error) {
		q.Messages[0].Content[0].Text = "edited"
		return next(ctx, q)
	}))
	fp := &fakeProvider{}
	if _, _, err := r.ExecuteLLM(context.Background(), conversation(), fp.run); err != nil || fp.calls.Load() != 1 {
		t.Errorf("err = %v, provider calls = %d", err, fp.calls.Load())
	}
}

func TestNextAfterReturnIsRefused(t *testing.T) {
	r := middleware.NewRegistry()
	var kept middleware.ToolNext
	mustRegister(t)(r.RegisterToolExecution("leaky", func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
		kept = next
		return tool.Text("later"), nil
	}))
	ft := &fakeTool{}
	call := newCall()
	res, _ := r.ExecuteTool(context.Background(), call, ft.run)
	if res.Content != "later" {
		t.Fatalf("result = %+v", res)
	}
	_, err := kept(context.Background(), call)
	checkNamed(t, err, middleware.ToolExecution, "leaky", middleware.ErrNextAfterReturn)
	if ft.calls.Load() != 0 {
		t.Error("a next called after the chain returned reached the tool")
	}
}

// A wrapper error raised after the tool completed does not discard the
// tool's result: the result is the tool's own, and each middleware that
// raised an error of its own is a Failure.
func TestToolErrorAfterCompletionKeepsTheResult(t *testing.T) {
	errExport := errors.New("span export failed")
	errOther := errors.New("outer's own trouble")
	cases := []struct {
		name         string
		outer, inner middleware.ToolExecutionFunc
		failures     []string // middleware named by the failures
		outerSaw     bool     // the outer middleware saw the inner's error
	}{
		{
			name: "inner rewrites then fails; outer passes the error on",
			inner: func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
				res, err := next(ctx, c)
				if err != nil {
					return res, err
				}
				return tool.Text("rewritten"), errExport
			},
			failures: []string{"inner"},
			outerSaw: true,
		},
		{
			name: "inner panics after next",
			inner: func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
				next(ctx, c)
				panic("metrics backend gone")
			},
			failures: []string{"inner"},
			outerSaw: true,
		},
		{
			name: "outer wraps the inner error with %w: still one failure",
			outer: func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
				res, err := next(ctx, c)
				if err != nil {
					return res, fmt.Errorf("outer: %w", err)
				}
				return res, nil
			},
			inner: func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
				next(ctx, c)
				return tool.Result{}, errExport
			},
			failures: []string{"inner"},
		},
		{
			name: "outer replaces the inner error: two failures",
			outer: func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
				res, err := next(ctx, c)
				if err != nil {
					return res, errOther
				}
				return res, nil
			},
			inner: func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
				next(ctx, c)
				return tool.Result{}, errExport
			},
			failures: []string{"inner", "outer"},
		},
		{
			name: "outer rewrites then fails",
			outer: func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
				next(ctx, c)
				return tool.Text("rewritten"), errOther
			},
			failures: []string{"outer"},
		},
		{
			name: "outer swallows the inner error: the tool's result, the failure still reported",
			outer: func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
				if _, err := next(ctx, c); err != nil {
					return tool.Text("fallback"), nil
				}
				return tool.Text("fine"), nil
			},
			inner: func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
				next(ctx, c)
				return tool.Result{}, errExport
			},
			failures: []string{"inner"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := middleware.NewRegistry()
			var outerSaw error
			outer := tc.outer
			if outer == nil {
				outer = func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
					res, err := next(ctx, c)
					outerSaw = err
					return res, err
				}
			}
			inner := tc.inner
			if inner == nil {
				inner = passToolExec
			}
			mustRegister(t)(r.RegisterToolExecution("outer", outer, middleware.Priority(1)))
			mustRegister(t)(r.RegisterToolExecution("inner", inner, middleware.Priority(2)))
			ft := &fakeTool{}
			res, failures := r.ExecuteTool(context.Background(), newCall(), ft.run)
			if ft.calls.Load() != 1 || res.Content != `tool ran with {"path":"a.txt"}` || res.IsError {
				t.Errorf("result = %+v after %d tool calls, want the tool's own", res, ft.calls.Load())
			}
			var got []string
			for _, f := range failures {
				got = append(got, f.Middleware)
				if f.Chain != middleware.ToolExecution || f.Err == nil {
					t.Errorf("failure %+v", f)
				}
			}
			if !slices.Equal(got, tc.failures) {
				t.Errorf("failures name %v, want %v (%v)", got, tc.failures, failures)
			}
			if tc.outerSaw {
				checkNamed(t, outerSaw, middleware.ToolExecution, "inner", nil)
			}
		})
	}
}

func TestToolErrorBeforeCompletionIsAnErrorResult(t *testing.T) {
	errDenied := errors.New("quota exhausted")
	cases := map[string]middleware.ToolExecutionFunc{
		"returns an error": func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
			return tool.Text("ignored"), errDenied
		},
		"panics": func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
			panic(errDenied)
		},
	}
	for name, fn := range cases {
		t.Run(name, func(t *testing.T) {
			r := middleware.NewRegistry()
			var outerSaw error
			mustRegister(t)(r.RegisterToolExecution("outer", func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
				res, err := next(ctx, c)
				outerSaw = err
				return res, err
			}))
			mustRegister(t)(r.RegisterToolExecution("quota", fn, middleware.Priority(1)))
			ft := &fakeTool{}
			res, failures := r.ExecuteTool(context.Background(), newCall(), ft.run)
			if ft.calls.Load() != 0 || failures != nil {
				t.Errorf("%d tool calls, failures %v", ft.calls.Load(), failures)
			}
			want := `tool_execution middleware "quota": `
			if !res.IsError || !strings.HasPrefix(res.Content, want) || !strings.Contains(res.Content, "quota exhausted") {
				t.Errorf("result = %+v, want an error naming the middleware", res)
			}
			checkNamed(t, outerSaw, middleware.ToolExecution, "quota", errDenied)
		})
	}
}

// An error of the tool itself passes through the middleware unblamed.
func TestToolFinalErrorIsNotBlamedOnMiddleware(t *testing.T) {
	r := middleware.NewRegistry()
	mustRegister(t)(r.RegisterToolExecution("pass", passToolExec))
	final := func(ctx context.Context, c *tool.Call) (tool.Result, error) {
		return tool.Result{}, context.Canceled
	}
	for _, reg := range []*middleware.Registry{r, middleware.NewRegistry()} {
		res, failures := reg.ExecuteTool(context.Background(), newCall(), final)
		if !res.IsError || res.Content != context.Canceled.Error() || failures != nil {
			t.Errorf("result = %+v, failures %v", res, failures)
		}
	}
}

func TestLLMErrorAfterCompletionKeepsTheResponse(t *testing.T) {
	errExport := errors.New("span export failed")
	r := middleware.NewRegistry()
	var outerSaw error
	mustRegister(t)(r.RegisterLLMExecution("outer", func(ctx context.Context, q *llm.Request, next middleware.LLMNext) (*llm.Response, error) {
		resp, err := next(ctx, q)
		outerSaw = err
		return resp, err
	}))
	mustRegister(t)(r.RegisterLLMExecution("tracer", func(ctx context.Context, q *llm.Request, next middleware.LLMNext) (*llm.Response, error) {
		if _, err := next(ctx, q); err != nil {
			return nil, err
		}
		return &llm.Response{StopReason: llm.StopRefusal}, errExport // a rewrite, then a failure
	}, middleware.Priority(1)))
	fp := &fakeProvider{}
	resp, failures, err := r.ExecuteLLM(context.Background(), conversation(), fp.run)
	if err != nil || resp == nil || resp.Message.Text() != "answer" || fp.calls.Load() != 1 {
		t.Fatalf("resp %v, err %v, %d provider calls; want the provider's response", resp, err, fp.calls.Load())
	}
	if len(failures) != 1 || failures[0].Chain != middleware.LLMExecution || failures[0].Middleware != "tracer" || failures[0].Err != errExport {
		t.Errorf("failures = %v", failures)
	}
	checkNamed(t, outerSaw, middleware.LLMExecution, "tracer", errExport)
}

func TestLLMErrorBeforeCompletionIsReturned(t *testing.T) {
	errLimit := errors.New("tenant over budget")
	r := middleware.NewRegistry()
	mustRegister(t)(r.RegisterLLMExecution("budget", func(ctx context.Context, q *llm.Request, next middleware.LLMNext) (*llm.Response, error) {
		return nil, errLimit
	}))
	fp := &fakeProvider{}
	resp, failures, err := r.ExecuteLLM(context.Background(), conversation(), fp.run)
	checkNamed(t, err, middleware.LLMExecution, "budget", errLimit)
	if resp != nil || failures != nil || fp.calls.Load() != 0 {
		t.Errorf("resp %v, failures %v, %d provider calls", resp, failures, fp.calls.Load())
	}
}

// A provider error passes through the middleware unwrapped, so that the
// loop's retry still recognises it.
func TestLLMProviderErrorPassesThroughUnblamed(t *testing.T) {
	r := middleware.NewRegistry()
	mustRegister(t)(r.RegisterLLMExecution("pass", passLLMExec))
	mustRegister(t)(r.RegisterLLMExecution("annotate", func(ctx context.Context, q *llm.Request, next middleware.LLMNext) (*llm.Response, error) {
		resp, err := next(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("attempt failed: %w", err)
		}
		return resp, nil
	}, middleware.Priority(1)))
	fp := &fakeProvider{err: &llm.Error{Kind: llm.KindRateLimited, StatusCode: 429, Message: "slow down"}}
	resp, failures, err := r.ExecuteLLM(context.Background(), conversation(), fp.run)
	if resp != nil || failures != nil || !errors.Is(err, llm.ErrRateLimited) || !llm.Retryable(err) {
		t.Fatalf("resp %v, failures %v, err %v", resp, failures, err)
	}
	if me := (*middleware.Error)(nil); errors.As(err, &me) {
		t.Errorf("the provider's error was blamed on %q", me.Middleware)
	}
}

func TestLLMNilResponseIsAnError(t *testing.T) {
	r := middleware.NewRegistry()
	mustRegister(t)(r.RegisterLLMExecution("empty", func(ctx context.Context, q *llm.Request, next middleware.LLMNext) (*llm.Response, error) {
		return nil, nil
	}))
	_, _, err := r.ExecuteLLM(context.Background(), conversation(), (&fakeProvider{}).run)
	checkNamed(t, err, middleware.LLMExecution, "empty", middleware.ErrNilResult)
}

// A panic of the tool or provider is not a middleware's: it reaches the
// caller as it would without middleware.
func TestFinalPanicPropagatesUnchanged(t *testing.T) {
	r := middleware.NewRegistry()
	var outerDeferred bool
	mustRegister(t)(r.RegisterToolExecution("outer", func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
		defer func() { outerDeferred = true }()
		return next(ctx, c)
	}))
	mustRegister(t)(r.RegisterToolExecution("inner", passToolExec, middleware.Priority(1)))
	mustRegister(t)(r.RegisterLLMExecution("pass", passLLMExec))
	for name, run := range map[string]func(){
		"tool": func() {
			r.ExecuteTool(context.Background(), newCall(), func(ctx context.Context, c *tool.Call) (tool.Result, error) { panic("tool bug") })
		},
		"provider": func() {
			r.ExecuteLLM(context.Background(), conversation(), func(ctx context.Context, q *llm.Request) (*llm.Response, error) { panic("tool bug") })
		},
	} {
		got := func() (p any) {
			defer func() { p = recover() }()
			run()
			return nil
		}()
		if got != "tool bug" {
			t.Errorf("%s: recovered %v (%T), want the final's own panic value", name, got, got)
		}
	}
	if !outerDeferred {
		t.Error("the middleware's defers did not run while the panic passed")
	}
}

type ctxKey struct{}

// Zero cost when empty: the input comes back as it went in, final is
// called with the caller's own context and request, and nothing is
// allocated.
func TestEmptyRegistryAllocatesNothing(t *testing.T) {
	ctx := context.WithValue(context.Background(), ctxKey{}, "mine")
	call, req := newCall(), conversation()
	resp := &llm.Response{}
	toolFinal := func(c context.Context, got *tool.Call) (tool.Result, error) {
		if c != ctx || got != call {
			t.Error("final did not receive the caller's context and call")
		}
		return tool.Result{Content: "ok"}, nil
	}
	llmFinal := func(c context.Context, got *llm.Request) (*llm.Response, error) {
		if c != ctx || got != req {
			t.Error("final did not receive the caller's context and request")
		}
		return resp, nil
	}
	for _, r := range []*middleware.Registry{middleware.NewRegistry(), nil} {
		allocs := testing.AllocsPerRun(100, func() {
			if c, err := r.ApplyToolRequest(ctx, call); c != call || err != nil {
				t.Error("ApplyToolRequest changed the call")
			}
			if q, err := r.ApplyLLMRequest(ctx, req); q != req || err != nil {
				t.Error("ApplyLLMRequest changed the request")
			}
			if res, f := r.ExecuteTool(ctx, call, toolFinal); res.Content != "ok" || f != nil {
				t.Error("ExecuteTool")
			}
			if got, f, err := r.ExecuteLLM(ctx, req, llmFinal); got != resp || f != nil || err != nil {
				t.Error("ExecuteLLM")
			}
			if !r.Empty() || r.Has(middleware.ToolExecution) {
				t.Error("not empty")
			}
		})
		if allocs != 0 {
			t.Errorf("registry %p: %v allocations per run, want 0", r, allocs)
		}
	}
}

// Calls run on every goroutine while registrations come and go: each call
// sees a whole snapshot (its middleware in priority order, each once), and
// the tool runs exactly once per call.
func TestConcurrentCallsAndRegistrations(t *testing.T) {
	r := middleware.NewRegistry()
	mustRegister(t)(r.RegisterToolExecution("base", passToolExec, middleware.Priority(50)))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			name := fmt.Sprintf("m%d", i%8)
			prio := i % 8 * 10
			un, err := r.RegisterToolExecution(name, func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
				res, err := next(ctx, c)
				res.Content += fmt.Sprintf(" <%02d", prio)
				return res, err
			}, middleware.Priority(prio))
			if err == nil && i%3 != 0 {
				un()
			}
			if i%5 == 0 {
				registerAny(r, middleware.LLMRequest, name)
			}
		}
	})
	var calls atomic.Int32
	final := func(ctx context.Context, c *tool.Call) (tool.Result, error) {
		calls.Add(1)
		return tool.Text("tool"), nil
	}
	var runners sync.WaitGroup
	for range 8 {
		runners.Go(func() {
			for range 300 {
				res, failures := r.ExecuteTool(ctx, newCall(), final)
				marks := strings.Fields(res.Content)[1:]
				// Inner middleware append first: the marks run from the
				// highest priority outwards.
				if res.IsError || failures != nil || !slices.IsSortedFunc(marks, func(a, b string) int { return strings.Compare(b, a) }) {
					t.Errorf("result %q, failures %v", res.Content, failures)
					return
				}
				if _, err := r.ApplyLLMRequest(ctx, conversation()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	runners.Wait()
	cancel()
	wg.Wait()
	if calls.Load() != 8*300 {
		t.Errorf("the tool ran %d times for %d calls", calls.Load(), 8*300)
	}
}

// TestWhen: a tool middleware registered When its predicate says no is
// passed by — the others of its chain still run — and a call no
// middleware is for goes to the tool directly (HasFor says so); the llm
// chains refuse When.
func TestWhen(t *testing.T) {
	rec := &recorder{}
	r := middleware.NewRegistry()
	writes := middleware.When(func(c *tool.Call) bool { return c.Name == "Write" })
	for _, name := range []string{"writes", "all"} {
		var opts []middleware.Option
		if name == "writes" {
			opts = append(opts, writes)
		}
		mustRegister(t)(r.RegisterToolExecution(name, func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
			rec.add(name)
			return next(ctx, c)
		}, opts...))
		mustRegister(t)(r.RegisterToolRequest(name, func(ctx context.Context, c *tool.Call) (*tool.Call, error) {
			rec.add("request " + name)
			return c, nil
		}, opts...))
	}
	ft := &fakeTool{rec: rec}
	read := newCall()
	read.Name = "Read"
	for _, c := range []struct {
		call *tool.Call
		want []string
	}{
		{newCall(), []string{"request writes", "request all", "writes", "all", "tool"}},
		{read, []string{"request all", "all", "tool"}},
	} {
		rec.log = nil
		if _, err := r.ApplyToolRequest(context.Background(), c.call); err != nil {
			t.Fatal(err)
		}
		r.ExecuteTool(context.Background(), c.call, ft.run)
		if !slices.Equal(rec.get(), c.want) {
			t.Errorf("%s: %q, want %q", c.call.Name, rec.get(), c.want)
		}
	}

	only := middleware.NewRegistry()
	mustRegister(t)(only.RegisterToolExecution("writes", func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
		rec.add("writes")
		return next(ctx, c)
	}, writes))
	if !only.HasFor(middleware.ToolExecution, newCall()) || only.HasFor(middleware.ToolExecution, read) || only.HasFor(middleware.ToolRequest, newCall()) {
		t.Error("HasFor")
	}
	rec.log = nil
	if res, failures := only.ExecuteTool(context.Background(), read, ft.run); res.IsError || failures != nil || !slices.Equal(rec.get(), []string{"tool"}) {
		t.Errorf("no middleware for the call: %+v, %v, %q", res, failures, rec.get())
	}
	quiet := func(context.Context, *tool.Call) (tool.Result, error) { return tool.Result{Content: "ok"}, nil }
	allocs := testing.AllocsPerRun(100, func() { only.ExecuteTool(context.Background(), read, quiet) })
	if allocs != 0 {
		t.Errorf("a call no middleware is for: %v allocations", allocs)
	}
	if _, err := only.RegisterLLMExecution("x", func(ctx context.Context, q *llm.Request, next middleware.LLMNext) (*llm.Response, error) {
		return next(ctx, q)
	}, writes); err == nil || !strings.Contains(err.Error(), "When applies to tool_request and tool_execution middleware only") {
		t.Errorf("llm chain with When: %v", err)
	}
}
