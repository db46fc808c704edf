package provider_test

import (
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/anthropic"
	"github.com/orca-agent/orca/llm/gemini"
	"github.com/orca-agent/orca/llm/openai"
	"github.com/orca-agent/orca/llm/provider"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestResolve(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	for _, tc := range []struct {
		name                 string
		flags, project, user provider.Config
		env                  map[string]string
		want                 provider.Config
	}{
		{
			name: "Nothing",
			want: provider.Config{},
		},
		{
			name: "EnvironmentOnly",
			env:  map[string]string{"ORCA_PROVIDER": "openai", "ORCA_MODEL": "gpt-6-luna"},
			want: provider.Config{Provider: "openai", Model: "gpt-6-luna"},
		},
		{
			name: "DefaultModel",
			user: provider.Config{Provider: "anthropic"},
			want: provider.Config{Provider: "anthropic", Model: anthropic.DefaultModel},
		},
		{
			name:    "FlagsWin",
			flags:   provider.Config{Model: "claude-opus-5-5"},
			project: provider.Config{Provider: "anthropic", Model: "claude-haiku-5-5", BaseURL: "https://gateway.example.com"},
			user:    provider.Config{Provider: "anthropic", Model: "claude-sonnet-5", MaxTokens: 4000},
			env:     map[string]string{"ORCA_PROVIDER": "openai", "ORCA_MODEL": "gpt-6-sol"},
			want:    provider.Config{Provider: "anthropic", Model: "claude-opus-5-5", BaseURL: "https://gateway.example.com", MaxTokens: 4000},
		},
		{
			name:    "ProjectOverUser",
			project: provider.Config{Model: "claude-haiku-5-5"},
			user:    provider.Config{Provider: "anthropic", Model: "claude-sonnet-5"},
			want:    provider.Config{Provider: "anthropic", Model: "claude-haiku-5-5"},
		},
		{
			// The user's OpenAI model and local server are not the
			// project's Anthropic's.
			name:    "OtherProvidersSettingsIgnored",
			project: provider.Config{Provider: "anthropic"},
			user:    provider.Config{Provider: "openai", Model: "llama3.2", BaseURL: "http://localhost:11434/v1"},
			env:     map[string]string{"ORCA_MODEL": "claude-opus-5-5"},
			want:    provider.Config{Provider: "anthropic", Model: "claude-opus-5-5"},
		},
		{
			name:  "FlagProviderOverridesSettings",
			flags: provider.Config{Provider: "openai"},
			user:  provider.Config{Provider: "anthropic", Model: "claude-opus-5-5"},
			want:  provider.Config{Provider: "openai", Model: openai.DefaultModel},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := provider.Resolve(tc.flags, tc.project, tc.user, env(tc.env)); got != tc.want {
				t.Errorf("Resolve = %+v\nwant     %+v", got, tc.want)
			}
		})
	}
	if got := provider.Resolve(provider.Config{Provider: "openai"}, provider.Config{}, provider.Config{}, nil); got.Model != openai.DefaultModel {
		t.Errorf("nil env: %+v", got)
	}
}

// Every provider has a default model but Azure, whose models are the
// user's deployments; Claude's on Vertex AI is Anthropic's (the current
// models have the same ids there).
func TestDefaultModel(t *testing.T) {
	for _, name := range provider.Names() {
		if got := provider.DefaultModel(name); (got == "") != (name == provider.Azure) {
			t.Errorf("provider %s: default model %q", name, got)
		}
	}
	if got := provider.DefaultModel(provider.AnthropicVertex); got != anthropic.DefaultModel {
		t.Errorf("anthropic-vertex: default model %q, want %q", got, anthropic.DefaultModel)
	}
	if provider.DefaultModel("script") != "" {
		t.Error("a default model for an unknown provider")
	}
	if got := provider.Resolve(provider.Config{Provider: provider.Azure}, provider.Config{}, provider.Config{}, nil); got.Model != "" {
		t.Errorf("azure resolved to the model %q, which nobody named", got.Model)
	}
}

