package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/catalog"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/tool"
)

// windowed is a model server with a context window of window bytes of
// request (its messages and system prompt as JSON), smaller than any the
// runtime knows, as a proxy or a local server may have: a bigger request
// is refused as too long — naming the window in tokens (four bytes each)
// when stated —; a summariser's request gets a summary; the others a call
// of Big until calls have been made, then an answer.
type windowed struct {
	window, calls int
	stated        bool

	mu                       sync.Mutex
	made, refused, summaries int
}

func (w *windowed) Generate(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	body, _ := json.Marshal(req.Messages)
	size := len(body) + len(req.System)
	w.mu.Lock()
	defer w.mu.Unlock()
	if size > w.window {
		w.refused++
		msg := "prompt is too long"
		if w.stated {
			msg = fmt.Sprintf("prompt is too long: %d tokens > %d maximum", size/4, w.window/4)
		}
		return nil, &llm.Error{Kind: llm.KindPromptTooLong, StatusCode: 400, Message: msg}
	}
	usage := llm.Usage{InputTokens: int64(size / 4), OutputTokens: 20}
	text := func(s string) (*llm.Response, error) {
		return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock(s)}}, StopReason: llm.StopEndTurn, Usage: usage}, nil
	}
	if strings.Contains(req.System, "You summarise a conversation") {
		w.summaries++
		return text("The agent has been reading big outputs, one call at a time; it goes on.")
	}
	if w.made == w.calls {
		return text("done")
	}
	w.made++
	use := llm.ToolUseBlock(fmt.Sprintf("c%d", w.made), "Big", json.RawMessage(fmt.Sprintf(`{"n": %d}`, w.made)))
	return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{use}}, StopReason: llm.StopToolUse, Usage: usage}, nil
}

// A 120-call turn with 3 KB results against a server whose window is
// 90 KB — smaller than the runtime was told — finishes with at most two
// refusals of a prompt as too long, whether the refusal names the window
// or not: the first teaches the window, and compaction keeps under it
// (before, every compaction was followed by another refusal). Against a
// server whose window is the one the catalog lists, none.
func TestWindowLearntFromARefusal(t *testing.T) {
	big := tool.New("Big", "Prints a lot.", func(ctx context.Context, in struct {
		N int `json:"n"`
	}) (tool.Result, error) {
		return tool.Result{Content: fmt.Sprintf("output %d: %s", in.N, strings.Repeat("0123456789abcdef ", 3000/17))}, nil
	})
	run := func(t *testing.T, model *windowed, cat *catalog.Catalog, known map[string]int64, learnt func(string, int64)) *agent.Result {
		t.Helper()
		rt, err := agent.New(agent.Definition{Name: "w", Model: "proxy-model", Catalog: cat, ToolProviders: []tool.Provider{tool.Static("b", big)}, MaxIterations: 400, Windows: known},
			agent.Collaborators{Client: model, Workspace: t.TempDir(), OnWindowLearnt: learnt})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "read all the outputs"})
		if err != nil || res.StopReason != agent.StopAnswered || res.ToolCalls != model.calls {
			t.Fatalf("%s after %d calls: %v (%d refusals, %d summaries)", res.StopReason, res.ToolCalls, err, model.refused, model.summaries)
		}
		return res
	}
	for _, stated := range []bool{true, false} {
		t.Run(fmt.Sprintf("stated=%v", stated), func(t *testing.T) {
			model := &windowed{window: 90 << 10, calls: 120, stated: stated}
			learnt := map[string]int64{}
			run(t, model, nil, nil, func(m string, w int64) { learnt[m] = w })
			if model.refused > 2 {
				t.Errorf("%d refusals, %d summaries", model.refused, model.summaries)
			}
			// The runtime told what it learnt; a runtime that starts
			// knowing it is refused nothing.
			if len(learnt) != 1 || learnt["proxy-model"] <= 0 || learnt["proxy-model"] > (90<<10)/4 {
				t.Fatalf("learnt %v", learnt)
			}
			again := &windowed{window: 90 << 10, calls: 120, stated: stated}
			run(t, again, nil, learnt, func(m string, w int64) { t.Errorf("learnt again: %s %d", m, w) })
			if again.refused != 0 {
				t.Errorf("knowing the window: %d refusals", again.refused)
			}
		})
	}
	t.Run("catalog", func(t *testing.T) {
		model := &windowed{window: 90 << 10, calls: 120, stated: true}
		run(t, model, catalog.Default().With(catalog.Model{Provider: "openai", Name: "proxy-model", ContextWindow: (90 << 10) / 4}), nil, nil)
		if model.refused != 0 {
			t.Errorf("%d refusals", model.refused)
		}
	})
}
