package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/llm/anthropic"
	"github.com/orca-agent/orca/llm/gemini"
	"github.com/orca-agent/orca/llm/llmtest"
	"github.com/orca-agent/orca/llm/openai"
)

// orca run --provider gemini talks to the Gemini API: against a replay of
// a real recorded exchange (charm.land/fantasy's, see
// llmtest.RecordingsEnv) it prints the recorded answer and prices it; with
// no key it is a usage error naming the variable to set, and so is
// --provider vertex without a project.
func TestRunGemini(t *testing.T) {
	for _, v := range []string{gemini.APIKeyEnv, gemini.GoogleAPIKeyEnv, gemini.BaseURLEnv, gemini.ProjectEnv, gemini.LocationEnv} {
		t.Setenv(v, "")
	}
	o := options{configDir: t.TempDir(), getenv: noEnv}
	_, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "gemini", "-w", t.TempDir(), "hi")
	if code != exitUsage || !strings.Contains(stderr, "set GEMINI_API_KEY") {
		t.Errorf("no key: exit %d\n%s", code, stderr)
	}
	_, stderr, code = orcaWith(t, t.Context(), o, "", "run", "--provider", "vertex", "-w", t.TempDir(), "hi")
	if code != exitUsage || !strings.Contains(stderr, "GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION") {
		t.Errorf("vertex: exit %d\n%s", code, stderr)
	}

	replay := llmtest.NewReplay(t, llmtest.Recorded(t, "TestGoogleCommon/gemini-2.5-flash/simple_streaming.yaml"))
	t.Setenv(gemini.APIKeyEnv, "test-key")
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "gemini", "--base-url", replay.URL, "--model", "gemini-2.5-flash",
		"-w", t.TempDir(), "--json", "Say hi in Portuguese")
	if code != 0 || !strings.Contains(stdout, `"text":"Olá!"`) || !strings.Contains(stdout, `"stop_reason":"end_turn"`) {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if b := replay.Bodies(); len(b) != 1 || !strings.Contains(string(b[0]), `"text":"Say hi in Portuguese"`) {
		t.Errorf("requests: %q", b)
	}
}

// orca run --provider openai-responses talks to OpenAI's Responses API:
// against a replay of a real recorded exchange it prints the recorded
// answer; with no key it is a usage error naming the variable.
func TestRunOpenAIResponses(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	o := options{configDir: t.TempDir(), getenv: noEnv}
	_, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "openai-responses", "-w", t.TempDir(), "hi")
	if code != exitUsage || !strings.Contains(stderr, "OPENAI_API_KEY") {
		t.Errorf("no key: exit %d\n%s", code, stderr)
	}
	replay := llmtest.NewReplay(t, llmtest.Recorded(t, "TestOpenAIResponsesCommon/openai-gpt-4o-mini/simple_streaming.yaml"))
	t.Setenv("OPENAI_API_KEY", "sk-test")
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "openai-responses", "--base-url", replay.URL+"/v1", "--model", "gpt-4o-mini",
		"-w", t.TempDir(), "--json", "Say hi in Portuguese")
	if code != 0 || !strings.Contains(stdout, `Oi!`) || !strings.Contains(stdout, `"stop_reason":"end_turn"`) {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if b := replay.Bodies(); len(b) != 1 || !strings.Contains(string(b[0]), `"store":false`) || !strings.Contains(string(b[0]), "Say hi in Portuguese") {
		t.Errorf("requests: %q", b)
	}
}

// --fallback-model: a primary (Anthropic) that is rate limited on every
// try falls over to OpenAI's gpt-6.1-terra, which answers; the events
// name the model that served the call, and the cost is its price.
func TestRunFallbackModel(t *testing.T) {
	t.Setenv(anthropic.APIKeyEnv, "sk-ant-test")
	t.Setenv(anthropic.BaseURLEnv, "")
	primary := newFakeModelAPI(t, true, reply{rateLimited: true})
	second := newFakeModelAPI(t, false, reply{text: "Answered by the fallback."})
	t.Setenv(openai.APIKeyEnv, "sk-test")
	t.Setenv(openai.BaseURLEnv, second.URL+"/v1")
	o := options{configDir: t.TempDir(), getenv: noEnv}
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "anthropic", "--base-url", primary.URL, "--model", "claude-opus-5-5",
		"--fallback-model", "openai:gpt-6.1-terra", "-w", t.TempDir(), "--json", "hi")
	if code != 0 || !strings.Contains(stdout, "Answered by the fallback.") || !strings.Contains(stdout, `"name":"llm_call_completed"`) ||
		!strings.Contains(stdout, `"model":"gpt-6.1-terra"`) || len(primary.seen()) != 3 || len(second.seen()) != 1 {
		t.Fatalf("exit %d, primary %d requests, fallback %d\nstdout:\n%s\nstderr:\n%s", code, len(primary.seen()), len(second.seen()), stdout, stderr)
	}
	if m, _ := second.seen()[0].body["model"].(string); m != "gpt-6.1-terra" {
		t.Errorf("the fallback was asked for %q", m)
	}
	_, stderr, code = orcaWith(t, t.Context(), o, "", "run", "--provider", "anthropic", "--base-url", primary.URL, "--fallback-model", "nope:m", "-w", t.TempDir(), "hi")
	if code != exitUsage || !strings.Contains(stderr, `fallback model "nope:m": unknown provider "nope"`) {
		t.Errorf("unknown provider: exit %d\n%s", code, stderr)
	}
}

