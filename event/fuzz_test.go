package event_test

import (
	"testing"
	"time"

	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/scope"
)

// FuzzDecode reads events as files and rows hold them — a timeline from
// another version, a row edited by hand: an event or an error, never a
// panic, and what a decoded event encodes to decodes again to the same
// encoding.
func FuzzDecode(f *testing.F) {
	at := time.Date(2026, 12, 3, 8, 0, 0, 1, time.UTC)
	sc := scope.Scope{RuntimeID: "orca-1", SessionID: "s", TurnID: "t", ExecutionID: "e"}
	for _, e := range []event.Event{
		{Name: event.TurnStarted, Time: at, Scope: sc, Data: &event.TurnStartedData{Input: "go"}},
		{Name: event.ToolExecCompleted, Time: at, Scope: sc, Data: &event.ToolData{ToolUseID: "c", ToolName: "Bash", Input: []byte(`{"command":"ls"}`), Output: "ok", AllowedBy: event.Decision{By: "policy"}}},
		{Name: event.LLMCallCompleted, Time: at, Scope: sc, Data: &event.LLMCallData{Iteration: 1, StopReason: "tool_use"}},
		{Name: event.IterationStarted, Time: at, Scope: sc, Data: &event.IterationStartedData{Iteration: 3}},
	} {
		b, err := e.AppendJSON(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	for _, s := range []string{`{}`, `{"name":"x"}`, `{"name":"tool_exec_completed","time":"bad"}`, `{"name":"tool_exec_completed","input":5}`, `[]`, `null`, `{"name":"llm_call_completed","usage":"x"}`, `{"name":"turn_completed","time":"2026-12-03T08:00:00Z","depth":-1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		e, err := event.Decode([]byte(data))
		if err != nil {
			return
		}
		b, err := e.AppendJSON(nil)
		if err != nil {
			return // a time past the year 9999, say: refused, not panicked on
		}
		again, err := event.Decode(b)
		if err != nil {
			t.Fatalf("%q decoded, and what it encodes to does not: %v\n%s", data, err, b)
		}
		if b2, err := again.AppendJSON(nil); err != nil || string(b2) != string(b) {
			t.Fatalf("%q: encodes to\n%s\nand, decoded again, to\n%s (%v)", data, b, b2, err)
		}
	})
}
