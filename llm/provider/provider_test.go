package provider_test

import (
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
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

func TestDefaultModel(t *testing.T) {
	for _, name := range provider.Names() {
		if provider.DefaultModel(name) == "" {
			t.Errorf("provider %s has no default model", name)
		}
	}
	if provider.DefaultModel("script") != "" {
		t.Error("a default model for an unknown provider")
	}
}

func TestNewErrors(t *testing.T) {
	t.Setenv(anthropic.APIKeyEnv, "")
	t.Setenv(openai.APIKeyEnv, "")
	t.Setenv(openai.BaseURLEnv, "")
	for _, v := range []string{gemini.APIKeyEnv, gemini.GoogleAPIKeyEnv, gemini.BaseURLEnv, gemini.ProjectEnv, gemini.LocationEnv} {
		t.Setenv(v, "")
	}
	for cfg, want := range map[provider.Config][]string{
		{Provider: "mistral"}:          {`"mistral"`, "anthropic, openai, openai-responses, gemini, vertex, bedrock"},
		{}:                             {"anthropic, openai, openai-responses, gemini, vertex, bedrock"},
		{Provider: "anthropic"}:        {"ANTHROPIC_API_KEY"},
		{Provider: "openai"}:           {"OPENAI_API_KEY"},
		{Provider: "gemini"}:           {"GEMINI_API_KEY"},
		{Provider: "openai-responses"}: {"OPENAI_API_KEY"},
		{Provider: "vertex"}:           {"GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION"},
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
// request reaches the server at the base URL, for the model, with the key.
func TestNewWiring(t *testing.T) {
	for _, tc := range []struct {
		provider, base, path, keyHeader string
	}{
		// Anthropic's base URL has no /v1 (the SDK adds it); OpenAI's has.
		{provider.Anthropic, "", "/v1/messages", "Bearer sk-conf"},
		{provider.OpenAI, "/v1", "/v1/chat/completions", "Bearer sk-conf"},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			var mu sync.Mutex
			var path, auth, model string
			var maxTokens int
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var body struct {
					Model               string `json:"model"`
					MaxTokens           int    `json:"max_tokens"`
					MaxCompletionTokens int    `json:"max_completion_tokens"`
				}
				b, _ := io.ReadAll(r.Body)
				json.Unmarshal(b, &body)
				mu.Lock()
				path, auth, model, maxTokens = r.URL.Path, r.Header.Get("Authorization"), body.Model, body.MaxTokens+body.MaxCompletionTokens
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid key"}}`)
			}))
			defer srv.Close()
			c, err := provider.New(provider.Config{Provider: tc.provider, Model: "m-1", BaseURL: srv.URL + tc.base, APIKey: "sk-conf", MaxTokens: 321})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Generate(t.Context(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("hi")}}}}, nil)
			if !errors.Is(err, llm.ErrAuthentication) {
				t.Errorf("error %v, want an authentication error", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if path != tc.path || auth != tc.keyHeader || model != "m-1" || maxTokens != 321 {
				t.Errorf("request to %s, auth %q, model %q, max tokens %d", path, auth, model, maxTokens)
			}
		})
	}
}

// Each provider's table says what Claude Code's aliases stand for; the
// user's overrides win over Claude Code's variables, which win over
// Anthropic's table; OpenAI's table is for OpenAI's own API only; other
// providers have none.
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
