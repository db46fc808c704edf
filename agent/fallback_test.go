package agent_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/toolset"
)

// counting is a model client that answers with fn and counts its calls
// and the requests it got.
type counting struct {
	mu   sync.Mutex
	reqs []*llm.Request
	fn   func(req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error)
}

func (c *counting) Generate(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	c.mu.Lock()
	r := *req
	c.reqs = append(c.reqs, &r)
	c.mu.Unlock()
	return c.fn(req, onDelta)
}

func (c *counting) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.reqs)
}

func answer(text, model string) *llm.Response {
	return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock(text)}}, StopReason: llm.StopEndTurn,
		Model: model, Usage: llm.Usage{InputTokens: 1_000_000}}
}

// A primary that is overloaded on every try falls over, after its retries,
// to the fallback, asked for its own model, without the conversation's
// reasoning; the events name the model that served the call and the cost
// is its price. The primary is then passed over until its breaker's 30
// seconds are up, and tried again after. A primary that fails after it
// streamed some of the answer does not fall over: the failure is the
// turn's.
func TestFallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		overloaded := &llm.Error{Kind: llm.KindOverloaded, StatusCode: 529, Message: "Overloaded"}
		primary := &counting{fn: func(*llm.Request, func(llm.Delta)) (*llm.Response, error) { return nil, overloaded }}
		second := &counting{fn: func(req *llm.Request, _ func(llm.Delta)) (*llm.Response, error) {
			return answer("from the fallback", req.Model), nil
		}}
		rt, err := agent.New(agent.Definition{Name: "f", Model: "claude-opus-5-5", MaxRetries: 1},
			agent.Collaborators{Client: primary, Workspace: t.TempDir(), Fallbacks: []agent.Fallback{{Client: second, Model: "gpt-6.1-terra"}}})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		var served []string
		var retrying []bool
		var costs []float64
		var recorded []string
		history := []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("before")}},
			{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockThinking, Thinking: "hmm", Signature: "sig-of-claude"}, llm.TextBlock("earlier answer")}},
		}
		record := func(rs []agent.Recorded) error {
			for _, r := range rs {
				if r.Message.Role == llm.RoleAssistant {
					recorded = append(recorded, r.Model)
				}
			}
			return nil
		}
		res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go", History: history, Record: record, OnEvent: func(e event.Event) {
			switch d := e.Data.(type) {
			case *event.LLMCallData:
				if e.Name == event.LLMCallCompleted {
					served = append(served, d.Model)
					costs = append(costs, d.CostUSD)
				} else {
					retrying = append(retrying, d.Retrying)
				}
			}
		}})
		if err != nil || res.Answer != "from the fallback" {
			t.Fatalf("%+v %v", res, err)
		}
		if primary.calls() != 2 || second.calls() != 1 || len(served) != 1 || served[0] != "gpt-6.1-terra" || len(retrying) != 2 || !retrying[1] {
			t.Errorf("primary %d calls, fallback %d; served %q; failed events retrying %v", primary.calls(), second.calls(), served, retrying)
		}
		got := second.reqs[0]
		if got.Model != "gpt-6.1-terra" || len(got.Messages[1].Content) != 1 || got.Messages[1].Content[0].Text != "earlier answer" {
			t.Errorf("the fallback was sent model %q, %+v", got.Model, got.Messages[1].Content)
		}
		// Priced by the model that served it (gpt-6.1-terra: $1 per million input tokens).
		if res.Spent.CostUSD < 0.999 || res.Spent.CostUSD > 1.001 || len(costs) != 1 || costs[0] != res.Spent.CostUSD {
			t.Errorf("cost %v, the events' %v", res.Spent.CostUSD, costs)
		}
		if len(recorded) != 1 || recorded[0] != "gpt-6.1-terra" {
			t.Errorf("the answer was recorded as served by %q", recorded)
		}

		// The breaker is open: the next turn goes to the fallback at once.
		if res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s2", Input: "go"}); err != nil || res.Answer != "from the fallback" || primary.calls() != 2 {
			t.Errorf("while open: %v, primary %d calls", err, primary.calls())
		}
		// Half a minute later the primary is tried again — and answers.
		time.Sleep(31 * time.Second)
		primary.fn = func(req *llm.Request, _ func(llm.Delta)) (*llm.Response, error) {
			return answer("from the primary", req.Model), nil
		}
		if res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s3", Input: "go"}); err != nil || res.Answer != "from the primary" || primary.calls() != 3 {
			t.Errorf("after: %+v %v, primary %d calls", res, err, primary.calls())
		}

		// Streamed, then failed: no fallback.
		primary.fn = func(_ *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
			onDelta(llm.Delta{Type: llm.DeltaText, Text: "Half an ans"})
			return nil, overloaded
		}
		before := second.calls()
		res, err = agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s4", Input: "go"})
		if err == nil || res.StopReason != agent.StopFailed || second.calls() != before {
			t.Errorf("streamed then failed: %+v %v, fallback %d calls", res, err, second.calls()-before)
		}
	})
}

