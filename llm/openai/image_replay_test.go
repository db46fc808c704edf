package openai_test

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
// providertests, Apache-2.0: gpt-5 describing a PNG, streamed; .ci/run
// fetches the module, see llmtest.RecordingsEnv): orca's request for the
// same question and image carries the messages exactly as the recorded
// request did — the image an image_url part holding a data URL of the
// same bytes — and the recorded stream, replayed byte for byte, gives the
// answer, the usage and the stop reason it streamed.
func TestRecordedImageQuestion(t *testing.T) {
	ex := llmtest.Recorded(t, "TestImageUploadAgentStreaming/openai-gpt-5-stream.yaml")[0]
	var recorded struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_completion_tokens"`
		Messages  []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(ex.RequestBody, &recorded); err != nil || len(recorded.Messages) != 2 {
		t.Fatalf("the recorded request: %v", err)
	}
	var system string
	var rc []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if json.Unmarshal(recorded.Messages[0].Content, &system) != nil || json.Unmarshal(recorded.Messages[1].Content, &rc) != nil || len(rc) != 2 {
		t.Fatalf("the recorded request's messages: %s", recorded.Messages[0].Content)
	}
	mediaType, data, ok := strings.Cut(strings.TrimPrefix(rc[1].ImageURL.URL, "data:"), ";base64,")
	img, err := base64.StdEncoding.DecodeString(data)
	if !ok || err != nil || rc[0].Type != "text" || rc[1].Type != "image_url" {
		t.Fatalf("the recorded image %.60s: %v", rc[1].ImageURL.URL, err)
	}

	api := llmtest.NewReplay(t, []llmtest.Exchange{ex})
	req := &llm.Request{Model: recorded.Model, MaxTokens: recorded.MaxTokens, System: system, Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{
		llm.TextBlock(rc[0].Text),
		llm.ImageBlock(&llm.Media{MediaType: mediaType, Data: img, Name: "wish.png"}),
	}}}}
	var streamed strings.Builder
	resp, err := newClient(t, api.URL+"/v1").Generate(t.Context(), req, func(d llm.Delta) {
		if d.Type == llm.DeltaText {
			streamed.WriteString(d.Text)
		}
	})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}

	// The messages are the recorded ones, part for part.
	messages := func(body []byte) any {
		var b struct{ Messages []map[string]any }
		if err := json.Unmarshal(body, &b); err != nil {
			t.Fatal(err)
		}
		return b.Messages
	}
	sent := api.Bodies()
	if len(sent) != 1 {
		t.Fatalf("%d requests", len(sent))
	}
	if got, want := messages(sent[0]), messages(ex.RequestBody); !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		t.Errorf("the messages sent differ from the recorded request's:\n got %.300s\nwant %.300s", g, strings.Replace(string(ex.RequestBody), data, "…", 1))
	}

	// The answer is the recorded stream's: its text pieces, its usage.
	var answer strings.Builder
	var usage llm.Usage
	finish := ""
	sc := bufio.NewScanner(bytes.NewReader(ex.ResponseBody))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta        struct{ Content string }
				FinishReason string `json:"finish_reason"`
			}
			Usage *struct {
				PromptTokens     int64 `json:"prompt_tokens"`
				CompletionTokens int64 `json:"completion_tokens"`
			}
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("the recorded stream: %v", err)
		}
		for _, c := range chunk.Choices {
			answer.WriteString(c.Delta.Content)
			finish = cmpOr(c.FinishReason, finish)
		}
		if chunk.Usage != nil {
			usage = llm.Usage{InputTokens: chunk.Usage.PromptTokens, OutputTokens: chunk.Usage.CompletionTokens}
		}
	}
	if answer.Len() < 100 || finish != "stop" || usage.OutputTokens == 0 {
		t.Fatalf("the recorded answer %q, finish %q, usage %+v", answer.String(), finish, usage)
	}
	if got := resp.Message.Text(); got != answer.String() || streamed.String() != answer.String() {
		t.Errorf("answer %q, streamed %q, want the recorded %q", got, streamed.String(), answer.String())
	}
	if resp.StopReason != llm.StopEndTurn || resp.Usage != usage || resp.Model != "gpt-5-2025-08-07" {
		t.Errorf("stop %q, usage %+v (recorded %+v), model %q", resp.StopReason, resp.Usage, usage, resp.Model)
	}
}

func cmpOr(s, or string) string {
	if s != "" {
		return s
	}
	return or
}
