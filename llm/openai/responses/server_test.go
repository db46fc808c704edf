package responses_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/openai/responses"
)

// answer is what the fake API does with one request.
type answer struct {
	resp llm.Response
	// err, when set, is one of llm's sentinel errors: the request fails
	// with the status and error body the API uses for it.
	err error
	// status and body, when set, are the error response itself.
	status int
	body   string
	// header is added to the response (retry-after, …).
	header http.Header
	// cutAfter, when positive, ends the stream after that many events:
	// cleanly (the body ends) or, with abort, by dropping the connection.
	cutAfter int
	abort    bool
	// event, when set, is sent after response.created in place of the
	// response: an error event, a response.failed.
	event obj
	// hang, after a first text piece, waits for the client to go away.
	hang bool
}

// fakeAPI is an httptest server that speaks the Responses API: it answers
// POST /v1/responses with the next answer (the last one repeats), as a
// server-sent-event stream of the API's events — response.created,
// response.in_progress, each output item added, its pieces and done, then
// response.completed (or .incomplete) with the output and the usage — and
// keeps what it received.
type fakeAPI struct {
	*httptest.Server
	mu      sync.Mutex
	answers []answer
	bodies  [][]byte
	headers []http.Header
}

func newFakeAPI(t *testing.T, answers ...answer) *fakeAPI {
	t.Helper()
	f := &fakeAPI{answers: answers}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

// v1 is the base URL clients use.
func (f *fakeAPI) v1() string { return f.URL + "/v1" }

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.bodies)
	f.bodies = append(f.bodies, body)
	f.headers = append(f.headers, r.Header.Clone())
	a := f.answers[min(n, len(f.answers)-1)]
	f.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		writeError(w, http.StatusNotFound, "invalid_request_error", "", "Invalid URL ("+r.Method+" "+r.URL.Path+")")
		return
	}
	for k, vs := range a.header {
		w.Header()[k] = vs
	}
	switch {
	case a.err != nil:
		status, typ, code, msg := errorFor(a.err)
		writeError(w, status, typ, code, msg)
	case a.status != 0:
		w.WriteHeader(a.status)
		io.WriteString(w, a.body)
	default:
		writeStream(w, r, a)
	}
}

func (f *fakeAPI) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

// raw returns the body of request i as it came.
func (f *fakeAPI) raw(t *testing.T, i int) []byte {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.bodies) {
		t.Fatalf("the API saw %d requests; want request %d", len(f.bodies), i)
	}
	return f.bodies[i]
}

