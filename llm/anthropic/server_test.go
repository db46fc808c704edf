package anthropic_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/llm"
)

// answer is what the fake API does with one request.
type answer struct {
	resp llm.Response
	// err, when set, is one of llm's sentinel errors: the request fails
	// with the status and error body the API uses for it.
	err error
	// header is added to the response (retry-after, …).
	header http.Header
	// cutAfter, when positive, ends the stream after that many events:
	// cleanly (the body ends) or, with abort, by dropping the connection.
	cutAfter int
	abort    bool
	// streamError, when set, is sent as an error event after message_start.
	streamError string
	// fullUsage sends the input counts in message_delta too, as newer
	// versions of the API do.
	fullUsage bool
	// hang, after message_start and a first text piece, waits for the
	// client to go away.
	hang bool
}

// fakeAPI is an httptest server that speaks the Messages API: it answers
// POST /v1/messages (or the path route takes) with the next answer (the
// last one repeats), as a server-sent-event stream in the API's wire
// format, and keeps what it received.
type fakeAPI struct {
	*httptest.Server
	route   func(path string) bool
	mu      sync.Mutex
	answers []answer
	bodies  [][]byte
	headers []http.Header
	urls    []*url.URL
}

func newFakeAPI(t *testing.T, answers ...answer) *fakeAPI {
	t.Helper()
	return newFakeAPIAt(t, func(path string) bool { return path == "/v1/messages" }, answers...)
}

// newFakeAPIAt is newFakeAPI answering the POST requests whose path route
// takes (Vertex AI's, say).
func newFakeAPIAt(t *testing.T, route func(path string) bool, answers ...answer) *fakeAPI {
	t.Helper()
	f := &fakeAPI{answers: answers, route: route}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.bodies)
	f.bodies = append(f.bodies, body)
	f.headers = append(f.headers, r.Header.Clone())
	f.urls = append(f.urls, r.URL)
	a := f.answers[min(n, len(f.answers)-1)]
	f.mu.Unlock()
	if r.Method != http.MethodPost || !f.route(r.URL.Path) {
		writeError(w, http.StatusNotFound, "not_found_error", "no route "+r.Method+" "+r.URL.Path)
		return
	}
	for k, vs := range a.header {
		w.Header()[k] = vs
	}
	if a.err != nil {
		status, typ, msg := errorFor(a.err)
		writeError(w, status, typ, msg)
		return
	}
	writeStream(w, r, a)
}

// requests returns the number of requests received.
func (f *fakeAPI) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

// body returns the JSON body of request i, decoded.
func (f *fakeAPI) body(t *testing.T, i int) wireRequest {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var w wireRequest
	if err := json.Unmarshal(f.bodies[i], &w); err != nil {
		t.Fatalf("request %d is not JSON: %v\n%s", i, err, f.bodies[i])
	}
	return w
}

// seen returns every request received, decoded into llm form.
func (f *fakeAPI) seen() []*llm.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*llm.Request
	for _, b := range f.bodies {
		var w wireRequest
		if json.Unmarshal(b, &w) == nil {
			out = append(out, w.llm())
		}
	}
	return out
}

// errorFor is the status, error type and message the API answers with for
// one of llm's sentinel errors.
func errorFor(err error) (status int, typ, msg string) {
	switch {
	case errors.Is(err, llm.ErrPromptTooLong):
		return 400, "invalid_request_error", "prompt is too long: 215304 tokens > 200000 maximum"
	case errors.Is(err, llm.ErrRateLimited):
		return 429, "rate_limit_error", "This request would exceed the rate limit for your organization of 50 requests per minute."
	case errors.Is(err, llm.ErrOverloaded):
		return 529, "overloaded_error", "Overloaded"
	case errors.Is(err, llm.ErrAuthentication):
		return 401, "authentication_error", "invalid x-api-key"
	case errors.Is(err, llm.ErrInvalidRequest):
		return 400, "invalid_request_error", "messages.1.content.0.tool_use.input: Input should be a valid dictionary"
	}
	return 500, "api_error", "Internal server error"
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", "req_test")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
	w.Write(b)
}

