// Package script is a model that answers from a script: the double every
// orca test uses, and the `--provider script` of the CLI.
//
// A script is a list of responses per route. A call's route is its trace id
// (the session id), or a route derived from it for calls that are not the
// session's own: the compaction summariser (RouteOf gives "<id>#compaction")
// and subagent forks ("<id>#fork:<component>"), so that they never eat the
// responses scripted for the session's next iteration. One route's script
// covers every turn of its session.
//
// A call whose route has no script is counted as unrouted and fails; so does
// a call to a route whose script is used up. Both failures name the route.
// A fallback answer is opt-in (SetFallback).
package script

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/orca-agent/orca/llm"
)

// ToolCall is one tool use in a scripted response.
type ToolCall struct {
	// ID is the tool use id; generated ("call_<response>_<n>") if empty.
	ID string `json:"id,omitempty"`
	// Name is the tool's name.
	Name string `json:"name"`
	// Input is the JSON input ({} if empty).
	Input json.RawMessage `json:"input,omitempty"`
	// InputRaw, if set, is sent verbatim instead of Input, malformed or not.
	InputRaw *string `json:"input_raw,omitempty"`
}

// Error makes a scripted call fail with an *llm.Error.
type Error struct {
	Kind    llm.ErrorKind `json:"kind"`
	Message string        `json:"message,omitempty"`
}

// Response is one scripted model response.
type Response struct {
	// Thinking is the model's reasoning before it answered, returned as a
	// provider returns it: a thinking block first (not streamed).
	Thinking string `json:"thinking,omitempty"`
	Text     string `json:"text,omitempty"`
	// Output is a structured answer: a JSON value, sent as the response's
	// text (the scripted model honours llm.Request.Output as a provider
	// does: the answer it gives is the value). Not with Text.
	Output    json.RawMessage `json:"output,omitempty"`
	ToolCalls []ToolCall      `json:"tool_calls,omitempty"`
	// StopReason defaults to refusal when Refusal is set, else to tool_use
	// when there are tool calls, else end_turn.
	StopReason llm.StopReason `json:"stop_reason,omitempty"`
	// Refusal is what the provider says of a refusal
	// (llm.Response.Refusal).
	Refusal string `json:"refusal,omitempty"`
	// Usage is reported as the call's usage (zero if nil).
	Usage *llm.Usage `json:"usage,omitempty"`
	// Error, if set, makes the call fail instead.
	Error *Error `json:"error,omitempty"`
	// DelayMS is how long, in milliseconds, the model takes before it
	// answers (or fails): a real model's thinking time, for people
	// watching (orca demo) and for tests of what is shown meanwhile. The
	// call's context ending cuts it short, and the call fails then.
	DelayMS int `json:"delay_ms,omitempty"`
}

// Text returns a response that answers with s.
func Text(s string) Response { return Response{Text: s} }

// Output returns a response that answers with v as a structured answer
// (marshalled to JSON; a json.RawMessage or []byte is used as is).
func Output(v any) Response { return Response{Output: mustJSON(v)} }

// Call returns a response that asks for one tool call with the given input
// (marshalled to JSON; a json.RawMessage or []byte is used as is).
func Call(name string, input any) Response {
	return Response{ToolCalls: []ToolCall{{Name: name, Input: mustJSON(input)}}}
}

// Fail returns a response that makes the call fail with an error of kind.
func Fail(kind llm.ErrorKind, message string) Response {
	return Response{Error: &Error{Kind: kind, Message: message}}
}

