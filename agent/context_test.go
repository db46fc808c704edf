package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/tool"
)

// A result too long for the conversation is cut to its start and end; the
// whole of it is in a file the model can Read, which the observation and
// the event name.
func TestOversizedResultIsKeptInAFile(t *testing.T) {
	b := newBench(t, nil, nil)
	long := strings.Repeat("0123456789", 5000) + "THE END"
	dump := tool.New("Dump", "Dumps.", func(ctx context.Context, in struct{}) (string, error) { return long, nil })
	rt := b.runtimeWith(agent.Definition{Name: "cap", MaxResultChars: 5000, ToolProviders: []tool.Provider{tool.Static("d", dump)}})
	b.model.Script("s", script.Response{ToolCalls: []script.ToolCall{{ID: "big", Name: "Dump", Input: raw(map[string]any{})}}}, script.Text("ok"))
	if _, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "dump"}); err != nil {
		t.Fatal(err)
	}
	o := b.observation("s", 1, "big")
	if len(o.Content) > 5600 || !strings.HasPrefix(o.Content, "0123456789") || !strings.HasSuffix(o.Content, "THE END") ||
		!strings.Contains(o.Content, ".orca/results/s/big.txt") || !strings.Contains(o.Content, "Read it with offset and limit") {
		t.Errorf("observation (%d characters): %.200s … %s", len(o.Content), o.Content, o.Content[len(o.Content)-300:])
	}
	if got, err := os.ReadFile(filepath.Join(b.root, ".orca", "results", "s", "big.txt")); err != nil || string(got) != long {
		t.Errorf("the saved result: %d characters, %v", len(got), err)
	}
	b.svc.Bus.Flush(t.Context())
	b.events.mu.Lock()
	defer b.events.mu.Unlock()
	found := false
	for _, e := range b.events.events {
		if d, ok := e.Data.(*event.ToolData); ok && e.Name == event.ToolExecCompleted && d.ToolUseID == "big" {
			found = d.SavedTo == ".orca/results/s/big.txt"
		}
	}
	if !found {
		t.Error("the tool_exec_completed event does not name the saved result")
	}
}

// Old tool results are cleared before the conversation is summarised: the
// calls and results stay paired, the newest results stay whole.
func TestOldToolResultsAreClearedFirst(t *testing.T) {
	b := newBench(t, nil, nil)
	page := tool.New("Page", "A page.", func(ctx context.Context, in struct {
		N int `json:"n"`
	}) (string, error) {
		return strings.Repeat("x", 4000), nil
	}, tool.ReadOnly())
	rt := b.runtimeWith(agent.Definition{Name: "clear", ContextWindow: 4000, CompactAt: 0.8, KeepToolResults: 2, MaxResultChars: 10_000, ToolProviders: []tool.Provider{tool.Static("p", page)}})
	var steps []script.Response
	for i := range 5 {
		steps = append(steps, script.Response{ToolCalls: []script.ToolCall{{ID: string(rune('a' + i)), Name: "Page", Input: raw(map[string]int{"n": i})}}})
	}
	b.model.Script("s", append(steps, script.Text("done"))...)
	res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "read 5 pages"})
	if err != nil || res.Answer != "done" {
		t.Fatalf("%+v, %v", res, err)
	}
	last := b.model.CallsTo("s")[5].Messages
	var whole, cleared int
	for _, m := range last {
		for _, bl := range m.Content {
			switch {
			case bl.Type != llm.BlockToolResult:
			case len(bl.Content) == 4000:
				whole++
			case strings.Contains(bl.Content, "cleared this result") && strings.Contains(bl.Content, "Page"):
				cleared++
			}
		}
	}
	// Cleared when the fifth call came near the window (keeping two), the
	// newest result added since.
	if whole != 3 || cleared != 2 || len(last) != 11 {
		t.Errorf("last prompt: %d messages, %d results whole, %d cleared", len(last), whole, cleared)
	}
	if len(b.model.CallsTo(script.CompactionRoute("s"))) != 0 {
		t.Error("the summariser was called although clearing made room")
	}
}

// A conversation the providers would refuse is caught before it is sent:
// here an llm_request middleware drops a tool result.
func TestMalformedConversationIsNotSent(t *testing.T) {
	b := newBench(t, nil, nil)
	if _, err := b.svc.Middleware.RegisterLLMRequest("drop-results", func(ctx context.Context, r *llm.Request) (*llm.Request, error) {
		for i := range r.Messages {
			r.Messages[i].Content = slicesDelete(r.Messages[i].Content)
		}
		return r, nil
	}); err != nil {
		t.Fatal(err)
	}
	b.model.Script("s", script.Response{ToolCalls: []script.ToolCall{{ID: "t1", Name: "TodoWrite", Input: raw(map[string]any{"todos": []any{}})}}}, script.Text("never"))
	res := b.run("s", "go")
	if res.StopReason != agent.StopFailed || res.Err == nil || !strings.Contains(res.Err.Error(), "has no result") && !strings.Contains(res.Err.Error(), "answers 0") {
		t.Errorf("%s: %v", res.StopReason, res.Err)
	}
	if n := len(b.model.CallsTo("s")); n != 1 {
		t.Errorf("the model got %d calls, want only the first", n)
	}
}

// slicesDelete drops the tool results of a message.
func slicesDelete(bs []llm.Block) []llm.Block {
	var out []llm.Block
	for _, b := range bs {
		if b.Type != llm.BlockToolResult {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		out = []llm.Block{llm.TextBlock("(results dropped)")}
	}
	return out
}

// A result too long for the conversation is not kept through a link that
// leads out of the workspace (a cloned repository's .orca/results ->
// ~/x): the model is told it was not kept, and nothing is written there.
func TestOversizedResultIsNotKeptOutside(t *testing.T) {
	b := newBench(t, nil, nil)
	elsewhere := t.TempDir()
	if err := os.MkdirAll(filepath.Join(b.root, ".orca"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(b.root, ".orca", "results")); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("0123456789", 1000)
	dump := tool.New("Dump", "Dumps.", func(ctx context.Context, in struct{}) (string, error) { return long, nil })
	rt := b.runtimeWith(agent.Definition{Name: "cap", MaxResultChars: 5000, ToolProviders: []tool.Provider{tool.Static("d", dump)}})
	b.model.Script("s", script.Response{ToolCalls: []script.ToolCall{{ID: "big", Name: "Dump", Input: raw(map[string]any{})}}}, script.Text("ok"))
	if _, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "dump"}); err != nil {
		t.Fatal(err)
	}
	if o := b.observation("s", 1, "big"); !strings.Contains(o.Content, "It was not kept.") || strings.Contains(o.Content, ".orca/results") {
		t.Errorf("observation: %s", o.Content[4000:])
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("the result was written through the link: %v", entries)
	}
}
