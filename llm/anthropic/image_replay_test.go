package anthropic_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/llmtest"
)

// A real exchange about an image, recorded by others (charm.land/fantasy's
// providertests, Apache-2.0: claude-sonnet-4 describing a PNG, streamed;
// .ci/run fetches the module, see llmtest.RecordingsEnv): orca's request
// for the same question and image carries the user's message exactly as
// the recorded request did — the image a base64 image block, the bytes
// the same — and the recorded stream, replayed byte for byte, gives the
// answer, the usage and the stop reason it streamed.
func TestRecordedImageQuestion(t *testing.T) {
	ex := llmtest.Recorded(t, "TestImageUploadAgentStreaming/anthropic-claude-sonnet-4-stream.yaml")[0]
	var recorded struct {
		Model     string            `json:"model"`
		MaxTokens int               `json:"max_tokens"`
		System    []json.RawMessage `json:"system"`
		Messages  []struct {
			Content []struct {
				Type   string `json:"type"`
				Text   string `json:"text"`
				Source struct {
					MediaType string `json:"media_type"`
					Data      string `json:"data"`
				} `json:"source"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(ex.RequestBody, &recorded); err != nil || len(recorded.Messages) != 1 || len(recorded.Messages[0].Content) != 2 {
		t.Fatalf("the recorded request: %v", err)
	}
	rc := recorded.Messages[0].Content
	img, err := base64.StdEncoding.DecodeString(rc[1].Source.Data)
	if err != nil || rc[0].Type != "text" || rc[1].Type != "image" {
		t.Fatalf("the recorded request's message: %+v %v", rc[0], err)
	}
	var system struct{ Text string }
	json.Unmarshal(recorded.System[0], &system)

	api := llmtest.NewReplay(t, []llmtest.Exchange{ex})
	req := &llm.Request{Model: recorded.Model, MaxTokens: recorded.MaxTokens, System: system.Text, Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{
		llm.TextBlock(rc[0].Text),
		llm.ImageBlock(&llm.Media{MediaType: rc[1].Source.MediaType, Data: img, Name: "wish.png"}),
	}}}}
	var streamed strings.Builder
	resp, err := newClient(t, api.URL).Generate(t.Context(), req, func(d llm.Delta) {
		if d.Type == llm.DeltaText {
			streamed.WriteString(d.Text)
		}
	})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}

	// The user's message is the recorded one, block for block (orca may
	// mark a cache breakpoint; the API takes both).
	messages := func(body []byte) any {
		var b struct{ Messages []map[string]any }
		if err := json.Unmarshal(body, &b); err != nil {
			t.Fatal(err)
		}
		for _, m := range b.Messages {
			if c, ok := m["content"].([]any); ok {
				for _, x := range c {
					delete(x.(map[string]any), "cache_control")
				}
			}
		}
		return b.Messages
	}
	sent := api.Bodies()
	if len(sent) != 1 {
		t.Fatalf("%d requests", len(sent))
	}
	if got, want := messages(sent[0]), messages(ex.RequestBody); !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		t.Errorf("the messages sent differ from the recorded request's:\n got %.300s\nwant %.300s", g, strings.Replace(string(ex.RequestBody), rc[1].Source.Data, "…", 1))
	}

	// The answer is the recorded stream's: its text pieces, its usage.
	var answer strings.Builder
	var usage llm.Usage
	sc := bufio.NewScanner(bytes.NewReader(ex.ResponseBody))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type    string
			Message struct {
				Usage struct {
					InputTokens int64 `json:"input_tokens"`
				}
			}
			Delta struct{ Type, Text string }
			Usage struct {
				OutputTokens int64 `json:"output_tokens"`
			}
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("the recorded stream: %v", err)
		}
		switch ev.Type {
		case "message_start":
			usage.InputTokens = ev.Message.Usage.InputTokens
		case "content_block_delta":
			answer.WriteString(ev.Delta.Text)
		case "message_delta":
			usage.OutputTokens = ev.Usage.OutputTokens
		}
	}
	if answer.Len() < 100 || !strings.Contains(answer.String(), "image") {
		t.Fatalf("the recorded answer %q", answer.String())
	}
	if got := resp.Message.Text(); got != answer.String() || streamed.String() != answer.String() {
		t.Errorf("answer %q, streamed %q, want the recorded %q", got, streamed.String(), answer.String())
	}
	if resp.StopReason != llm.StopEndTurn || resp.Usage != usage || resp.Model != "claude-sonnet-4-20250514" {
		t.Errorf("stop %q, usage %+v (recorded %+v), model %q", resp.StopReason, resp.Usage, usage, resp.Model)
	}
}