func mustJSON(v any) json.RawMessage {
	switch v := v.(type) {
	case nil:
		return nil
	case json.RawMessage:
		return v
	case []byte:
		return v
	case string:
		return json.RawMessage(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		// The script is written by the test author: a value that cannot be
		// encoded is sent as the malformed input it is.
		return json.RawMessage(fmt.Sprintf("%q", err.Error()))
	}
	return b
}

// File is the JSON form of a script: {"responses": [...]} — served in
// order to whichever model call comes next, main agent or subagent — and
// optionally per-route lists, {"routes": {"main": [...], "subagent": [...],
// "subagent:<name>": [...], "compaction": [...]}}, for calls that must not
// take each other's responses (background forks running beside the main
// agent).
type File struct {
	Responses []Response            `json:"responses,omitempty"`
	Routes    map[string][]Response `json:"routes,omitempty"`
}

// Install scripts f on c for session sessionID: "main" is the session's
// own route, "compaction" its summariser's, "subagent:<name>" a fork of
// that subagent, "subagent" any fork without a list of its own; the
// responses list answers every call no route list covers.
func (f *File) Install(c *Client, sessionID string) { f.InstallFrom(c, sessionID, 0) }

// Given returns how many of the session's responses the script gave it,
// done being the assistant messages the session has had: len(done) when
// the script's response at that place is the last of them — the same
// script, run again to go on where it stopped (a turn that parked a
// call) — else 0 (another script, for what comes next). Pass it to
// InstallFrom.
func (f *File) Given(done []llm.Message) int {
	rs := f.Responses
	if main, ok := f.Routes["main"]; ok {
		rs = main
	}
	n := len(done)
	if n == 0 || n > len(rs) || !rs[n-1].gave(done[n-1]) {
		return 0
	}
	return n
}

// gave reports whether m is the message r answers with: the same tool
// calls (names and inputs), or the same text.
func (r Response) gave(m llm.Message) bool {
	var uses []llm.Block
	for _, b := range m.Content {
		if b.Type == llm.BlockToolUse {
			uses = append(uses, b)
		}
	}
	if len(r.ToolCalls) != len(uses) {
		return false
	}
	if len(uses) == 0 {
		return r.Text != "" && strings.TrimSpace(m.Text()) == strings.TrimSpace(r.Text)
	}
	for i, c := range r.ToolCalls {
		if c.Name != uses[i].Name || !sameJSON(c.Input, uses[i].Input) {
			return false
		}
	}
	return true
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if len(a) == 0 {
		a = json.RawMessage("{}")
	}
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// InstallFrom is Install with the session's first skip responses left
// out — those of its main route, or of Responses without one: a session
// that goes on where an earlier run of the same script stopped (a turn
// that parked a call) gets the responses after those it was given.
func (f *File) InstallFrom(c *Client, sessionID string, skip int) {
	rest := func(rs []Response) []Response { return rs[min(max(skip, 0), len(rs)):] }
	if _, main := f.Routes["main"]; main {
		c.ScriptAny(f.Responses...)
	} else {
		c.ScriptAny(rest(f.Responses)...)
	}
	for name, rs := range f.Routes {
		switch {
		case name == "main":
			c.Script(sessionID, rest(rs)...)
		case name == "compaction":
			c.Script(CompactionRoute(sessionID), rs...)
		case name == "subagent":
			c.ScriptPrefix(ForkRoute(sessionID, ""), rs...)
		default:
			c.Script(ForkRoute(sessionID, strings.TrimPrefix(name, "subagent:")), rs...)
		}
	}
}

// Parse reads a script's JSON, a File or a list of responses alone (the
// File's Responses), refusing unknown fields and responses that cannot be
// sent. Errors say where, in the file's terms: "line 3, column 7:
// responses.tool_calls: a string where a list is wanted" for JSON, or
// "responses[1].tool_calls[0]: no name".
func Parse(r io.Reader) (*File, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF")) // a byte order mark a Windows editor wrote
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f File
	into := any(&f)
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		into = &f.Responses // a list alone is the responses
	}
	if err := dec.Decode(into); err != nil {
		return nil, jsonError(data, err)
	}
	if dec.More() {
		return nil, errors.New("trailing data after the script")
	}
	for name, rs := range f.Routes {
		if name != "main" && name != "compaction" && name != "subagent" && !strings.HasPrefix(name, "subagent:") {
			return nil, fmt.Errorf("routes.%s: unknown route (use main, compaction, subagent or subagent:<name>)", name)
		}
		if err := checkResponses("routes."+name, rs); err != nil {
			return nil, err
		}
	}
	if err := checkResponses("responses", f.Responses); err != nil {
		return nil, err
	}
	return &f, nil
}

func checkResponses(where0 string, responses []Response) error {
	for i, resp := range responses {
		for j, tc := range resp.ToolCalls {
			where := fmt.Sprintf("%s[%d].tool_calls[%d]", where0, i, j)
			if tc.Name == "" {
				return fmt.Errorf("%s: no name", where)
			}
			if tc.InputRaw != nil && len(tc.Input) > 0 {
				return fmt.Errorf("%s: give input or input_raw, not both", where)
			}
		}
		if resp.Error != nil && resp.Error.Kind == "" {
			return fmt.Errorf("%s[%d].error: no kind", where0, i)
		}
		if len(resp.Output) > 0 && resp.Text != "" {
			return fmt.Errorf("%s[%d]: give text or output, not both", where0, i)
		}
		if resp.DelayMS < 0 {
			return fmt.Errorf("%s[%d].delay_ms: %d is negative", where0, i, resp.DelayMS)
		}
	}
	return nil
}

// jsonError says where in data a decoding error happened, in lines and
// columns, which is what a person editing the file needs.
func jsonError(data []byte, err error) error {
	var off int64
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if typ != nil {
		// In the file's words, not Go's.
		msg = fmt.Sprintf("%s where %s is wanted", jsonKind(typ.Value), goKind(typ.Type))
		if typ.Field != "" {
			msg = typ.Field + ": " + msg
		}
	}
	if errors.Is(err, io.EOF) {
		return errors.New("empty file: want {\"responses\": [...]}")
	}
	if off <= 0 || off > int64(len(data)) {
		return errors.New(msg)
	}
	before := data[:off-1]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return fmt.Errorf("line %d, column %d: %s", line, col, msg)
}

// jsonKind names a JSON value as json.UnmarshalTypeError's Value does
// ("string", "number 1.5", "object", …), with its article.
func jsonKind(v string) string {
	switch {
	case strings.HasPrefix(v, "number"):
		return "a " + v
	case v == "object" || v == "array":
		return "an " + v
	case v == "bool":
		return "true or false"
	}
	return "a " + v
}

// goKind names what a value of Go type t is in a JSON file.
func goKind(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Pointer:
		return goKind(t.Elem())
	}
	return "another value"
}