// While the breaker passes the session's model over, compaction's summary
// is asked of the fallback, for its own model.
func TestFallbackSummarises(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		overloaded := &llm.Error{Kind: llm.KindOverloaded, StatusCode: 529, Message: "Overloaded"}
		primary := &counting{fn: func(*llm.Request, func(llm.Delta)) (*llm.Response, error) { return nil, overloaded }}
		second := &counting{fn: func(req *llm.Request, _ func(llm.Delta)) (*llm.Response, error) {
			return answer("summary or answer", req.Model), nil
		}}
		rt, err := agent.New(agent.Definition{Name: "f", Model: "claude-opus-5-5", MaxRetries: -1, KeepTurns: 1},
			agent.Collaborators{Client: primary, Workspace: t.TempDir(), Fallbacks: []agent.Fallback{{Client: second, Model: "gpt-6.1-terra"}}})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		if _, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go"}); err != nil {
			t.Fatal(err)
		}
		history := []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("one")}}, {Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("a")}},
			{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("two")}}, {Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("b")}},
		}
		before := primary.calls()
		res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Compact: true, History: history})
		if err != nil || !res.Compacted || primary.calls() != before {
			t.Fatalf("%+v %v, primary %d more calls", res, err, primary.calls()-before)
		}
		if last := second.reqs[len(second.reqs)-1]; last.Model != "gpt-6.1-terra" || !strings.Contains(last.System, "summarise") {
			t.Errorf("the summary was asked for %q: %.60s", last.Model, last.System)
		}
	})
}

// A subagent falls over along its parent's chain: the parent's model
// answers the parent and fails the fork's calls; the fallback answers
// the fork, whose answer the parent gets; the fork's failures open its
// own breaker, not its parent's. The parent's records name the model
// that served each answer.
func TestFallbackInSubagents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		overloaded := &llm.Error{Kind: llm.KindOverloaded, StatusCode: 529, Message: "Overloaded"}
		primary := &counting{fn: func(req *llm.Request, _ func(llm.Delta)) (*llm.Response, error) {
			if req.Metadata.Component == "helper" {
				return nil, overloaded
			}
			last := req.Messages[len(req.Messages)-1].Content
			if len(last) > 0 && last[0].Type == llm.BlockToolResult {
				return answer("all done: "+last[0].Content, "claude-opus-5-5"), nil
			}
			use := llm.ToolUseBlock("t1", "Task", []byte(`{"description": "d", "prompt": "go", "subagent_type": "helper"}`))
			return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{use}}, StopReason: llm.StopToolUse, Model: "claude-opus-5-5"}, nil
		}}
		second := &counting{fn: func(req *llm.Request, _ func(llm.Delta)) (*llm.Response, error) {
			return answer("helper done", req.Model), nil
		}}
		rt, err := agent.New(agent.Definition{Name: "p", Model: "claude-opus-5-5", MaxRetries: 1, ToolProviders: toolset.Default(),
			Subagents: definitions(t, map[string]string{"helper": ""})},
			agent.Collaborators{Client: primary, Workspace: t.TempDir(), Fallbacks: []agent.Fallback{{Client: second, Model: "gpt-6.1-terra"}}})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		var models []string
		res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "delegate", Record: func(rs []agent.Recorded) error {
			for _, r := range rs {
				if r.Message.Role == llm.RoleAssistant {
					models = append(models, r.Model)
				} else if r.Model != "" {
					t.Errorf("a %s message recorded with model %q", r.Message.Role, r.Model)
				}
			}
			return nil
		}})
		if err != nil || !strings.Contains(res.Answer, "helper done") {
			t.Fatalf("%+v %v", res, err)
		}
		if second.calls() != 1 || second.reqs[0].Metadata.Component != "helper" {
			t.Errorf("fallback calls %d", second.calls())
		}
		if strings.Join(models, " ") != "claude-opus-5-5 claude-opus-5-5" {
			t.Errorf("the parent's answers were recorded as served by %q", models)
		}
	})
}
