// Package event is orca's observation model: one Event type with a name, the
// ids of the run it belongs to and data typed per name. Events only watch:
// nothing a listener does can change a run.
package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/scope"
)

// Name identifies an event kind.
type Name string

// Event names.
const (
	// SessionStarted: a live session opened (new or resumed), after its
	// SESSION_START hooks.
	SessionStarted Name = "session_started"
	// SessionEnded: a live session closed, after its SESSION_END hooks.
	SessionEnded      Name = "session_ended"
	TurnStarted       Name = "turn_started"
	IterationStarted  Name = "iteration_started"
	LLMCallStarted    Name = "llm_call_started"
	LLMDelta          Name = "llm_delta"
	LLMCallCompleted  Name = "llm_call_completed"
	LLMCallFailed     Name = "llm_call_failed"
	ToolExecStarted   Name = "tool_exec_started"
	ToolExecCompleted Name = "tool_exec_completed"
	ToolExecFailed    Name = "tool_exec_failed"
	// ToolProgress: a running call said how far it has come (tool.Report:
	// an MCP server's notifications/progress), between its
	// tool_exec_started and its end, never after.
	ToolProgress Name = "tool_progress"
	// UserMessageInjected: messages the user queued while the turn ran
	// entered it at an iteration boundary.
	UserMessageInjected Name = "user_message_injected"
	// OutputRejected: the model's answer did not hold to the turn's output
	// schema (agent.Output) and went back to it with what is wrong.
	OutputRejected Name = "output_rejected"
	// ToolBlocked: a tool call was refused (by a hook, the policy or the
	// approver) and did not run.
	ToolBlocked       Name = "tool_blocked"
	ApprovalRequested Name = "approval_requested"
	ApprovalResolved  Name = "approval_resolved"
	// ElicitationRequested and ElicitationResolved frame an MCP server's
	// question for the person (elicitation/create): asked, then answered
	// — by the person, a hook, or orca declining when no one can answer.
	// They carry the scope of the call the server asked during (the
	// runtime's only when it asked outside one), and never the answer's
	// values: the fields answered are named, the URL shown without its
	// query.
	ElicitationRequested Name = "elicitation_requested"
	ElicitationResolved  Name = "elicitation_resolved"
	// HookFailed: a hook handler failed or broke its hook's contract.
	HookFailed Name = "hook_failed"
	// HookMessage: a hook handler had something shown to the user (not
	// to the model): Claude Code's systemMessage.
	HookMessage Name = "hook_message"
	// ConfigWarning: a settings file, plugin or other configuration asked
	// for something that is not done as written (an unknown hook event, a
	// key orca does not honour, project settings of an untrusted
	// workspace); the rest of it works. It carries the runtime's scope
	// only.
	ConfigWarning Name = "config_warning"
	// MiddlewareFailed: a middleware failed after the call it wraps had
	// completed; the completed result was kept.
	MiddlewareFailed Name = "middleware_failed"
	// CompactionStarted and CompactionCompleted frame a compaction of the
	// transcript (automatic, manual or as recovery).
	CompactionStarted   Name = "compaction_started"
	CompactionCompleted Name = "compaction_completed"
	// VerificationCompleted: the built-in verification command ran after
	// a finished turn.
	VerificationCompleted Name = "verification_completed"
	// SubagentStarted and SubagentCompleted frame a subagent fork: they
	// carry the fork's scope (its execution, depth and parent execution)
	// and say which call started it.
	SubagentStarted   Name = "subagent_started"
	SubagentCompleted Name = "subagent_completed"
	TurnCompleted     Name = "turn_completed"
	// MCPServerStarted, MCPServerFailed, MCPServerDropped,
	// MCPServerReconnected and MCPServerToolsChanged say how an MCP server
	// of a runtime is: up for the first time; not started, or not
	// connected again (once, not at every try after); its connection
	// dropped; up again; its tool list changed. They carry the runtime's
	// scope only.
	MCPServerStarted      Name = "mcp_server_started"
	MCPServerFailed       Name = "mcp_server_failed"
	MCPServerDropped      Name = "mcp_server_dropped"
	MCPServerReconnected  Name = "mcp_server_reconnected"
	MCPServerToolsChanged Name = "mcp_server_tools_changed"
	// MCPLog: an MCP server logged a message (notifications/message). It
	// carries the runtime's scope only.
	MCPLog Name = "mcp_log"
)

