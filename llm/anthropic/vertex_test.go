package anthropic_test

import (
	"encoding/json"
	"errors"
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

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/anthropic"
	"github.com/orca-agent/orca/llm/llmtest"
)

// tokenServer is Google's OAuth token endpoint, where the refresh token of
// Application Default Credentials (gcloud auth application-default login)
// is exchanged for an access token: it answers POST /token with token, for
// an hour, or, when refuse is set, with the error Google gives a revoked
// refresh token. It keeps the forms it received.
type tokenServer struct {
	*httptest.Server
	token  string
	refuse bool
	mu     sync.Mutex
	forms  []url.Values
}

func newTokenServer(t *testing.T, token string, refuse bool) *tokenServer {
	t.Helper()
	s := &tokenServer{token: token, refuse: refuse}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		s.mu.Lock()
		s.forms = append(s.forms, r.PostForm)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodPost || r.URL.Path != "/token" || s.refuse {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"invalid_grant","error_description":"Token has been expired or revoked."}`)
			return
		}
		fmt.Fprintf(w, `{"access_token":%q,"expires_in":3599,"scope":"https://www.googleapis.com/auth/cloud-platform","token_type":"Bearer"}`, s.token)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *tokenServer) received() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]url.Values(nil), s.forms...)
}

// signIn writes Application Default Credentials as gcloud auth
// application-default login does (a user's refresh token), whose tokens
// come from ts, and points $GOOGLE_APPLICATION_CREDENTIALS at the file.
func signIn(t *testing.T, ts *tokenServer) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "application_default_credentials.json")
	b, _ := json.Marshal(map[string]string{
		"type": "authorized_user", "client_id": "orca-test.apps.googleusercontent.com", "client_secret": "orca-test-secret",
		"refresh_token": "1//orca-test-refresh", "token_uri": ts.URL + "/token",
	})
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(anthropic.GoogleCredentialsEnv, file)
}

// clearVertexEnv empties the variables Vertex reads, and sets Anthropic's
// own key and token, which Vertex AI must not be sent.
func clearVertexEnv(t *testing.T) {
	t.Helper()
	for _, v := range []string{anthropic.VertexProjectEnv, anthropic.VertexRegionEnv, anthropic.GoogleCloudProjectEnv, anthropic.GoogleCloudLocationEnv} {
		t.Setenv(v, "")
	}
	t.Setenv(anthropic.GoogleCredentialsEnv, filepath.Join(t.TempDir(), "no-credentials.json"))
	t.Setenv(anthropic.APIKeyEnv, "sk-ant-not-for-vertex")
	t.Setenv(anthropic.AuthTokenEnv, "gateway-token-not-for-vertex")
	t.Setenv(anthropic.BaseURLEnv, "")
}

// vertexModels is the path of the models of the project orca-test in
// us-east5.
const vertexModels = "/v1/projects/orca-test/locations/us-east5/publishers/anthropic/models/"

// newVertexAPI is a fake Messages API at Vertex AI's paths for project
// and region.
func newVertexAPI(t *testing.T, project, region string, answers ...answer) *fakeAPI {
	t.Helper()
	models := "/v1/projects/" + project + "/locations/" + region + "/publishers/anthropic/models/"
	return newFakeAPIAt(t, func(path string) bool {
		return strings.HasPrefix(path, models) && strings.HasSuffix(path, ":streamRawPredict")
	}, answers...)
}

// newVertexClient returns a client of Claude on Vertex AI, with the API at
// api, an HTTP client of the test's own and the options given.
func newVertexClient(t *testing.T, api *fakeAPI, opts ...anthropic.Option) *anthropic.Client {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	c, err := anthropic.New(append([]anthropic.Option{anthropic.BaseURL(api.URL), anthropic.HTTPClient(hc)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// On Vertex AI, a streamed answer with a tool call comes back as from
// Anthropic's API; the request went to the model's streamRawPredict, with
// the API version in the body (the SDK's: the one Anthropic's API gets in
// a header) and no model there, signed with the access
// token Application Default Credentials gave — asked for once — and with
// neither of Anthropic's credentials.
func TestVertex(t *testing.T) {
	clearVertexEnv(t)
	tokens := newTokenServer(t, "ya29.orca-test", false)
	signIn(t, tokens)
	want := llm.Response{
		Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.TextBlock("Reading it."),
			llm.ToolUseBlock("toolu_vrtx_01", "Read", json.RawMessage(`{"file_path":"main.go"}`)),
		}},
		StopReason: llm.StopToolUse,
		Usage:      llm.Usage{InputTokens: 120, OutputTokens: 30, CacheReadTokens: 800},
	}
	api := newVertexAPI(t, "orca-test", "us-east5", answer{resp: want})
	c := newVertexClient(t, api, anthropic.Vertex("orca-test", "us-east5"))
	req := userRequest("What is in main.go?")
	req.Model = "claude-sonnet-4-5@20250929"
	req.Tools = []llm.ToolDefinition{{Name: "Read", Description: "Reads a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}}}`)}}
	for i := range 2 {
		var deltas []llm.Delta
		got, err := c.Generate(t.Context(), req, func(d llm.Delta) { deltas = append(deltas, d) })
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if len(got.Message.Content) != 2 || got.Message.Content[1].Name != "Read" || string(got.Message.Content[1].Input) != `{"file_path":"main.go"}` ||
			got.StopReason != llm.StopToolUse || got.Usage != want.Usage {
			t.Fatalf("call %d: response %+v", i, got)
		}
		llmtest.CheckDeltas(t, got, deltas)
	}
	if n := api.requests(); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	if got := api.urls[0].Path; got != vertexModels+"claude-sonnet-4-5@20250929:streamRawPredict" {
		t.Errorf("request to %s", got)
	}
	h := api.headers[0]
	if got := h.Get("Authorization"); got != "Bearer ya29.orca-test" {
		t.Errorf("Authorization: %q", got)
	}
	if h.Get("X-Api-Key") != "" || h.Get("Anthropic-Version") != "" {
		t.Errorf("headers of Anthropic's API sent to Vertex AI: %v", h)
	}
	// The API version Anthropic's API gets in a header, Vertex AI gets in
	// the body.
	first := newFakeAPI(t, answer{resp: textResponse("Hi.")})
	if _, err := newClient(t, first.URL).Generate(t.Context(), userRequest("hi"), nil); err != nil {
		t.Fatal(err)
	}
	version := first.headers[0].Get("Anthropic-Version")
	body := api.body(t, 0)
	if version == "" || body.AnthropicVersion != version || body.Model != "" || !body.Stream || len(body.Tools) != 1 || body.Tools[0].Name != "Read" {
		t.Errorf("request body %+v (Anthropic's API version %q)", body, version)
	}
	forms := tokens.received()
	if len(forms) != 1 || forms[0].Get("grant_type") != "refresh_token" || forms[0].Get("refresh_token") != "1//orca-test-refresh" {
		t.Errorf("token requests: %v", forms)
	}
}

