package bedrock_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/bedrock"
	"github.com/orca-agent/orca/llm/llmtest"
)

// event is one message of a ConverseStream answer: an event (messageStart,
// contentBlockDelta, …) or, with exception set, an exception
// (throttlingException, …), and its JSON payload.
type event struct {
	typ       string
	exception bool
	payload   map[string]any
}

// answer is what the fake API answers one request: a response streamed in
// Bedrock's wire format, raw events, or an error as Bedrock sends it.
type answer struct {
	resp   llm.Response
	events []event // the stream's events, when set
	err    error   // one of llm's sentinels: Bedrock's HTTP error for it
	status int     // with code and msg: an HTTP error of Bedrock's
	code   string
	msg    string
	header http.Header // headers of the answer besides Bedrock's own
	// hold, when set, keeps the stream open after its events until it
	// is closed or the request is cancelled.
	hold <-chan struct{}
}

// fakeAPI is an httptest server (HTTPS: the SDK sends an API key over
// nothing else) that speaks Bedrock Runtime's
// ConverseStream: POST /model/{modelId}/converse-stream answered with an
// AWS event stream (application/vnd.amazon.eventstream: each event
// framed by the SDK's own encoder, with the headers Bedrock sends), or
// with an error as Bedrock answers one (the exception's name in
// X-Amzn-ErrorType, {"message": …}). Request n gets answers[n], the
// last one repeating. It keeps what it received.
type fakeAPI struct {
	*httptest.Server
	mu       sync.Mutex
	answers  []answer
	bodies   [][]byte
	models   []string
	requests []*http.Request
}

func newFakeAPI(t *testing.T, answers ...answer) *fakeAPI {
	t.Helper()
	f := &fakeAPI{answers: answers}
	f.Server = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	// The handshakes of connections the client dialled for requests that
	// others served end with the server: nothing to report.
	f.Config.ErrorLog = log.New(io.Discard, "", 0)
	f.StartTLS()
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	model, ok := strings.CutPrefix(r.URL.Path, "/model/")
	model, ok2 := strings.CutSuffix(model, "/converse-stream")
	f.mu.Lock()
	n := len(f.bodies)
	f.bodies = append(f.bodies, body)
	f.models = append(f.models, model)
	f.requests = append(f.requests, r.Clone(r.Context()))
	a := f.answers[min(n, len(f.answers)-1)]
	f.mu.Unlock()
	w.Header().Set("X-Amzn-Requestid", fmt.Sprintf("req-%d", n+1))
	if r.Method != http.MethodPost || !ok || !ok2 {
		writeError(w, http.StatusNotFound, "UnknownOperationException", "no route "+r.Method+" "+r.URL.Path)
		return
	}
	for k, vs := range a.header {
		w.Header()[k] = vs
	}
	switch {
	case a.err != nil:
		status, code, msg := errorFor(a.err)
		writeError(w, status, code, msg)
		return
	case a.status != 0:
		writeError(w, a.status, a.code, a.msg)
		return
	}
	events := a.events
	if events == nil {
		events = eventsOf(a.resp)
	}
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	enc := eventstream.NewEncoder()
	for _, ev := range events {
		if err := enc.Encode(w, frame(ev)); err != nil {
			return
		}
		w.(http.Flusher).Flush()
	}
	if a.hold != nil {
		select {
		case <-a.hold:
		case <-r.Context().Done():
		}
	}
}