// Names lists every event name the runtime emits.
var Names = []Name{
	SessionStarted, TurnStarted, IterationStarted, LLMCallStarted, LLMDelta, LLMCallCompleted, LLMCallFailed,
	ToolExecStarted, ToolExecCompleted, ToolExecFailed, UserMessageInjected, OutputRejected, ToolBlocked,
	ApprovalRequested, ApprovalResolved, HookFailed, HookMessage, ConfigWarning, MiddlewareFailed, CompactionStarted, CompactionCompleted,
	VerificationCompleted, SubagentStarted, SubagentCompleted, TurnCompleted, SessionEnded,
	MCPServerStarted, MCPServerFailed, MCPServerDropped, MCPServerReconnected, MCPServerToolsChanged,
	ToolProgress, MCPLog, ElicitationRequested, ElicitationResolved,
}

// newData returns a new value of the data type of each event name.
var newData = map[Name]func() any{
	SessionStarted:        func() any { return new(SessionData) },
	SessionEnded:          func() any { return new(SessionData) },
	TurnStarted:           func() any { return new(TurnStartedData) },
	IterationStarted:      func() any { return new(IterationStartedData) },
	LLMCallStarted:        func() any { return new(LLMCallStartedData) },
	LLMCallCompleted:      func() any { return new(LLMCallData) },
	LLMCallFailed:         func() any { return new(LLMCallData) },
	LLMDelta:              func() any { return new(LLMDeltaData) },
	ToolExecStarted:       func() any { return new(ToolStartedData) },
	ToolExecCompleted:     func() any { return new(ToolData) },
	ToolExecFailed:        func() any { return new(ToolData) },
	ToolProgress:          func() any { return new(ToolProgressData) },
	UserMessageInjected:   func() any { return new(UserMessageData) },
	OutputRejected:        func() any { return new(OutputRejectedData) },
	ToolBlocked:           func() any { return new(ToolBlockedData) },
	ApprovalRequested:     func() any { return new(ApprovalData) },
	ApprovalResolved:      func() any { return new(ApprovalData) },
	HookFailed:            func() any { return new(HookFailedData) },
	HookMessage:           func() any { return new(HookMessageData) },
	ConfigWarning:         func() any { return new(ConfigWarningData) },
	MiddlewareFailed:      func() any { return new(MiddlewareFailedData) },
	CompactionStarted:     func() any { return new(CompactionData) },
	CompactionCompleted:   func() any { return new(CompactionData) },
	VerificationCompleted: func() any { return new(VerificationData) },
	SubagentStarted:       func() any { return new(SubagentData) },
	SubagentCompleted:     func() any { return new(SubagentData) },
	TurnCompleted:         func() any { return new(TurnCompletedData) },
	MCPServerStarted:      func() any { return new(MCPServerData) },
	MCPServerFailed:       func() any { return new(MCPServerData) },
	MCPServerDropped:      func() any { return new(MCPServerData) },
	MCPServerReconnected:  func() any { return new(MCPServerData) },
	MCPServerToolsChanged: func() any { return new(MCPServerData) },
	MCPLog:                func() any { return new(MCPLogData) },
	ElicitationRequested:  func() any { return new(ElicitationData) },
	ElicitationResolved:   func() any { return new(ElicitationData) },
}

// VerificationData is the data of VerificationCompleted.
type VerificationData struct {
	Command  string        `json:"command"`
	Passed   bool          `json:"passed"`
	Output   string        `json:"output"`
	Duration time.Duration `json:"duration_ns"`
}

// Event is one thing that happened in a run.
type Event struct {
	Name Name      `json:"name"`
	Time time.Time `json:"time"`
	// Scope is the run the event belongs to. A subagent fork's events
	// carry the fork's ExecutionID and Depth ≥ 1, and the user's
	// SessionID and TurnID.
	scope.Scope
	// Data is the name's typed payload (a *TurnStartedData for
	// TurnStarted, …), or nil.
	Data any `json:"-"`
}

// MarshalJSON encodes the event as one flat object: the envelope fields
// followed by the data's fields.
func (e Event) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil) }

// AppendJSON appends MarshalJSON's encoding of the event to b: the
// envelope written directly (as encoding/json writes it: the same
// escaping, the same omitted fields), the data with encoding/json. A
// writer that keeps events (the observation rows) calls it rather than
// json.Marshal, which would check and compact the result again.
func (e Event) AppendJSON(b []byte) ([]byte, error) { return e.appendJSON(b, nil) }

