package middleware_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/middleware"
	"github.com/orca-agent/orca/tool"
)

// Pass-through middleware of each chain.
func passToolRequest(ctx context.Context, c *tool.Call) (*tool.Call, error) { return c, nil }
func passToolExec(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
	return next(ctx, c)
}
func passLLMRequest(ctx context.Context, r *llm.Request) (*llm.Request, error) { return r, nil }
func passLLMExec(ctx context.Context, r *llm.Request, next middleware.LLMNext) (*llm.Response, error) {
	return next(ctx, r)
}

// registerAny registers a pass-through middleware named name on chain.
func registerAny(r *middleware.Registry, chain, name string, opts ...middleware.Option) (func(), error) {
	switch chain {
	case middleware.ToolRequest:
		return r.RegisterToolRequest(name, passToolRequest, opts...)
	case middleware.ToolExecution:
		return r.RegisterToolExecution(name, passToolExec, opts...)
	case middleware.LLMRequest:
		return r.RegisterLLMRequest(name, passLLMRequest, opts...)
	case middleware.LLMExecution:
		return r.RegisterLLMExecution(name, passLLMExec, opts...)
	}
	panic("unknown chain " + chain)
}

var chains = []string{middleware.ToolRequest, middleware.ToolExecution, middleware.LLMRequest, middleware.LLMExecution}

// mustRegister(t)(r.RegisterX(…)) fails the test if the registration does,
// and returns the unregister function.
func mustRegister(t *testing.T) func(func(), error) func() {
	return func(unregister func(), err error) func() {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return unregister
	}
}

func TestRegisterRejectsEmptyNameNilFuncAndDuplicates(t *testing.T) {
	for _, chain := range chains {
		t.Run(chain, func(t *testing.T) {
			r := middleware.NewRegistry()
			if _, err := registerAny(r, chain, ""); err == nil || !strings.Contains(err.Error(), "name") {
				t.Errorf("empty name: err = %v", err)
			}
			mustRegister(t)(registerAny(r, chain, "audit"))
			_, err := registerAny(r, chain, "audit", middleware.Priority(5))
			if !errors.Is(err, middleware.ErrDuplicate) || !strings.Contains(err.Error(), `"audit"`) || !strings.Contains(err.Error(), chain) {
				t.Errorf("duplicate: err = %v, want ErrDuplicate naming %q on %s", err, "audit", chain)
			}
			if got := r.Names(chain); !slices.Equal(got, []string{"audit"}) {
				t.Errorf("after the refused duplicate, Names = %v", got)
			}
			// Names are unique per chain, not across chains.
			for _, other := range chains {
				if other != chain {
					if _, err := registerAny(r, other, "audit"); err != nil {
						t.Errorf("same name on %s: %v", other, err)
					}
				}
			}
		})
	}
	r := middleware.NewRegistry()
	nils := map[string]error{}
	_, nils[middleware.ToolRequest] = r.RegisterToolRequest("x", nil)
	_, nils[middleware.ToolExecution] = r.RegisterToolExecution("x", nil)
	_, nils[middleware.LLMRequest] = r.RegisterLLMRequest("x", nil)
	_, nils[middleware.LLMExecution] = r.RegisterLLMExecution("x", nil)
	for chain, err := range nils {
		if err == nil || !strings.Contains(err.Error(), "nil func") {
			t.Errorf("%s: nil func: err = %v", chain, err)
		}
	}
	if !r.Empty() {
		t.Error("refused registrations left something behind")
	}
}

