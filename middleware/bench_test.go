package middleware_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/middleware"
	"github.com/orca-agent/orca/tool"
)

// BenchmarkExecuteTool runs one tool call through ExecuteTool with N
// pass-through tool_execution middleware. At N=0 the tool is called
// directly; the cost of the chain is the difference.
func BenchmarkExecuteTool(b *testing.B) {
	final := func(ctx context.Context, c *tool.Call) (tool.Result, error) { return tool.Result{Content: "ok"}, nil }
	for _, n := range []int{0, 4} {
		b.Run(fmt.Sprintf("middleware=%d", n), func(b *testing.B) {
			r := middleware.NewRegistry()
			for i := range n {
				if _, err := r.RegisterToolExecution(fmt.Sprintf("m%d", i), passToolExec); err != nil {
					b.Fatal(err)
				}
			}
			ctx, call := context.Background(), newCall()
			b.ReportAllocs()
			for b.Loop() {
				if res, _ := r.ExecuteTool(ctx, call, final); res.Content != "ok" {
					b.Fatal(res)
				}
			}
		})
	}
}

// BenchmarkApplyLLMRequest runs a model request of M messages through one
// llm_request middleware that appends a reminder to the newest user turn:
// the cost of the cache guard, which keeps the prefix by reference (the
// default) or copies it by value (strict), and compares it after the
// middleware.
func BenchmarkApplyLLMRequest(b *testing.B) {
	for _, strict := range []bool{false, true} {
		for _, m := range []int{10, 100, 1000} {
			b.Run(fmt.Sprintf("strict=%v/messages=%d", strict, m), func(b *testing.B) {
				r := middleware.NewRegistry()
				r.SetStrictCacheGuard(strict)
				if _, err := r.RegisterLLMRequest("reminder", func(ctx context.Context, q *llm.Request) (*llm.Request, error) {
					last := &q.Messages[len(q.Messages)-1]
					last.Content = append(last.Content[:1], llm.TextBlock("<reminder>"))
					return q, nil
				}); err != nil {
					b.Fatal(err)
				}
				req := conversation()
				for len(req.Messages) < m {
					req.Messages = append(req.Messages[:len(req.Messages)-1], conversation().Messages[1:]...)
				}
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					if _, err := r.ApplyLLMRequest(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