// ParseFile reads the script file at path; its errors name the file.
func ParseFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("script file %s: %w", path, err)
	}
	defer f.Close()
	s, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("script file %s: %w", path, err)
	}
	return s, nil
}

// Errors returned for calls the script does not cover.
var (
	ErrUnrouted  = errors.New("script: no script for this route")
	ErrExhausted = errors.New("script: the route's script is used up")
)

// RouteOf returns the route of a call with metadata md.
func RouteOf(md llm.Metadata) string {
	switch md.Feature {
	case llm.FeatureCompaction:
		return CompactionRoute(md.TraceID)
	case llm.FeatureSubagent:
		return ForkRoute(md.TraceID, md.Component)
	case llm.FeatureTool:
		return ToolRoute(md.TraceID, md.Component)
	}
	return md.TraceID
}

// ToolRoute is the route of the questions the tool named component asks
// a model of its own (tool.Asker: WebFetch's prompt) in the session
// traceID: apart from the conversation's, so that a script of the
// conversation is the same with or without them.
func ToolRoute(traceID, component string) string { return traceID + "#tool:" + component }

// CompactionRoute is the route of the compaction summariser of a session.
func CompactionRoute(sessionID string) string { return sessionID + "#compaction" }

// ForkRoute is the route of a subagent fork named component, started from
// the session traceID.
func ForkRoute(traceID, component string) string { return traceID + "#fork:" + component }

// Recorded is what the runtime presented to the model in one call.
type Recorded struct {
	Route    string
	Metadata llm.Metadata
	Model    string
	System   string
	Messages []llm.Message
	Tools    []llm.ToolDefinition
	// OneToolCall and Output are the request's (llm.Request).
	OneToolCall bool
	Output      *llm.Output
	// Err is the error the call returned, if any.
	Err error
}

