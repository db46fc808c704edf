package gemini_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/gemini"
	"github.com/orca-agent/orca/llm/llmtest"
)

// part is a part of the wire's contents, as recorded.
type part struct {
	Text             string         `json:"text"`
	Thought          bool           `json:"thought"`
	ThoughtSignature string         `json:"thoughtSignature"`
	FunctionCall     *call          `json:"functionCall"`
	FunctionResponse map[string]any `json:"functionResponse"`
}

type call struct {
	ID   string         `json:"id"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

type wireRequest struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	} `json:"contents"`
	SystemInstruction *struct {
		Parts []part `json:"parts"`
	} `json:"systemInstruction"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

// recorded is what a recorded stream carries: its parts' text, its calls
// (with their signatures), its last usage and finish reason.
type recorded struct {
	text, model string
	calls       []call
	sigs        []string
	usage       llm.Usage
	finish      string
}

func streamOf(t *testing.T, body []byte) recorded {
	t.Helper()
	var r recorded
	for _, line := range strings.Split(strings.ReplaceAll(string(body), "\r\n", "\n"), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var chunk struct {
			Candidates []struct {
				Content      struct{ Parts []part } `json:"content"`
				FinishReason string                 `json:"finishReason"`
			} `json:"candidates"`
			UsageMetadata *struct {
				PromptTokenCount, CandidatesTokenCount, ThoughtsTokenCount, CachedContentTokenCount int64
			} `json:"usageMetadata"`
			ModelVersion string `json:"modelVersion"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("the recorded stream: %v", err)
		}
		r.model = chunk.ModelVersion
		if u := chunk.UsageMetadata; u != nil {
			r.usage = llm.Usage{InputTokens: u.PromptTokenCount - u.CachedContentTokenCount, OutputTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount, CacheReadTokens: u.CachedContentTokenCount}
		}
		for _, c := range chunk.Candidates {
			for _, p := range c.Content.Parts {
				if p.FunctionCall != nil {
					r.calls = append(r.calls, *p.FunctionCall)
					r.sigs = append(r.sigs, p.ThoughtSignature)
				} else if !p.Thought {
					r.text += p.Text
				}
			}
			if c.FinishReason != "" {
				r.finish = c.FinishReason
			}
		}
	}
	return r
}

// withoutIDs drops the ids of function calls and responses from the
// contents of a request body: the recorder's client numbered the calls
// that came without one its own way.
func withoutIDs(t *testing.T, body []byte) any {
	t.Helper()
	var b struct{ Contents []map[string]any }
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	for _, c := range b.Contents {
		for _, p := range c["parts"].([]any) {
			p := p.(map[string]any)
			for _, k := range []string{"functionCall", "functionResponse"} {
				if f, ok := p[k].(map[string]any); ok {
					delete(f, "id")
				}
			}
		}
	}
	return b.Contents
}

// A real Gemini exchange recorded by others (charm.land/fantasy's
// providertests, Apache-2.0; .ci/run fetches the module, see
// llmtest.RecordingsEnv) replays through the client: the answer's text,
// calls (parallel ones too), usage and stop reason are the recorded
// stream's; and where the recording goes on with the calls' results,
// orca's second request carries the same contents as the recorded one —
// the calls with their thought signatures byte for byte, the results
// named after their calls.
func TestRecordedStreams(t *testing.T) {
	for _, path := range []string{
		"TestGoogleCommon/gemini-2.5-flash/simple_streaming.yaml",
		"TestGoogleCommon/gemini-2.5-flash/tool_streaming.yaml",
		"TestGoogleCommon/gemini-2.5-flash/multi_tool_streaming.yaml",
		"TestGoogleCommon/gemini-3-pro-preview/tool_streaming.yaml",
		"TestGoogleThinking/gemini-3-pro-preview/thinking-streaming.yaml",
		"TestGoogleThinking/gemini-2.5-pro/thinking-streaming.yaml",
	} {
		t.Run(path, func(t *testing.T) {
			exs := llmtest.Recorded(t, path)
			api := llmtest.NewReplay(t, exs)
			hc := &http.Client{Transport: &http.Transport{}}
			t.Cleanup(hc.CloseIdleConnections)
			c, err := gemini.New(gemini.APIKey("test-key"), gemini.BaseURL(api.URL), gemini.HTTPClient(hc))
			if err != nil {
				t.Fatal(err)
			}
			var first wireRequest
			if err := json.Unmarshal(exs[0].RequestBody, &first); err != nil {
				t.Fatal(err)
			}
			model := strings.TrimSuffix(exs[0].URL[strings.LastIndex(exs[0].URL, "/models/")+len("/models/"):], ":streamGenerateContent?alt=sse")
			req := &llm.Request{Model: model, MaxTokens: 4000, Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(first.Contents[0].Parts[0].Text)}}}}
			if s := first.SystemInstruction; s != nil {
				req.System = s.Parts[0].Text
			}
			for _, tl := range first.Tools {
				for _, d := range tl.FunctionDeclarations {
					req.Tools = append(req.Tools, llm.ToolDefinition{Name: d.Name, Description: d.Description, InputSchema: json.RawMessage(`{"type":"object"}`)})
				}
			}

			for i, ex := range exs {
				var streamed strings.Builder
				resp, err := c.Generate(t.Context(), req, func(d llm.Delta) {
					if d.Type == llm.DeltaText {
						streamed.WriteString(d.Text)
					}
				})
				if err != nil {
					t.Fatalf("request %d: %v", i+1, err)
				}
				if i > 0 {
					if got, want := withoutIDs(t, api.Bodies()[i]), withoutIDs(t, ex.RequestBody); !reflect.DeepEqual(got, want) {
						g, _ := json.Marshal(got)
						w, _ := json.Marshal(want)
						t.Errorf("request %d's contents differ from the recorded ones:\n got %s\nwant %s", i+1, g, w)
					}
				}
				rec := streamOf(t, ex.ResponseBody)
				uses := resp.Message.ToolUses()
				if resp.Message.Text() != rec.text || streamed.String() != rec.text || len(uses) != len(rec.calls) || resp.Usage != rec.usage || resp.Model != rec.model {
					t.Fatalf("response %d: text %q (streamed %q), %d calls, usage %+v, model %q; recorded %q, %d calls, %+v, %q",
						i+1, resp.Message.Text(), streamed.String(), len(uses), resp.Usage, resp.Model, rec.text, len(rec.calls), rec.usage, rec.model)
				}
				wantStop := llm.StopEndTurn
				if len(uses) > 0 {
					wantStop = llm.StopToolUse
				}
				if rec.finish != "STOP" || resp.StopReason != wantStop {
					t.Errorf("response %d: stop %q, recorded finish %q", i+1, resp.StopReason, rec.finish)
				}
				for k, u := range uses {
					var args map[string]any
					json.Unmarshal(u.Input, &args)
					if u.Name != rec.calls[k].Name || !reflect.DeepEqual(args, rec.calls[k].Args) || u.ID == "" {
						t.Errorf("call %d: %s %s (id %q), recorded %+v", k, u.Name, u.Input, u.ID, rec.calls[k])
					}
				}
				if i+1 == len(exs) {
					break
				}
				// The next request: the answer, and the results the
				// recording sent.
				var next wireRequest
				if err := json.Unmarshal(exs[i+1].RequestBody, &next); err != nil {
					t.Fatal(err)
				}
				results := llm.Message{Role: llm.RoleUser}
				last := next.Contents[len(next.Contents)-1]
				for k, p := range last.Parts {
					if p.FunctionResponse == nil {
						t.Fatalf("the recorded request %d ends with %+v", i+2, p)
					}
					out := p.FunctionResponse["response"].(map[string]any)["result"]
					text, ok := out.(string)
					if !ok {
						b, _ := json.Marshal(out)
						text = string(b)
					}
					results.Content = append(results.Content, llm.ToolResultBlock(uses[k].ID, text, false))
				}
				req.Messages = append(req.Messages, resp.Message, results)
			}
		})
	}
}
