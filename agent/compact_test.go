package agent_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/middleware"
)

func user(s string) llm.Message {
	return llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(s)}}
}
func assistant(s string) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock(s)}}
}

// history is three earlier turns, the second with a tool call.
func history() []llm.Message {
	return []llm.Message{
		user("turn one"), assistant("answer one"),
		user("turn two"),
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock("t1", "Echo", raw(map[string]string{"text": "x"}))}},
		{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock("t1", "echo: x", false)}},
		assistant("answer two"),
		user("turn three"), assistant("answer three"),
	}
}

// Past the threshold the conversation is compacted before the next call:
// the summariser is called on its own route, the newest turns stay
// verbatim, and the session goes on with the summary.
func TestAutomaticCompaction(t *testing.T) {
	b := newBench(t, nil, nil)
	rtDef := agent.Definition{Name: "compacting", ContextWindow: 1000, CompactAt: 0.5, KeepTurns: 2}
	rt := b.runtimeWith(rtDef)
	b.model.Script(script.CompactionRoute("s"), script.Text("The user asked three things; Echo was used."))
	b.model.Script("s", script.Text("fourth answer"))
	var compacted [][]llm.Message
	res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{
		SessionID: "s", Input: "turn four", History: history(), PromptTokens: 900,
		OnCompact: func(h []llm.Message) error { compacted = append(compacted, h); return nil },
	})
	if err != nil || res.Answer != "fourth answer" || !res.Compacted {
		t.Fatalf("result %+v, %v", res, err)
	}
	if calls := b.model.CallsTo(script.CompactionRoute("s")); len(calls) != 1 || calls[0].Metadata.Feature != llm.FeatureCompaction ||
		!strings.Contains(calls[0].Messages[0].Text(), "turn one") || strings.Contains(calls[0].Messages[0].Text(), "turn four") {
		t.Fatalf("summariser calls %+v", calls)
	}
	sent := b.model.CallsTo("s")[0].Messages
	// Kept verbatim: turn three and turn four; the summary leads turn three.
	if len(sent) != 3 || !strings.Contains(sent[0].Content[0].Text, "Echo was used") || sent[0].Content[1].Text != "turn three" ||
		sent[1].Text() != "answer three" || sent[2].Text() != "turn four" {
		t.Errorf("prompt after compaction: %+v", sent)
	}
	if len(compacted) != 1 || len(compacted[0]) != 3 {
		t.Errorf("OnCompact got %v", compacted)
	}
	if len(res.Transcript) != 4 || res.Transcript[3].Text() != "fourth answer" {
		t.Errorf("transcript %+v", res.Transcript)
	}
}

// A compaction never cuts between a tool call and its result.
func TestCompactionKeepsToolPairsTogether(t *testing.T) {
	b := newBench(t, nil, nil)
	rt := b.runtimeWith(agent.Definition{Name: "c", KeepTurns: 2})
	b.model.Script(script.CompactionRoute("s"), script.Text("summary"))
	h := history()
	// Keep 2 turns: the cut lands on "turn two", whose tool call and
	// result stay together after it.
	out, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Compact: true, History: h})
	if err != nil || out.StopReason != agent.StopCompacted || !out.Compacted {
		t.Fatalf("%+v, %v", out, err)
	}
	got := out.Transcript
	if len(got) != 6 || got[0].Content[1].Text != "turn two" || got[1].Content[0].Type != llm.BlockToolUse || got[2].Content[0].Type != llm.BlockToolResult {
		t.Errorf("compacted: %+v", got)
	}
	for i, m := range got {
		for _, bl := range m.Content {
			if bl.Type == llm.BlockToolResult && (i == 0 || len(got[i-1].ToolUses()) == 0) {
				t.Errorf("orphaned tool result at %d", i)
			}
		}
	}
}

func TestPromptTooLongRecoversOnce(t *testing.T) {
	b := newBench(t, nil, nil)
	rt := b.runtimeWith(agent.Definition{Name: "r", KeepTurns: 1})
	b.model.Script(script.CompactionRoute("s"), script.Text("summary"))
	b.model.Script("s", script.Fail(llm.KindPromptTooLong, "prompt is too long: 250000 tokens"), script.Text("fine now"))
	res, _ := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "turn four", History: history()})
	if res.Answer != "fine now" || len(b.model.CallsTo(script.CompactionRoute("s"))) != 1 {
		t.Fatalf("result %+v", res)
	}
	b.model.Script(script.CompactionRoute("s2"), script.Text("summary"))
	b.model.Script("s2", script.Fail(llm.KindPromptTooLong, "too long"), script.Fail(llm.KindPromptTooLong, "still too long"))
	res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s2", Input: "turn four", History: history()})
	if res.StopReason != agent.StopFailed || !errors.Is(err, llm.ErrPromptTooLong) || len(b.model.CallsTo(script.CompactionRoute("s2"))) != 1 {
		t.Errorf("second failure: %s %v", res.StopReason, err)
	}
}