// Observations returns the tool results the call carried in its last
// message: what the model observed of the previous iteration's tools.
func (r Recorded) Observations() []llm.Block {
	if len(r.Messages) == 0 {
		return nil
	}
	var out []llm.Block
	for _, b := range r.Messages[len(r.Messages)-1].Content {
		if b.Type == llm.BlockToolResult {
			out = append(out, b)
		}
	}
	return out
}

type route struct {
	responses []Response
	next      int
}

// Client is a scripted llm.Client, safe for concurrent use.
type Client struct {
	mu       sync.Mutex
	routes   map[string]*route
	prefixes []prefixRoute
	any      *route // answers every route without a script of its own
	fallback *Response
	unrouted int
	calls    []Recorded
	onMiss   func(route string, err error)
}

// New returns a client with no scripts.
func New() *Client { return &Client{routes: make(map[string]*route)} }

// Script appends responses to the script of the route called name.
func (c *Client) Script(name string, responses ...Response) *Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.routes[name]
	if r == nil {
		r = &route{}
		c.routes[name] = r
	}
	r.responses = append(r.responses, responses...)
	return c
}

type prefixRoute struct {
	prefix string
	r      *route
}

// ScriptPrefix appends responses to the script of every route that starts
// with prefix and has no script of its own (every fork of a session:
// ForkRoute(session, "")).
func (c *Client) ScriptPrefix(prefix string, responses ...Response) *Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.prefixes {
		if p.prefix == prefix {
			p.r.responses = append(p.r.responses, responses...)
			return c
		}
	}
	c.prefixes = append(c.prefixes, prefixRoute{prefix: prefix, r: &route{responses: slices.Clone(responses)}})
	return c
}

// ScriptAny appends responses to the script that answers every route that
// has no script of its own (what the CLI uses: it runs one session).
func (c *Client) ScriptAny(responses ...Response) *Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.any == nil {
		c.any = &route{}
	}
	c.any.responses = append(c.any.responses, responses...)
	return c
}

// SetFallback makes calls the script does not cover answer with resp
// instead of failing. Unrouted calls are still counted.
func (c *Client) SetFallback(resp Response) {
	c.mu.Lock()
	c.fallback = &resp
	c.mu.Unlock()
}

// OnMiss registers fn to be told of every call the script did not cover
// (the test kit fails the test there).
func (c *Client) OnMiss(fn func(route string, err error)) {
	c.mu.Lock()
	c.onMiss = fn
	c.mu.Unlock()
}

// Unrouted returns how many calls came with a route that has no script.
func (c *Client) Unrouted() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unrouted
}

// Calls returns every call so far, in order.
func (c *Client) Calls() []Recorded {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Recorded(nil), c.calls...)
}

// CallsTo returns the calls made on route, in order.
func (c *Client) CallsTo(route string) []Recorded {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Recorded
	for _, r := range c.calls {
		if r.Route == route {
			out = append(out, r)
		}
	}
	return out
}

// Remaining returns how many responses route has left (from the ScriptAny
// script if route has none of its own).
func (c *Client) Remaining(route string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.routes[route]
	if r == nil {
		r = c.any
	}
	if r == nil {
		return 0
	}
	return len(r.responses) - r.next
}

// NativeOutput implements llm.OutputNative: a scripted Output answer is
// the structured answer a request's Output asks for.
func (*Client) NativeOutput() bool { return true }

