package event_test

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
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

// Every event decodes back from its flat JSON form into the same event,
// its data typed per name.
func TestDecodeRoundTrip(t *testing.T) {
	at := time.Date(2026, 5, 1, 10, 0, 0, 123000000, time.UTC)
	sc := scope.Scope{RuntimeID: "r/explorer", RootRuntimeID: "r", SessionID: "s", TurnID: "t", ExecutionID: "x2", ParentExecutionID: "x1", Depth: 1}
	u := llm.Usage{InputTokens: 10, OutputTokens: 2}
	samples := map[event.Name]any{
		event.SessionStarted:        &event.SessionData{Source: "resumed"},
		event.SessionEnded:          &event.SessionData{Reason: "closed"},
		event.TurnStarted:           &event.TurnStartedData{Input: "go"},
		event.IterationStarted:      &event.IterationStartedData{Iteration: 2},
		event.LLMCallStarted:        &event.LLMCallStartedData{Iteration: 1, Feature: "agent", Attempt: 1},
		event.LLMDelta:              &event.LLMDeltaData{Iteration: 1, Delta: llm.Delta{Type: llm.DeltaText, Text: "hi"}},
		event.LLMCallCompleted:      &event.LLMCallData{Iteration: 1, Feature: "agent", Attempt: 1, StopReason: llm.StopEndTurn, Usage: &u, CostUSD: 0.0125, Text: "hi", Duration: time.Millisecond},
		event.LLMCallFailed:         &event.LLMCallData{Iteration: 1, Feature: "agent", Attempt: 2, Error: "overloaded", Retrying: true},
		event.ToolExecStarted:       &event.ToolStartedData{Iteration: 1, ToolUseID: "u", ToolName: "Read", Input: json.RawMessage(`{"file_path":"a.go"}`), Summary: "a.go", Detail: "lines 1-10", Parallel: true},
		event.ToolExecCompleted:     &event.ToolData{Iteration: 1, ToolUseID: "u", ToolName: "Read", Input: json.RawMessage(`{"file_path":"a.go"}`), Output: "x", Duration: time.Second, AllowedBy: event.Decision{By: "policy", Rule: "Read", Reason: "allowed \"here\""}, RewrittenBy: []string{"hook:a", "middleware:tool_request"}},
		event.ToolExecFailed:        &event.ToolData{Iteration: 1, ToolUseID: "u", ToolName: "Read", Input: json.RawMessage(`{}`), Output: "no", IsError: true},
		event.UserMessageInjected:   &event.UserMessageData{Iteration: 3, Messages: []string{"also this"}},
		event.OutputRejected:        &event.OutputRejectedData{Iteration: 2, Correction: 1, Error: "at /city: got number, want string"},
		event.ToolBlocked:           &event.ToolBlockedData{Iteration: 1, ToolUseID: "u", ToolName: "Bash", Input: json.RawMessage(`{}`), By: "policy", Reason: "denied"},
		event.ApprovalRequested:     &event.ApprovalData{ToolUseID: "u", ToolName: "Bash", Input: json.RawMessage(`{}`), Reason: "asks"},
		event.ApprovalResolved:      &event.ApprovalData{ToolUseID: "u", ToolName: "Bash", Input: json.RawMessage(`{}`), Allowed: true, Scope: "once", By: "approver"},
		event.HookFailed:            &event.HookFailedData{Hook: "PRE_TOOL_USE", Handler: "h", Error: "boom", FailClosed: true},
		event.HookMessage:           &event.HookMessageData{Hook: "POST_TOOL_USE", Handler: "h", Message: "formatted"},
		event.ConfigWarning:         &event.ConfigWarningData{File: ".claude/settings.json", Message: `hooks: "Setup" skipped`},
		event.MiddlewareFailed:      &event.MiddlewareFailedData{Chain: "tool_execution", Middleware: "m", Error: "late"},
		event.CompactionStarted:     &event.CompactionData{Trigger: "auto", MessagesBefore: 40},
		event.CompactionCompleted:   &event.CompactionData{Trigger: "auto", MessagesBefore: 40, MessagesAfter: 6, Usage: u},
		event.VerificationCompleted: &event.VerificationData{Command: "go test ./...", Passed: true, Output: "ok", Duration: time.Second},
		event.SubagentStarted:       &event.SubagentData{Agent: "explorer", ToolUseID: "u", Background: true, TaskID: "task_1"},
		event.SubagentCompleted:     &event.SubagentData{Agent: "explorer", ToolUseID: "u", StopReason: "answered", Answer: "found", Iterations: 2, ToolCalls: 1, Usage: &u},
		event.TurnCompleted:         &event.TurnCompletedData{StopReason: "answered", Answer: `{"a":1}`, Output: json.RawMessage(`{"a":1}`), Iterations: 3, ToolCalls: 2, Usage: u},
		event.MCPServerStarted:      &event.MCPServerData{Server: "files", Type: "stdio", State: "up", Tools: []string{"mcp__files__read"}, Info: "files 1.0"},
		event.MCPServerFailed:       &event.MCPServerData{Server: "files", Type: "stdio", State: "failed", Error: "the handshake did not end in time"},
		event.MCPServerDropped:      &event.MCPServerData{Server: "api", Type: "http", State: "down", Tools: []string{"mcp__api__get"}, Error: "the connection dropped: EOF"},
		event.MCPServerReconnected:  &event.MCPServerData{Server: "api", Type: "http", State: "up", Tools: []string{"mcp__api__get"}, Info: "api 2"},
		event.MCPServerToolsChanged: &event.MCPServerData{Server: "api", Type: "http", State: "up", Tools: []string{"mcp__api__get", "mcp__api__put"}, Added: []string{"mcp__api__put"}, Removed: []string{"mcp__api__del"}},
		event.ToolProgress:          &event.ToolProgressData{Iteration: 2, ToolUseID: "u", ToolName: "mcp__files__index", Progress: 3, Total: 10, Message: "indexing src/"},
		event.MCPLog:                &event.MCPLogData{Server: "files", Level: "warning", Logger: "fs", Message: "slow disk", Dropped: 4},
		event.ElicitationRequested:  &event.ElicitationData{ID: "el_1", Server: "everything", ToolUseID: "u", ToolName: "mcp__everything__ask", Mode: "form", Message: "Your name?", Fields: []string{"name", "age"}},
		event.ElicitationResolved:   &event.ElicitationData{ID: "el_1", Server: "auth", Mode: "url", Message: "Sign in", URL: "https://auth.example/consent", Action: "decline", By: "none", Reason: "no one to ask", Duration: time.Millisecond},
	}
	for _, n := range event.Names {
		d, ok := samples[n]
		if !ok {
			t.Errorf("no sample for %s", n)
			continue
		}
		e := event.Event{Name: n, Time: at, Scope: sc, Data: d}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := event.Decode(b)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		if !reflect.DeepEqual(got, e) {
			t.Errorf("%s: decoded\n%#v\nwant\n%#v", n, got, e)
		}
	}
	// A name from a newer orca keeps its object; what is not an event is an error.
	e, err := event.Decode([]byte(`{"name":"tool_exec_paused","time":"2026-05-01T10:00:00Z","session_id":"s","why":"later"}`))
	if raw, ok := e.Data.(json.RawMessage); err != nil || !ok || e.SessionID != "s" || string(raw) != `{"why":"later"}` {
		t.Errorf("unknown name: %+v, %v", e, err)
	}
	// Written again, it is the event it was, its envelope once.
	if b, err := e.AppendJSON(nil); err != nil || string(b) != `{"name":"tool_exec_paused","time":"2026-05-01T10:00:00Z","runtime_id":"","session_id":"s","why":"later"}` {
		t.Errorf("unknown name, written again: %s, %v", b, err)
	}
	for _, bad := range []string{``, `[]`, `{"time":"2026-05-01T10:00:00Z"}`, `{"name":"turn_started","input":3}`} {
		if _, err := event.Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%q) succeeded", bad)
		}
	}
}