func TestNewErrors(t *testing.T) {
	t.Setenv(anthropic.APIKeyEnv, "")
	t.Setenv(openai.APIKeyEnv, "")
	t.Setenv(openai.BaseURLEnv, "")
	for _, v := range []string{gemini.APIKeyEnv, gemini.GoogleAPIKeyEnv, gemini.BaseURLEnv, gemini.ProjectEnv, gemini.LocationEnv,
		anthropic.VertexProjectEnv, anthropic.VertexRegionEnv, openai.AzureAPIKeyEnv, openai.AzureEndpointEnv} {
		t.Setenv(v, "")
	}
	names := "anthropic, anthropic-vertex, openai, openai-responses, azure, gemini, vertex, bedrock"
	for cfg, want := range map[provider.Config][]string{
		{Provider: "mistral"}:                {`"mistral"`, names},
		{}:                                   {names},
		{Provider: "anthropic"}:              {"ANTHROPIC_API_KEY"},
		{Provider: "openai"}:                 {"OPENAI_API_KEY"},
		{Provider: "gemini"}:                 {"GEMINI_API_KEY"},
		{Provider: "openai-responses"}:       {"OPENAI_API_KEY"},
		{Provider: "vertex"}:                 {"GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION"},
		{Provider: "anthropic-vertex"}:       {"ANTHROPIC_VERTEX_PROJECT_ID", "GOOGLE_CLOUD_PROJECT", "CLOUD_ML_REGION", "GOOGLE_CLOUD_LOCATION"},
		{Provider: "azure"}:                  {"deployment", "--model", "ORCA_MODEL"},
		{Provider: "azure", Model: "my-gpt"}: {"AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY"},
		{Provider: "azure", APIKey: "k"}:     {"--model", "ORCA_MODEL"},
		{Provider: "azure", BaseURL: "https://r.openai.azure.com", Model: "my-gpt"}: {"AZURE_OPENAI_API_KEY"},
	} {
		_, err := provider.New(cfg)
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("New(%+v) = %v, want an error saying %s", cfg, err, w)
			}
		}
	}
}

// New gives the client the configuration's key, base URL and model: the
// request reaches the server at the base URL, for the model, with the key
// — or, on Vertex AI, with the access token of Application Default
// Credentials, the model in the path.
func TestNewWiring(t *testing.T) {
	for _, tc := range []struct {
		provider, base, path, header, credential, model string
	}{
		// Anthropic's base URL has no /v1 (the SDK adds it); OpenAI's has.
		{provider.Anthropic, "", "/v1/messages", "Authorization", "Bearer sk-conf", "m-1"},
		{provider.OpenAI, "/v1", "/v1/chat/completions", "Authorization", "Bearer sk-conf", "m-1"},
		// Azure's base URL is the resource's endpoint.
		{provider.Azure, "", "/openai/deployments/m-1/chat/completions", "Api-Key", "sk-conf", "m-1"},
		{provider.AnthropicVertex, "", "/v1/projects/p-1/locations/r-1/publishers/anthropic/models/m-1:streamRawPredict", "Authorization", "Bearer ya29.conf", ""},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			var mu sync.Mutex
			var path, credential, model string
			var maxTokens int
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if r.URL.Path == "/token" {
					// Google's token endpoint, for Vertex AI.
					io.WriteString(w, `{"access_token":"ya29.conf","expires_in":3599,"token_type":"Bearer"}`)
					return
				}
				var body struct {
					Model               string `json:"model"`
					MaxTokens           int    `json:"max_tokens"`
					MaxCompletionTokens int    `json:"max_completion_tokens"`
				}
				b, _ := io.ReadAll(r.Body)
				json.Unmarshal(b, &body)
				mu.Lock()
				path, credential, model, maxTokens = r.URL.Path, r.Header.Get(tc.header), body.Model, body.MaxTokens+body.MaxCompletionTokens
				mu.Unlock()
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid key"}}`)
			}))
			defer srv.Close()
			cfg := provider.Config{Provider: tc.provider, Model: "m-1", BaseURL: srv.URL + tc.base, APIKey: "sk-conf", MaxTokens: 321}
			if tc.provider == provider.AnthropicVertex {
				cfg.APIKey = ""
				t.Setenv(anthropic.VertexProjectEnv, "p-1")
				t.Setenv(anthropic.VertexRegionEnv, "r-1")
				adc := filepath.Join(t.TempDir(), "adc.json")
				os.WriteFile(adc, []byte(`{"type":"authorized_user","client_id":"c","client_secret":"s","refresh_token":"r","token_uri":"`+srv.URL+`/token"}`), 0o600)
				t.Setenv(anthropic.GoogleCredentialsEnv, adc)
			}
			c, err := provider.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Generate(t.Context(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("hi")}}}}, nil)
			if !errors.Is(err, llm.ErrAuthentication) {
				t.Errorf("error %v, want an authentication error", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if path != tc.path || credential != tc.credential || model != tc.model || maxTokens != 321 {
				t.Errorf("request to %s, %s %q, model %q, max tokens %d", path, tc.header, credential, model, maxTokens)
			}
		})
	}
}

