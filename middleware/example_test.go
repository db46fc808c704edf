package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/middleware"
	"github.com/orca-agent/orca/tool"
)

// latency is a stand-in for a metrics backend.
type latency struct {
	mu    sync.Mutex
	calls int
	total time.Duration
}

func (l *latency) observe(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	l.total += d
}

// An llm_execution middleware that measures the provider call and passes
// the request on untouched. It runs once per attempt, so retries are
// measured one by one.
func ExampleRegistry_RegisterLLMExecution() {
	reg := middleware.NewRegistry() // once per process, shared by every runtime
	metrics := &latency{}
	_, err := reg.RegisterLLMExecution("llm_latency", func(ctx context.Context, req *llm.Request, next middleware.LLMNext) (*llm.Response, error) {
		start := time.Now()
		defer func() { metrics.observe(time.Since(start)) }() // also when the call fails
		return next(ctx, req)
	}, middleware.Priority(100))
	if err != nil {
		panic(err)
	}

	client := llm.ClientFunc(func(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
		return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("Hello!")}}, StopReason: llm.StopEndTurn}, nil
	})
	provider := func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		return client.Generate(ctx, req, nil)
	}
	req := &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Hi")}}}}
	resp, failures, err := reg.ExecuteLLM(context.Background(), req, provider)
	fmt.Println(resp.Message.Text(), len(failures), err)
	fmt.Println(metrics.calls, "provider call measured")
	// Output:
	// Hello! 0 <nil>
	// 1 provider call measured
}

// A tool_execution cache: a hit short-circuits (the tool does not run), a
// miss calls next and keeps the result.
func ExampleRegistry_RegisterToolExecution() {
	reg := middleware.NewRegistry()
	var mu sync.Mutex
	cache := map[string]tool.Result{}
	_, err := reg.RegisterToolExecution("read_cache", func(ctx context.Context, call *tool.Call, next middleware.ToolNext) (tool.Result, error) {
		if call.Name != "Read" {
			return next(ctx, call)
		}
		key := string(call.Input)
		mu.Lock()
		res, ok := cache[key]
		mu.Unlock()
		if ok {
			return res, nil // not calling next: the cached result is the result
		}
		res, err := next(ctx, call)
		if err == nil && !res.IsError {
			mu.Lock()
			cache[key] = res
			mu.Unlock()
		}
		return res, err
	})
	if err != nil {
		panic(err)
	}

	runs := 0
	read := func(ctx context.Context, call *tool.Call) (tool.Result, error) {
		runs++
		return tool.Text("contents of a.txt"), nil
	}
	for i := range 2 {
		call := &tool.Call{ID: fmt.Sprint("tu", i), Name: "Read", Input: json.RawMessage(`{"path":"a.txt"}`)}
		res, _ := reg.ExecuteTool(context.Background(), call, read)
		fmt.Println(res.Content)
	}
	fmt.Println("the tool ran", runs, "time")
	// Output:
	// contents of a.txt
	// contents of a.txt
	// the tool ran 1 time
}

// An llm_request middleware may add to the newest user turn freely; changing
// the system prompt (part of the cached prefix) needs both
// AllowCacheInvalidation and a reason on the request.
func ExampleRegistry_ApplyLLMRequest() {
	reg := middleware.NewRegistry()
	reg.RegisterLLMRequest("date_reminder", func(ctx context.Context, req *llm.Request) (*llm.Request, error) {
		last := &req.Messages[len(req.Messages)-1]
		last.Content = append(last.Content, llm.TextBlock("<reminder>today is Monday</reminder>"))
		return req, nil
	})
	reg.RegisterLLMRequest("persona", func(ctx context.Context, req *llm.Request) (*llm.Request, error) {
		req.System += " Answer in French."
		return req, nil
	}, middleware.Priority(10))

	newRequest := func() *llm.Request {
		return &llm.Request{System: "Be brief.", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("What day is it?")}}}}
	}
	_, err := reg.ApplyLLMRequest(context.Background(), newRequest())
	fmt.Println(errors.Is(err, middleware.ErrCacheInvalidation))
	fmt.Println(err)
	// Output:
	// true
	// llm_request middleware "persona": cache-sensitive prefix changed: System changed; the middleware is not registered with AllowCacheInvalidation
}
