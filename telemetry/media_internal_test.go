package telemetry

import (
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm"
)

// Spans name images and documents by digest, as the conventions' uri
// parts: never their bytes.
func TestSpansNameMediaNotBytes(t *testing.T) {
	img := &llm.Media{MediaType: llm.MediaPNG, Digest: "sha256:abc", Data: []byte("SECRET-PIXELS")}
	res := llm.ToolResultBlock("c1", "read", false)
	doc := llm.ResultMediaBlock("c1", &llm.Media{MediaType: llm.MediaPDF, Digest: "sha256:def", Data: []byte("%PDF-bytes")})
	got := inputMessagesJSON([]llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("look"), llm.ImageBlock(img), res, doc}}})
	for _, want := range []string{`{"type":"uri","modality":"image","mime_type":"image/png","uri":"orca-attachment:sha256:abc"}`,
		`{"type":"uri","modality":"document","mime_type":"application/pdf","uri":"orca-attachment:sha256:def"}`} {
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %s", got, want)
		}
	}
	if strings.Contains(got, "SECRET") || strings.Contains(got, "U0VDUkVU") || strings.Contains(got, "PDF-bytes") {
		t.Errorf("the bytes are in the span: %s", got)
	}
}
