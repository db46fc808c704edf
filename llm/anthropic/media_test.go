package anthropic_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/orca-agent/orca/llm"
)

// Images and PDFs go to the Messages API as its image and document
// blocks, their bytes in base64 — in the user's message, and inside a
// tool_result's content after its text — as the API takes them.
func TestMediaInTheRequest(t *testing.T) {
	api := newFakeAPI(t, answer{resp: textResponse("a red square")})
	png := []byte("\x89PNG\r\n\x1a\nfake-but-bytes")
	pdf := []byte("%PDF-1.4\n%%EOF\n")
	shot := &llm.Media{MediaType: llm.MediaPNG, Data: png, Name: "shots/bug.png"}
	spec := &llm.Media{MediaType: llm.MediaPDF, Data: pdf, Name: "docs/spec.pdf"}
	result := llm.ToolResultBlock("call_1", "", false)
	req := &llm.Request{Model: "claude-sonnet-4-5", MaxTokens: 100, Messages: []llm.Message{
		{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("What is wrong here?"), llm.ImageBlock(shot), llm.DocumentBlock(spec)}},
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock("call_1", "Read", json.RawMessage(`{"file_path":"shots/bug.png"}`))}},
		{Role: llm.RoleUser, Content: []llm.Block{result, llm.ResultMediaBlock("call_1", shot)}},
	}}
	if _, err := newClient(t, api.URL).Generate(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string `json:"type"`
				Text      string `json:"text"`
				ToolUseID string `json:"tool_use_id"`
				Source    *struct {
					Type      string `json:"type"`
					MediaType string `json:"media_type"`
					Data      string `json:"data"`
				} `json:"source"`
				Title   string            `json:"title"`
				Content []json.RawMessage `json:"content"`
			} `json:"content"`
		} `json:"messages"`
	}
	api.mu.Lock()
	raw := api.bodies[0]
	api.mu.Unlock()
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	bytesOf := func(data string) []byte {
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			t.Fatalf("not base64: %v", err)
		}
		return b
	}
	first := body.Messages[0].Content
	if len(first) != 3 || first[1].Type != "image" || first[1].Source == nil || first[1].Source.Type != "base64" ||
		first[1].Source.MediaType != "image/png" || !bytes.Equal(bytesOf(first[1].Source.Data), png) {
		t.Errorf("the user's image: %s", raw)
	}
	if d := first[2]; d.Type != "document" || d.Source == nil || d.Source.MediaType != "application/pdf" || !bytes.Equal(bytesOf(d.Source.Data), pdf) || d.Title != "spec.pdf" {
		t.Errorf("the user's PDF: %+v", d)
	}
	tr := body.Messages[2].Content[0]
	if tr.Type != "tool_result" || tr.ToolUseID != "call_1" || len(tr.Content) != 2 {
		t.Fatalf("the tool result: %s", raw)
	}
	var text, img struct {
		Type   string `json:"type"`
		Text   string `json:"text"`
		Source struct {
			MediaType string `json:"media_type"`
			Data      string `json:"data"`
		} `json:"source"`
	}
	json.Unmarshal(tr.Content[0], &text)
	json.Unmarshal(tr.Content[1], &img)
	// A result of images alone is given a text part naming them.
	if text.Type != "text" || text.Text == "" || img.Type != "image" || img.Source.MediaType != "image/png" || !bytes.Equal(bytesOf(img.Source.Data), png) {
		t.Errorf("the tool result's content: %s", raw)
	}
}

// Media without bytes (a stored reference not read back) is a request
// error, not a request the API refuses.
func TestMediaWithoutBytes(t *testing.T) {
	api := newFakeAPI(t, answer{resp: textResponse("x")})
	req := &llm.Request{Model: "m", MaxTokens: 10, Messages: []llm.Message{{Role: llm.RoleUser,
		Content: []llm.Block{llm.ImageBlock(&llm.Media{MediaType: llm.MediaPNG, Digest: "sha256:00"})}}}}
	if _, err := newClient(t, api.URL).Generate(t.Context(), req, nil); err == nil || api.requests() != 0 {
		t.Errorf("error %v after %d requests", err, api.requests())
	}
}