// AppendJSON writes what encoding/json writes for the envelope and the
// data, merged: the same bytes for odd strings (HTML characters, control
// characters, invalid UTF-8, U+2028), omitted fields and depth.
func TestAppendJSONIsEncodingJSONs(t *testing.T) {
	reference := func(e event.Event) []byte {
		type envelope struct {
			Name event.Name `json:"name"`
			Time time.Time  `json:"time"`
			scope.Scope
		}
		head, err := json.Marshal(envelope{e.Name, e.Time, e.Scope})
		if err != nil {
			t.Fatal(err)
		}
		if e.Data == nil {
			return head
		}
		data, err := json.Marshal(e.Data)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) <= 2 {
			return head
		}
		return append(append(head[:len(head)-1], ','), data[1:]...)
	}
	odd := []string{"", "plain-id_1", "a<b>&c", "quote \" and \\ backslash", "tab\tnew\nline\x01\b\f\r\x7f\x1f", "héllo — ☃", "bad \xff utf8", "line\u2028sep", "</script>"}
	when := time.Date(2026, 12, 1, 15, 4, 5, 123456789, time.FixedZone("X", 3600))
	var events []event.Event
	for i, s := range odd {
		events = append(events, event.Event{Name: event.Name("n" + s), Time: when.Add(time.Duration(i) * time.Second),
			Scope: scope.Scope{RuntimeID: s, RootRuntimeID: s, SessionID: s, TurnID: s, ExecutionID: s, ParentExecutionID: s, Depth: i - 2}})
	}
	events = append(events,
		event.Event{Name: event.ToolExecCompleted, Time: when, Scope: scope.Scope{RuntimeID: "r", SessionID: "s"},
			Data: &event.ToolData{ToolUseID: "c1", ToolName: "Bash", Output: "<b>done</b>\n", Duration: time.Second, SavedTo: odd[8]}},
		event.Event{Name: event.ToolExecStarted, Time: when, Data: &event.ToolStartedData{Iteration: 3, ToolUseID: odd[2], ToolName: odd[3],
			Input: json.RawMessage("{ \"cmd\" : \"a <b> & c\",\n \"n\": [1, 2] }"), Summary: odd[4], Detail: odd[5]}},
		event.Event{Name: event.ToolExecStarted, Time: when, Data: &event.ToolStartedData{Input: json.RawMessage(`{"file_path":`)}},
		event.Event{Name: event.ToolExecStarted, Time: when, Data: &event.ToolStartedData{}},
		event.Event{Name: event.ToolExecFailed, Time: when, Data: &event.ToolData{Input: json.RawMessage(`{"file_path":`), IsError: true, Output: odd[7]}},
		event.Event{Name: event.ToolExecCompleted, Time: when, Data: &event.ToolData{Input: json.RawMessage(`{"é":"☃"}`)}},
		event.Event{Name: event.ToolExecCompleted, Time: when, Data: &event.ToolData{}},
		event.Event{Name: event.TurnStarted, Time: time.Time{}, Data: &event.TurnStartedData{Input: odd[6]}},
		event.Event{Name: event.IterationStarted, Time: when, Data: &event.IterationStartedData{Iteration: 7}},
		event.Event{Name: event.IterationStarted, Time: when, Data: &event.IterationStartedData{}},
		event.Event{Name: event.LLMCallStarted, Time: when, Data: &event.LLMCallStartedData{Iteration: 1, Feature: "agent", Attempt: 1}},
		event.Event{Name: event.LLMCallStarted, Time: when, Data: &event.LLMCallStartedData{Feature: odd[4]}},
		event.Event{Name: event.LLMCallCompleted, Time: when, Data: &event.LLMCallData{Iteration: 2, Feature: odd[2], Attempt: 3,
			StopReason: llm.StopToolUse, Usage: &llm.Usage{InputTokens: 12, OutputTokens: -3, CacheReadTokens: 1 << 40}, CostUSD: 3e-7, Text: odd[4], Duration: -time.Millisecond}},
		event.Event{Name: event.LLMCallCompleted, Time: when, Data: &event.LLMCallData{CostUSD: 1.5e22}},
		event.Event{Name: event.LLMCallCompleted, Time: when, Data: &event.LLMCallData{CostUSD: -0.000001}},
		event.Event{Name: event.LLMCallFailed, Time: when, Data: &event.LLMCallData{Usage: &llm.Usage{}, Error: odd[6] + odd[7], Retrying: true, StopReason: llm.StopReason(odd[5])}},
		event.Event{Name: event.ToolProgress, Time: when, Data: &event.ToolProgressData{Iteration: 4, ToolUseID: odd[2], ToolName: odd[3], Progress: 2.5, Total: 1e21, Message: odd[4] + odd[6] + odd[7]}},
		event.Event{Name: event.ToolProgress, Time: when, Data: &event.ToolProgressData{Progress: 3e-7, Total: -1}},
		event.Event{Name: event.ToolProgress, Time: when, Data: &event.ToolProgressData{}},
		event.Event{Name: event.ElicitationRequested, Time: when, Data: &event.ElicitationData{ID: odd[1], Server: odd[2], Mode: "form", Message: odd[4] + odd[7], Fields: []string{odd[3], odd[6]}}},
		event.Event{Name: event.ElicitationResolved, Time: when, Data: &event.ElicitationData{Server: odd[8], Mode: "url", URL: odd[5], Action: "accept", By: odd[2], Reason: odd[6], Duration: -1}},
		event.Event{Name: event.ElicitationResolved, Time: when, Data: &event.ElicitationData{}},
		event.Event{Name: "custom", Time: when, Data: map[string]any{}},
		event.Event{Name: "custom", Time: when, Data: json.RawMessage(`{"x":1}`)},
	)
	// An Encoder writes what AppendJSON does, whether the scope is the
	// last event's or not: the events run through scopes that change,
	// repeat, and come back.
	var enc event.Encoder
	for _, e := range slices.Concat(events, events[len(odd)-2:], events[:3]) {
		got, err := e.AppendJSON([]byte("prefix"))
		if err != nil {
			t.Fatalf("%v: %v", e.Name, err)
		}
		if want := reference(e); string(got[len("prefix"):]) != string(want) {
			t.Errorf("AppendJSON\n%s\nwant\n%s", got[len("prefix"):], want)
		}
		if m, _ := json.Marshal(e); string(m) != string(reference(e)) {
			t.Errorf("json.Marshal\n%s\nwant\n%s", m, reference(e))
		}
		if got, err := enc.Append([]byte("prefix"), e); err != nil || string(got[len("prefix"):]) != string(reference(e)) {
			t.Errorf("Encoder.Append\n%s (%v)\nwant\n%s", got, err, reference(e))
		}
	}
	// Strings of random bytes from an alphabet of the awkward ones.
	alphabet := []string{"a", "\"", "\\", "<", ">", "&", "\n", "\x00", "\x1f", "\x7f", "é", "\xe2\x80", "\u2028", "\u2029", "\xff", "☃", "\xf0\x9f\x98\x80", "\xc3"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var sb strings.Builder
		for range rng.IntN(12) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		e := event.Event{Name: event.Name(sb.String()), Time: when, Data: &event.LLMCallData{Text: sb.String()}}
		got, err := e.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := reference(e); string(got) != string(want) {
			t.Fatalf("%q: AppendJSON\n%s\nwant\n%s", sb.String(), got, want)
		}
	}
	for _, at := range []time.Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 12, 31, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC).In(time.FixedZone("E", 3*3600))} {
		if _, err := (event.Event{Name: "x", Time: at}).AppendJSON(nil); err == nil {
			t.Errorf("%v encoded: its year is not four digits", at)
		}
	}
	for _, at := range []time.Time{time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)} {
		e := event.Event{Name: "x", Time: at}
		if got, err := e.AppendJSON(nil); err != nil || string(got) != string(reference(e)) {
			t.Errorf("%v: %s, %v; want %s", at, got, err, reference(e))
		}
	}
}

