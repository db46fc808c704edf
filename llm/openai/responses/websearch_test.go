package responses_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/llmtest"
	"github.com/orca-agent/orca/llm/openai/responses"
)

// A real exchange with the Responses API's own web search, recorded by
// others: charm.land/fantasy's providertests, TestOpenAIWebSearch/stream.yaml
// (Apache-2.0; .ci/run points llmtest.RecordingsEnv at the module's
// providertests/testdata, which is not copied here). Orca asks the
// recorded question again, with Request.WebSearch, of a replay of the
// recorded stream:
//
//   - the request carries what the recorded one did: the tools, exactly
//     [{"type":"web_search"}], store: false, the model, the output cap, the
//     user's message, and the system prompt as instructions;
//   - the response is the recorded answer: one text block, the recorded
//     text, streamed as recorded; the web_search_call item is no tool use
//     and takes no block; the usage, stop reason, model and id are the
//     recorded ones;
//   - Response.Sources are the pages the recorded text cites (its
//     url_citation annotations), in order, each URL once, with their
//     titles.
func TestRecordedWebSearch(t *testing.T) {
	exs := llmtest.Recorded(t, "TestOpenAIWebSearch/stream.yaml")
	if len(exs) != 1 {
		t.Fatalf("%d exchanges; the recording has one", len(exs))
	}
	var rec struct {
		recordedRequest
		Store  *bool `json:"store"`
		Stream bool  `json:"stream"`
	}
	if err := json.Unmarshal(exs[0].RequestBody, &rec); err != nil {
		t.Fatalf("the recorded request: %v", err)
	}
	req, path := recordedQuestion(t, exs[0], rec.recordedRequest)
	api := llmtest.NewReplay(t, exs)
	client := newClient(t, api.URL+path)

	var deltas []llm.Delta
	resp, err := client.Generate(t.Context(), req, func(d llm.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	llmtest.CheckDeltas(t, resp, deltas)

	// The request orca sent.
	var sent struct {
		recordedRequest
		Instructions string `json:"instructions"`
		Store        *bool  `json:"store"`
		Stream       bool   `json:"stream"`
	}
	if err := json.Unmarshal(api.Bodies()[0], &sent); err != nil {
		t.Fatal(err)
	}
	if len(rec.Tools) != 1 || !jsonEqual(rec.Tools[0], []byte(`{"type":"web_search"}`)) {
		t.Fatalf("the recorded tools %s: not the web search this test is about", rec.Tools)
	}
	if len(sent.Tools) != len(rec.Tools) || !jsonEqual(sent.Tools[0], rec.Tools[0]) {
		t.Errorf("tools %s; the recorded request's %s", sent.Tools, rec.Tools)
	}
	if sent.Store == nil || rec.Store == nil || *sent.Store != *rec.Store || sent.Stream != rec.Stream {
		t.Errorf("store %v, stream %v; the recorded request's %v, %v", deref(sent.Store), sent.Stream, deref(rec.Store), rec.Stream)
	}
	// orca asks for every page the search found (the recording did not).
	wantInclude := append(slices.Clone(rec.Include), "web_search_call.action.sources")
	if sent.Model != rec.Model || sent.MaxOutputTokens != rec.MaxOutputTokens || sent.Instructions != req.System || !reflect.DeepEqual(sent.Include, wantInclude) {
		t.Errorf("model %q, max_output_tokens %d, instructions %q, include %v; the recorded request's %q, %d, %q, %v",
			sent.Model, sent.MaxOutputTokens, sent.Instructions, sent.Include, rec.Model, rec.MaxOutputTokens, req.System, wantInclude)
	}
	checkItems(t, 0, sent.Input, rec.Input, recordedStream{})

	// The response orca gave.
	want := readStream(t, exs[0].ResponseBody)
	out := readOutput(t, want.done)
	if out.searches == 0 || len(out.sources) == 0 {
		t.Fatalf("the recorded stream has %d web searches and %d cited pages: not the web search this test is about", out.searches, len(out.sources))
	}
	if got := resp.Message.Text(); got != out.text {
		t.Errorf("text %q\nthe recorded one %q", got, out.text)
	}
	if !reflect.DeepEqual(resp.Message, want.resp.Message) {
		t.Errorf("message\n%s\nthe recorded stream's\n%s", show(resp.Message), show(want.resp.Message))
	}
	if uses := resp.Message.ToolUses(); len(uses) != 0 {
		t.Errorf("the web search became tool uses: %+v", uses)
	}
	if resp.StopReason != want.resp.StopReason || resp.Usage != want.resp.Usage || resp.Model != want.resp.Model || resp.ID != want.resp.ID || resp.Refusal != "" {
		t.Errorf("stop %q, usage %+v, model %q, id %q; the recorded stream's %q, %+v, %q, %q",
			resp.StopReason, resp.Usage, resp.Model, resp.ID, want.resp.StopReason, want.resp.Usage, want.resp.Model, want.resp.ID)
	}
	if got := streamed(deltas); got != want.streamed {
		t.Errorf("streamed %q, the recorded deltas %q", got, want.streamed)
	}
	if !reflect.DeepEqual(resp.Sources, out.sources) {
		t.Errorf("sources %+v\nthe recorded citations %+v", resp.Sources, out.sources)
	}
}

// TestOpenAIWebSearch/generate.yaml of the same recordings (charm.land/fantasy's
// providertests, Apache-2.0) is a request without stream and its JSON
// response. Orca always streams: replayed as it is, that body is no event
// stream (the SDK's decoder finds no event in it, and the client fails as
// on a stream cut short). Its response is used here as what it also is:
// the response a stream's response.completed event carries, with output
// items the stream never announced, which the client takes from there
// (sent as that one event). The recorded text cites three pages, two of
// them twice:
//
//   - the text block is the recorded text, and the only block;
//   - Response.Sources are the three pages, in the order first cited,
//     each once, with their titles;
//   - the usage, model and id are the recorded ones; the request carried
//     the recorded tools and store.
func TestRecordedWebSearchFinalResponse(t *testing.T) {
	exs := llmtest.Recorded(t, "TestOpenAIWebSearch/generate.yaml")
	if len(exs) != 1 {
		t.Fatalf("%d exchanges; the recording has one", len(exs))
	}
	var rec struct {
		recordedRequest
		Store *bool `json:"store"`
	}
	if err := json.Unmarshal(exs[0].RequestBody, &rec); err != nil {
		t.Fatalf("the recorded request: %v", err)
	}
	var recorded struct {
		ID     string            `json:"id"`
		Model  string            `json:"model"`
		Status string            `json:"status"`
		Output []json.RawMessage `json:"output"`
		Usage  struct {
			InputTokens        int64 `json:"input_tokens"`
			OutputTokens       int64 `json:"output_tokens"`
			InputTokensDetails struct {
				CachedTokens int64 `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(exs[0].ResponseBody, &recorded); err != nil || recorded.Status != "completed" {
		t.Fatalf("the recorded response (%q): %v", recorded.Status, err)
	}
	out := readOutput(t, recorded.Output)
	var cited int
	for _, raw := range recorded.Output {
		cited += strings.Count(string(raw), `"url_citation"`)
	}
	if out.searches == 0 || len(out.sources) < 2 || cited <= len(out.sources) {
		t.Fatalf("the recorded response has %d web searches, %d citations of %d pages: not what this test is about", out.searches, cited, len(out.sources))
	}

	var compact bytes.Buffer
	if err := json.Compact(&compact, exs[0].ResponseBody); err != nil {
		t.Fatal(err)
	}
	ex := exs[0]
	ex.Header = http.Header{"Content-Type": {"text/event-stream"}}
	ex.ResponseBody = []byte("event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":" + compact.String() + "}\n\n")
	req, path := recordedQuestion(t, ex, rec.recordedRequest)
	api := llmtest.NewReplay(t, []llmtest.Exchange{ex})

	var deltas []llm.Delta
	resp, err := newClient(t, api.URL+path).Generate(t.Context(), req, func(d llm.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	llmtest.CheckDeltas(t, resp, deltas)

	var sent struct {
		Tools []json.RawMessage `json:"tools"`
		Store *bool             `json:"store"`
	}
	if err := json.Unmarshal(api.Bodies()[0], &sent); err != nil {
		t.Fatal(err)
	}
	if len(sent.Tools) != 1 || len(rec.Tools) != 1 || !jsonEqual(sent.Tools[0], rec.Tools[0]) || deref(sent.Store) != deref(rec.Store) || rec.Store == nil {
		t.Errorf("tools %s, store %v; the recorded request's %s, %v", sent.Tools, deref(sent.Store), rec.Tools, deref(rec.Store))
	}

	wantMsg := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock(out.text)}}
	if !reflect.DeepEqual(resp.Message, wantMsg) {
		t.Errorf("message\n%s\nwant the recorded text alone\n%s", show(resp.Message), show(wantMsg))
	}
	if got := streamed(deltas); got != out.text {
		t.Errorf("streamed %q, want the recorded text", got)
	}
	u := recorded.Usage
	wantUsage := llm.Usage{InputTokens: u.InputTokens - u.InputTokensDetails.CachedTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.InputTokensDetails.CachedTokens}
	if resp.StopReason != llm.StopEndTurn || resp.Usage != wantUsage || resp.Model != recorded.Model || resp.ID != recorded.ID {
		t.Errorf("stop %q, usage %+v, model %q, id %q; want end_turn and the recorded %+v, %q, %q", resp.StopReason, resp.Usage, resp.Model, resp.ID, wantUsage, recorded.Model, recorded.ID)
	}
	if !reflect.DeepEqual(resp.Sources, out.sources) {
		t.Errorf("sources %+v\nthe recorded citations %+v", resp.Sources, out.sources)
	}
}

// recordedQuestion returns orca's request for the recorded one — its
// system message, its user message, its model and output cap, and the
// web search — and the path of the base URL it was sent to.
func recordedQuestion(t *testing.T, ex llmtest.Exchange, rec recordedRequest) (*llm.Request, string) {
	t.Helper()
	u, err := url.Parse(ex.URL)
	if err != nil {
		t.Fatal(err)
	}
	req := &llm.Request{Model: rec.Model, MaxTokens: rec.MaxOutputTokens, WebSearch: &llm.WebSearch{}}
	for _, raw := range rec.Input {
		var m struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		json.Unmarshal(raw, &m)
		var text string
		for _, p := range parts(m.Content) {
			text += p.Text
		}
		switch m.Role {
		case "system", "developer":
			req.System = text
		case "user":
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(text)}})
		}
	}
	if req.System == "" || len(req.Messages) != 1 {
		t.Fatalf("the recorded request has no system message and user message: %s", ex.RequestBody)
	}
	return req, strings.TrimSuffix(u.Path, "/responses")
}

// recordedOutput is what a recorded response's output items say: the
// text of its messages, the pages they cite (url_citation annotations, in
// order, each URL once), and how many web_search_call items it has.
type recordedOutput struct {
	text     string
	sources  []llm.Source
	searches int
}

func readOutput(t *testing.T, items []json.RawMessage) recordedOutput {
	t.Helper()
	var out recordedOutput
	seen := map[string]bool{}
	for _, raw := range items {
		var it struct {
			Type    string `json:"type"`
			Content []struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				Annotations []struct {
					Type  string `json:"type"`
					Title string `json:"title"`
					URL   string `json:"url"`
				} `json:"annotations"`
			} `json:"content"`
		}
		if err := json.Unmarshal(raw, &it); err != nil {
			t.Fatalf("a recorded output item: %v", err)
		}
		switch it.Type {
		case "web_search_call":
			out.searches++
		case "message":
			for _, c := range it.Content {
				if c.Type != "output_text" {
					continue
				}
				out.text += c.Text
				for _, a := range c.Annotations {
					if a.Type == "url_citation" && !seen[a.URL] {
						seen[a.URL] = true
						out.sources = append(out.sources, llm.Source{Title: a.Title, URL: a.URL})
					}
				}
			}
		}
	}
	return out
}

func deref(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

// Request.WebSearch is the web_search tool, after orca's function tools,
// with the allowed domains as its filters and MaxUses as max_tool_calls;
// blocked domains are not sent, and parallel_tool_calls stays for orca's
// own tools. Without it no web_search goes.
func TestWebSearchRequest(t *testing.T) {
	read := []llm.ToolDefinition{{Name: "Read", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	for _, tc := range []struct {
		name      string
		search    *llm.WebSearch
		tools     []llm.ToolDefinition
		wantTools []string
		wantMax   string
		parallel  string
	}{
		{"Plain", &llm.WebSearch{}, nil, []string{`{"type":"web_search"}`}, "", ""},
		{"Filtered", &llm.WebSearch{Allowed: []string{"go.dev", "pkg.go.dev"}, Blocked: []string{"example.com"}, MaxUses: 3}, read,
			[]string{`{"type":"function","name":"Read","parameters":{"type":"object"},"strict":false}`, `{"type":"web_search","filters":{"allowed_domains":["go.dev","pkg.go.dev"]}}`}, "3", "false"},
		{"BlockedOnly", &llm.WebSearch{Blocked: []string{"example.com"}}, nil, []string{`{"type":"web_search"}`}, "", ""},
		{"None", nil, read, []string{`{"type":"function","name":"Read","parameters":{"type":"object"},"strict":false}`}, "", "false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, answer{resp: textResponse("ok")})
			req := userRequest("What is new in Go?")
			req.WebSearch, req.Tools, req.OneToolCall = tc.search, tc.tools, true
			if _, err := newClient(t, api.v1()).Generate(t.Context(), req, nil); err != nil {
				t.Fatal(err)
			}
			var w struct {
				Tools             []json.RawMessage `json:"tools"`
				MaxToolCalls      json.RawMessage   `json:"max_tool_calls"`
				ParallelToolCalls json.RawMessage   `json:"parallel_tool_calls"`
			}
			raw := api.raw(t, 0)
			if err := json.Unmarshal(raw, &w); err != nil {
				t.Fatal(err)
			}
			if len(w.Tools) != len(tc.wantTools) {
				t.Fatalf("tools %s, want %s", w.Tools, tc.wantTools)
			}
			for i := range w.Tools {
				if !jsonEqual(w.Tools[i], []byte(tc.wantTools[i])) {
					t.Errorf("tool %d = %s, want %s", i, w.Tools[i], tc.wantTools[i])
				}
			}
			if string(w.MaxToolCalls) != tc.wantMax || string(w.ParallelToolCalls) != tc.parallel {
				t.Errorf("max_tool_calls %q, parallel_tool_calls %q; want %q, %q", w.MaxToolCalls, w.ParallelToolCalls, tc.wantMax, tc.parallel)
			}
			if bytes.Contains(raw, []byte("example.com")) {
				t.Errorf("blocked domains were sent: %s", raw)
			}
		})
	}
}

// A reasoning model that searches: its web_search_call items, between
// reasoning items, take no block and are no tool uses; the reasoning items
// keep their blocks and go back, in place, in the next request, which
// sends no web_search_call. Sources are the pages the text cites, in
// order, then those the searches' actions list besides, each URL once.
func TestWebSearchCalls(t *testing.T) {
	events := []string{
		`{"type":"response.created","response":{"id":"resp_1","model":"gpt-5","status":"in_progress","output":[]}}`,
		`{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}`,
		`{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_1","type":"reasoning","encrypted_content":"enc_1","summary":[]}}`,
		`{"type":"response.output_item.added","output_index":1,"item":{"id":"ws_1","type":"web_search_call","status":"in_progress","action":{"type":"search"}}}`,
		`{"type":"response.web_search_call.searching","output_index":1,"item_id":"ws_1"}`,
		`{"type":"response.output_item.done","output_index":1,"item":{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search","queries":["go 1.26"],"sources":[{"type":"url","url":"https://go.dev/doc/go1.26"},{"type":"url","url":"https://go.dev/blog/"},{"type":"url","url":"https://go.dev/blog/"}]}}}`,
		`{"type":"response.output_item.added","output_index":2,"item":{"id":"rs_2","type":"reasoning","summary":[]}}`,
		`{"type":"response.output_item.done","output_index":2,"item":{"id":"rs_2","type":"reasoning","encrypted_content":"enc_2","summary":[]}}`,
		`{"type":"response.output_item.added","output_index":3,"item":{"id":"msg_1","type":"message","role":"assistant","content":[]}}`,
		`{"type":"response.output_text.delta","output_index":3,"content_index":0,"delta":"Go 1.26 is out "}`,
		`{"type":"response.output_text.annotation.added","output_index":3,"content_index":0,"annotation_index":0,"annotation":{"type":"url_citation","title":"Blog","url":"https://go.dev/blog/","start_index":0,"end_index":5}}`,
		`{"type":"response.output_text.delta","output_index":3,"content_index":0,"delta":"(go.dev)."}`,
		`{"type":"response.output_item.done","output_index":3,"item":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Go 1.26 is out (go.dev).","annotations":[{"type":"url_citation","title":"Blog","url":"https://go.dev/blog/","start_index":0,"end_index":5},{"type":"file_citation","file_id":"file_1","filename":"a.txt","index":3},{"type":"url_citation","title":"Release notes","url":"https://go.dev/doc/go1.27","start_index":6,"end_index":9},{"type":"url_citation","title":"Blog, again","url":"https://go.dev/blog/","start_index":10,"end_index":12}]}]}}`,
		`{"type":"response.completed","response":{"id":"resp_1","model":"gpt-5","status":"completed","output":[],"usage":{"input_tokens":900,"output_tokens":40}}}`,
	}
	var body strings.Builder
	for _, e := range events {
		body.WriteString("data: " + e + "\n\n")
	}
	api := newFakeAPI(t,
		answer{status: http.StatusOK, body: body.String(), header: http.Header{"Content-Type": {"text/event-stream"}}},
		answer{resp: textResponse("ok")})
	client := newClient(t, api.v1())
	req := userRequest("What is new in Go?")
	req.Model, req.WebSearch = "gpt-5", &llm.WebSearch{}
	var deltas []llm.Delta
	resp, err := client.Generate(t.Context(), req, func(d llm.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	llmtest.CheckDeltas(t, resp, deltas)
	want := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
		{Type: llm.BlockRedactedThinking, ID: "rs_1", Signature: "enc_1"},
		{Type: llm.BlockRedactedThinking, ID: "rs_2", Signature: "enc_2"},
		llm.TextBlock("Go 1.26 is out (go.dev)."),
	}}
	if !reflect.DeepEqual(resp.Message, want) {
		t.Errorf("message\n%s\nwant\n%s", show(resp.Message), show(want))
	}
	if resp.StopReason != llm.StopEndTurn {
		t.Errorf("stop %q, want end_turn", resp.StopReason)
	}
	wantSources := []llm.Source{
		{Title: "Blog", URL: "https://go.dev/blog/"},
		{Title: "Release notes", URL: "https://go.dev/doc/go1.27"},
		{URL: "https://go.dev/doc/go1.26"},
	}
	if !reflect.DeepEqual(resp.Sources, wantSources) {
		t.Errorf("sources %+v\nwant %+v", resp.Sources, wantSources)
	}

	next := *req
	next.Messages = append(append([]llm.Message(nil), req.Messages...), resp.Message, llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("And Go 1.27?")}})
	if _, err := client.Generate(t.Context(), &next, nil); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, it := range api.body(t, 1).Input {
		kinds = append(kinds, it.Type+":"+it.ID+it.Role)
	}
	if got := strings.Join(kinds, ","); got != ":user,reasoning:rs_1,reasoning:rs_2,:assistant,:user" {
		t.Errorf("the next request's input items %s", got)
	}
}

// The client searches the web with OpenAI's models, but with reasoning
// effort minimal, with which OpenAI documents that GPT-5 does not.
func TestSearchesWeb(t *testing.T) {
	for _, tc := range []struct {
		opts []responses.Option
		want bool
	}{
		{nil, true},
		{[]responses.Option{responses.ReasoningEffort("low")}, true},
		{[]responses.Option{responses.ReasoningEffort("minimal")}, false},
	} {
		c := newClient(t, "http://localhost:1/v1", tc.opts...)
		for _, model := range []string{"gpt-4.1", "gpt-5", responses.DefaultModel} {
			if got := llm.SearchesWeb(c, model); got != tc.want {
				t.Errorf("%d options: SearchesWeb(%q) = %v, want %v", len(tc.opts), model, got, tc.want)
			}
		}
	}
}