// An Encoder appends events as AppendJSON does, keeping the encoding of
// the last scope it wrote: a writer of many events of a few runs (the
// observation rows) escapes each run's ids once, not once per event. The
// zero Encoder is ready to use; it is not safe for concurrent use.
type Encoder struct {
	scope scope.Scope
	enc   []byte // scope's encoding; nil before the first event
}

// Append appends e's encoding to b, as e.AppendJSON(b) does.
func (enc *Encoder) Append(b []byte, e Event) ([]byte, error) { return e.appendJSON(b, enc) }

func (e Event) appendJSON(b []byte, enc *Encoder) ([]byte, error) {
	start := len(b)
	b = append(b, `{"name":`...)
	b = appendString(b, string(e.Name))
	b = append(b, `,"time":"`...)
	if y := e.Time.Year(); y < 0 || y > 9999 {
		return b[:start], fmt.Errorf("event %s: time %v: year outside of range [0,9999]", e.Name, e.Time)
	}
	b = append(e.Time.AppendFormat(b, time.RFC3339Nano), '"')
	switch {
	case enc == nil:
		b = appendScope(b, &e.Scope)
	default:
		if enc.enc == nil || enc.scope != e.Scope {
			enc.scope, enc.enc = e.Scope, appendScope(enc.enc[:0], &e.Scope)
		}
		b = append(b, enc.enc...)
	}
	switch d := e.Data.(type) {
	case nil:
	// The commonest data (two per tool call, three per model call),
	// written directly.
	case *ToolStartedData:
		b = d.appendFields(append(b, ','))
	case *ToolData:
		b = d.appendFields(append(b, ','))
	case *ToolProgressData:
		b = d.appendFields(append(b, ','))
	case *LLMCallStartedData:
		b = appendCall(append(b, ','), d.Iteration, d.Feature, d.Attempt)
	case *LLMCallData:
		b = d.appendFields(append(b, ','))
	case *IterationStartedData:
		b = strconv.AppendInt(append(b, `,"iteration":`...), int64(d.Iteration), 10)
	default:
		data, err := json.Marshal(e.Data)
		if err != nil {
			return b[:start], err
		}
		if len(data) > 2 && data[0] == '{' {
			b = append(b, ',')
			b = append(b, data[1:len(data)-1]...)
		}
	}
	return append(b, '}'), nil
}

// appendFloat appends f as encoding/json writes a float64: decimal,
// but in exponent form below 1e-6 and from 1e21, with the exponent's
// leading zero dropped.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1]
		b = b[:n-1]
	}
	return b
}

// appendFields appends d's fields as encoding/json writes them, without
// the braces.
func (d *LLMCallData) appendFields(b []byte) []byte {
	b = appendCall(b, d.Iteration, d.Feature, d.Attempt)
	if d.Model != "" {
		b = append(b, `,"model":`...)
		b = appendString(b, d.Model)
	}
	if d.StopReason != "" {
		b = append(b, `,"stop_reason":`...)
		b = appendString(b, string(d.StopReason))
	}
	if u := d.Usage; u != nil {
		b = append(b, `,"usage":{"input_tokens":`...)
		b = strconv.AppendInt(b, u.InputTokens, 10)
		b = append(b, `,"output_tokens":`...)
		b = strconv.AppendInt(b, u.OutputTokens, 10)
		b = append(b, `,"cache_read_tokens":`...)
		b = strconv.AppendInt(b, u.CacheReadTokens, 10)
		b = append(b, `,"cache_write_tokens":`...)
		b = strconv.AppendInt(b, u.CacheWriteTokens, 10)
		b = append(b, '}')
	}
	if d.CostUSD != 0 && !math.IsNaN(d.CostUSD) && !math.IsInf(d.CostUSD, 0) {
		b = append(b, `,"cost_usd":`...)
		b = appendFloat(b, d.CostUSD)
	}
	for _, f := range [...]struct{ key, v string }{{`,"text":`, d.Text}, {`,"error":`, d.Error}} {
		if f.v != "" {
			b = append(b, f.key...)
			b = appendString(b, f.v)
		}
	}
	if d.Retrying {
		b = append(b, `,"retrying":true`...)
	}
	if d.Duration != 0 {
		b = append(b, `,"duration_ns":`...)
		b = strconv.AppendInt(b, int64(d.Duration), 10)
	}
	return b
}

