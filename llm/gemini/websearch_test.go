package gemini_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm"
)

// Request.WebSearch is Grounding with Google Search: the google_search
// tool in the request; the grounding's web chunks, as the API streams them
// with the answer (Google's redirect as the URL, the site as the title),
// are the response's Sources, each once, with their site.
func TestGoogleSearchGrounding(t *testing.T) {
	ground := `{"candidates": [{"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": "STOP", "index": 0,
		"groundingMetadata": {"webSearchQueries": ["latest go release"], "groundingChunks": [
			{"web": {"uri": "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AbC", "title": "go.dev"}},
			{"web": {"uri": "https://vertexaisearch.cloud.google.com/grounding-api-redirect/DeF", "title": "Wikipedia.org"}},
			{"web": {"uri": "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AbC", "title": "go.dev"}},
			{"retrievedContext": {"uri": "gs://bucket/doc", "title": "not the web"}}]}}],
		"usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 12, "toolUsePromptTokenCount": 300, "totalTokenCount": 332},
		"modelVersion": "gemini-test-001", "responseId": "resp-1"}`
	api := newFakeAPI(t, answer{chunks: []string{`{"candidates": [{"content": {"parts": [{"text": "Go 1.26 is the latest."}], "role": "model"}, "index": 0}]}`, ground}})
	c := newClient(t, api.URL)
	if !llm.SearchesWeb(c, "gemini-3.8-flash") || llm.SearchesWeb(c, "gemini-1.5-pro") {
		t.Error("SearchesWeb")
	}
	req := &llm.Request{Model: "gemini-3.8-flash", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("latest go")}}},
		WebSearch: &llm.WebSearch{Allowed: []string{"go.dev"}, Blocked: []string{"spam.example"}}}
	resp, err := c.Generate(t.Context(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	var sent struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	api.mu.Lock()
	body := api.bodies[0]
	api.mu.Unlock()
	if err := json.Unmarshal(body, &sent); err != nil || len(sent.Tools) != 1 || string(sent.Tools[0]["googleSearch"]) != "{}" {
		t.Errorf("tools sent: %s (the Gemini API takes no domains)", body)
	}
	want := []llm.Source{
		{Title: "go.dev", URL: "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AbC", Site: "go.dev"},
		{Title: "Wikipedia.org", URL: "https://vertexaisearch.cloud.google.com/grounding-api-redirect/DeF", Site: "wikipedia.org"},
	}
	if len(resp.Sources) != 2 || resp.Sources[0] != want[0] || resp.Sources[1] != want[1] {
		t.Errorf("sources %+v", resp.Sources)
	}
	if resp.Message.Text() != "Go 1.26 is the latest." || len(resp.Message.Content) != 1 || resp.StopReason != llm.StopEndTurn || resp.Usage.InputTokens != 320 {
		t.Errorf("response %+v", resp)
	}
	if strings.Contains(string(body), "spam.example") {
		t.Errorf("blocked domains sent to the Gemini API: %s", body)
	}
}
