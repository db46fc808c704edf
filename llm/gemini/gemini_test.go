package gemini_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/gemini"
)

// What orca sends, in the API's form: the system instruction; tools as
// JSON Schema; the user's image and PDF as inline data; calls with their
// ids and signatures; results as functionResponse parts named after their
// calls ({"error": …} for a failed one), a result's image after them.
func TestRequestForm(t *testing.T) {
	api := newFakeAPI(t, answer{resp: llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("seen")}}, StopReason: llm.StopEndTurn}})
	png := []byte("\x89PNG\r\n\x1a\nbytes")
	pdf := []byte("%PDF-1.4 doc")
	call := llm.ToolUseBlock("c1", "Read", json.RawMessage(`{"file_path":"a.png"}`))
	call.Signature = base64.StdEncoding.EncodeToString([]byte("signed"))
	req := &llm.Request{Model: "gemini-4-neon", System: "Be brief.", MaxTokens: 100,
		Tools: []llm.ToolDefinition{{Name: "Read", Description: "Reads.", InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}},"additionalProperties":false}`)}},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Look"), llm.ImageBlock(&llm.Media{MediaType: llm.MediaPNG, Data: png}), llm.DocumentBlock(&llm.Media{MediaType: llm.MediaPDF, Data: pdf})}},
			{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockThinking, Thinking: "unsigned thought"}, call, llm.ToolUseBlock("c2", "Read", json.RawMessage(`{}`))}},
			{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock("c1", "an image", false), llm.ResultMediaBlock("c1", &llm.Media{MediaType: llm.MediaPNG, Data: png}), llm.ToolResultBlock("c2", "no such file", true)}},
		}}
	if _, err := newClient(t, api.URL).Generate(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []map[string]json.RawMessage
		} `json:"contents"`
		SystemInstruction struct{ Parts []struct{ Text string } } `json:"systemInstruction"`
		Tools             []struct {
			FunctionDeclarations []struct {
				Name                 string          `json:"name"`
				ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
		GenerationConfig struct {
			MaxOutputTokens int `json:"maxOutputTokens"`
		} `json:"generationConfig"`
	}
	api.mu.Lock()
	raw := api.bodies[0]
	api.mu.Unlock()
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`user: {"text":"Look"} {"inlineData":{"data":"` + base64.StdEncoding.EncodeToString(png) + `","mimeType":"image/png"}} {"inlineData":{"data":"` + base64.StdEncoding.EncodeToString(pdf) + `","mimeType":"application/pdf"}}`,
		`model: {"functionCall":{"args":{"file_path":"a.png"},"id":"c1","name":"Read"},"thoughtSignature":"` + call.Signature + `"} {"functionCall":{"id":"c2","name":"Read"}}`,
		`user: {"functionResponse":{"id":"c1","name":"Read","response":{"result":"an image"}}} {"inlineData":{"data":"` + base64.StdEncoding.EncodeToString(png) + `","mimeType":"image/png"}} {"functionResponse":{"id":"c2","name":"Read","response":{"error":"no such file"}}}`,
	}
	if len(body.Contents) != len(want) {
		t.Fatalf("%d contents: %s", len(body.Contents), raw)
	}
	for i, c := range body.Contents {
		var parts []string
		for _, p := range c.Parts {
			b, _ := json.Marshal(p)
			parts = append(parts, string(b))
		}
		if got := c.Role + ": " + strings.Join(parts, " "); got != want[i] {
			t.Errorf("content %d:\n got %s\nwant %s", i, got, want[i])
		}
	}
	if body.SystemInstruction.Parts[0].Text != "Be brief." || body.GenerationConfig.MaxOutputTokens != 100 ||
		len(body.Tools) != 1 || body.Tools[0].FunctionDeclarations[0].Name != "Read" || !strings.Contains(string(body.Tools[0].FunctionDeclarations[0].ParametersJSONSchema), `"additionalProperties":false`) {
		t.Errorf("request: %s", raw)
	}
}

// A blocked answer or prompt is a refusal, its reason said; a 429 says
// when to retry; the other errors are llm's kinds.
func TestRefusalsAndErrors(t *testing.T) {
	safety := `{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"SAFETY","index":0}],"usageMetadata":{"promptTokenCount":7}}`
	blocked := `{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":7}}`
	for _, tc := range []struct {
		chunk, refusal string
	}{{safety, "SAFETY"}, {blocked, "the prompt was blocked (PROHIBITED_CONTENT)"}} {
		api := newFakeAPI(t, answer{chunks: []string{tc.chunk}})
		resp, err := newClient(t, api.URL).Generate(t.Context(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("x")}}}}, nil)
		if err != nil || resp.StopReason != llm.StopRefusal || !strings.Contains(resp.Refusal, tc.refusal) || resp.Usage.InputTokens != 7 {
			t.Errorf("%s: %+v %v", tc.refusal, resp, err)
		}
	}
	api := newFakeAPI(t, answer{status: 429, body: `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"17s"}]}}`})
	_, err := newClient(t, api.URL).Generate(t.Context(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("x")}}}}, nil)
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.KindRateLimited || e.RetryAfter != 17*time.Second || e.StatusCode != 429 {
		t.Errorf("429: %v", err)
	}
	api = newFakeAPI(t, answer{err: llm.ErrPromptTooLong})
	_, err = newClient(t, api.URL).Generate(t.Context(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("x")}}}}, nil)
	if !errors.Is(err, llm.ErrPromptTooLong) || llm.StatedWindow(err) != 1048576 {
		t.Errorf("too long: %v (window %d)", err, llm.StatedWindow(err))
	}
	// A stream cut before its finish reason is a server error, to retry.
	api = newFakeAPI(t, answer{chunks: []string{`{"candidates":[{"content":{"parts":[{"text":"half"}],"role":"model"},"index":0}]}`}})
	_, err = newClient(t, api.URL).Generate(t.Context(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("x")}}}}, nil)
	if !llm.Retryable(err) {
		t.Errorf("cut stream: %v", err)
	}
}

// Without a key or a base URL, New says what to set; Vertex AI without a
// project or a location too.
func TestNewNeeds(t *testing.T) {
	t.Setenv(gemini.APIKeyEnv, "")
	t.Setenv(gemini.GoogleAPIKeyEnv, "")
	t.Setenv(gemini.BaseURLEnv, "")
	t.Setenv(gemini.ProjectEnv, "")
	t.Setenv(gemini.LocationEnv, "")
	if _, err := gemini.New(); err == nil || !strings.Contains(err.Error(), "set GEMINI_API_KEY") {
		t.Errorf("no key: %v", err)
	}
	if _, err := gemini.New(gemini.Vertex("", "")); err == nil || !strings.Contains(err.Error(), "set GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION") {
		t.Errorf("vertex: %v", err)
	}
}
