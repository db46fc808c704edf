package agent_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

// limitedRuntime builds a runtime with an Echo and a Wait tool and the given
// definition tweaks.
func limitedRuntime(t *testing.T, model *script.Client, def agent.Definition) *agent.Runtime {
	t.Helper()
	fs, err := workspace.OpenLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	def.Name = "limited"
	def.ToolProviders = []tool.Provider{tool.Static("t", echoTool(),
		tool.New("Wait", "Waits until cancelled.", func(ctx context.Context, in struct{}) (string, error) {
			<-ctx.Done()
			return "", context.Cause(ctx)
		}))}
	rt, err := agent.New(def, agent.Collaborators{Client: model, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func echoCall(text string, usage llm.Usage) script.Response {
	r := script.Call("Echo", map[string]string{"text": text})
	r.Usage = &usage
	return r
}

// Results that are in at the same moment are recorded together, in one
// call of Record: here the second call ends first, its result waits for
// the first's (results are recorded in order), and both go in one write
// once the first ends. The answer that asked for them is recorded before
// they run — or, when a crash may run each of them again unasked (their
// tools are read-only and idempotent), with them.
func TestResultsRecordedTogether(t *testing.T) {
	for _, tc := range []struct {
		opts []tool.Option
		want [][]string
	}{
		{[]tool.Option{tool.ReadOnly()}, [][]string{{"user:go"}, {"assistant:"}, {"user:slow", "user:fast"}, {"assistant:done"}}},
		{[]tool.Option{tool.ReadOnly(), tool.Idempotent()}, [][]string{{"user:go"}, {"assistant:", "user:slow", "user:fast"}, {"assistant:done"}}},
	} {
		synctest.Test(t, func(t *testing.T) {
			fastDone := make(chan struct{})
			fs, err := workspace.OpenLocal(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer fs.Close()
			model := script.New()
			rt, err := agent.New(agent.Definition{Name: "together", ToolProviders: []tool.Provider{tool.Static("t",
				tool.New("Slow", "Ends after Fast.", func(ctx context.Context, in struct{}) (string, error) {
					<-fastDone
					time.Sleep(time.Second) // Fast's result is in by then
					return "slow", nil
				}, tc.opts...),
				tool.New("Fast", "Ends at once.", func(ctx context.Context, in struct{}) (string, error) {
					defer close(fastDone)
					return "fast", nil
				}, tc.opts...))}}, agent.Collaborators{Client: model, FS: fs})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			model.Script("s", script.Response{ToolCalls: []script.ToolCall{{Name: "Slow"}, {Name: "Fast"}}}, script.Text("done"))
			var writes [][]string
			res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go",
				Record: func(rs []agent.Recorded) error {
					var w []string
					for _, r := range rs {
						w = append(w, string(r.Message.Role)+":"+r.Message.Content[0].Content+r.Message.Text())
					}
					writes = append(writes, w)
					return nil
				}})
			if err != nil || res.Answer != "done" {
				t.Fatalf("%+v %v", res, err)
			}
			if fmt.Sprint(writes) != fmt.Sprint(tc.want) {
				t.Errorf("writes %v, want %v", writes, tc.want)
			}
		})
	}
}

func TestTokenBudget(t *testing.T) {
	model := script.New()
	rt := limitedRuntime(t, model, agent.Definition{Budget: budget.Limits{Tokens: 100}})
	u := llm.Usage{InputTokens: 50, OutputTokens: 10}
	model.Script("s", echoCall("1", u), echoCall("2", u), script.Text("unreachable"))
	res, _ := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go"})
	if res.StopReason != agent.StopBudgetExhausted || res.BudgetDimension != budget.Tokens {
		t.Fatalf("result = %s %s", res.StopReason, res.BudgetDimension)
	}
	// The second call's tools are answered, not run; the transcript stays
	// valid.
	last := res.Messages[len(res.Messages)-1]
	if res.ToolCalls != 1 || !strings.Contains(last.Content[0].Content, "tokens budget is exhausted") {
		t.Errorf("tool calls %d, last %+v", res.ToolCalls, last)
	}
	if res.Spent.Tokens != 120 {
		t.Errorf("spent %+v", res.Spent)
	}
}

func TestCostBudgetWithOwnPrices(t *testing.T) {
	model := script.New()
	rt := limitedRuntime(t, model, agent.Definition{
		Budget: budget.Limits{CostUSD: 0.5},
		Prices: budget.Prices{"script": {Input: 100_000}}, // $0.1 per token: scripted usage is priced
	})
	model.Script("s", echoCall("1", llm.Usage{InputTokens: 3}), echoCall("2", llm.Usage{InputTokens: 3}), script.Text("no"))
	res, _ := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go"})
	if res.StopReason != agent.StopBudgetExhausted || res.BudgetDimension != budget.Cost {
		t.Fatalf("result = %s %s (spent %+v)", res.StopReason, res.BudgetDimension, res.Spent)
	}
}

func TestToolCallBudgetAndSessionOverride(t *testing.T) {
	model := script.New()
	rt := limitedRuntime(t, model, agent.Definition{Budget: budget.Limits{ToolCalls: 100}})
	model.Script("s", script.Response{ToolCalls: []script.ToolCall{
		{ID: "a", Name: "Echo", Input: raw(map[string]string{"text": "a"})},
		{ID: "b", Name: "Echo", Input: raw(map[string]string{"text": "b"})},
		{ID: "c", Name: "Echo", Input: raw(map[string]string{"text": "c"})},
	}}, script.Text("unreachable"))
	override := budget.Limits{ToolCalls: 5}
	res, _ := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{
		SessionID: "s", Input: "go", Budget: &override, Spent: budget.Spent{ToolCalls: 3},
	})
	if res.StopReason != agent.StopBudgetExhausted || res.BudgetDimension != budget.ToolCalls || res.ToolCalls != 2 {
		t.Fatalf("result = %s %s, %d tool calls", res.StopReason, res.BudgetDimension, res.ToolCalls)
	}
	obs := res.Messages[len(res.Messages)-1].Content
	if obs[0].IsError || obs[1].IsError || !obs[2].IsError || !strings.Contains(obs[2].Content, "tool calls budget") {
		t.Errorf("observations %+v", obs)
	}
	// Already spent: nothing runs, not even the model.
	res, _ = agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s2", Input: "go", Budget: &override, Spent: budget.Spent{ToolCalls: 5}})
	if res.StopReason != agent.StopBudgetExhausted || len(model.CallsTo("s2")) != 0 {
		t.Errorf("spent budget: %s, %d model calls", res.StopReason, len(model.CallsTo("s2")))
	}
}

// The wall-time budget cancels a tool still running when it runs out.
func TestWallTimeBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		model := script.New()
		rt := limitedRuntime(t, model, agent.Definition{Budget: budget.Limits{WallTime: 10 * time.Second}})
		model.Script("s", script.Call("Wait", nil), script.Text("unreachable"))
		start := time.Now()
		res, _ := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go", Spent: budget.Spent{WallTime: 4 * time.Second}})
		if res.StopReason != agent.StopBudgetExhausted || res.BudgetDimension != budget.WallTime {
			t.Fatalf("result = %s %s %v", res.StopReason, res.BudgetDimension, res.Err)
		}
		if took := time.Since(start); took != 6*time.Second {
			t.Errorf("the turn took %v, want the 6s left of the budget", took)
		}
	})
}

func TestInterruptEndsTheTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		model := script.New()
		rt := limitedRuntime(t, model, agent.Definition{})
		model.Script("s", script.Response{ToolCalls: []script.ToolCall{{ID: "w", Name: "Wait"}, {ID: "e", Name: "Echo", Input: raw(map[string]string{"text": "x"})}}})
		ctx, cancel := context.WithCancelCause(t.Context())
		go func() {
			time.Sleep(time.Second) // the fake clock of the bubble: the tool is waiting by then
			cancel(agent.ErrInterrupted)
		}()
		res, err := agent.NewExecutor().Execute(ctx, rt, agent.Request{SessionID: "s", Input: "go"})
		if res.StopReason != agent.StopInterrupted || err != nil {
			t.Fatalf("result = %s, %v", res.StopReason, err)
		}
		obs := res.Messages[len(res.Messages)-1].Content
		if len(obs) != 2 || !strings.Contains(obs[1].Content, "interrupted") {
			t.Errorf("observations %+v", obs)
		}
	})
}

func TestRecordAsTheTurnGoes(t *testing.T) {
	model := script.New()
	rt := limitedRuntime(t, model, agent.Definition{})
	model.Script("s", script.Call("Echo", map[string]string{"text": "x"}), script.Text("done"))
	var recorded []llm.Message
	var ending []bool
	var atFirstCall int
	model.OnMiss(nil)
	res, _ := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{
		SessionID: "s", Input: "go",
		Record: func(rs []agent.Recorded) error {
			for _, r := range rs {
				recorded = append(recorded, r.Message)
				ending = append(ending, r.Ending)
			}
			if len(model.Calls()) == 0 {
				atFirstCall = len(recorded)
			}
			return nil
		},
	})
	if len(recorded) != len(res.Messages) || len(recorded) != 4 {
		t.Fatalf("recorded %d, turn added %d", len(recorded), len(res.Messages))
	}
	if atFirstCall != 1 {
		t.Errorf("%d messages recorded before the first model call, want the input", atFirstCall)
	}
	// The answer, which ends the turn, comes as it ends; the others as
	// they are final.
	if !slices.Equal(ending, []bool{false, false, false, true}) {
		t.Errorf("recorded as the turn ends: %v, want the answer only", ending)
	}
	res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{
		SessionID: "t", Input: "go", Record: func([]agent.Recorded) error { return errors.New("disk full") },
	})
	if res.StopReason != agent.StopFailed || err == nil || !strings.Contains(err.Error(), "disk full") || len(model.CallsTo("t")) != 0 {
		t.Errorf("record failure: %s %v, %d model calls", res.StopReason, err, len(model.CallsTo("t")))
	}
}