// body returns the JSON body of request i, decoded.
func (f *fakeAPI) body(t *testing.T, i int) wireRequest {
	t.Helper()
	raw := f.raw(t, i)
	var w wireRequest
	if err := json.Unmarshal(raw, &w); err != nil {
		t.Fatalf("request %d is not JSON: %v\n%s", i, err, raw)
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

// errorFor is the status, error type, code and message the API answers
// with for one of llm's sentinel errors.
func errorFor(err error) (status int, typ, code, msg string) {
	switch {
	case errors.Is(err, llm.ErrPromptTooLong):
		return 400, "invalid_request_error", "context_length_exceeded", "Your input exceeds the context window of this model. Please adjust your input and try again."
	case errors.Is(err, llm.ErrRateLimited):
		return 429, "tokens", "rate_limit_exceeded", "Rate limit reached for gpt-6.1-terra in organization org-test on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s."
	case errors.Is(err, llm.ErrOverloaded):
		return 503, "server_error", "", "The server is overloaded or not ready yet."
	case errors.Is(err, llm.ErrAuthentication):
		return 401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys."
	case errors.Is(err, llm.ErrInvalidRequest):
		return 400, "invalid_request_error", "missing_required_parameter", "Missing required parameter: 'tools[0].name'."
	}
	return 500, "server_error", "", "The server had an error while processing your request. Sorry about that!"
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	var c any
	if code != "" {
		c = code
	}
	b, _ := json.Marshal(obj{"error": obj{"message": msg, "type": typ, "param": nil, "code": c}})
	w.Write(b)
}

type obj = map[string]any

// fakeModel is the model the fake answers as, unless the answer names one.
const fakeModel = "gpt-6.1-terra-2026-10-26"

// writeStream writes a's response as the API streams it: one output item
// per block of the message — a reasoning item for the redacted_thinking
// blocks that share an ID (a summary part each), a message for a text
// block, a function call for a tool use — then, for a refusal, a message
// whose content is a refusal part; then response.completed, or
// response.incomplete for StopMaxTokens.
func writeStream(w http.ResponseWriter, r *http.Request, a answer) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	flusher := w.(http.Flusher)
	model := a.resp.Model
	if model == "" {
		model = fakeModel
	}
	events, seq := 0, 0
	send := func(ev obj) bool {
		if a.cutAfter > 0 && events == a.cutAfter {
			if a.abort {
				panic(http.ErrAbortHandler)
			}
			return false
		}
		events++
		ev["sequence_number"] = seq
		seq++
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], b)
		flusher.Flush()
		return true
	}
	response := func(status string, output []obj, usage any, incomplete any) obj {
		return obj{"id": "resp_0fake", "object": "response", "created_at": 1782321689, "status": status, "background": false,
			"error": nil, "incomplete_details": incomplete, "instructions": nil, "max_output_tokens": 8192, "model": model,
			"output": output, "parallel_tool_calls": true, "store": false, "temperature": 1.0, "tool_choice": "auto", "tools": []obj{},
			"top_p": 1.0, "truncation": "disabled", "usage": usage, "metadata": obj{}}
	}
	if !send(obj{"type": "response.created", "response": response("in_progress", []obj{}, nil, nil)}) {
		return
	}
	if a.event != nil {
		send(a.event)
		return
	}
	if !send(obj{"type": "response.in_progress", "response": response("in_progress", []obj{}, nil, nil)}) {
		return
	}
	if a.hang {
		send(obj{"type": "response.output_item.added", "output_index": 0, "item": obj{"id": "msg_0", "type": "message", "status": "in_progress", "content": []obj{}, "role": "assistant"}})
		send(obj{"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_0", "content_index": 0, "delta": "Thinking about", "logprobs": []obj{}})
		<-r.Context().Done()
		return
	}
	var output []obj
	blocks := a.resp.Message.Content
	for i := 0; i < len(blocks); i++ {
		b := blocks[i]
		idx := len(output)
		var item obj
		ok := true
		switch b.Type {
		case llm.BlockRedactedThinking:
			// The blocks of one reasoning item.
			var parts []string
			enc := b.Signature
			for ; i < len(blocks) && blocks[i].Type == llm.BlockRedactedThinking && blocks[i].ID == b.ID; i++ {
				if blocks[i].Thinking != "" {
					parts = append(parts, blocks[i].Thinking)
				}
			}
			i--
			ok = send(obj{"type": "response.output_item.added", "output_index": idx, "item": obj{"id": b.ID, "type": "reasoning", "summary": []obj{}}})
			summary := []obj{}
			for si, p := range parts {
				ok = ok && send(obj{"type": "response.reasoning_summary_part.added", "item_id": b.ID, "output_index": idx, "summary_index": si, "part": obj{"type": "summary_text", "text": ""}})
				for _, piece := range split(p, 7) {
					ok = ok && send(obj{"type": "response.reasoning_summary_text.delta", "item_id": b.ID, "output_index": idx, "summary_index": si, "delta": piece})
				}
				ok = ok && send(obj{"type": "response.reasoning_summary_text.done", "item_id": b.ID, "output_index": idx, "summary_index": si, "text": p})
				summary = append(summary, obj{"type": "summary_text", "text": p})
			}
			item = obj{"id": b.ID, "type": "reasoning", "summary": summary}
			if enc != "" {
				item["encrypted_content"] = enc
			}
		case llm.BlockText:
			item = textItem(idx, obj{"type": "output_text", "annotations": []obj{}, "logprobs": []obj{}, "text": b.Text}, "response.output_text", "text", b.Text, send)
			ok = item != nil
		case llm.BlockToolUse:
			id := fmt.Sprintf("fc_%d", idx)
			ok = send(obj{"type": "response.output_item.added", "output_index": idx, "item": obj{"id": id, "type": "function_call", "status": "in_progress", "arguments": "", "call_id": b.ID, "name": b.Name}})
			for _, piece := range split(string(b.Input), 8) {
				ok = ok && send(obj{"type": "response.function_call_arguments.delta", "item_id": id, "output_index": idx, "delta": piece})
			}
			ok = ok && send(obj{"type": "response.function_call_arguments.done", "item_id": id, "output_index": idx, "arguments": string(b.Input)})
			item = obj{"id": id, "type": "function_call", "status": "completed", "arguments": string(b.Input), "call_id": b.ID, "name": b.Name}
		}
		if !ok || !send(obj{"type": "response.output_item.done", "output_index": idx, "item": item}) {
			return
		}
		output = append(output, item)
	}
	if a.resp.Refusal != "" {
		idx := len(output)
		item := textItem(idx, obj{"type": "refusal", "refusal": a.resp.Refusal}, "response.refusal", "refusal", a.resp.Refusal, send)
		if item == nil || !send(obj{"type": "response.output_item.done", "output_index": idx, "item": item}) {
			return
		}
		output = append(output, item)
	}
	u := a.resp.Usage
	usage := obj{
		"input_tokens":         u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens,
		"input_tokens_details": obj{"cached_tokens": u.CacheReadTokens, "cache_write_tokens": u.CacheWriteTokens},
		"output_tokens":        u.OutputTokens, "output_tokens_details": obj{"reasoning_tokens": 0},
		"total_tokens": u.Total(),
	}
	if a.resp.StopReason == llm.StopMaxTokens {
		send(obj{"type": "response.incomplete", "response": response("incomplete", output, usage, obj{"reason": "max_output_tokens"})})
		return
	}
	send(obj{"type": "response.completed", "response": response("completed", output, usage, nil)})
}