// writeStream writes a's response the way the API streams it: message_start,
// a ping, content_block_start/delta…/stop per block, message_delta with the
// stop reason and usage, message_stop.
func writeStream(w http.ResponseWriter, r *http.Request, a answer) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher := w.(http.Flusher)
	events := 0
	send := func(typ string, data any) bool {
		if a.cutAfter > 0 && events == a.cutAfter {
			if a.abort {
				panic(http.ErrAbortHandler)
			}
			return false
		}
		events++
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		flusher.Flush()
		return true
	}
	resp, u := a.resp, a.resp.Usage
	model := resp.Model
	if model == "" {
		model = "claude-sonnet-5-5-20261001"
	}
	if !send("message_start", obj{"type": "message_start", "message": obj{
		"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": obj{"input_tokens": u.InputTokens, "cache_creation_input_tokens": u.CacheWriteTokens,
			"cache_read_input_tokens": u.CacheReadTokens, "output_tokens": min(u.OutputTokens, 1)},
	}}) {
		return
	}
	if a.streamError != "" {
		typ, msg, _ := strings.Cut(a.streamError, ": ")
		send("error", obj{"type": "error", "error": obj{"type": typ, "message": msg}})
		return
	}
	if !send("ping", obj{"type": "ping"}) {
		return
	}
	if a.hang {
		send("content_block_start", obj{"type": "content_block_start", "index": 0, "content_block": obj{"type": "text", "text": ""}})
		send("content_block_delta", obj{"type": "content_block_delta", "index": 0, "delta": obj{"type": "text_delta", "text": "Thinking about"}})
		<-r.Context().Done()
		return
	}
	for i, b := range resp.Message.Content {
		var start obj
		var deltas []obj
		switch b.Type {
		case llm.BlockText:
			start = obj{"type": "text", "text": ""}
			for _, c := range chunks(b.Text, 7) {
				deltas = append(deltas, obj{"type": "text_delta", "text": c})
			}
		case llm.BlockToolUse:
			start = obj{"type": "tool_use", "id": b.ID, "name": b.Name, "input": obj{}}
			deltas = append(deltas, obj{"type": "input_json_delta", "partial_json": ""})
			for _, c := range chunks(string(b.Input), 9) {
				deltas = append(deltas, obj{"type": "input_json_delta", "partial_json": c})
			}
		case llm.BlockThinking:
			start = obj{"type": "thinking", "thinking": "", "signature": ""}
			for _, c := range chunks(b.Thinking, 11) {
				deltas = append(deltas, obj{"type": "thinking_delta", "thinking": c})
			}
			deltas = append(deltas, obj{"type": "signature_delta", "signature": b.Signature})
		case llm.BlockRedactedThinking:
			start = obj{"type": "redacted_thinking", "data": b.Signature}
		}
		if !send("content_block_start", obj{"type": "content_block_start", "index": i, "content_block": start}) {
			return
		}
		for _, d := range deltas {
			if !send("content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": d}) {
				return
			}
		}
		if !send("content_block_stop", obj{"type": "content_block_stop", "index": i}) {
			return
		}
	}
	usage := obj{"output_tokens": u.OutputTokens}
	if a.fullUsage {
		usage["input_tokens"] = u.InputTokens
		usage["cache_read_input_tokens"] = u.CacheReadTokens
		usage["cache_creation_input_tokens"] = u.CacheWriteTokens
	}
	if !send("message_delta", obj{"type": "message_delta", "delta": obj{"stop_reason": string(resp.StopReason), "stop_sequence": nil}, "usage": usage}) {
		return
	}
	send("message_stop", obj{"type": "message_stop"})
}

type obj = map[string]any

// chunks splits s into pieces of at most n bytes (splitting inside a UTF-8
// sequence is fine for the tests' ASCII).
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// wireRequest is a Messages request as the API receives it.
type wireRequest struct {
	Model     string          `json:"model"`
	MaxTokens int             `json:"max_tokens"`
	Stream    bool            `json:"stream"`
	System    []wireBlock     `json:"system"`
	Messages  []wireMessage   `json:"messages"`
	Tools     []wireTool      `json:"tools"`
	Thinking  json.RawMessage `json:"thinking"`
	// ToolChoice and OutputConfig are kept raw: the tests compare them.
	ToolChoice   json.RawMessage `json:"tool_choice"`
	OutputConfig json.RawMessage `json:"output_config"`
	// AnthropicVersion is Vertex AI's: the API version, in the body.
	AnthropicVersion string `json:"anthropic_version"`
}

type wireMessage struct {
	Role    string      `json:"role"`
	Content []wireBlock `json:"content"`
}

type wireBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      []wireBlock     `json:"content"`
	IsError      bool            `json:"is_error"`
	Thinking     string          `json:"thinking"`
	Signature    string          `json:"signature"`
	Data         string          `json:"data"`
	CacheControl *cacheControl   `json:"cache_control"`
}

type wireTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *cacheControl   `json:"cache_control"`
}

type cacheControl struct {
	Type string `json:"type"`
}

// llm decodes w back into orca's form.
func (w wireRequest) llm() *llm.Request {
	r := &llm.Request{Model: w.Model, MaxTokens: w.MaxTokens}
	for _, s := range w.System {
		r.System += s.Text
	}
	for _, m := range w.Messages {
		msg := llm.Message{Role: llm.Role(m.Role)}
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				msg.Content = append(msg.Content, llm.TextBlock(b.Text))
			case "tool_use":
				msg.Content = append(msg.Content, llm.ToolUseBlock(b.ID, b.Name, b.Input))
			case "tool_result":
				var text string
				for _, c := range b.Content {
					text += c.Text
				}
				msg.Content = append(msg.Content, llm.ToolResultBlock(b.ToolUseID, text, b.IsError))
			case "thinking":
				msg.Content = append(msg.Content, llm.Block{Type: llm.BlockThinking, Thinking: b.Thinking, Signature: b.Signature})
			case "redacted_thinking":
				msg.Content = append(msg.Content, llm.Block{Type: llm.BlockRedactedThinking, Signature: b.Data})
			}
		}
		r.Messages = append(r.Messages, msg)
	}
	for _, t := range w.Tools {
		r.Tools = append(r.Tools, llm.ToolDefinition{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
	}
	return r
}