func TestAllowCacheInvalidationOnlyOnLLMRequest(t *testing.T) {
	r := middleware.NewRegistry()
	for _, chain := range chains {
		_, err := registerAny(r, chain, "m", middleware.AllowCacheInvalidation())
		if chain == middleware.LLMRequest {
			if err != nil {
				t.Errorf("%s: %v", chain, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "AllowCacheInvalidation") {
			t.Errorf("%s: err = %v, want a refusal of AllowCacheInvalidation", chain, err)
		}
		if r.Has(chain) {
			t.Errorf("%s: the refused middleware was registered", chain)
		}
	}
}

func TestPriorityOrdersAndTiesKeepRegistrationOrder(t *testing.T) {
	r := middleware.NewRegistry()
	for _, m := range []struct {
		name string
		prio int
	}{{"b10", 10}, {"a-5", -5}, {"c10", 10}, {"zero", 0}, {"d-5", -5}, {"default", 0}} {
		mustRegister(t)(registerAny(r, middleware.ToolExecution, m.name, middleware.Priority(m.prio)))
	}
	want := []string{"a-5", "d-5", "zero", "default", "b10", "c10"}
	if got := r.Names(middleware.ToolExecution); !slices.Equal(got, want) {
		t.Errorf("Names = %v, want %v", got, want)
	}
}

func TestUnregisterRemovesOnceAndFreesTheName(t *testing.T) {
	r := middleware.NewRegistry()
	if !r.Empty() || r.Has(middleware.ToolRequest) || r.Has("no_such_chain") {
		t.Fatal("a new registry is not empty")
	}
	un := mustRegister(t)(registerAny(r, middleware.ToolRequest, "a"))
	mustRegister(t)(registerAny(r, middleware.ToolRequest, "b"))
	if r.Empty() || !r.Has(middleware.ToolRequest) || r.Has(middleware.LLMRequest) {
		t.Fatal("Empty/Has disagree with the registrations")
	}
	un()
	un() // a second call removes nothing else
	if got := r.Names(middleware.ToolRequest); !slices.Equal(got, []string{"b"}) {
		t.Errorf("after unregister: %v", got)
	}
	mustRegister(t)(registerAny(r, middleware.ToolRequest, "a"))
	if got := r.Names(middleware.ToolRequest); !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("after registering a again: %v", got)
	}
}

// The registry is a shared service: one created up front sees what is
// registered later, on the very next call.
func TestRegistrationAppliesToLaterCalls(t *testing.T) {
	r := middleware.NewRegistry()
	ctx := context.Background()
	call := &tool.Call{ID: "1", Name: "Read", Input: []byte(`{}`)}
	got, err := r.ApplyToolRequest(ctx, call)
	if err != nil || got != call {
		t.Fatalf("empty chain: %v, %v", got, err)
	}
	un := mustRegister(t)(r.RegisterToolRequest("rename", func(ctx context.Context, c *tool.Call) (*tool.Call, error) {
		return &tool.Call{ID: c.ID, Name: "Glob", Input: c.Input}, nil
	}))
	got, err = r.ApplyToolRequest(ctx, call)
	if err != nil || got.Name != "Glob" {
		t.Fatalf("after registration: %+v, %v", got, err)
	}
	un()
	got, _ = r.ApplyToolRequest(ctx, call)
	if got != call {
		t.Fatalf("after unregistration the middleware still ran: %+v", got)
	}
}

// A chain that is running keeps the snapshot it started with: a
// registration made meanwhile applies to the next call only.
func TestRunningChainKeepsItsSnapshot(t *testing.T) {
	r := middleware.NewRegistry()
	var ran []string
	mustRegister(t)(r.RegisterToolExecution("registrar", func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
		ran = append(ran, "registrar")
		if !r.Has(middleware.ToolRequest) { // first run only
			mustRegister(t)(registerAny(r, middleware.ToolRequest, "later"))
			mustRegister(t)(r.RegisterToolExecution("late", func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
				ran = append(ran, "late")
				return next(ctx, c)
			}, middleware.Priority(10)))
		}
		return next(ctx, c)
	}))
	call := &tool.Call{ID: "1", Name: "Noop"}
	final := func(ctx context.Context, c *tool.Call) (tool.Result, error) {
		ran = append(ran, "tool")
		return tool.Text("ok"), nil
	}
	r.ExecuteTool(context.Background(), call, final)
	if want := []string{"registrar", "tool"}; !slices.Equal(ran, want) {
		t.Fatalf("first run: %v, want %v", ran, want)
	}
	ran = nil
	r.ExecuteTool(context.Background(), call, final)
	if want := []string{"registrar", "late", "tool"}; !slices.Equal(ran, want) {
		t.Fatalf("second run: %v, want %v", ran, want)
	}
}

// A nil *Registry has no middleware: the runtime may run without one.
func TestNilRegistryPassesThrough(t *testing.T) {
	var r *middleware.Registry
	ctx := context.Background()
	call := &tool.Call{ID: "1"}
	req := &llm.Request{}
	if !r.Empty() || r.Has(middleware.ToolExecution) || r.Names(middleware.LLMExecution) != nil {
		t.Error("a nil registry is not empty")
	}
	if c, err := r.ApplyToolRequest(ctx, call); c != call || err != nil {
		t.Error("ApplyToolRequest changed the call")
	}
	if q, err := r.ApplyLLMRequest(ctx, req); q != req || err != nil {
		t.Error("ApplyLLMRequest changed the request")
	}
	res, f := r.ExecuteTool(ctx, call, func(ctx context.Context, c *tool.Call) (tool.Result, error) { return tool.Text("ran"), nil })
	if res.Content != "ran" || f != nil {
		t.Errorf("ExecuteTool = %+v, %v", res, f)
	}
	want := &llm.Response{}
	resp, f, err := r.ExecuteLLM(ctx, req, func(ctx context.Context, q *llm.Request) (*llm.Response, error) { return want, nil })
	if resp != want || f != nil || err != nil {
		t.Errorf("ExecuteLLM = %v, %v, %v", resp, f, err)
	}
}