// frame is ev as Bedrock frames it: the headers in Bedrock's order, the
// payload JSON with the padding field ("p") Bedrock adds to every event.
func frame(ev event) eventstream.Message {
	payload := map[string]any{"p": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"[:5+len(ev.typ)]}
	for k, v := range ev.payload {
		payload[k] = v
	}
	data, _ := json.Marshal(payload)
	var msg eventstream.Message
	if ev.exception {
		msg.Headers.Set(":exception-type", eventstream.StringValue(ev.typ))
		msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		msg.Headers.Set(":message-type", eventstream.StringValue("exception"))
	} else {
		msg.Headers.Set(":event-type", eventstream.StringValue(ev.typ))
		msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		msg.Headers.Set(":message-type", eventstream.StringValue("event"))
	}
	msg.Payload = data
	return msg
}

// eventsOf streams resp as ConverseStream does: messageStart; per block,
// its deltas (text and tool input in two pieces; a tool use opened by
// contentBlockStart; reasoning's text, then its signature) and
// contentBlockStop; messageStop with the stop reason; the metadata with
// the usage.
func eventsOf(resp llm.Response) []event {
	out := []event{{typ: "messageStart", payload: map[string]any{"role": "assistant"}}}
	delta := func(i int, d map[string]any) {
		out = append(out, event{typ: "contentBlockDelta", payload: map[string]any{"contentBlockIndex": i, "delta": d}})
	}
	for i, b := range resp.Message.Content {
		switch b.Type {
		case llm.BlockText:
			half := len(b.Text) / 2
			delta(i, map[string]any{"text": b.Text[:half]})
			delta(i, map[string]any{"text": b.Text[half:]})
		case llm.BlockToolUse:
			out = append(out, event{typ: "contentBlockStart", payload: map[string]any{"contentBlockIndex": i,
				"start": map[string]any{"toolUse": map[string]any{"toolUseId": b.ID, "name": b.Name}}}})
			half := len(b.Input) / 2
			delta(i, map[string]any{"toolUse": map[string]any{"input": string(b.Input[:half])}})
			delta(i, map[string]any{"toolUse": map[string]any{"input": string(b.Input[half:])}})
		case llm.BlockThinking:
			delta(i, map[string]any{"reasoningContent": map[string]any{"text": b.Thinking}})
			delta(i, map[string]any{"reasoningContent": map[string]any{"signature": b.Signature}})
		case llm.BlockRedactedThinking:
			delta(i, map[string]any{"reasoningContent": map[string]any{"redactedContent": b.Signature}})
		}
		out = append(out, event{typ: "contentBlockStop", payload: map[string]any{"contentBlockIndex": i}})
	}
	stop := string(resp.StopReason)
	if resp.StopReason == llm.StopRefusal {
		stop = "content_filtered"
	}
	u := resp.Usage
	return append(out,
		event{typ: "messageStop", payload: map[string]any{"stopReason": stop}},
		event{typ: "metadata", payload: map[string]any{
			"usage": map[string]any{"inputTokens": u.InputTokens, "outputTokens": u.OutputTokens, "totalTokens": u.Total(),
				"cacheReadInputTokens": u.CacheReadTokens, "cacheWriteInputTokens": u.CacheWriteTokens},
			"metrics": map[string]any{"latencyMs": 321},
		}})
}

// errorFor is Bedrock's answer to a request that fails as err says.
func errorFor(err error) (status int, code, msg string) {
	switch {
	case errors.Is(err, llm.ErrPromptTooLong):
		return 400, "ValidationException", "Input is too long for requested model."
	case errors.Is(err, llm.ErrRateLimited):
		return 429, "ThrottlingException", "Too many requests, please wait before trying again."
	case errors.Is(err, llm.ErrOverloaded):
		return 503, "ServiceUnavailableException", "Bedrock is unable to process your request."
	case errors.Is(err, llm.ErrAuthentication):
		return 403, "UnrecognizedClientException", "The security token included in the request is invalid."
	case errors.Is(err, llm.ErrServer):
		return 500, "InternalServerException", "The system encountered an unexpected error during processing. Try your request again."
	}
	return 400, "ValidationException", "The provided model identifier is invalid."
}

// writeError answers as Bedrock does: the exception's name (and its
// namespace) in X-Amzn-ErrorType, its message in the JSON body.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", code+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

// body returns request n's body, decoded.
func (f *fakeAPI) body(t *testing.T, n int) wireRequest {
	t.Helper()
	f.mu.Lock()
	raw := f.bodies[n]
	f.mu.Unlock()
	var w wireRequest
	if err := json.Unmarshal(raw, &w); err != nil {
		t.Fatalf("request %d's body: %v\n%s", n+1, err, raw)
	}
	w.raw = raw
	return w
}

func (f *fakeAPI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

// wireRequest is a ConverseStream request body, each content block kept
// as its JSON.
type wireRequest struct {
	Messages []struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	} `json:"messages"`
	System     []json.RawMessage `json:"system"`
	ToolConfig *struct {
		Tools []json.RawMessage `json:"tools"`
	} `json:"toolConfig"`
	InferenceConfig struct {
		MaxTokens int `json:"maxTokens"`
	} `json:"inferenceConfig"`
	AdditionalModelRequestFields json.RawMessage `json:"additionalModelRequestFields"`
	raw                          []byte
}

// request decodes w back into orca's form, as far as the conformance
// suite looks: the system prompt, text, tool uses and results, tools.
func (w wireRequest) request(t *testing.T) *llm.Request {
	t.Helper()
	var req llm.Request
	for _, s := range w.System {
		var b struct{ Text string }
		json.Unmarshal(s, &b)
		req.System += b.Text
	}
	for _, m := range w.Messages {
		msg := llm.Message{Role: llm.Role(m.Role)}
		for _, raw := range m.Content {
			var c struct {
				Text    *string
				ToolUse *struct {
					ToolUseID string `json:"toolUseId"`
					Name      string
					Input     json.RawMessage
				}
				ToolResult *struct {
					ToolUseID string `json:"toolUseId"`
					Content   []struct{ Text string }
					Status    string
				}
			}
			if err := json.Unmarshal(raw, &c); err != nil {
				t.Fatalf("a content block: %v: %s", err, raw)
			}
			switch {
			case c.Text != nil:
				msg.Content = append(msg.Content, llm.TextBlock(*c.Text))
			case c.ToolUse != nil:
				msg.Content = append(msg.Content, llm.ToolUseBlock(c.ToolUse.ToolUseID, c.ToolUse.Name, c.ToolUse.Input))
			case c.ToolResult != nil:
				var text string
				for _, p := range c.ToolResult.Content {
					text += p.Text
				}
				msg.Content = append(msg.Content, llm.ToolResultBlock(c.ToolResult.ToolUseID, text, c.ToolResult.Status == "error"))
			}
		}
		req.Messages = append(req.Messages, msg)
	}
	if w.ToolConfig != nil {
		for _, raw := range w.ToolConfig.Tools {
			var tl struct {
				ToolSpec *struct {
					Name, Description string
					InputSchema       struct{ JSON json.RawMessage }
				}
			}
			json.Unmarshal(raw, &tl)
			if s := tl.ToolSpec; s != nil {
				req.Tools = append(req.Tools, llm.ToolDefinition{Name: s.Name, Description: s.Description, InputSchema: s.InputSchema.JSON})
			}
		}
	}
	req.MaxTokens = w.InferenceConfig.MaxTokens
	return &req
}

// awsEnv are the variables through which the AWS SDK could find a
// region, credentials or an endpoint on the machine that runs the tests.
var awsEnv = []string{
	"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
	"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE",
	"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
	"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
	"AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_SDK_LOAD_CONFIG",
}

// isolate keeps the AWS SDK from the machine's AWS configuration: no
// variable of awsEnv, shared configuration files that do not exist, and
// the instance metadata service (the last link of the credential chain)
// off, so that no test ever sends it a request.
func isolate(t *testing.T) {
	t.Helper()
	for _, k := range awsEnv {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// newClient returns a client of api, with a Bedrock API key and a
// region, in an isolated AWS environment.
func newClient(t *testing.T, api *fakeAPI, opts ...bedrock.Option) *bedrock.Client {
	t.Helper()
	isolate(t)
	c, err := bedrock.New(t.Context(), append([]bedrock.Option{
		bedrock.APIKey("test-key"), bedrock.Region("us-east-1"), bedrock.BaseURL(api.URL), bedrock.HTTPClient(api.Client()),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The llm.Client contract, through Bedrock's wire format; the suite also
// sees what reached the wire, decoded back.
func TestConformance(t *testing.T) {
	llmtest.TestClient(t, func(t *testing.T, c llmtest.ClientCase) (llm.Client, func() []*llm.Request) {
		api := newFakeAPI(t, answer{resp: c.Response, err: c.Err})
		return newClient(t, api), func() []*llm.Request {
			var out []*llm.Request
			for i := range api.count() {
				out = append(out, api.body(t, i).request(t))
			}
			return out
		}
	})
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
