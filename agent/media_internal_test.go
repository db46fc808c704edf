package agent

import (
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm"
)

// An image counts in the estimate of a prompt's size as its pixels cost,
// a PDF as its bytes; text-only messages as before.
func TestMediaCountsInTheEstimate(t *testing.T) {
	text := llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("look")}}
	if messageChars(text) != 4 {
		t.Fatalf("text: %d", messageChars(text))
	}
	img := &llm.Media{MediaType: llm.MediaPNG, Width: 1500, Height: 1000, Data: []byte("x")}
	withImage := llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("look"), llm.ImageBlock(img)}}
	if got := messageChars(withImage); got != 4+1500*1000/750*4 {
		t.Errorf("an image of 1500×1000: %d chars", got)
	}
	res := llm.ToolResultBlock("c", "", false)
	pdf := llm.ResultMediaBlock("c", &llm.Media{MediaType: llm.MediaPDF, Size: 200_000})
	if got := messageChars(llm.Message{Role: llm.RoleUser, Content: []llm.Block{res, pdf}}); got != 200_000 {
		t.Errorf("a PDF of 200 KB in a tool result: %d chars", got)
	}
}

// Clearing old tool results clears what they showed too — an image in a
// short result included — and names it.
func TestClearingDropsMedia(t *testing.T) {
	img := &llm.Media{MediaType: llm.MediaPNG, Width: 30, Height: 20, Size: 2048, Name: "bug.png", Data: []byte("x")}
	res := llm.ToolResultBlock("c1", "bug.png: an image", false)
	msgs := []llm.Message{
		{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("go")}},
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock("c1", "Read", []byte(`{}`)), llm.ToolUseBlock("c0", "Read", []byte(`{}`))}},
		{Role: llm.RoleUser, Content: []llm.Block{res, llm.ResultMediaBlock("c1", img), llm.ToolResultBlock("c0", "ok", false)}},
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock("c2", "Read", []byte(`{}`))}},
		{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock("c2", strings.Repeat("x", 10), false)}},
	}
	out, n := clearResults(msgs, 1)
	c := out[2].Content
	if n != 1 || len(c) != 2 || c[0].Media != nil || c[1].Media != nil || c[1].Content != "ok" ||
		!strings.Contains(c[0].Content, "image/png 30×20, 2 KB (bug.png)") || !strings.HasPrefix(c[0].Content, clearedPrefix) {
		t.Errorf("cleared %d: %+v", n, c)
	}
	if len(msgs[2].Content) != 3 || msgs[2].Content[1].Media != img {
		t.Error("the conversation given was changed")
	}
}

// The summariser reads what was shown by its description: its bytes are
// not in the summary's request.
func TestSummaryNamesMedia(t *testing.T) {
	img := &llm.Media{MediaType: llm.MediaPNG, Width: 30, Height: 20, Size: 2048, Name: "bug.png", Data: []byte("PIXELS")}
	res := llm.ToolResultBlock("c1", "read", false)
	var b strings.Builder
	render(&b, []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("see"), llm.ImageBlock(img), res, llm.ResultMediaBlock("c1", img)}}})
	if s := b.String(); strings.Count(s, "image/png 30×20, 2 KB (bug.png)") != 2 || !strings.Contains(s, "tool showed: [image/png") || strings.Contains(s, "PIXELS") {
		t.Errorf("rendered %q", s)
	}
}
