package anthropic_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/middleware"
	"github.com/orca-agent/orca/toolset"
)

// The real runtime against the Anthropic client and a fake API: a rate
// limit, then a tool call, then an answer. Every attempt, the retried one
// included, goes through llm_execution and reaches the API exactly once;
// the tool really runs, and its result is in the next prompt.
func TestRuntime(t *testing.T) {
	write := llm.Response{
		Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.TextBlock("I'll create the file."),
			llm.ToolUseBlock("toolu_01", "Write", json.RawMessage(`{"file_path":"hello.txt","content":"hello, orca\n"}`)),
		}},
		StopReason: llm.StopToolUse,
		Usage:      llm.Usage{InputTokens: 1000, OutputTokens: 40, CacheWriteTokens: 3000},
		Model:      "claude-sonnet-5-5",
	}
	answer := llm.Response{
		Message:    llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("Created hello.txt.")}},
		StopReason: llm.StopEndTurn,
		Usage:      llm.Usage{InputTokens: 60, OutputTokens: 8, CacheReadTokens: 3000, CacheWriteTokens: 1050},
		Model:      "claude-sonnet-5-5",
	}
	api := newFakeAPI(t,
		answerRateLimited(),
		answerWith(write),
		answerWith(answer),
	)
	dir := t.TempDir()
	svc := agent.NewServices(nil)
	defer svc.Close()
	var attempts atomic.Int32
	if _, err := svc.Middleware.RegisterLLMExecution("count", func(ctx context.Context, r *llm.Request, next middleware.LLMNext) (*llm.Response, error) {
		attempts.Add(1)
		return next(ctx, r)
	}); err != nil {
		t.Fatal(err)
	}
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "e2e", SystemPrompt: "You are a careful coding agent.", Model: "claude-sonnet-5-5"},
		agent.Collaborators{Client: newClient(t, api.URL), Workspace: dir, Services: svc})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()

	res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s1", Input: "Create hello.txt saying hello."})
	if err != nil {
		t.Fatalf("Execute: %v (result %+v)", err, res)
	}
	if res.StopReason != agent.StopAnswered || res.Answer != "Created hello.txt." || res.ToolCalls != 1 {
		t.Errorf("result: stop %s, answer %q, %d tool calls", res.StopReason, res.Answer, res.ToolCalls)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "hello.txt")); err != nil || string(b) != "hello, orca\n" {
		t.Errorf("hello.txt: %q, %v", b, err)
	}
	if n := attempts.Load(); n != 3 {
		t.Errorf("llm_execution ran %d times, want 3 (the rate-limited attempt, then two calls)", n)
	}
	if n := api.requests(); n != 3 {
		t.Errorf("the API saw %d requests, want 3", n)
	}
	if want := write.Usage.Add(answer.Usage); res.Usage != want {
		t.Errorf("usage %+v, want %+v", res.Usage, want)
	}
	if want := budget.DefaultPrices.Cost("claude-sonnet-5-5", write.Usage.Add(answer.Usage)); want == 0 || res.Spent.CostUSD < want*0.999 || res.Spent.CostUSD > want*1.001 {
		t.Errorf("cost %v, want %v", res.Spent.CostUSD, want)
	}

	// The last prompt: the tool call and its result, with the breakpoint
	// on the assistant message before the newest (tool result) turn.
	last := api.body(t, 2)
	if len(last.Messages) != 3 {
		t.Fatalf("last prompt has %d messages", len(last.Messages))
	}
	use, result := last.Messages[1].Content, last.Messages[2].Content
	if use[1].Type != "tool_use" || use[1].ID != "toolu_01" || use[1].CacheControl == nil {
		t.Errorf("assistant message sent as %+v", use)
	}
	if result[0].Type != "tool_result" || result[0].ToolUseID != "toolu_01" || result[0].IsError || !strings.Contains(result[0].Content[0].Text, "hello.txt") {
		t.Errorf("observation sent as %+v", result)
	}
	if len(last.Tools) == 0 || last.Tools[len(last.Tools)-1].CacheControl == nil || last.System[0].CacheControl == nil {
		t.Errorf("prefix breakpoints missing: tools %d, system %+v", len(last.Tools), last.System)
	}
}

func answerWith(r llm.Response) answer { return answer{resp: r} }

// answerRateLimited is a 429 that asks to wait a millisecond.
func answerRateLimited() answer {
	return answer{err: llm.ErrRateLimited, header: http.Header{"Retry-After-Ms": {"1"}}}
}