// orca run --provider bedrock without a region, or without credentials,
// is a usage error naming what to set (and asks no metadata service).
func TestRunBedrockNeeds(t *testing.T) {
	for k, v := range map[string]string{"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "", "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
		"AWS_SESSION_TOKEN": "", "AWS_BEARER_TOKEN_BEDROCK": "", "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONFIG_FILE": "/nonexistent/config", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials"} {
		t.Setenv(k, v)
	}
	o := options{configDir: t.TempDir(), getenv: noEnv}
	_, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "bedrock", "-w", t.TempDir(), "hi")
	if code != exitUsage || !strings.Contains(stderr, "set AWS_REGION") {
		t.Errorf("no region: exit %d\n%s", code, stderr)
	}
	t.Setenv("AWS_REGION", "us-east-1")
	_, stderr, code = orcaWith(t, t.Context(), o, "", "run", "--provider", "bedrock", "-w", t.TempDir(), "hi")
	if code != exitUsage || !strings.Contains(stderr, "AWS_ACCESS_KEY_ID") || !strings.Contains(stderr, "AWS_BEARER_TOKEN_BEDROCK") {
		t.Errorf("no credentials: exit %d\n%s", code, stderr)
	}
}

// frontRequest is one request a front of a fake model API received.
type frontRequest struct {
	url    *url.URL
	header http.Header
	body   map[string]any
}