// appendScope appends the envelope's scope fields, from the comma before
// runtime_id on.
func appendScope(b []byte, s *scope.Scope) []byte {
	b = append(b, `,"runtime_id":`...)
	b = appendString(b, s.RuntimeID)
	if s.RootRuntimeID != "" {
		b = append(b, `,"root_runtime_id":`...)
		b = appendString(b, s.RootRuntimeID)
	}
	b = append(b, `,"session_id":`...)
	b = appendString(b, s.SessionID)
	for _, f := range [...]struct{ key, v string }{
		{`,"turn_id":`, s.TurnID}, {`,"execution_id":`, s.ExecutionID}, {`,"parent_execution_id":`, s.ParentExecutionID},
	} {
		if f.v != "" {
			b = append(b, f.key...)
			b = appendString(b, f.v)
		}
	}
	if s.Depth != 0 {
		b = append(b, `,"depth":`...)
		b = strconv.AppendInt(b, int64(s.Depth), 10)
	}
	return b
}

// appendCall appends the fields every model call's data starts with.
func appendCall(b []byte, iteration int, feature string, attempt int) []byte {
	b = append(b, `"iteration":`...)
	b = strconv.AppendInt(b, int64(iteration), 10)
	b = append(b, `,"feature":`...)
	b = appendString(b, feature)
	b = append(b, `,"attempt":`...)
	return strconv.AppendInt(b, int64(attempt), 10)
}

// appendFields appends d's fields as MarshalJSON writes them, without
// the braces.
func (d *ToolStartedData) appendFields(b []byte) []byte {
	b = appendTool(b, d.Iteration, d.ToolUseID, d.ToolName, d.Input)
	for _, f := range [...]struct{ key, v string }{{`,"summary":`, d.Summary}, {`,"detail":`, d.Detail}} {
		if f.v != "" {
			b = append(b, f.key...)
			b = appendString(b, f.v)
		}
	}
	if d.Parallel {
		b = append(b, `,"parallel":true`...)
	}
	return b
}

// appendTool appends the fields every tool call's data starts with.
func appendTool(b []byte, iteration int, id, name string, input json.RawMessage) []byte {
	b = append(b, `"iteration":`...)
	b = strconv.AppendInt(b, int64(iteration), 10)
	b = append(b, `,"tool_use_id":`...)
	b = appendString(b, id)
	b = append(b, `,"tool_name":`...)
	b = appendString(b, name)
	b = append(b, `,"input":`...)
	return appendRaw(b, input)
}

// appendFields appends d's fields as MarshalJSON writes them, without
// the braces.
func (d *ToolData) appendFields(b []byte) []byte {
	b = appendTool(b, d.Iteration, d.ToolUseID, d.ToolName, d.Input)
	if d.Output != "" {
		b = append(b, `,"output":`...)
		b = appendString(b, d.Output)
	}
	b = append(b, `,"is_error":`...)
	b = strconv.AppendBool(b, d.IsError)
	if d.Duration != 0 {
		b = append(b, `,"duration_ns":`...)
		b = strconv.AppendInt(b, int64(d.Duration), 10)
	}
	if d.SavedTo != "" {
		b = append(b, `,"saved_to":`...)
		b = appendString(b, d.SavedTo)
	}
	if a := d.AllowedBy; a != (Decision{}) {
		b = append(b, `,"allowed_by":{"by":`...)
		b = appendString(b, a.By)
		if a.Rule != "" {
			b = append(b, `,"rule":`...)
			b = appendString(b, a.Rule)
		}
		if a.Reason != "" {
			b = append(b, `,"reason":`...)
			b = appendString(b, a.Reason)
		}
		b = append(b, '}')
	}
	if len(d.RewrittenBy) > 0 {
		b = append(b, `,"rewritten_by":[`...)
		for i, r := range d.RewrittenBy {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, r)
		}
		b = append(b, ']')
	}
	if len(d.Attachments) > 0 {
		// Rare: as encoding/json writes them.
		if a, err := json.Marshal(d.Attachments); err == nil {
			b = append(b, `,"attachments":`...)
			b = append(b, a...)
		}
	}
	return b
}