// Vertex("", "") takes the project and the region from the environment,
// Claude Code's variables over Google's; the default model is
// DefaultModel, which Vertex AI spells the same.
func TestVertexFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name            string
		env             map[string]string
		project, region string
	}{
		{"Google", map[string]string{anthropic.GoogleCloudProjectEnv: "gemini-project", anthropic.GoogleCloudLocationEnv: "us-central1"}, "gemini-project", "us-central1"},
		{"ClaudeCodeWins", map[string]string{anthropic.GoogleCloudProjectEnv: "gemini-project", anthropic.GoogleCloudLocationEnv: "us-central1",
			anthropic.VertexProjectEnv: "claude-project", anthropic.VertexRegionEnv: "global"}, "claude-project", "global"},
		{"Mixed", map[string]string{anthropic.GoogleCloudProjectEnv: "gemini-project", anthropic.VertexRegionEnv: "europe-west1"}, "gemini-project", "europe-west1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearVertexEnv(t)
			signIn(t, newTokenServer(t, "ya29.orca-test", false))
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			api := newVertexAPI(t, tc.project, tc.region, answer{resp: textResponse("Hi.")})
			if _, err := newVertexClient(t, api, anthropic.Vertex("", "")).Generate(t.Context(), userRequest("hi"), nil); err != nil {
				t.Fatal(err)
			}
			want := "/v1/projects/" + tc.project + "/locations/" + tc.region + "/publishers/anthropic/models/" + anthropic.DefaultModel + ":streamRawPredict"
			if got := api.urls[0].Path; got != want {
				t.Errorf("request to %s, want %s", got, want)
			}
		})
	}
}

