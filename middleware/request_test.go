package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/middleware"
	"github.com/orca-agent/orca/tool"
)

// Each tool_request middleware receives what the one before it returned,
// in priority order, and the chain returns what the last one returned.
func TestToolRequestRunsInPriorityOrderOnThePreviousOutput(t *testing.T) {
	r := middleware.NewRegistry()
	var seen []*tool.Call
	tag := func(name string) middleware.ToolRequestFunc {
		return func(ctx context.Context, c *tool.Call) (*tool.Call, error) {
			seen = append(seen, c)
			var in map[string]string
			if err := json.Unmarshal(c.Input, &in); err != nil {
				return nil, err
			}
			in["path"] += "/" + name
			b, _ := json.Marshal(in)
			return &tool.Call{ID: c.ID, Name: c.Name, Input: b}, nil // a new call each time
		}
	}
	mustRegister(t)(r.RegisterToolRequest("last", tag("last"), middleware.Priority(50)))
	mustRegister(t)(r.RegisterToolRequest("first", tag("first"), middleware.Priority(-50)))
	mustRegister(t)(r.RegisterToolRequest("middle", tag("middle")))

	call := &tool.Call{ID: "t1", Name: "Read", Input: json.RawMessage(`{"path":"root"}`)}
	got, err := r.ApplyToolRequest(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Input) != `{"path":"root/first/middle/last"}` {
		t.Errorf("input = %s", got.Input)
	}
	if len(seen) != 3 || seen[0] != call || seen[1] == call || string(seen[2].Input) != `{"path":"root/first/middle"}` {
		t.Errorf("each middleware must receive the previous one's output; saw %v", seen)
	}
	if string(call.Input) != `{"path":"root"}` {
		t.Errorf("the caller's call was changed: %s", call.Input)
	}
}

func TestLLMRequestRunsInPriorityOrderOnThePreviousOutput(t *testing.T) {
	r := middleware.NewRegistry()
	add := func(word string) middleware.LLMRequestFunc {
		return func(ctx context.Context, q *llm.Request) (*llm.Request, error) {
			last := &q.Messages[len(q.Messages)-1] // the newest user turn: always editable
			last.Content = append(last.Content, llm.TextBlock(word))
			return q, nil
		}
	}
	mustRegister(t)(r.RegisterLLMRequest("two", add("two"), middleware.Priority(2)))
	mustRegister(t)(r.RegisterLLMRequest("one", add("one"), middleware.Priority(1)))
	mustRegister(t)(r.RegisterLLMRequest("three", add("three"), middleware.Priority(2)))
	req := &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("zero")}}}}
	got, err := r.ApplyLLMRequest(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if txt := got.Messages[0].Text(); txt != "zeroonetwothree" {
		t.Errorf("text = %q", txt)
	}
}

func TestRequestErrorStopsTheChainNamingTheMiddleware(t *testing.T) {
	errDenied := errors.New("path outside the project")
	r := middleware.NewRegistry()
	var ran []string
	for i, name := range []string{"normalise", "guard", "after"} {
		mustRegister(t)(r.RegisterToolRequest(name, func(ctx context.Context, c *tool.Call) (*tool.Call, error) {
			ran = append(ran, name)
			if name == "guard" {
				return c, errDenied // a non-nil call with an error: the error wins
			}
			return c, nil
		}, middleware.Priority(i)))
		mustRegister(t)(r.RegisterLLMRequest(name, func(ctx context.Context, q *llm.Request) (*llm.Request, error) {
			ran = append(ran, "llm "+name)
			if name == "guard" {
				return nil, errDenied
			}
			return q, nil
		}, middleware.Priority(i)))
	}
	got, err := r.ApplyToolRequest(context.Background(), &tool.Call{ID: "1"})
	checkNamed(t, err, middleware.ToolRequest, "guard", errDenied)
	if got != nil {
		t.Errorf("a failed chain returned a call: %+v", got)
	}
	q, err := r.ApplyLLMRequest(context.Background(), &llm.Request{})
	checkNamed(t, err, middleware.LLMRequest, "guard", errDenied)
	if q != nil {
		t.Errorf("a failed chain returned a request: %+v", q)
	}
	if want := []string{"normalise", "guard", "llm normalise", "llm guard"}; !slices.Equal(ran, want) {
		t.Errorf("ran %v, want %v", ran, want)
	}
}

func TestRequestNilResultIsAnError(t *testing.T) {
	r := middleware.NewRegistry()
	mustRegister(t)(r.RegisterToolRequest("drop", func(ctx context.Context, c *tool.Call) (*tool.Call, error) { return nil, nil }))
	mustRegister(t)(r.RegisterLLMRequest("drop", func(ctx context.Context, q *llm.Request) (*llm.Request, error) { return nil, nil }))
	_, err := r.ApplyToolRequest(context.Background(), &tool.Call{})
	checkNamed(t, err, middleware.ToolRequest, "drop", middleware.ErrNilResult)
	_, err = r.ApplyLLMRequest(context.Background(), &llm.Request{})
	checkNamed(t, err, middleware.LLMRequest, "drop", middleware.ErrNilResult)
}

func TestRequestPanicIsRecoveredAsAnError(t *testing.T) {
	errBoom := errors.New("boom")
	r := middleware.NewRegistry()
	mustRegister(t)(r.RegisterToolRequest("crash", func(ctx context.Context, c *tool.Call) (*tool.Call, error) { panic(errBoom) }))
	mustRegister(t)(r.RegisterLLMRequest("crash", func(ctx context.Context, q *llm.Request) (*llm.Request, error) { panic("oops") }))
	_, err := r.ApplyToolRequest(context.Background(), &tool.Call{})
	checkNamed(t, err, middleware.ToolRequest, "crash", errBoom) // a panic value that is an error unwraps to it
	var pe *middleware.PanicError
	if !errors.As(err, &pe) || len(pe.Stack) == 0 {
		t.Errorf("want a *PanicError with a stack, got %v", err)
	}
	_, err = r.ApplyLLMRequest(context.Background(), &llm.Request{})
	checkNamed(t, err, middleware.LLMRequest, "crash", nil)
	if !errors.As(err, &pe) || pe.Value != "oops" || !strings.Contains(err.Error(), "panic: oops") {
		t.Errorf("want the panic value in the error, got %v", err)
	}
}

// checkNamed asserts that err is an *Error of chain naming mw, whose
// message names it too, and (if want is non-nil) that it wraps want.
func checkNamed(t *testing.T, err error, chain, mw string, want error) {
	t.Helper()
	var me *middleware.Error
	if !errors.As(err, &me) {
		t.Fatalf("err = %v (%T), want a *middleware.Error", err, err)
	}
	if me.Chain != chain || me.Middleware != mw {
		t.Errorf("error names %s %q, want %s %q", me.Chain, me.Middleware, chain, mw)
	}
	if !strings.Contains(err.Error(), `"`+mw+`"`) || !strings.Contains(err.Error(), chain) {
		t.Errorf("message %q does not name %s %q", err, chain, mw)
	}
	if want != nil && !errors.Is(err, want) {
		t.Errorf("err = %v, want it to wrap %v", err, want)
	}
}
