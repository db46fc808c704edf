package agent_test

import (
	"context"
	"errors"
	"fmt"
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

// After a compaction summarised the session's conversation, SESSION_START
// runs with source compact, as Claude Code's SessionStart "compact" does,
// and the context its handlers add follows the summary from then on: in a
// manual compaction's transcript, in the prompt after an automatic one,
// and after a summary of the running turn's own work. Opening a session is
// not this package's: no other SESSION_START runs here.
func TestSessionStartAfterCompaction(t *testing.T) {
	b := newBench(t, nil, nil)
	var sources []string
	b.hook(hook.SessionStart, "reinject", hook.On(func(ctx context.Context, p *hook.SessionStartPayload) (*hook.Decision, error) {
		sources = append(sources, p.Source)
		return &hook.Decision{Context: "Reminder: use Bun, not npm."}, nil
	}))
	reinjected := func(bl llm.Block) bool {
		return bl.Type == llm.BlockText && strings.Contains(bl.Text, `<hook-context hook="SESSION_START">`) && strings.Contains(bl.Text, "Reminder: use Bun, not npm.")
	}

	// Manual: the transcript the session keeps.
	rt := b.runtimeWith(agent.Definition{Name: "c", KeepTurns: 2})
	b.model.Script(script.CompactionRoute("m"), script.Text("summary"))
	out, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "m", Compact: true, History: history()})
	if err != nil || !out.Compacted {
		t.Fatalf("manual: %+v, %v", out, err)
	}
	if c := out.Transcript[0].Content; len(c) != 3 || !strings.Contains(c[0].Text, "summary") || !reinjected(c[1]) || c[2].Text != "turn two" {
		t.Errorf("manual compaction's first message: %+v", c)
	}

	// Automatic, before a model call: the prompt the model gets.
	rt = b.runtimeWith(agent.Definition{Name: "a", ContextWindow: 1000, CompactAt: 0.5, KeepTurns: 2})
	b.model.Script(script.CompactionRoute("a"), script.Text("summary"))
	b.model.Script("a", script.Text("fourth answer"))
	if res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "a", Input: "turn four", History: history(), PromptTokens: 900}); err != nil || !res.Compacted {
		t.Fatalf("automatic: %+v, %v", res, err)
	}
	if c := b.model.CallsTo("a")[0].Messages[0].Content; len(c) != 3 || !reinjected(c[1]) || c[2].Text != "turn three" {
		t.Errorf("the prompt after an automatic compaction starts with %+v", c)
	}

	// The running turn's work summarised (no earlier turn to summarise):
	// the context follows that summary, in the turn's input.
	rt = b.runtimeWith(agent.Definition{Name: "w", ContextWindow: 3000, CompactAt: 0.8, KeepToolResults: 1})
	var steps []script.Response
	for i := range 6 {
		steps = append(steps, script.Response{ToolCalls: []script.ToolCall{{ID: fmt.Sprint("c", i), Name: "Echo", Input: raw(map[string]string{"text": strings.Repeat("y", 2000)})}}})
	}
	b.model.Script(script.CompactionRoute("w"), script.Text("work summary"))
	b.model.Script("w", append(steps, script.Text("done"))...)
	res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "w", Input: "echo a lot"})
	if err != nil || res.Answer != "done" || !res.Compacted {
		t.Fatalf("turn summary: %+v, %v", res, err)
	}
	calls := b.model.CallsTo("w")
	input := calls[len(calls)-1].Messages[0].Content
	if len(input) != 3 || input[0].Text != "echo a lot" || !strings.Contains(input[1].Text, "work summary") || !reinjected(input[2]) {
		t.Errorf("the turn's input after its work was summarised: %+v", input)
	}
	if len(sources) != 3 || sources[0] != agent.SourceCompact || sources[1] != agent.SourceCompact || sources[2] != agent.SourceCompact {
		t.Errorf("SESSION_START ran with sources %q, want compact three times", sources)
	}
}
