package agent_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
)

// A server that sends tool calls without ids, with one id for several
// calls, with the same ids in every response, or with ids other
// providers refuse (Kimi's "functions.Echo:0") gets calls renamed so that
// every call of the conversation has an id of its own: the next request
// pairs each result with its call, which a provider takes, and the events
// say the ids the conversation has. The response the client returned is
// left as it was.
func TestToolCallIDsAreMadeUnique(t *testing.T) {
	use := func(id, text string) llm.Block {
		return llm.ToolUseBlock(id, "Echo", json.RawMessage(fmt.Sprintf(`{"text":%q}`, text)))
	}
	responses := []*llm.Response{
		{Message: llm.Message{Content: []llm.Block{use("", "a"), use("", "b"), use("functions.Echo:0", "c"), use("x", "d"), use("x", "e")}}, StopReason: llm.StopToolUse},
		{Message: llm.Message{Content: []llm.Block{use("x", "f"), use("call", "g")}}, StopReason: llm.StopToolUse},
		{Message: llm.Message{Content: []llm.Block{llm.TextBlock("done")}}, StopReason: llm.StopEndTurn},
		// the next turn
		{Message: llm.Message{Content: []llm.Block{use("x", "h")}}, StopReason: llm.StopToolUse},
		{Message: llm.Message{Content: []llm.Block{llm.TextBlock("done again")}}, StopReason: llm.StopEndTurn},
	}
	client, requested := recordingClient(responses...)
	rt, calls := testRuntime(t, agent.Definition{Name: "ids", MaxIterations: 5}, client)
	var started []string
	onEvent := func(ev event.Event) {
		if d, ok := ev.Data.(*event.ToolStartedData); ok && ev.Name == event.ToolExecStarted {
			started = append(started, d.ToolUseID)
		}
	}
	ex := agent.NewExecutor()
	res, err := ex.Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go", OnEvent: onEvent})
	if err != nil || res.StopReason != agent.StopAnswered || res.ToolCalls != 7 {
		t.Fatalf("turn: %s, %d tool calls, %v (%v)", res.StopReason, res.ToolCalls, err, res.Err)
	}
	res, err = ex.Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "again", History: res.Messages, OnEvent: onEvent})
	if err != nil || res.StopReason != agent.StopAnswered || res.ToolCalls != 1 {
		t.Fatalf("second turn: %s, %d tool calls, %v (%v)", res.StopReason, res.ToolCalls, err, res.Err)
	}

	want := []string{"call", "call_2", "functions_Echo_0", "x", "x_2", "x_3", "call_3", "x_4"}
	if !slices.Equal(started, want) {
		t.Errorf("tool_exec_started ids %q, want %q", started, want)
	}
	var ids, results []string
	requests := requested()
	for _, m := range requests[len(requests)-1].Messages {
		for _, b := range m.Content {
			switch b.Type {
			case llm.BlockToolUse:
				ids = append(ids, b.ID)
			case llm.BlockToolResult:
				results = append(results, b.ToolUseID)
			}
		}
	}
	if !slices.Equal(ids, want) || !slices.Equal(results, want) {
		t.Errorf("the last request's calls %q and results %q, want %q for both", ids, results, want)
	}
	wantRan := []string{"Echo:a", "Echo:b", "Echo:c", "Echo:d", "Echo:e", "Echo:f", "Echo:g", "Echo:h"}
	if !slices.Equal(calls(), wantRan) {
		t.Errorf("ran %q, want %q", calls(), wantRan)
	}
	if got := responses[0].Message.Content[0].ID; got != "" {
		t.Errorf("the client's response was changed: its first call's id is %q", got)
	}
}
