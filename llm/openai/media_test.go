package openai_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm"
)

// Images and PDFs go to Chat Completions as the API takes them: image_url
// parts with data URLs and file parts (file_data, filename) in user
// messages. A tool message carries text only, so a tool's image follows
// the tool messages in a user message that names the call — never inside
// the tool message, and never between the call and its tool messages.
func TestMediaInTheRequest(t *testing.T) {
	api := newFakeAPI(t, answer{resp: textResponse("a red square")})
	png := []byte("\x89PNG\r\n\x1a\nfake-but-bytes")
	pdf := []byte("%PDF-1.4\n%%EOF\n")
	shot := &llm.Media{MediaType: llm.MediaPNG, Data: png, Name: "shots/bug.png"}
	spec := &llm.Media{MediaType: llm.MediaPDF, Data: pdf, Name: "docs/spec.pdf"}
	result := llm.ToolResultBlock("call_1", "shots/bug.png: an image", false)
	req := &llm.Request{Model: "gpt-4o", MaxTokens: 100, Messages: []llm.Message{
		{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("What is wrong here?"), llm.ImageBlock(shot), llm.DocumentBlock(spec)}},
		{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.ToolUseBlock("call_1", "Read", json.RawMessage(`{"file_path":"shots/bug.png"}`)),
			llm.ToolUseBlock("call_2", "Glob", json.RawMessage(`{"pattern":"*"}`))}},
		{Role: llm.RoleUser, Content: []llm.Block{result, llm.ResultMediaBlock("call_1", shot), llm.ToolResultBlock("call_2", "a.go", false), llm.TextBlock("and then?")}},
	}}
	if _, err := newClient(t, api.v1()).Generate(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	api.mu.Lock()
	raw := api.bodies[0]
	api.mu.Unlock()
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	type part struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL *struct {
			URL string `json:"url"`
		} `json:"image_url"`
		File *struct {
			FileData string `json:"file_data"`
			Filename string `json:"filename"`
		} `json:"file"`
	}
	partsOf := func(i int) []part {
		var ps []part
		if err := json.Unmarshal(body.Messages[i].Content, &ps); err != nil {
			t.Fatalf("message %d's content is not a list of parts: %s", i, body.Messages[i].Content)
		}
		return ps
	}
	dataURL := func(url, typ string, want []byte) bool {
		rest, ok := strings.CutPrefix(url, "data:"+typ+";base64,")
		got, err := base64.StdEncoding.DecodeString(rest)
		return ok && err == nil && bytes.Equal(got, want)
	}
	// The API's rules: after an assistant message with tool calls come
	// its tool messages, one per call, text only; then anything else.
	msgs := body.Messages
	if len(msgs) != 5 || msgs[1].Role != "assistant" || len(msgs[1].ToolCalls) != 2 || msgs[2].Role != "tool" || msgs[3].Role != "tool" || msgs[4].Role != "user" {
		t.Fatalf("messages: %s", raw)
	}
	for _, i := range []int{2, 3} {
		var s string
		if err := json.Unmarshal(msgs[i].Content, &s); err != nil {
			t.Errorf("tool message %d carries more than text: %s", i, msgs[i].Content)
		}
	}
	first := partsOf(0)
	if len(first) != 3 || first[0].Type != "text" || first[1].Type != "image_url" || first[1].ImageURL == nil || !dataURL(first[1].ImageURL.URL, "image/png", png) ||
		first[2].Type != "file" || first[2].File == nil || !dataURL(first[2].File.FileData, "application/pdf", pdf) || first[2].File.Filename != "spec.pdf" {
		t.Errorf("the user's media: %s", msgs[0].Content)
	}
	last := partsOf(4)
	if len(last) != 3 || last[0].Type != "text" || !strings.Contains(last[0].Text, "call_1") || last[1].Type != "image_url" || !dataURL(last[1].ImageURL.URL, "image/png", png) ||
		last[2].Type != "text" || last[2].Text != "and then?" {
		t.Errorf("the tool's image after the tool messages: %s", msgs[4].Content)
	}
	if !strings.Contains(string(msgs[2].Content), "next user message") {
		t.Errorf("the tool message does not say where its image is: %s", msgs[2].Content)
	}
}