// Without a project, a region or credentials New says what to set (and
// Anthropic's key in the environment does not stand in for them); an API
// key given with Vertex is an error.
func TestVertexNeeds(t *testing.T) {
	clearVertexEnv(t)
	for _, tc := range []struct {
		name string
		env  map[string]string
		opts []anthropic.Option
		want []string
	}{
		{"Nothing", nil, nil, []string{"ANTHROPIC_VERTEX_PROJECT_ID", "GOOGLE_CLOUD_PROJECT", "CLOUD_ML_REGION", "GOOGLE_CLOUD_LOCATION"}},
		{"NoRegion", map[string]string{anthropic.VertexProjectEnv: "p"}, nil, []string{"CLOUD_ML_REGION", "GOOGLE_CLOUD_LOCATION"}},
		{"NoCredentials", map[string]string{anthropic.VertexProjectEnv: "p", anthropic.VertexRegionEnv: "us-east5"}, nil,
			[]string{"gcloud auth application-default login", "GOOGLE_APPLICATION_CREDENTIALS", "no-credentials.json"}},
		{"APIKey", map[string]string{anthropic.VertexProjectEnv: "p", anthropic.VertexRegionEnv: "us-east5"}, []anthropic.Option{anthropic.APIKey("sk-ant-x")},
			[]string{"takes no API key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			c, err := anthropic.New(append([]anthropic.Option{anthropic.Vertex("", "")}, tc.opts...)...)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("New = %v, %v: want an error naming %s", c, err, w)
				}
			}
		})
	}
}

// Credentials Google no longer takes fail the call as an authentication
// error, which another try would not mend, saying how to sign in again;
// nothing reaches the API.
func TestVertexTokenRefused(t *testing.T) {
	clearVertexEnv(t)
	signIn(t, newTokenServer(t, "", true))
	api := newVertexAPI(t, "orca-test", "us-east5", answer{resp: textResponse("never")})
	_, err := newVertexClient(t, api, anthropic.Vertex("orca-test", "us-east5")).Generate(t.Context(), userRequest("hi"), nil)
	if !errors.Is(err, llm.ErrAuthentication) || llm.Retryable(err) || !strings.Contains(err.Error(), "gcloud auth application-default login") ||
		!strings.Contains(err.Error(), "invalid_grant") {
		t.Errorf("error %v, want an authentication error saying how to sign in", err)
	}
	if n := api.requests(); n != 0 {
		t.Errorf("%d requests reached the API", n)
	}
}

func TestVertexConformance(t *testing.T) {
	clearVertexEnv(t)
	signIn(t, newTokenServer(t, "ya29.orca-test", false))
	llmtest.TestClient(t, func(t *testing.T, c llmtest.ClientCase) (llm.Client, func() []*llm.Request) {
		api := newVertexAPI(t, "orca-test", "us-east5", answer{resp: c.Response, err: c.Err})
		return newVertexClient(t, api, anthropic.Vertex("orca-test", "us-east5")), api.seen
	})
}