// Each provider's table says what Claude Code's aliases stand for; the
// user's overrides win over Claude Code's variables, which win over
// Anthropic's table (on Anthropic's API and on Vertex AI); OpenAI's table
// is for OpenAI's own API only; Azure and other providers have none.
func TestModelAliases(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	claude := map[string]string{"sonnet": "claude-sonnet-5-5", "opus": "claude-opus-5-5", "haiku": "claude-haiku-5-5"}
	gpt := map[string]string{"sonnet": openai.DefaultModel, "opus": "gpt-6.1-sol", "haiku": "gpt-6-luna"}
	for _, tc := range []struct {
		name      string
		cfg       provider.Config
		overrides map[string]string
		env       map[string]string
		want      map[string]string
	}{
		{name: "Anthropic", cfg: provider.Config{Provider: "anthropic"}, want: claude},
		{name: "AnthropicGateway", cfg: provider.Config{Provider: "anthropic", BaseURL: "https://gateway.example.com"}, want: claude},
		{
			name: "ClaudeCodeVariables",
			cfg:  provider.Config{Provider: "anthropic"},
			env: map[string]string{"ANTHROPIC_DEFAULT_SONNET_MODEL": "claude-sonnet-4-6", "ANTHROPIC_DEFAULT_OPUS_MODEL": "claude-opus-4-8",
				"ANTHROPIC_SMALL_FAST_MODEL": "claude-haiku-4-5"},
			want: map[string]string{"sonnet": "claude-sonnet-4-6", "opus": "claude-opus-4-8", "haiku": "claude-haiku-4-5"},
		},
		{
			name: "HaikuVariableOverSmallFast",
			cfg:  provider.Config{Provider: "anthropic"},
			env:  map[string]string{"ANTHROPIC_DEFAULT_HAIKU_MODEL": "claude-haiku-4-5-20251001", "ANTHROPIC_SMALL_FAST_MODEL": "claude-haiku-4-5"},
			want: map[string]string{"sonnet": "claude-sonnet-5-5", "opus": "claude-opus-5-5", "haiku": "claude-haiku-4-5-20251001"},
		},
		{
			name:      "OverridesWin",
			cfg:       provider.Config{Provider: "anthropic"},
			overrides: map[string]string{"sonnet": "claude-sonnet-5", "fast": "claude-haiku-4-5"},
			env:       map[string]string{"ANTHROPIC_DEFAULT_SONNET_MODEL": "claude-sonnet-4-6"},
			want:      map[string]string{"sonnet": "claude-sonnet-5", "opus": "claude-opus-5-5", "haiku": "claude-haiku-5-5", "fast": "claude-haiku-4-5"},
		},
		{name: "OpenAI", cfg: provider.Config{Provider: "openai"}, want: gpt},
		{name: "OpenAIsOwnBaseURL", cfg: provider.Config{Provider: "openai", BaseURL: "https://api.openai.com/v1"}, want: gpt},
		{
			// Claude Code's variables name Claude models.
			name: "OpenAIIgnoresClaudeCodeVariables",
			cfg:  provider.Config{Provider: "openai"},
			env:  map[string]string{"ANTHROPIC_DEFAULT_SONNET_MODEL": "claude-sonnet-4-6"},
			want: gpt,
		},
		{name: "LocalServer", cfg: provider.Config{Provider: "openai", Model: "qwen3-coder", BaseURL: "http://localhost:11434/v1"}, want: map[string]string{}},
		{name: "LocalServerFromEnvironment", cfg: provider.Config{Provider: "openai"}, env: map[string]string{"OPENAI_BASE_URL": "http://localhost:8080/v1"}, want: map[string]string{}},
		{
			name:      "LocalServerOverrides",
			cfg:       provider.Config{Provider: "openai", BaseURL: "http://localhost:11434/v1"},
			overrides: map[string]string{"haiku": "qwen3:4b"},
			want:      map[string]string{"haiku": "qwen3:4b"},
		},
		{name: "Script", cfg: provider.Config{Provider: "script"}, env: map[string]string{"ANTHROPIC_DEFAULT_SONNET_MODEL": "claude-sonnet-4-6"}, want: map[string]string{}},
		// Claude on Vertex AI: Anthropic's table (the current models' ids
		// are the same there), and Claude Code's variables, set to
		// Vertex's ids for older models.
		{name: "AnthropicVertex", cfg: provider.Config{Provider: "anthropic-vertex"}, want: claude},
		{
			name: "AnthropicVertexClaudeCodeVariables",
			cfg:  provider.Config{Provider: "anthropic-vertex"},
			env:  map[string]string{"ANTHROPIC_DEFAULT_SONNET_MODEL": "claude-sonnet-4-5@20250929", "ANTHROPIC_DEFAULT_HAIKU_MODEL": "claude-haiku-4-5@20251001"},
			want: map[string]string{"sonnet": "claude-sonnet-4-5@20250929", "opus": "claude-opus-5-5", "haiku": "claude-haiku-4-5@20251001"},
		},
		// Azure's models are the user's deployments: only the user's
		// table, never Claude Code's variables.
		{name: "Azure", cfg: provider.Config{Provider: "azure", Model: "my-gpt"}, env: map[string]string{"ANTHROPIC_DEFAULT_SONNET_MODEL": "claude-sonnet-4-6"}, want: map[string]string{}},
		{
			name:      "AzureOverrides",
			cfg:       provider.Config{Provider: "azure", Model: "my-gpt"},
			overrides: map[string]string{"haiku": "my-gpt-mini"},
			want:      map[string]string{"haiku": "my-gpt-mini"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := provider.ModelAliases(tc.cfg, tc.overrides, env(tc.env)); !maps.Equal(got, tc.want) {
				t.Errorf("ModelAliases = %v\nwant           %v", got, tc.want)
			}
		})
	}
	if got := provider.ModelAliases(provider.Config{Provider: "anthropic"}, nil, nil); !maps.Equal(got, claude) {
		t.Errorf("nil env: %v", got)
	}
	// Each call's table is its own.
	provider.ModelAliases(provider.Config{Provider: "anthropic"}, nil, nil)["sonnet"] = "changed"
	if got := provider.ModelAliases(provider.Config{Provider: "anthropic"}, nil, nil); got["sonnet"] != "claude-sonnet-5-5" {
		t.Errorf("a caller changed the table: %v", got)
	}
}
