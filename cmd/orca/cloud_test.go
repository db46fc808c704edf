package main

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/orca-agent/orca/llm/bedrock"
	"github.com/orca-agent/orca/llm/gemini"
	"github.com/orca-agent/orca/llm/llmtest"
)

// bedrockEvent is one event of a ConverseStream answer and its payload.
type bedrockEvent struct {
	typ     string
	payload map[string]any
}

// fakeBedrock is Bedrock Runtime's ConverseStream on loopback: POST
// /model/{modelId}/converse-stream answered with an AWS event stream
// (application/vnd.amazon.eventstream, framed by the SDK's own encoder)
// — request n gets answers[n]. It keeps the requests.
type fakeBedrock struct {
	*httptest.Server
	answers [][]bedrockEvent

	mu   sync.Mutex
	seen []frontRequest
}

func newFakeBedrock(t *testing.T, answers ...[]bedrockEvent) *fakeBedrock {
	f := &fakeBedrock{answers: answers}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		json.Unmarshal(raw, &body)
		f.mu.Lock()
		n := len(f.seen)
		f.seen = append(f.seen, frontRequest{url: r.URL, header: r.Header.Clone(), body: body})
		f.mu.Unlock()
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/converse-stream") || n >= len(f.answers) {
			w.Header().Set("X-Amzn-ErrorType", "UnknownOperationException")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"message":"no such operation"}`)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		w.WriteHeader(http.StatusOK)
		enc := eventstream.NewEncoder()
		for _, ev := range f.answers[n] {
			data, _ := json.Marshal(ev.payload)
			var msg eventstream.Message
			msg.Headers.Set(":event-type", eventstream.StringValue(ev.typ))
			msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
			msg.Headers.Set(":message-type", eventstream.StringValue("event"))
			msg.Payload = data
			enc.Encode(w, msg)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeBedrock) requests() []frontRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]frontRequest(nil), f.seen...)
}

// converse is a ConverseStream answer of blocks (text, or a tool use
// when tool is set) that stops for stop.
func converse(stop, text, tool, input string) []bedrockEvent {
	evs := []bedrockEvent{{"messageStart", map[string]any{"role": "assistant"}}}
	if tool != "" {
		evs = append(evs,
			bedrockEvent{"contentBlockStart", map[string]any{"contentBlockIndex": 0, "start": map[string]any{"toolUse": map[string]any{"toolUseId": "tooluse_1", "name": tool}}}},
			bedrockEvent{"contentBlockDelta", map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"toolUse": map[string]any{"input": input}}}})
	} else {
		evs = append(evs, bedrockEvent{"contentBlockDelta", map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"text": text}}})
	}
	return append(evs,
		bedrockEvent{"contentBlockStop", map[string]any{"contentBlockIndex": 0}},
		bedrockEvent{"messageStop", map[string]any{"stopReason": stop}},
		bedrockEvent{"metadata", map[string]any{"usage": map[string]any{"inputTokens": 120, "outputTokens": 12, "totalTokens": 132}, "metrics": map[string]any{"latencyMs": 40}}})
}

// orca run --provider bedrock talks to Bedrock's ConverseStream with the
// AWS credentials of the environment, requests signed (SigV4) for the
// region: the model reads a file and answers.
func TestRunBedrock(t *testing.T) {
	for k, v := range map[string]string{"AWS_REGION": "eu-west-3", "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "", bedrock.AccessKeyIDEnv: "AKIDORCATEST",
		bedrock.SecretAccessKeyEnv: "not-a-secret", "AWS_SESSION_TOKEN": "", "AWS_BEARER_TOKEN_BEDROCK": "", "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONFIG_FILE": "/nonexistent/config", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials"} {
		t.Setenv(k, v)
	}
	api := newFakeBedrock(t, converse("tool_use", "", "Read", `{"file_path":"notes.txt"}`), converse("end_turn", "The notes say hello from Bedrock.", "", ""))
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello from the notes\n"), 0o644)
	o := options{configDir: t.TempDir(), getenv: noEnv}
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "bedrock", "--base-url", api.URL, "-w", dir, "--json", "What do the notes say?")
	reqs := api.requests()
	if code != 0 || !strings.Contains(stdout, "The notes say hello from Bedrock.") || len(reqs) != 2 {
		t.Fatalf("exit %d, %d requests\nstdout:\n%s\nstderr:\n%s", code, len(reqs), stdout, stderr)
	}
	for i, r := range reqs {
		if r.url.Path != "/model/"+url.PathEscape(bedrock.DefaultModel)+"/converse-stream" && r.url.Path != "/model/"+bedrock.DefaultModel+"/converse-stream" ||
			!strings.HasPrefix(r.header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDORCATEST/") || !strings.Contains(r.header.Get("Authorization"), "/eu-west-3/bedrock/aws4_request") {
			t.Errorf("request %d: %s, Authorization %q", i, r.url.Path, r.header.Get("Authorization"))
		}
	}
	if b, _ := json.Marshal(reqs[1].body["messages"]); !strings.Contains(string(b), "hello from the notes") || !strings.Contains(string(b), `"toolUseId":"tooluse_1"`) {
		t.Errorf("the second request lacks the tool's result: %s", b)
	}
}

// orca run --provider vertex talks to Gemini on Vertex AI in the
// project and region of the environment, with Application Default
// Credentials (a token from the credentials' token endpoint): against a
// replay of a real recorded Gemini exchange behind Vertex's path.
func TestRunVertex(t *testing.T) {
	replay := llmtest.NewReplay(t, llmtest.Recorded(t, "TestGoogleCommon/gemini-2.5-flash/simple_streaming.yaml"))
	const project, region, model = "orca-test", "europe-west4", "gemini-2.5-flash"
	vertexPath := "/v1beta1/projects/" + project + "/locations/" + region + "/publishers/google/models/" + model + ":streamGenerateContent"
	var mu sync.Mutex
	var seen []frontRequest
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/token" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"access_token":"ya29.orca-vertex","expires_in":3599,"token_type":"Bearer"}`)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, frontRequest{url: r.URL, header: r.Header.Clone()})
		mu.Unlock()
		if !strings.HasSuffix(r.URL.Path, "/publishers/google/models/"+model+":streamGenerateContent") {
			http.NotFound(w, r)
			return
		}
		// The Gemini API's path, which the recording has.
		resp, err := http.Post(replay.URL+"/v1beta/models/"+model+":streamGenerateContent?alt=sse", "application/json", bytes.NewReader(raw))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(front.Close)
	// A service account's key (the SDK's auth library sends a user's
	// refresh token to Google's own token endpoint whatever the file
	// says; a service account's goes to its token_uri).
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	sa, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": project, "private_key_id": "k1",
		"private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), "client_email": "orca@orca-test.iam.gserviceaccount.com",
		"client_id": "1", "token_uri": front.URL + "/token"})
	adc := filepath.Join(t.TempDir(), "service-account.json")
	os.WriteFile(adc, sa, 0o600)
	for k, v := range map[string]string{gemini.ProjectEnv: project, gemini.LocationEnv: region, "GOOGLE_APPLICATION_CREDENTIALS": adc,
		gemini.APIKeyEnv: "", gemini.GoogleAPIKeyEnv: "", gemini.BaseURLEnv: "", "GOOGLE_GENAI_USE_VERTEXAI": ""} {
		t.Setenv(k, v)
	}
	o := options{configDir: t.TempDir(), getenv: noEnv}
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "vertex", "--base-url", front.URL, "--model", model,
		"-w", t.TempDir(), "--json", "Say hi in Portuguese")
	mu.Lock()
	defer mu.Unlock()
	if code != 0 || !strings.Contains(stdout, `"text":"Olá!"`) || len(seen) != 1 {
		t.Fatalf("exit %d, requests %v\nstdout:\n%s\nstderr:\n%s", code, seen, stdout, stderr)
	}
	if seen[0].url.Path != vertexPath || seen[0].header.Get("Authorization") != "Bearer ya29.orca-vertex" {
		t.Errorf("request: %s, Authorization %q", seen[0].url, seen[0].header.Get("Authorization"))
	}
}
