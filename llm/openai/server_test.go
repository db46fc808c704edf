package openai_test

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
	"github.com/orca-agent/orca/llm/openai"
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
	// interleave streams the arguments of the tool calls round-robin, as
	// the API may, once every call has started.
	interleave bool
	// cutAfter, when positive, ends the stream after that many chunks:
	// cleanly (the body ends, no [DONE]) or, with abort, by dropping the
	// connection.
	cutAfter int
	abort    bool
	// streamError, when set, is sent as an error chunk after the first.
	streamError string
	// hang, after a first text piece, waits for the client to go away.
	hang bool
}

// fakeAPI is an httptest server that speaks Chat Completions: it answers
// POST /v1/chat/completions with the next answer (the last one repeats), as
// a server-sent-event stream of chat.completion.chunk objects ending with a
// usage chunk and data: [DONE], and keeps what it received. As Azure
// OpenAI (newAzureAPI), it answers POST
// /openai/deployments/NAME/chat/completions instead, and starts each
// stream with Azure's chunk of prompt filter results.
type fakeAPI struct {
	*httptest.Server
	azure   bool
	mu      sync.Mutex
	answers []answer
	bodies  [][]byte
	headers []http.Header
	urls    []*url.URL
}

func newFakeAPI(t *testing.T, answers ...answer) *fakeAPI {
	t.Helper()
	return startFakeAPI(t, &fakeAPI{answers: answers})
}

// newAzureAPI is a fake Azure OpenAI resource.
func newAzureAPI(t *testing.T, answers ...answer) *fakeAPI {
	t.Helper()
	return startFakeAPI(t, &fakeAPI{answers: answers, azure: true})
}

func startFakeAPI(t *testing.T, f *fakeAPI) *fakeAPI {
	t.Helper()
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

// route reports whether path is the one the fake answers.
func (f *fakeAPI) route(path string) bool {
	if !f.azure {
		return path == "/v1/chat/completions"
	}
	name, ok := strings.CutPrefix(path, "/openai/deployments/")
	name, ok2 := strings.CutSuffix(name, "/chat/completions")
	return ok && ok2 && name != "" && !strings.Contains(name, "/")
}

// v1 is the base URL clients use.
func (f *fakeAPI) v1() string { return f.URL + "/v1" }

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
		writeError(w, http.StatusNotFound, "invalid_request_error", "", "Unknown request URL: "+r.Method+" "+r.URL.Path)
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
		writeStream(w, r, a, f.azure)
	}
}

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

