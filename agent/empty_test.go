package agent_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm"
)

// An empty response — no text, no tool call; thinking alone is none — is
// no answer: models give one after tool results, and the user would see
// the turn end in silence. The model is asked once more; a second empty
// response in a row is the answer. On the last iteration there is no
// asking again.
func TestEmptyResponseIsAskedAgainOnce(t *testing.T) {
	echo := &llm.Response{Message: llm.Message{Content: []llm.Block{llm.ToolUseBlock("a", "Echo", json.RawMessage(`{"text":"x"}`))}}, StopReason: llm.StopToolUse}
	empty := func() *llm.Response {
		return &llm.Response{Message: llm.Message{Content: []llm.Block{{Type: llm.BlockThinking, Thinking: "hmm"}, llm.TextBlock(" \n")}}, StopReason: llm.StopEndTurn}
	}
	done := &llm.Response{Message: llm.Message{Content: []llm.Block{llm.TextBlock("done")}}, StopReason: llm.StopEndTurn}
	for _, tc := range []struct {
		name          string
		maxIterations int
		responses     []*llm.Response
		answer        string
		requests      int
		notes         int // the notes asking again in the conversation
	}{
		{"after tools", 5, []*llm.Response{echo, empty(), done}, "done", 3, 1},
		{"first response", 5, []*llm.Response{empty(), done}, "done", 2, 1},
		{"empty twice", 5, []*llm.Response{echo, empty(), empty(), done}, "", 3, 1},
		{"last iteration", 2, []*llm.Response{echo, empty(), done}, "", 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, requests := recordingClient(tc.responses...)
			rt, _ := testRuntime(t, agent.Definition{Name: "empty", MaxIterations: tc.maxIterations}, client)
			res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go"})
			if err != nil || res.StopReason != agent.StopAnswered || strings.TrimSpace(res.Answer) != tc.answer {
				t.Fatalf("turn: %s %q, %v (%v)", res.StopReason, res.Answer, err, res.Err)
			}
			reqs := requests()
			if len(reqs) != tc.requests {
				t.Fatalf("%d requests, want %d", len(reqs), tc.requests)
			}
			var notes int
			for _, m := range res.Messages {
				if m.Role == llm.RoleUser && m.Text() == agent.EmptyResponseNote {
					notes++
				}
			}
			if notes != tc.notes {
				t.Errorf("%d notes in the conversation, want %d: %+v", notes, tc.notes, res.Messages)
			}
			if tc.answer == "done" {
				last := reqs[len(reqs)-1].Messages
				if m := last[len(last)-1]; m.Role != llm.RoleUser || m.Text() != agent.EmptyResponseNote {
					t.Errorf("the last request ends with %+v, want the note", m)
				}
			}
		})
	}
}