// Generate implements llm.Client.
func (c *Client) Generate(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	name := RouteOf(req.Metadata)
	rec := Recorded{Route: name, Metadata: req.Metadata, Model: req.Model, System: req.System, Messages: req.Messages, Tools: req.Tools, OneToolCall: req.OneToolCall, Output: req.Output}
	if err := ctx.Err(); err != nil {
		return nil, c.record(rec, fmt.Errorf("script: route %q: %w", name, err))
	}

	c.mu.Lock()
	r := c.routes[name]
	var missErr error
	if r == nil {
		for _, p := range c.prefixes {
			if strings.HasPrefix(name, p.prefix) {
				r = p.r
				break
			}
		}
	}
	if r == nil {
		if c.any != nil {
			r = c.any
		} else {
			c.unrouted++
			missErr = fmt.Errorf("%w: route %q (trace id %q, feature %q) has no script", ErrUnrouted, name, req.Metadata.TraceID, req.Metadata.Feature)
		}
	}
	var resp Response
	var index int
	if r != nil {
		if r.next >= len(r.responses) {
			missErr = fmt.Errorf("%w: route %q had %d responses and all were used; call %d has none", ErrExhausted, name, len(r.responses), r.next+1)
		} else {
			index = r.next
			resp = r.responses[r.next]
			r.next++
		}
	}
	fallback, onMiss := c.fallback, c.onMiss
	c.mu.Unlock()

	if missErr != nil {
		if fallback == nil {
			if onMiss != nil {
				onMiss(name, missErr)
			}
			return nil, c.record(rec, missErr)
		}
		resp = *fallback
	}
	if resp.DelayMS > 0 {
		t := time.NewTimer(time.Duration(resp.DelayMS) * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, c.record(rec, fmt.Errorf("script: route %q: %w", name, ctx.Err()))
		}
	}
	if resp.Error != nil {
		return nil, c.record(rec, &llm.Error{Kind: resp.Error.Kind, Message: resp.Error.Message})
	}
	c.record(rec, nil)
	return build(resp, index, onDelta), nil
}

func (c *Client) record(rec Recorded, err error) error {
	rec.Err = err
	c.mu.Lock()
	c.calls = append(c.calls, rec)
	c.mu.Unlock()
	return err
}

var emptyInput = json.RawMessage(`{}`)

func build(s Response, index int, onDelta func(llm.Delta)) *llm.Response {
	out := &llm.Response{Model: "script", StopReason: s.StopReason, Refusal: s.Refusal}
	if len(s.Output) > 0 {
		s.Text = string(s.Output)
	}
	n := len(s.ToolCalls)
	if s.Text != "" {
		n++
	}
	if s.Thinking != "" {
		n++
	}
	out.Message = llm.Message{Role: llm.RoleAssistant, Content: make([]llm.Block, 0, n)}
	if s.Thinking != "" {
		out.Message.Content = append(out.Message.Content, llm.Block{Type: llm.BlockThinking, Thinking: s.Thinking, Signature: "script"})
	}
	if s.Text != "" {
		if onDelta != nil {
			onDelta(llm.Delta{Type: llm.DeltaText, Index: len(out.Message.Content), Text: s.Text})
		}
		out.Message.Content = append(out.Message.Content, llm.TextBlock(s.Text))
	}
	for i, tc := range s.ToolCalls {
		id := tc.ID
		if id == "" {
			id = "call_" + strconv.Itoa(index+1) + "_" + strconv.Itoa(i+1)
		}
		input := tc.Input
		if tc.InputRaw != nil {
			input = json.RawMessage(*tc.InputRaw)
		} else if len(input) == 0 {
			input = emptyInput
		}
		if onDelta != nil {
			idx := len(out.Message.Content)
			onDelta(llm.Delta{Type: llm.DeltaToolUse, Index: idx, ID: id, Name: tc.Name})
			onDelta(llm.Delta{Type: llm.DeltaToolInput, Index: idx, Text: string(input)})
		}
		out.Message.Content = append(out.Message.Content, llm.ToolUseBlock(id, tc.Name, input))
	}
	if out.StopReason == "" {
		switch {
		case s.Refusal != "":
			out.StopReason = llm.StopRefusal
		case len(s.ToolCalls) > 0:
			out.StopReason = llm.StopToolUse
		default:
			out.StopReason = llm.StopEndTurn
		}
	}
	if s.Usage != nil {
		out.Usage = *s.Usage
	}
	return out
}