// textItem streams a message item of one content part, whose text (or
// refusal) goes in pieces as the events of prefix (response.output_text,
// response.refusal), and returns the done item (nil if the stream was
// cut).
func textItem(idx int, part obj, prefix, field, text string, send func(obj) bool) obj {
	id := fmt.Sprintf("msg_%d", idx)
	empty := obj{}
	for k, v := range part {
		empty[k] = v
	}
	empty[field] = ""
	ok := send(obj{"type": "response.output_item.added", "output_index": idx, "item": obj{"id": id, "type": "message", "status": "in_progress", "content": []obj{}, "role": "assistant"}})
	ok = ok && send(obj{"type": "response.content_part.added", "item_id": id, "output_index": idx, "content_index": 0, "part": empty})
	for _, piece := range split(text, 6) {
		ok = ok && send(obj{"type": prefix + ".delta", "item_id": id, "output_index": idx, "content_index": 0, "delta": piece, "logprobs": []obj{}})
	}
	ok = ok && send(obj{"type": prefix + ".done", "item_id": id, "output_index": idx, "content_index": 0, field: text, "logprobs": []obj{}})
	ok = ok && send(obj{"type": "response.content_part.done", "item_id": id, "output_index": idx, "content_index": 0, "part": part})
	if !ok {
		return nil
	}
	return obj{"id": id, "type": "message", "status": "completed", "content": []obj{part}, "role": "assistant"}
}

// split cuts s into pieces of at most n bytes.
func split(s string, n int) []string {
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

// wireRequest is a Responses request as the API receives it.
type wireRequest struct {
	Model             string          `json:"model"`
	Instructions      string          `json:"instructions"`
	MaxOutputTokens   int             `json:"max_output_tokens"`
	Stream            bool            `json:"stream"`
	Store             *bool           `json:"store"`
	Include           []string        `json:"include"`
	Reasoning         json.RawMessage `json:"reasoning"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	Text              json.RawMessage `json:"text"`
	Input             []wireItem      `json:"input"`
	Tools             []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"tools"`
}

// wireItem is one input item: a message (type "message" or none), a
// function call, its output, a reasoning item.
type wireItem struct {
	Type             string          `json:"type"`
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"` // a string or a list of parts
	ID               string          `json:"id"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Arguments        string          `json:"arguments"`
	Output           json.RawMessage `json:"output"` // a string or a list of parts
	EncryptedContent *string         `json:"encrypted_content"`
	Summary          []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"summary"`
}

// wirePart is a content part of a message or of a function call's
// output.
type wirePart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL string `json:"image_url"`
	Detail   string `json:"detail"`
	FileData string `json:"file_data"`
	Filename string `json:"filename"`
}