// BenchmarkAppendJSON encodes a completed tool call whose output is a
// few lines of a file, as observation rows and --json do.
func BenchmarkAppendJSON(b *testing.B) {
	e := event.Event{Name: event.ToolExecCompleted, Time: time.Now(), Scope: scope.Scope{RuntimeID: "rt_1", SessionID: "s_1", TurnID: "t_1", ExecutionID: "x_1"},
		Data: &event.ToolData{Iteration: 3, ToolUseID: "toolu_01", ToolName: "Read", Input: json.RawMessage(`{"file_path":"main.go"}`),
			Output: strings.Repeat("     1\tpackage main\n     2\t\n     3\tfunc main() { fmt.Println(\"<hi>\") }\n", 8), Duration: time.Millisecond}}
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = e.AppendJSON(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// The data of every event about a call carries the model's input, which
// may be anything: input that is not JSON is encoded as a string of it,
// never failing the event (a listener writing rows would lose it).
func TestEventsEncodeInputThatIsNotJSON(t *testing.T) {
	cut := json.RawMessage(`{"file_path":"notes.md","content":"line tw`)
	for _, e := range []event.Event{
		{Name: event.ToolExecStarted, Data: &event.ToolStartedData{ToolName: "Write", Input: cut}},
		{Name: event.ToolExecFailed, Data: &event.ToolData{ToolName: "Write", Input: cut, IsError: true}},
		{Name: event.ToolBlocked, Data: &event.ToolBlockedData{ToolName: "Write", Input: cut, By: "max_tokens"}},
		{Name: event.ApprovalRequested, Data: &event.ApprovalData{ToolName: "Write", Input: cut}},
		{Name: event.ApprovalResolved, Data: &event.ApprovalData{ToolName: "Write"}},
	} {
		e.Time = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
		b, err := e.AppendJSON(nil)
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		var got struct{ Input json.RawMessage }
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %s: %v", e.Name, b, err)
		}
		want := `{}`
		if e.Name != event.ApprovalResolved {
			q, _ := json.Marshal(string(cut))
			want = string(q)
		}
		if string(got.Input) != want {
			t.Errorf("%s: input %s, want %s", e.Name, got.Input, want)
		}
		if _, err := event.Decode(b); err != nil {
			t.Errorf("%s: Decode(%s): %v", e.Name, b, err)
		}
	}
}