// newFront is a fake of a cloud's route to a model API: the requests
// whose path route takes, it keeps and passes on to api at path (the
// route of api's own API); the others get a 404. POST /token, when token
// is set, is Google's token endpoint, giving token.
func newFront(t *testing.T, api *fakeModelAPI, path string, route func(p string) bool, token string) (*httptest.Server, func() []frontRequest) {
	t.Helper()
	var mu sync.Mutex
	var seen []frontRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && r.Method == http.MethodPost && r.URL.Path == "/token" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"access_token":%q,"expires_in":3599,"token_type":"Bearer"}`, token)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		json.Unmarshal(raw, &body)
		mu.Lock()
		seen = append(seen, frontRequest{url: r.URL, header: r.Header.Clone(), body: body})
		mu.Unlock()
		if !route(r.URL.Path) {
			http.NotFound(w, r)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path, r2.URL.RawPath = path, ""
		r2.Body = io.NopCloser(bytes.NewReader(raw))
		api.serve(w, r2)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []frontRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]frontRequest(nil), seen...)
	}
}

// orca run --provider azure talks to the Azure OpenAI deployment --model
// names, at $AZURE_OPENAI_ENDPOINT with $AZURE_OPENAI_API_KEY (OpenAI's
// key is not sent): the model reads a file and answers. Without a
// deployment, or without Azure's endpoint and key, it is a usage error
// naming what to set.
func TestRunAzure(t *testing.T) {
	for _, v := range []string{openai.AzureAPIKeyEnv, openai.AzureEndpointEnv, openai.AzureAPIVersionEnv, openai.BaseURLEnv} {
		t.Setenv(v, "")
	}
	t.Setenv(openai.APIKeyEnv, "sk-not-for-azure")
	o := options{configDir: t.TempDir(), getenv: noEnv}
	_, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "azure", "-w", t.TempDir(), "hi")
	if code != exitUsage || !strings.Contains(stderr, "deployment") || !strings.Contains(stderr, "--model") || !strings.Contains(stderr, "ORCA_MODEL") {
		t.Errorf("no deployment: exit %d\n%s", code, stderr)
	}
	_, stderr, code = orcaWith(t, t.Context(), o, "", "run", "--provider", "azure", "--model", "my-gpt", "-w", t.TempDir(), "hi")
	if code != exitUsage || !strings.Contains(stderr, "AZURE_OPENAI_ENDPOINT") || !strings.Contains(stderr, "AZURE_OPENAI_API_KEY") {
		t.Errorf("no endpoint or key: exit %d\n%s", code, stderr)
	}

	api := newFakeModelAPI(t, false, reply{tool: "Read", input: `{"file_path":"notes.txt"}`}, reply{text: "The notes say hello from Azure."})
	front, seen := newFront(t, api, "/v1/chat/completions", func(p string) bool { return p == "/openai/deployments/my-gpt/chat/completions" }, "")
	t.Setenv(openai.AzureEndpointEnv, front.URL)
	t.Setenv(openai.AzureAPIKeyEnv, "azure-key")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello from the notes\n"), 0o644)
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "azure", "--model", "my-gpt", "-w", dir, "--json", "What do the notes say?")
	reqs := seen()
	if code != 0 || !strings.Contains(stdout, "The notes say hello from Azure.") || len(reqs) != 2 {
		t.Fatalf("exit %d, %d requests\nstdout:\n%s\nstderr:\n%s", code, len(reqs), stdout, stderr)
	}
	for i, r := range reqs {
		if r.url.Path != "/openai/deployments/my-gpt/chat/completions" || r.url.Query().Get("api-version") != openai.DefaultAzureAPIVersion ||
			r.header.Get("Api-Key") != "azure-key" || r.header.Get("Authorization") != "" || r.body["model"] != "my-gpt" {
			t.Errorf("request %d: %s, api-key %q, Authorization %q, model %v", i, r.url, r.header.Get("Api-Key"), r.header.Get("Authorization"), r.body["model"])
		}
	}
	if b, _ := json.Marshal(reqs[1].body["messages"]); !strings.Contains(string(b), "hello from the notes") {
		t.Errorf("the second request lacks the file's content: %s", b)
	}
}

// orca run --provider anthropic-vertex talks to Claude on Vertex AI, in
// the project and region of Claude Code's variables, signed with the
// access token of Application Default Credentials (Anthropic's key is not
// sent): the model, Claude's default as Vertex AI spells it, reads a file
// and answers. Without a project and a region, or without credentials, it
// is a usage error naming what to set.
func TestRunAnthropicVertex(t *testing.T) {
	for _, v := range []string{anthropic.VertexProjectEnv, anthropic.VertexRegionEnv, anthropic.GoogleCloudProjectEnv, anthropic.GoogleCloudLocationEnv,
		anthropic.BaseURLEnv, anthropic.AuthTokenEnv} {
		t.Setenv(v, "")
	}
	t.Setenv(anthropic.APIKeyEnv, "sk-ant-not-for-vertex")
	t.Setenv(anthropic.GoogleCredentialsEnv, filepath.Join(t.TempDir(), "no-credentials.json"))
	o := options{configDir: t.TempDir(), getenv: noEnv}
	_, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "anthropic-vertex", "-w", t.TempDir(), "hi")
	if code != exitUsage || !strings.Contains(stderr, "ANTHROPIC_VERTEX_PROJECT_ID") || !strings.Contains(stderr, "CLOUD_ML_REGION") {
		t.Errorf("no project: exit %d\n%s", code, stderr)
	}
	t.Setenv(anthropic.VertexProjectEnv, "orca-test")
	t.Setenv(anthropic.VertexRegionEnv, "us-east5")
	t.Setenv(anthropic.GoogleCloudProjectEnv, "not-this-project")
	_, stderr, code = orcaWith(t, t.Context(), o, "", "run", "--provider", "anthropic-vertex", "-w", t.TempDir(), "hi")
	if code != exitUsage || !strings.Contains(stderr, "gcloud auth application-default login") || !strings.Contains(stderr, "GOOGLE_APPLICATION_CREDENTIALS") {
		t.Errorf("no credentials: exit %d\n%s", code, stderr)
	}

	api := newFakeModelAPI(t, true, reply{tool: "Read", input: `{"file_path":"notes.txt"}`}, reply{text: "The notes say hello from Vertex."})
	models := "/v1/projects/orca-test/locations/us-east5/publishers/anthropic/models/"
	front, seen := newFront(t, api, "/v1/messages", func(p string) bool {
		return strings.HasPrefix(p, models) && strings.HasSuffix(p, ":streamRawPredict")
	}, "ya29.orca-cli")
	adc := filepath.Join(t.TempDir(), "application_default_credentials.json")
	os.WriteFile(adc, []byte(`{"type":"authorized_user","client_id":"c","client_secret":"s","refresh_token":"1//r","token_uri":"`+front.URL+`/token"}`), 0o600)
	t.Setenv(anthropic.GoogleCredentialsEnv, adc)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello from the notes\n"), 0o644)
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "anthropic-vertex", "--base-url", front.URL, "-w", dir, "--json", "What do the notes say?")
	reqs := seen()
	if code != 0 || !strings.Contains(stdout, "The notes say hello from Vertex.") || len(reqs) != 2 {
		t.Fatalf("exit %d, %d requests\nstdout:\n%s\nstderr:\n%s", code, len(reqs), stdout, stderr)
	}
	for i, r := range reqs {
		if r.url.Path != models+anthropic.DefaultModel+":streamRawPredict" || r.header.Get("Authorization") != "Bearer ya29.orca-cli" ||
			r.header.Get("X-Api-Key") != "" || r.body["model"] != nil || r.body["anthropic_version"] == nil {
			t.Errorf("request %d: %s, Authorization %q, X-Api-Key %q, model %v, anthropic_version %v", i, r.url, r.header.Get("Authorization"),
				r.header.Get("X-Api-Key"), r.body["model"], r.body["anthropic_version"])
		}
	}
	if b, _ := json.Marshal(reqs[1].body["messages"]); !strings.Contains(string(b), "hello from the notes") {
		t.Errorf("the second request lacks the file's content: %s", b)
	}
}