// parts returns a content (or an output) as a list of parts: a string is
// one input_text part.
func parts(raw json.RawMessage) []wirePart {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil
		}
		return []wirePart{{Type: "input_text", Text: s}}
	}
	var ps []wirePart
	json.Unmarshal(raw, &ps)
	return ps
}

// media decodes the data URL of an image or file part.
func (p wirePart) media() *llm.Media {
	url := p.ImageURL + p.FileData
	mediaType, data, _ := strings.Cut(strings.TrimPrefix(url, "data:"), ";base64,")
	b, _ := base64.StdEncoding.DecodeString(data)
	return &llm.Media{MediaType: mediaType, Data: b, Name: p.Filename}
}

// llm decodes w back into orca's form: consecutive assistant items (text,
// reasoning, function calls) make one assistant message, consecutive
// function call outputs and a user message right after them one user
// message, as the client splits them.
func (w wireRequest) llm() *llm.Request {
	r := &llm.Request{Model: w.Model, System: w.Instructions, MaxTokens: w.MaxOutputTokens}
	last := func(role llm.Role) *llm.Message {
		if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == role {
			return &r.Messages[n-1]
		}
		r.Messages = append(r.Messages, llm.Message{Role: role})
		return &r.Messages[len(r.Messages)-1]
	}
	afterTools := false
	for _, it := range w.Input {
		switch {
		case it.Type == "function_call":
			m := last(llm.RoleAssistant)
			m.Content = append(m.Content, llm.ToolUseBlock(it.CallID, it.Name, json.RawMessage(it.Arguments)))
			afterTools = false
		case it.Type == "reasoning":
			m := last(llm.RoleAssistant)
			b := llm.Block{Type: llm.BlockRedactedThinking, ID: it.ID}
			if it.EncryptedContent != nil {
				b.Signature = *it.EncryptedContent
			}
			if len(it.Summary) == 0 {
				m.Content = append(m.Content, b)
			}
			for i, s := range it.Summary {
				b.Thinking = s.Text
				if i > 0 {
					b.Signature = ""
				}
				m.Content = append(m.Content, b)
			}
			afterTools = false
		case it.Type == "function_call_output":
			var m *llm.Message
			if afterTools {
				m = last(llm.RoleUser)
			} else {
				r.Messages = append(r.Messages, llm.Message{Role: llm.RoleUser})
				m = &r.Messages[len(r.Messages)-1]
			}
			var text string
			var shown []llm.Block
			for _, p := range parts(it.Output) {
				if p.Type == "input_text" {
					text += p.Text
				} else {
					shown = append(shown, llm.ResultMediaBlock(it.CallID, p.media()))
				}
			}
			isError := strings.HasPrefix(text, responses.ErrorPrefix)
			m.Content = append(m.Content, llm.ToolResultBlock(it.CallID, strings.TrimPrefix(text, responses.ErrorPrefix), isError))
			m.Content = append(m.Content, shown...)
			afterTools = true
		case it.Role == "assistant":
			m := last(llm.RoleAssistant)
			for _, p := range parts(it.Content) {
				m.Content = append(m.Content, llm.TextBlock(p.Text))
			}
			afterTools = false
		case it.Role == "user":
			var blocks []llm.Block
			for _, p := range parts(it.Content) {
				switch p.Type {
				case "input_text":
					blocks = append(blocks, llm.TextBlock(p.Text))
				case "input_image":
					blocks = append(blocks, llm.ImageBlock(p.media()))
				case "input_file":
					blocks = append(blocks, llm.DocumentBlock(p.media()))
				}
			}
			if afterTools {
				m := last(llm.RoleUser)
				m.Content = append(m.Content, blocks...)
			} else {
				r.Messages = append(r.Messages, llm.Message{Role: llm.RoleUser, Content: blocks})
			}
			afterTools = false
		}
	}
	for _, t := range w.Tools {
		r.Tools = append(r.Tools, llm.ToolDefinition{Name: t.Name, Description: t.Description, InputSchema: t.Parameters})
	}
	return r
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return bytes.Equal(canonical(x), canonical(y))
}

func canonical(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
