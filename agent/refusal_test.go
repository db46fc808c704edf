package agent_test

import (
	"encoding/json"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
)

// A response that stops with a refusal ends the turn as refused, not as an
// empty answer: the provider's words are the reason, the text the model
// wrote before the refusal is not the answer, and a tool call the refusal
// cut in after does not run but is answered, so that the next turn's
// conversation is well formed.
func TestRefusalEndsTheTurn(t *testing.T) {
	n, calls := newNode(t)
	n.Script("s", script.Response{
		Text:      "Sure, the first step is",
		ToolCalls: []script.ToolCall{{ID: "a", Name: "Echo", Input: json.RawMessage(`{"text":"step one"}`)}},
		Refusal:   "This request was declined under the usage policy.",
	})
	res := n.Run(t.Context(), "s", "go")
	if res.StopReason != agent.StopRefused || res.Answer != "" || res.Reason != "This request was declined under the usage policy." || res.Err != nil {
		t.Fatalf("result: stop %s, answer %q, reason %q, err %v", res.StopReason, res.Answer, res.Reason, res.Err)
	}
	if res.Iterations != 1 || res.ToolCalls != 0 || len(calls()) != 0 {
		t.Errorf("%d iterations, %d tool calls, tools ran %v: want 1, 0, none", res.Iterations, res.ToolCalls, calls())
	}
	if len(res.Messages) != 3 {
		t.Fatalf("messages %+v", res.Messages)
	}
	if m := res.Messages[1]; m.Role != llm.RoleAssistant || m.Text() != "Sure, the first step is" || len(m.ToolUses()) != 1 {
		t.Errorf("assistant message %+v", m)
	}
	if r := res.Messages[2].Content; len(r) != 1 || r[0].Type != llm.BlockToolResult || r[0].ToolUseID != "a" || !r[0].IsError {
		t.Errorf("the refused call's result: %+v", r)
	}
	evs := n.Events(event.TurnCompleted)
	if len(evs) != 1 {
		t.Fatalf("%d turn_completed events", len(evs))
	}
	if d := evs[0].Data.(*event.TurnCompletedData); d.StopReason != "refused" || d.Reason != res.Reason || d.Answer != "" {
		t.Errorf("turn_completed %+v", d)
	}

	// The next turn carries the refused exchange, every call answered.
	n.Script("s", script.Text("Here is something else."))
	if res := n.Run(t.Context(), "s", "something else, then"); res.StopReason != agent.StopAnswered {
		t.Fatalf("next turn: %s %v", res.StopReason, res.Err)
	}
	var answered []string
	for _, m := range n.LLM.CallsTo("s")[1].Messages {
		for _, b := range m.Content {
			if b.Type == llm.BlockToolResult {
				answered = append(answered, b.ToolUseID)
			}
		}
	}
	if len(answered) != 1 || answered[0] != "a" {
		t.Errorf("the next prompt answers calls %v, want [a]", answered)
	}
}

// A refusal the provider gave no words for still says what happened.
func TestRefusalWithoutReason(t *testing.T) {
	n, _ := newNode(t)
	n.Script("s", script.Response{StopReason: llm.StopRefusal})
	res := n.Run(t.Context(), "s", "go")
	if res.StopReason != agent.StopRefused || res.Answer != "" || res.Reason == "" {
		t.Errorf("stop %s, answer %q, reason %q", res.StopReason, res.Answer, res.Reason)
	}
}
