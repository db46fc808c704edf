package anthropic_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/llmtest"
)

// A real exchange in which Claude searched the web with the API's own
// search, recorded by others (charm.land/fantasy's providertests,
// Apache-2.0: claude-sonnet-4 asked for Tokyo's population, streamed;
// .ci/run fetches the module, see llmtest.RecordingsEnv). orca's request
// with Request.WebSearch carries the web search tool as the recorded one
// did; the recorded stream, replayed byte for byte, gives the answer's
// text alone (the server's own tool use and its results are no blocks of
// orca's), and every page the search found, each once, as Sources.
func TestRecordedWebSearch(t *testing.T) {
	ex := llmtest.Recorded(t, "TestAnthropicWebSearch/stream.yaml")[0]
	var recorded struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		System    []struct{ Text string }
		Messages  []struct {
			Content []struct{ Text string }
		}
		Tools []map[string]any
	}
	if err := json.Unmarshal(ex.RequestBody, &recorded); err != nil || len(recorded.Messages) != 1 || len(recorded.Tools) != 1 {
		t.Fatalf("the recorded request: %v", err)
	}

	api := llmtest.NewReplay(t, []llmtest.Exchange{ex})
	c := newClient(t, api.URL)
	if !llm.SearchesWeb(c, recorded.Model) {
		t.Fatal("the client does not say it searches the web")
	}
	resp, err := c.Generate(t.Context(), &llm.Request{Model: recorded.Model, MaxTokens: recorded.MaxTokens, System: recorded.System[0].Text,
		Messages:  []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(recorded.Messages[0].Content[0].Text)}}},
		WebSearch: &llm.WebSearch{}}, nil)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	var sent struct{ Tools []map[string]any }
	if err := json.Unmarshal(api.Bodies()[0], &sent); err != nil || len(sent.Tools) != 1 || sent.Tools[0]["type"] != "web_search_20250305" || sent.Tools[0]["name"] != "web_search" {
		t.Errorf("tools sent %v, recorded %v (%v)", sent.Tools, recorded.Tools, err)
	}

	// What the recorded stream holds: the text, the search's results.
	var answer strings.Builder
	var found []string
	sc := bufio.NewScanner(bytes.NewReader(ex.ResponseBody))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type         string
			ContentBlock struct {
				Type    string
				Content json.RawMessage
			} `json:"content_block"`
			Delta struct{ Type, Text string }
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("the recorded stream: %v", err)
		}
		switch {
		case ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta":
			answer.WriteString(ev.Delta.Text)
		case ev.Type == "content_block_start" && ev.ContentBlock.Type == "web_search_tool_result":
			var rs []struct{ URL string }
			json.Unmarshal(ev.ContentBlock.Content, &rs)
			for _, r := range rs {
				found = append(found, r.URL)
			}
		}
	}
	if len(found) < 10 || !strings.Contains(answer.String(), "Tokyo") {
		t.Fatalf("the recorded stream: %d results, answer %.100q", len(found), answer.String())
	}
	for _, b := range resp.Message.Content {
		if b.Type != llm.BlockText {
			t.Errorf("a %s block in the message: the server's search is not orca's", b.Type)
		}
	}
	if got := resp.Message.Text(); got != answer.String() {
		t.Errorf("answer %.200q, want the recorded %.200q", got, answer.String())
	}
	urls := map[string]bool{}
	for _, s := range resp.Sources {
		if urls[s.URL] || s.Title == "" {
			t.Errorf("source %+v: twice, or without its title", s)
		}
		urls[s.URL] = true
	}
	for _, u := range found {
		if !urls[u] {
			t.Errorf("the search found %s; it is not among the sources", u)
		}
	}
	if resp.StopReason != llm.StopEndTurn {
		t.Errorf("stop %q", resp.StopReason)
	}
}

// Allowed domains go to the API as allowed_domains; blocked ones as
// blocked_domains, but not beside allowed ones (the API takes one of the
// two: the caller filters the rest), with the cap of searches.
func TestWebSearchDomains(t *testing.T) {
	for _, c := range []struct {
		ws   llm.WebSearch
		want string
	}{
		{llm.WebSearch{Allowed: []string{"go.dev"}, Blocked: []string{"x.com"}, MaxUses: 3}, `{"max_uses":3,"allowed_domains":["go.dev"],"name":"web_search","type":"web_search_20250305"}`},
		{llm.WebSearch{Blocked: []string{"x.com"}}, `{"blocked_domains":["x.com"],"name":"web_search","type":"web_search_20250305"}`},
	} {
		ws := c.ws
		api := newFakeAPI(t, answer{resp: textResponse("ok")})
		req := userRequest("hi")
		req.WebSearch = &ws
		if _, err := newClient(t, api.URL).Generate(t.Context(), req, nil); err != nil {
			t.Fatal(err)
		}
		api.mu.Lock()
		body := api.bodies[0]
		api.mu.Unlock()
		var sent struct{ Tools []json.RawMessage }
		if err := json.Unmarshal(body, &sent); err != nil || len(sent.Tools) != 1 || string(sent.Tools[0]) != c.want {
			t.Errorf("%+v: tools %s", c.ws, sent.Tools)
		}
	}
}
