package event_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/scope"
)

func TestFlatJSON(t *testing.T) {
	e := event.Event{
		Name: event.ToolExecFailed, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Scope: scope.Scope{RuntimeID: "r", SessionID: "s", TurnID: "t", ExecutionID: "x"},
		Data: &event.ToolData{ToolUseID: "u", ToolName: "Read", Input: json.RawMessage(`{"file_path":`), Output: "bad", IsError: true},
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	want := map[string]any{
		"name": "tool_exec_failed", "session_id": "s", "turn_id": "t", "runtime_id": "r", "execution_id": "x",
		"tool_name": "Read", "tool_use_id": "u", "input": `{"file_path":`, "output": "bad", "is_error": true,
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %#v, want %#v (line %s)", k, m[k], v, b)
		}
	}

	b, _ = json.Marshal(event.Event{Name: event.TurnStarted, Data: &event.ToolData{Input: json.RawMessage(`{"a":1}`)}})
	json.Unmarshal(b, &m)
	if in, ok := m["input"].(map[string]any); !ok || in["a"] != float64(1) {
		t.Errorf("valid input should stay JSON: %s", b)
	}
	b, _ = json.Marshal(event.Event{Name: event.TurnStarted})
	if err := json.Unmarshal(b, &m); err != nil || m["name"] != "turn_started" {
		t.Errorf("event without data: %s", b)
	}
}
