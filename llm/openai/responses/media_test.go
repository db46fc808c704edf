package responses_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm"
)

// Images and PDFs go to the Responses API as it takes them: input_image
// parts with data URLs (detail auto) and input_file parts (file_data, a
// data URL, and the file's name) in user messages. A function call's
// output takes the same parts, so what a tool's result shows goes in its
// own function_call_output, after its text, and nowhere else.
func TestMediaInTheRequest(t *testing.T) {
	api := newFakeAPI(t, answer{resp: textResponse("a red square")})
	png := []byte("\x89PNG\r\n\x1a\nfake-but-bytes")
	pdf := []byte("%PDF-1.4\n%%EOF\n")
	shot := &llm.Media{MediaType: llm.MediaPNG, Data: png, Name: "shots/bug.png"}
	spec := &llm.Media{MediaType: llm.MediaPDF, Data: pdf, Name: "docs/spec.pdf"}
	req := &llm.Request{Model: "gpt-6.1-terra", MaxTokens: 100, Messages: []llm.Message{
		{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("What is wrong here?"), llm.ImageBlock(shot), llm.DocumentBlock(spec)}},
		{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.ToolUseBlock("call_1", "Read", json.RawMessage(`{"file_path":"shots/bug.png"}`)),
			llm.ToolUseBlock("call_2", "Read", json.RawMessage(`{"file_path":"docs/spec.pdf"}`)),
			llm.ToolUseBlock("call_3", "Glob", json.RawMessage(`{"pattern":"*"}`))}},
		{Role: llm.RoleUser, Content: []llm.Block{
			llm.ToolResultBlock("call_1", "shots/bug.png: an image", false), llm.ResultMediaBlock("call_1", shot),
			llm.ToolResultBlock("call_2", "", false), llm.ResultMediaBlock("call_2", spec),
			llm.ToolResultBlock("call_3", "a.go", false),
			llm.TextBlock("and then?")}},
	}}
	if _, err := newClient(t, api.v1()).Generate(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	w := api.body(t, 0)
	var kinds []string
	for _, it := range w.Input {
		kinds = append(kinds, it.Type+":"+it.Role)
	}
	if strings.Join(kinds, ",") != ":user,function_call:,function_call:,function_call:,function_call_output:,function_call_output:,function_call_output:,:user" {
		t.Fatalf("input items %v: %s", kinds, api.raw(t, 0))
	}
	dataURL := func(url, typ string, want []byte) bool {
		rest, ok := strings.CutPrefix(url, "data:"+typ+";base64,")
		got, err := base64.StdEncoding.DecodeString(rest)
		return ok && err == nil && bytes.Equal(got, want)
	}
	first := parts(w.Input[0].Content)
	if len(first) != 3 || first[0].Type != "input_text" || first[0].Text != "What is wrong here?" ||
		first[1].Type != "input_image" || !dataURL(first[1].ImageURL, "image/png", png) || first[1].Detail != "auto" ||
		first[2].Type != "input_file" || !dataURL(first[2].FileData, "application/pdf", pdf) || first[2].Filename != "spec.pdf" {
		t.Errorf("the user's media: %s", w.Input[0].Content)
	}
	shown := parts(w.Input[4].Output)
	if w.Input[4].CallID != "call_1" || len(shown) != 2 || shown[0].Type != "input_text" || shown[0].Text != "shots/bug.png: an image" ||
		shown[1].Type != "input_image" || !dataURL(shown[1].ImageURL, "image/png", png) || shown[1].Detail != "auto" {
		t.Errorf("the tool's image: %s", w.Input[4].Output)
	}
	doc := parts(w.Input[5].Output)
	if w.Input[5].CallID != "call_2" || len(doc) != 1 || doc[0].Type != "input_file" || !dataURL(doc[0].FileData, "application/pdf", pdf) || doc[0].Filename != "spec.pdf" {
		t.Errorf("the tool's PDF: %s", w.Input[5].Output)
	}
	if w.Input[6].CallID != "call_3" || string(w.Input[6].Output) != `"a.go"` {
		t.Errorf("a result without media: %s", w.Input[6].Output)
	}
	if last := parts(w.Input[7].Content); len(last) != 1 || last[0].Text != "and then?" {
		t.Errorf("the user's text after the results: %s", w.Input[7].Content)
	}
}

// Media the API does not take, and media without their bytes, fail the
// request before it is sent.
func TestMediaRefused(t *testing.T) {
	api := newFakeAPI(t, answer{resp: textResponse("ok")})
	c := newClient(t, api.v1())
	for _, b := range []llm.Block{
		llm.ImageBlock(&llm.Media{MediaType: "image/tiff", Data: []byte("II*\x00")}),
		llm.DocumentBlock(&llm.Media{MediaType: "text/plain", Data: []byte("hi")}),
		llm.ImageBlock(&llm.Media{MediaType: llm.MediaPNG, Digest: "sha256:00"}),
	} {
		req := userRequest("look")
		req.Messages[0].Content = append(req.Messages[0].Content, b)
		if _, err := c.Generate(t.Context(), req, nil); err == nil || !strings.Contains(err.Error(), "invalid_request") {
			t.Errorf("%s: error %v, want an invalid request", b.Media, err)
		}
	}
	if api.requests() != 0 {
		t.Errorf("%d requests reached the API", api.requests())
	}
}
