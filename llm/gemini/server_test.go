package gemini_test

import (
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
	"github.com/orca-agent/orca/llm/gemini"
	"github.com/orca-agent/orca/llm/llmtest"
)

// answer is what the fake API answers: a response streamed in the API's
// wire format, raw chunks, or an error as the API sends it.
type answer struct {
	resp   llm.Response
	chunks []string // raw data of the stream's events, when set
	err    error
	status int    // with body: an error of the API's, as it is
	body   string // (JSON)
}

// fakeAPI is an httptest server that speaks the Gemini API's
// streamGenerateContent (server-sent events of GenerateContentResponse
// JSON): request n gets answers[n], the last one repeating. It keeps the
// bodies it received.
type fakeAPI struct {
	*httptest.Server
	mu      sync.Mutex
	answers []answer
	bodies  [][]byte
}

func newFakeAPI(t *testing.T, answers ...answer) *fakeAPI {
	t.Helper()
	f := &fakeAPI{answers: answers}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.bodies)
	f.bodies = append(f.bodies, body)
	a := f.answers[min(n, len(f.answers)-1)]
	f.mu.Unlock()
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, ":streamGenerateContent") || r.URL.Query().Get("alt") != "sse" {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no route "+r.Method+" "+r.URL.String())
		return
	}
	if a.err != nil {
		status, code, msg := errorFor(a.err)
		writeError(w, status, code, msg)
		return
	}
	if a.status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		io.WriteString(w, a.body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunks := a.chunks
	if chunks == nil {
		chunks = chunksOf(a.resp)
	}
	for _, c := range chunks {
		fmt.Fprintf(w, "data: %s\r\n\r\n", c)
		w.(http.Flusher).Flush()
	}
}

// chunksOf streams resp as the API would: a chunk per block, then the
// finish reason and the usage.
func chunksOf(resp llm.Response) []string {
	var out []string
	chunk := func(parts []map[string]any, finish string, usage bool) {
		cand := map[string]any{"content": map[string]any{"parts": parts, "role": "model"}, "index": 0}
		if finish != "" {
			cand["finishReason"] = finish
		}
		c := map[string]any{"candidates": []any{cand}, "modelVersion": "gemini-test-001", "responseId": "resp-1"}
		if usage {
			u := resp.Usage
			c["usageMetadata"] = map[string]any{"promptTokenCount": u.InputTokens + u.CacheReadTokens, "cachedContentTokenCount": u.CacheReadTokens,
				"candidatesTokenCount": u.OutputTokens, "totalTokenCount": u.InputTokens + u.CacheReadTokens + u.OutputTokens}
		}
		b, _ := json.Marshal(c)
		out = append(out, string(b))
	}
	for _, b := range resp.Message.Content {
		switch b.Type {
		case llm.BlockText:
			// In two pieces, as the API streams.
			half := len(b.Text) / 2
			chunk([]map[string]any{{"text": b.Text[:half]}}, "", false)
			chunk([]map[string]any{{"text": b.Text[half:]}}, "", false)
		case llm.BlockToolUse:
			var args map[string]any
			json.Unmarshal(b.Input, &args)
			chunk([]map[string]any{{"functionCall": map[string]any{"id": b.ID, "name": b.Name, "args": args}}}, "", false)
		}
	}
	finish := "STOP"
	if resp.StopReason == llm.StopMaxTokens {
		finish = "MAX_TOKENS"
	}
	chunk([]map[string]any{{"text": ""}}, finish, true)
	return out
}

// errorFor is the API's answer to a request that fails as err says.
func errorFor(err error) (status int, code, msg string) {
	switch {
	case errors.Is(err, llm.ErrPromptTooLong):
		return 400, "INVALID_ARGUMENT", "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."
	case errors.Is(err, llm.ErrRateLimited):
		return 429, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan and billing details."
	case errors.Is(err, llm.ErrOverloaded):
		return 503, "UNAVAILABLE", "The model is overloaded. Please try again later."
	case errors.Is(err, llm.ErrAuthentication):
		return 400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."
	case errors.Is(err, llm.ErrServer):
		return 500, "INTERNAL", "An internal error has occurred."
	}
	return 400, "INVALID_ARGUMENT", "* GenerateContentRequest.contents: contents is not specified"
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": status, "message": msg, "status": code}})
}

func newClient(t *testing.T, baseURL string) *gemini.Client {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	c, err := gemini.New(gemini.APIKey("test-key"), gemini.BaseURL(baseURL), gemini.HTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The llm.Client contract, through the API's wire format (its usage has
// no count of tokens written to a cache).
func TestConformance(t *testing.T) {
	llmtest.TestClientLacking(t, func(t *testing.T, c llmtest.ClientCase) (llm.Client, func() []*llm.Request) {
		api := newFakeAPI(t, answer{resp: c.Response, err: c.Err})
		return newClient(t, api.URL), nil
	}, llmtest.Lacks{CacheWrites: true})
}