func TestPreCompactHook(t *testing.T) {
	b := newBench(t, nil, nil)
	rt := b.runtimeWith(agent.Definition{Name: "h", ContextWindow: 1000, CompactAt: 0.5})
	b.hook(hook.PreCompact, "policy", hook.On(func(ctx context.Context, p *hook.PreCompactPayload) (*hook.Decision, error) {
		if p.Trigger == agent.TriggerAuto {
			return &hook.Decision{Action: hook.Block, Reason: "not during the demo"}, nil
		}
		return &hook.Decision{Updates: map[string]any{"instructions": p.Instructions + " Keep every file path."}}, nil
	}))
	b.model.Script("s", script.Text("ok"))
	res, _ := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "turn four", History: history(), PromptTokens: 900})
	if res.Compacted || len(b.model.CallsTo(script.CompactionRoute("s"))) != 0 || res.Answer != "ok" {
		t.Errorf("blocked auto compaction ran: %+v", res)
	}
	b.model.Script(script.CompactionRoute("s"), script.Text("summary"))
	out, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Compact: true, History: history(), Input: "Focus on Echo."})
	if err != nil || !out.Compacted {
		t.Fatalf("manual compaction: %+v, %v", out, err)
	}
	if prompt := b.model.CallsTo(script.CompactionRoute("s"))[0].Messages[0].Text(); !strings.Contains(prompt, "Focus on Echo. Keep every file path.") {
		t.Errorf("summariser prompt lacks the rewritten instructions: %s", prompt)
	}
}

// The summariser's call goes through both LLM middleware chains.
func TestSummariserGoesThroughMiddleware(t *testing.T) {
	b := newBench(t, nil, nil)
	rt := b.runtimeWith(agent.Definition{Name: "m"})
	var features []string
	b.svc.Middleware.RegisterLLMRequest("req", func(ctx context.Context, r *llm.Request) (*llm.Request, error) {
		features = append(features, "request:"+r.Metadata.Feature)
		return r, nil
	})
	b.svc.Middleware.RegisterLLMExecution("exec", func(ctx context.Context, r *llm.Request, next middleware.LLMNext) (*llm.Response, error) {
		features = append(features, "execution:"+r.Metadata.Feature)
		return next(ctx, r)
	})
	b.model.Script(script.CompactionRoute("s"), script.Text("summary"))
	var names []string
	if _, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Compact: true, History: history(), OnEvent: func(e event.Event) { names = append(names, string(e.Name)) }}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(features, []string{"request:compaction", "execution:compaction"}) {
		t.Errorf("middleware saw %v", features)
	}
	if !slices.Equal(names, []string{"compaction_started", "compaction_completed"}) {
		t.Errorf("events %v", names)
	}
}

// A summary cut off at the output token limit is kept — the newest turns
// follow it verbatim — and marked, so that the model knows its end is
// missing rather than taking it for the whole story.
func TestCutSummaryIsMarked(t *testing.T) {
	for _, cut := range []bool{false, true} {
		b := newBench(t, nil, nil)
		rt := b.runtimeWith(agent.Definition{Name: "compacting", ContextWindow: 1000, CompactAt: 0.5, KeepTurns: 2})
		summary := script.Text("The user asked three things; Echo was used, then")
		if cut {
			summary.StopReason = llm.StopMaxTokens
		}
		b.model.Script(script.CompactionRoute("s"), summary)
		b.model.Script("s", script.Text("fourth answer"))
		res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "turn four", History: history(), PromptTokens: 900})
		if err != nil || res.Answer != "fourth answer" || !res.Compacted {
			t.Fatalf("cut %v: result %+v, %v", cut, res, err)
		}
		sent := b.model.CallsTo("s")[0].Messages[0].Content[0].Text
		if !strings.Contains(sent, "Echo was used, then") || strings.Contains(sent, agent.SummaryCutNote) != cut {
			t.Errorf("cut %v: the summary sent: %q", cut, sent)
		}
	}
}