// appendFields appends d's fields as encoding/json writes them, without
// the braces (a progress that is not a finite number is the producer's to
// keep out: encoding/json refuses it).
func (d *ToolProgressData) appendFields(b []byte) []byte {
	b = append(b, `"iteration":`...)
	b = strconv.AppendInt(b, int64(d.Iteration), 10)
	b = append(b, `,"tool_use_id":`...)
	b = appendString(b, d.ToolUseID)
	b = append(b, `,"tool_name":`...)
	b = appendString(b, d.ToolName)
	b = append(b, `,"progress":`...)
	b = appendFloat(b, d.Progress)
	if d.Total != 0 {
		b = append(b, `,"total":`...)
		b = appendFloat(b, d.Total)
	}
	if d.Message != "" {
		b = append(b, `,"message":`...)
		b = appendString(b, d.Message)
	}
	return b
}

// appendRaw appends a call's input as ToolData.MarshalJSON has it: {}
// for none, a string of it when it is not JSON, else the JSON compacted
// and HTML-escaped, as encoding/json writes a RawMessage.
func appendRaw(b []byte, raw json.RawMessage) []byte {
	switch {
	case len(raw) == 0:
		return append(b, "{}"...)
	case !json.Valid(raw):
		return appendString(b, string(raw))
	}
	plain := true
	for _, c := range raw {
		if c <= ' ' || c == '<' || c == '>' || c == '&' || c >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		return append(b, raw...)
	}
	var compact, escaped bytes.Buffer
	json.Compact(&compact, raw) // valid: checked above
	json.HTMLEscape(&escaped, compact.Bytes())
	return append(b, escaped.Bytes()...)
}

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it (HTML characters, control characters, invalid UTF-8, U+2028
// and U+2029); what needs no escape is copied in runs.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plainByte[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default: // other control characters, and <, >, &
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// plainByte says which ASCII bytes a JSON string holds as they are.
var plainByte = func() (t [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// Decode decodes an event from its flat JSON form (MarshalJSON's, as
// --json, the run timeline and observation rows keep it): the envelope,
// and the data as the name's type (a *TurnStartedData for TurnStarted, …).
// An event of a name this package does not know keeps the fields of its
// object other than the envelope's as Data, a json.RawMessage object (the
// keys sorted), so that a reader of newer records skips it rather than
// failing, and a writer that keeps it writes it as it came. Input that is
// not a JSON object is an error.
func Decode(b []byte) (Event, error) {
	var e Event
	type envelope Event
	if err := json.Unmarshal(b, (*envelope)(&e)); err != nil {
		return Event{}, fmt.Errorf("event: decode: %w", err)
	}
	if e.Name == "" {
		return Event{}, errors.New("event: decode: no event name")
	}
	mk, ok := newData[e.Name]
	if !ok {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(b, &fields); err != nil {
			return Event{}, fmt.Errorf("event: decode %s: %w", e.Name, err)
		}
		for _, k := range envelopeKeys {
			delete(fields, k)
		}
		data, err := json.Marshal(fields)
		if err != nil {
			return Event{}, fmt.Errorf("event: decode %s: %w", e.Name, err)
		}
		e.Data = json.RawMessage(data)
		return e, nil
	}
	d := mk()
	if err := json.Unmarshal(b, d); err != nil {
		return Event{}, fmt.Errorf("event: decode %s: %w", e.Name, err)
	}
	e.Data = d
	return e, nil
}

// envelopeKeys are the JSON keys of an event's envelope (Event's fields
// and its Scope's), which AppendJSON writes before the data's.
var envelopeKeys = func() []string {
	var keys []string
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		for f := range t.Fields() {
			if f.Anonymous {
				add(f.Type)
				continue
			}
			if k, _, _ := strings.Cut(f.Tag.Get("json"), ","); k != "" && k != "-" {
				keys = append(keys, k)
			}
		}
	}
	add(reflect.TypeFor[Event]())
	return keys
}()

// SessionData is the data of SessionStarted and SessionEnded.
type SessionData struct {
	// Source says how the session opened: "new", "resumed", or "clear"
	// (new, replacing one the user cleared) (started).
	Source string `json:"source,omitempty"`
	// Reason says why it ended (ended).
	Reason string `json:"reason,omitempty"`
}

// SubagentData is the data of SubagentStarted and SubagentCompleted; the
// event's scope is the fork's.
type SubagentData struct {
	Agent string `json:"agent"`
	// ToolUseID is the call that started the fork (a Task or Skill call of
	// the parent execution, ParentExecutionID).
	ToolUseID string `json:"tool_use_id,omitempty"`
	// Background says the fork runs as a background task, TaskID.
	Background bool   `json:"background,omitempty"`
	TaskID     string `json:"task_id,omitempty"`
	// Completed only: how the fork ended, as its turn_completed says.
	StopReason string     `json:"stop_reason,omitempty"`
	Answer     string     `json:"answer,omitempty"`
	Error      string     `json:"error,omitempty"`
	Iterations int        `json:"iterations,omitempty"`
	ToolCalls  int        `json:"tool_calls,omitempty"`
	Usage      *llm.Usage `json:"usage,omitempty"`
}

// TurnStartedData is the data of TurnStarted.
type TurnStartedData struct {
	Input string `json:"input"`
	// Attachments are the images and documents shown with Input.
	Attachments []llm.Attachment `json:"attachments,omitempty"`
}

// IterationStartedData is the data of IterationStarted.
type IterationStartedData struct {
	Iteration int `json:"iteration"`
}

// LLMCallStartedData is the data of LLMCallStarted: which call of the
// iteration, for what, and which attempt at it.
type LLMCallStartedData struct {
	Iteration int    `json:"iteration"`
	Feature   string `json:"feature"`
	Attempt   int    `json:"attempt"`
}

// LLMCallData is the data of LLMCallCompleted and LLMCallFailed: the
// started call's fields, then how it ended.
type LLMCallData struct {
	Iteration int    `json:"iteration"`
	Feature   string `json:"feature"`
	Attempt   int    `json:"attempt"`
	// Model is the model that served the call (its answer's), or, for a
	// failed one, the model asked: with a fallback chain, not always the
	// session's.
	Model      string         `json:"model,omitempty"`
	StopReason llm.StopReason `json:"stop_reason,omitempty"`
	Usage      *llm.Usage     `json:"usage,omitempty"`
	// CostUSD is what the call cost, priced by the model that served it.
	CostUSD float64 `json:"cost_usd,omitempty"`
	Text    string  `json:"text,omitempty"`
	Error   string  `json:"error,omitempty"`
	// Retrying is set on LLMCallFailed when another attempt follows.
	Retrying bool          `json:"retrying,omitempty"`
	Duration time.Duration `json:"duration_ns,omitempty"`
}

// LLMDeltaData is the data of LLMDelta. A tool use's id there is the one
// the provider streamed; the conversation, the tool events and the store
// have the call's own, which differs when the provider's was missing, used
// before in the conversation or not one every provider takes (see the
// agent package).
type LLMDeltaData struct {
	Iteration int       `json:"iteration"`
	Delta     llm.Delta `json:"delta"`
}

// ToolStartedData is the data of ToolExecStarted.
type ToolStartedData struct {
	Iteration int             `json:"iteration"`
	ToolUseID string          `json:"tool_use_id"`
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input"`
	// Summary and Detail are how the tool says the call is shown
	// (tool.Display): a line after its name, and lines under it.
	Summary string `json:"summary,omitempty"`
	Detail  string `json:"detail,omitempty"`
	// Parallel says the call runs beside the other parallel calls of its
	// response (read-only ones): it may end before or after them, and a
	// UI that writes lines once shows it when it ends.
	Parallel bool `json:"parallel,omitempty"`
}

// ToolData is the data of ToolExecCompleted and ToolExecFailed: the
// started call's fields but how it is shown, then how it ended. Output is
// the observation the model sees.
type ToolData struct {
	Iteration int             `json:"iteration"`
	ToolUseID string          `json:"tool_use_id"`
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input"`
	Output    string          `json:"output,omitempty"`
	IsError   bool            `json:"is_error"`
	Duration  time.Duration   `json:"duration_ns,omitempty"`
	// SavedTo is the workspace file that holds the whole result when it
	// was too long for the conversation (Output is what the model saw).
	SavedTo string `json:"saved_to,omitempty"`
	// AllowedBy says what let a call that ran run (completed and failed
	// events of calls that were not refused); RewrittenBy names what
	// changed its input on the way ("middleware:tool_request",
	// "hook:NAME"), in order. A refusal is a ToolBlocked event.
	AllowedBy   Decision `json:"allowed_by,omitzero"`
	RewrittenBy []string `json:"rewritten_by,omitempty"`
	// Attachments are the images and documents the result showed.
	Attachments []llm.Attachment `json:"attachments,omitempty"`
}

// ToolProgressData is the data of ToolProgress: how far a running call
// has come, as the tool said it.
type ToolProgressData struct {
	Iteration int    `json:"iteration"`
	ToolUseID string `json:"tool_use_id"`
	ToolName  string `json:"tool_name"`
	// Progress is how much is done, of Total if the tool knows it (0: it
	// does not); Message says what it is doing.
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// Decision is what decided about a tool call: By is "policy" (Rule is the
// rule or "mode:NAME" that allowed it), "approval" (an earlier "always
// allow", or a rule a skill or command granted), "approver" (a person, now;
// Rule is the scope they gave), "parked" (a person, while the session was
// parked), "hook:NAME" (a PRE_TOOL_USE or PERMISSION_REQUEST hook), or
// "none" (no policy is set); Reason says it in words.
type Decision struct {
	By     string `json:"by"`
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// UserMessageData is the data of UserMessageInjected.
type UserMessageData struct {
	Iteration int      `json:"iteration"`
	Messages  []string `json:"messages"`
}

// OutputRejectedData is the data of OutputRejected.
type OutputRejectedData struct {
	Iteration int `json:"iteration"`
	// Correction counts the answers sent back in the turn, this one
	// included; Error says what is wrong.
	Correction int    `json:"correction"`
	Error      string `json:"error"`
}

// ToolBlockedData is the data of ToolBlocked.
type ToolBlockedData struct {
	Iteration int             `json:"iteration"`
	ToolUseID string          `json:"tool_use_id"`
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input"`
	// By is who refused: "hook:<name>", "policy", "approver", or
	// "max_tokens" (the response that called it was cut off at the output
	// token limit, so none of its calls ran).
	By     string `json:"by"`
	Reason string `json:"reason"`
}

// ApprovalData is the data of ApprovalRequested and ApprovalResolved.
type ApprovalData struct {
	ToolUseID string          `json:"tool_use_id"`
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input"`
	Reason    string          `json:"reason"`
	// Resolved only:
	Allowed bool   `json:"allowed"`
	Scope   string `json:"scope,omitempty"`
	By      string `json:"by,omitempty"`
}

// CompactionData is the data of CompactionStarted and CompactionCompleted.
type CompactionData struct {
	Trigger string `json:"trigger"`
	// Kind is what shrinks the conversation: clear_tool_results (old
	// tool results replaced by a placeholder), summary (the turns before
	// the newest ones summarised) or turn_summary (the running turn's
	// oldest tool exchanges summarised).
	Kind string `json:"kind"`
	// Cleared is how many tool results clear_tool_results cleared.
	Cleared int `json:"cleared,omitempty"`
	// MessagesBefore is the conversation's length before; MessagesAfter
	// (completed only) after.
	MessagesBefore int       `json:"messages_before"`
	MessagesAfter  int       `json:"messages_after,omitempty"`
	Usage          llm.Usage `json:"usage"`
	// Skipped says why nothing was compacted (blocked by a hook, nothing
	// old enough to summarise).
	Skipped string `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`
}

// HookFailedData is the data of HookFailed.
type HookFailedData struct {
	// ToolUseID is the call the hook ran for (the tool hooks), if any.
	ToolUseID  string `json:"tool_use_id,omitempty"`
	Hook       string `json:"hook"`
	Handler    string `json:"handler"`
	Error      string `json:"error"`
	Violation  bool   `json:"violation"`
	FailClosed bool   `json:"fail_closed"`
}

// HookMessageData is the data of HookMessage.
type HookMessageData struct {
	// ToolUseID is the call the hook ran for (the tool hooks), if any.
	ToolUseID string `json:"tool_use_id,omitempty"`
	Hook      string `json:"hook"`
	Handler   string `json:"handler"`
	Message   string `json:"message"`
}

// ConfigWarningData is the data of ConfigWarning.
type ConfigWarningData struct {
	File      string `json:"file"`
	Message   string `json:"message"`
	Untrusted bool   `json:"untrusted,omitempty"`
}

// MCPServerData is the data of the mcp_server_* events: the server as it
// is after the change.
type MCPServerData struct {
	// Server is the server's name (its tools are mcp__<server>__<tool>).
	Server string `json:"server"`
	// Type is stdio, http or sse.
	Type string `json:"type"`
	// State is up, failed or down.
	State string `json:"state"`
	// Tools are the names of the server's tools the runtime offers.
	Tools []string `json:"tools,omitempty"`
	// Info is what the server says it is (its name and version).
	Info string `json:"server_info,omitempty"`
	// Error is why it is not up (failed, dropped).
	Error string `json:"error,omitempty"`
	// Added and Removed are the tools that came and went (tools changed).
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

// MCPLogData is the data of MCPLog: a message an MCP server logged.
type MCPLogData struct {
	// Server is the server's name.
	Server string `json:"server"`
	// Level is the message's, as MCP names them: debug, info, notice,
	// warning, error, critical, alert or emergency.
	Level string `json:"level"`
	// Logger names what in the server logged it, if the server said.
	Logger string `json:"logger,omitempty"`
	// Message is the message's data: its text, or else its JSON.
	Message string `json:"message"`
	// Dropped counts the server's messages dropped since the last one
	// kept: a server that logs faster than orca takes its messages.
	Dropped int `json:"dropped,omitempty"`
}

// ElicitationData is the data of ElicitationRequested and
// ElicitationResolved.
type ElicitationData struct {
	// ID is orca's id of the question (orca serve's API answers it by
	// it).
	ID string `json:"id"`
	// Server is the MCP server asking; ToolUseID and ToolName the call it
	// asked during, when that is known.
	Server    string `json:"server"`
	ToolUseID string `json:"tool_use_id,omitempty"`
	ToolName  string `json:"tool_name,omitempty"`
	// Mode is form or url; Message the server's question.
	Mode    string `json:"mode"`
	Message string `json:"message"`
	// URL is what a url question asks the person to open, without its
	// query and fragment.
	URL string `json:"url,omitempty"`
	// Fields are the form's fields (requested) or the fields the answer
	// gives (resolved): their names, never their values.
	Fields []string `json:"fields,omitempty"`
	// Resolved only: Action is accept, decline or cancel; By who answered
	// (user, hook:NAME, none: no one could be asked, or what a front end
	// names itself, such as api); Reason why it was declined or
	// cancelled; Duration how long the answer took.
	Action   string        `json:"action,omitempty"`
	By       string        `json:"by,omitempty"`
	Reason   string        `json:"reason,omitempty"`
	Duration time.Duration `json:"duration_ns,omitempty"`
}

// MiddlewareFailedData is the data of MiddlewareFailed.
type MiddlewareFailedData struct {
	// ToolUseID is the call the middleware ran around (the tool chains).
	ToolUseID  string `json:"tool_use_id,omitempty"`
	Chain      string `json:"chain"`
	Middleware string `json:"middleware"`
	Error      string `json:"error"`
}

// TurnCompletedData is the data of TurnCompleted.
type TurnCompletedData struct {
	StopReason string `json:"stop_reason"`
	Answer     string `json:"answer"`
	// Output is the structured answer of a turn that asked for one
	// (agent.Output), as compact JSON.
	Output     json.RawMessage `json:"output,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Iterations int             `json:"iterations"`
	ToolCalls  int             `json:"tool_calls"`
	Usage      llm.Usage       `json:"usage"`
	// Budget names the dimension of a budget_exhausted turn.
	Budget string `json:"budget_dimension,omitempty"`
	Error  string `json:"error,omitempty"`
}

// MarshalJSON encodes the data; an input that is not valid JSON (a model
// may send anything) is encoded as a string instead of failing the whole
// event.
func (d ToolData) MarshalJSON() ([]byte, error) {
	type plain ToolData
	d.Input = encodable(d.Input)
	return json.Marshal(plain(d))
}

// MarshalJSON encodes the data, the call's input as ToolData's is.
func (d ToolStartedData) MarshalJSON() ([]byte, error) {
	type plain ToolStartedData
	d.Input = encodable(d.Input)
	return json.Marshal(plain(d))
}

// MarshalJSON encodes the data, the call's input as ToolData's is.
func (d ToolBlockedData) MarshalJSON() ([]byte, error) {
	type plain ToolBlockedData
	d.Input = encodable(d.Input)
	return json.Marshal(plain(d))
}

// MarshalJSON encodes the data, the call's input as ToolData's is.
func (d ApprovalData) MarshalJSON() ([]byte, error) {
	type plain ApprovalData
	d.Input = encodable(d.Input)
	return json.Marshal(plain(d))
}

// encodable returns a call's input as the events encode it: {} for none,
// a JSON string of it when it is not JSON.
func encodable(in json.RawMessage) json.RawMessage {
	switch {
	case len(in) == 0:
		return json.RawMessage(`{}`)
	case !json.Valid(in):
		s, _ := json.Marshal(string(in))
		return s
	}
	return in
}