// errorFor is the status, error type, code and message the API answers
// with for one of llm's sentinel errors.
func errorFor(err error) (status int, typ, code, msg string) {
	switch {
	case errors.Is(err, llm.ErrPromptTooLong):
		return 400, "invalid_request_error", "context_length_exceeded", "This model's maximum context length is 1050000 tokens. However, your messages resulted in 1203417 tokens. Please reduce the length of the messages."
	case errors.Is(err, llm.ErrRateLimited):
		return 429, "tokens", "rate_limit_exceeded", "Rate limit reached for gpt-6.1-terra in organization org-test on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s."
	case errors.Is(err, llm.ErrOverloaded):
		return 503, "server_error", "", "The server is overloaded or not ready yet."
	case errors.Is(err, llm.ErrAuthentication):
		return 401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys."
	case errors.Is(err, llm.ErrInvalidRequest):
		return 400, "invalid_request_error", "invalid_function_parameters", "Invalid schema for function 'Read': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"None\"'."
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

// writeStream writes a's response as the API streams it: a first chunk
// with the role, content pieces, tool calls (id, name, then argument
// pieces per index), a chunk with the finish reason, a chunk with no
// choices and the usage, and [DONE]. Azure OpenAI sends a chunk of
// prompt filter results before them all, with no choices, id or model.
func writeStream(w http.ResponseWriter, r *http.Request, a answer, azure bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	flusher := w.(http.Flusher)
	model := a.resp.Model
	if model == "" {
		model = "gpt-6.1-terra-2026-10-26"
	}
	chunks := 0
	send := func(data any) bool {
		if a.cutAfter > 0 && chunks == a.cutAfter {
			if a.abort {
				panic(http.ErrAbortHandler)
			}
			return false
		}
		chunks++
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "data: %s\n\n", b)
		flusher.Flush()
		return true
	}
	chunk := func(delta obj, finish any) obj {
		return obj{"id": "chatcmpl-CN1x", "object": "chat.completion.chunk", "created": 1764460800, "model": model,
			"system_fingerprint": nil, "service_tier": "default", "usage": nil,
			"choices": []obj{{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
	}
	if azure {
		safe := obj{"filtered": false, "severity": "safe"}
		send(obj{"choices": []obj{}, "created": 0, "id": "", "model": "", "object": "", "prompt_filter_results": []obj{{"prompt_index": 0,
			"content_filter_results": obj{"hate": safe, "self_harm": safe, "sexual": safe, "violence": safe}}}})
	}
	if !send(chunk(obj{"role": "assistant", "content": "", "refusal": nil}, nil)) {
		return
	}
	if a.streamError != "" {
		typ, msg, _ := strings.Cut(a.streamError, ": ")
		send(obj{"error": obj{"message": msg, "type": typ, "param": nil, "code": nil}})
		return
	}
	if a.hang {
		send(chunk(obj{"content": "Thinking about"}, nil))
		<-r.Context().Done()
		return
	}
	type call struct {
		index  int
		pieces []string
	}
	var calls []call
	for _, b := range a.resp.Message.Content {
		switch b.Type {
		case llm.BlockText:
			for _, c := range split(b.Text, 6) {
				if !send(chunk(obj{"content": c}, nil)) {
					return
				}
			}
		case llm.BlockToolUse:
			i := len(calls)
			calls = append(calls, call{i, split(string(b.Input), 8)})
			start := obj{"index": i, "id": b.ID, "type": "function", "function": obj{"name": b.Name, "arguments": ""}}
			if !send(chunk(obj{"tool_calls": []obj{start}}, nil)) {
				return
			}
			if a.interleave {
				continue
			}
			for _, p := range calls[i].pieces {
				if !send(chunk(obj{"tool_calls": []obj{{"index": i, "function": obj{"arguments": p}}}}, nil)) {
					return
				}
			}
		}
	}
	for a.interleave {
		more := false
		for i := range calls {
			if len(calls[i].pieces) == 0 {
				continue
			}
			more = true
			p := calls[i].pieces[0]
			calls[i].pieces = calls[i].pieces[1:]
			if !send(chunk(obj{"tool_calls": []obj{{"index": i, "function": obj{"arguments": p}}}}, nil)) {
				return
			}
		}
		if !more {
			break
		}
	}
	finish := map[llm.StopReason]string{llm.StopEndTurn: "stop", llm.StopToolUse: "tool_calls", llm.StopMaxTokens: "length", llm.StopRefusal: "content_filter"}[a.resp.StopReason]
	if !send(chunk(obj{}, finish)) {
		return
	}
	u := a.resp.Usage
	usage := obj{
		"prompt_tokens": u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens, "completion_tokens": u.OutputTokens,
		"total_tokens":          u.Total(),
		"prompt_tokens_details": obj{"cached_tokens": u.CacheReadTokens, "cache_write_tokens": u.CacheWriteTokens, "audio_tokens": 0},
		"completion_tokens_details": obj{"reasoning_tokens": 0, "audio_tokens": 0,
			"accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
	}
	if !send(obj{"id": "chatcmpl-CN1x", "object": "chat.completion.chunk", "created": 1764460800, "model": model, "choices": []obj{}, "usage": usage}) {
		return
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	flusher.Flush()
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

// wireRequest is a chat completion request as the API receives it.
type wireRequest struct {
	Model               string          `json:"model"`
	MaxCompletionTokens int             `json:"max_completion_tokens"`
	MaxTokens           int             `json:"max_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       json.RawMessage `json:"stream_options"`
	ReasoningEffort     string          `json:"reasoning_effort"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls"`
	ResponseFormat      json.RawMessage `json:"response_format"`
	Messages            []wireMessage   `json:"messages"`
	Tools               []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"` // a string or a list of parts
	ToolCallID string          `json:"tool_call_id"`
	// ReasoningContent is DeepSeek's field for the reasoning sent back;
	// nil when the message has none.
	ReasoningContent *string `json:"reasoning_content"`
	ToolCalls        []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// texts returns the message's content as a list of texts.
func (m wireMessage) texts() []string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		if s == "" {
			return nil
		}
		return []string{s}
	}
	var parts []struct {
		Type, Text string
	}
	json.Unmarshal(m.Content, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return out
}

// llm decodes w back into orca's form: tool messages, and a user message
// right after them, make one user message, as the client splits it.
func (w wireRequest) llm() *llm.Request {
	r := &llm.Request{Model: w.Model, MaxTokens: w.MaxCompletionTokens}
	var afterTools bool
	for _, m := range w.Messages {
		switch m.Role {
		case "system":
			r.System = strings.Join(m.texts(), "")
		case "assistant":
			msg := llm.Message{Role: llm.RoleAssistant}
			if t := strings.Join(m.texts(), ""); t != "" {
				msg.Content = append(msg.Content, llm.TextBlock(t))
			}
			for _, c := range m.ToolCalls {
				msg.Content = append(msg.Content, llm.ToolUseBlock(c.ID, c.Function.Name, json.RawMessage(c.Function.Arguments)))
			}
			r.Messages = append(r.Messages, msg)
			afterTools = false
		case "tool":
			content := strings.Join(m.texts(), "")
			isError := strings.HasPrefix(content, openai.ErrorPrefix)
			block := llm.ToolResultBlock(m.ToolCallID, strings.TrimPrefix(content, openai.ErrorPrefix), isError)
			if afterTools {
				last := &r.Messages[len(r.Messages)-1]
				last.Content = append(last.Content, block)
			} else {
				r.Messages = append(r.Messages, llm.Message{Role: llm.RoleUser, Content: []llm.Block{block}})
			}
			afterTools = true
		case "user":
			var blocks []llm.Block
			for _, t := range m.texts() {
				blocks = append(blocks, llm.TextBlock(t))
			}
			if afterTools {
				last := &r.Messages[len(r.Messages)-1]
				last.Content = append(last.Content, blocks...)
			} else {
				r.Messages = append(r.Messages, llm.Message{Role: llm.RoleUser, Content: blocks})
			}
			afterTools = false
		}
	}
	for _, t := range w.Tools {
		r.Tools = append(r.Tools, llm.ToolDefinition{Name: t.Function.Name, Description: t.Function.Description, InputSchema: t.Function.Parameters})
	}
	return r
}
