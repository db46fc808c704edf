package openai_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/llmtest"
	"github.com/orca-agent/orca/llm/openai"
)

// clearAzureEnv empties the variables Azure reads, and sets OpenAI's own,
// which Azure must not use.
func clearAzureEnv(t *testing.T) {
	t.Helper()
	for _, v := range []string{openai.AzureAPIKeyEnv, openai.AzureEndpointEnv, openai.AzureAPIVersionEnv} {
		t.Setenv(v, "")
	}
	t.Setenv(openai.APIKeyEnv, "sk-not-for-azure")
	t.Setenv(openai.BaseURLEnv, "http://127.0.0.1:9/v1")
}

// newAzureClient returns a client of Azure OpenAI with an HTTP client of
// the test's own and the options given.
func newAzureClient(t *testing.T, opts ...openai.Option) *openai.Client {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	c, err := openai.New(append([]openai.Option{openai.HTTPClient(hc)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// On Azure OpenAI, a streamed answer with a tool call (after Azure's chunk
// of prompt filter results) comes back as from OpenAI's API; the request
// went to the deployment the model names, with the API version in the
// query and the key in the api-key header — from Azure's variables, or
// given — and none of OpenAI's.
func TestAzure(t *testing.T) {
	want := llm.Response{
		Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.TextBlock("Reading it."),
			llm.ToolUseBlock("call_az_1", "Read", json.RawMessage(`{"file_path":"main.go"}`)),
		}},
		StopReason: llm.StopToolUse,
		Usage:      llm.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 400},
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		opts    func(api *fakeAPI) []openai.Option
		key     string
		version string
	}{
		{
			name: "Environment",
			env:  map[string]string{openai.AzureAPIKeyEnv: "azure-key-env", openai.AzureAPIVersionEnv: "2025-04-01-preview"},
			opts: func(api *fakeAPI) []openai.Option {
				t.Setenv(openai.AzureEndpointEnv, api.URL)
				return []openai.Option{openai.Azure("", ""), openai.Model("my-gpt")}
			},
			key: "azure-key-env", version: "2025-04-01-preview",
		},
		{
			name: "Given",
			env:  map[string]string{openai.AzureAPIKeyEnv: "azure-key-env", openai.AzureEndpointEnv: "https://elsewhere.openai.azure.com"},
			opts: func(api *fakeAPI) []openai.Option {
				return []openai.Option{openai.Azure(api.URL+"/", ""), openai.APIKey("azure-key-given"), openai.Model("my-gpt")}
			},
			key: "azure-key-given", version: openai.DefaultAzureAPIVersion,
		},
		{
			// BaseURL is the endpoint when Azure names none, over the
			// variable (as provider.Config.BaseURL is).
			name: "BaseURL",
			env:  map[string]string{openai.AzureAPIKeyEnv: "azure-key-env", openai.AzureEndpointEnv: "https://elsewhere.openai.azure.com"},
			opts: func(api *fakeAPI) []openai.Option {
				return []openai.Option{openai.Azure("", ""), openai.BaseURL(api.URL), openai.Model("my-gpt")}
			},
			key: "azure-key-env", version: openai.DefaultAzureAPIVersion,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearAzureEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			api := newAzureAPI(t, answer{resp: want})
			c := newAzureClient(t, tc.opts(api)...)
			req := userRequest("What is in main.go?")
			req.Tools = []llm.ToolDefinition{{Name: "Read", Description: "Reads a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}}}`)}}
			var deltas []llm.Delta
			got, err := c.Generate(t.Context(), req, func(d llm.Delta) { deltas = append(deltas, d) })
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Message.Content) != 2 || got.Message.Content[1].ID != "call_az_1" || string(got.Message.Content[1].Input) != `{"file_path":"main.go"}` ||
				got.StopReason != llm.StopToolUse || got.Usage != want.Usage {
				t.Fatalf("response %+v", got)
			}
			llmtest.CheckDeltas(t, got, deltas)
			u, h := api.urls[0], api.headers[0]
			if u.Path != "/openai/deployments/my-gpt/chat/completions" || u.Query().Get("api-version") != tc.version {
				t.Errorf("request to %s", u)
			}
			if h.Get("Api-Key") != tc.key || h.Get("Authorization") != "" {
				t.Errorf("api-key %q, Authorization %q", h.Get("Api-Key"), h.Get("Authorization"))
			}
			if b := api.body(t, 0); b.Model != "my-gpt" || !b.Stream || len(b.Tools) != 1 || b.Tools[0].Function.Name != "Read" {
				t.Errorf("request body %+v", b)
			}
		})
	}
}

// Azure fails with an error naming Azure's variables without an endpoint
// or a key (OpenAI's do not stand in for them), and with one saying so
// without a deployment; an http endpoint is refused but on this machine.
func TestAzureNeeds(t *testing.T) {
	clearAzureEnv(t)
	for _, tc := range []struct {
		name string
		env  map[string]string
		opts []openai.Option
		want []string
	}{
		{"Nothing", nil, []openai.Option{openai.Model("my-gpt")}, []string{"AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY"}},
		{"NoKey", map[string]string{openai.AzureEndpointEnv: "https://r.openai.azure.com"}, []openai.Option{openai.Model("my-gpt")}, []string{"AZURE_OPENAI_API_KEY"}},
		{"NoEndpoint", map[string]string{openai.AzureAPIKeyEnv: "k"}, []openai.Option{openai.Model("my-gpt")}, []string{"AZURE_OPENAI_ENDPOINT"}},
		{"NoDeployment", map[string]string{openai.AzureAPIKeyEnv: "k", openai.AzureEndpointEnv: "https://r.openai.azure.com"}, nil, []string{"deployment", "Model"}},
		{"NotAURL", map[string]string{openai.AzureAPIKeyEnv: "k", openai.AzureEndpointEnv: "r.openai.azure.com"}, []openai.Option{openai.Model("m")}, []string{"not a URL"}},
		{"PlainHTTP", map[string]string{openai.AzureAPIKeyEnv: "k", openai.AzureEndpointEnv: "http://r.openai.azure.com"}, []openai.Option{openai.Model("m")}, []string{"https only"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			c, err := openai.New(append([]openai.Option{openai.Azure("", "")}, tc.opts...)...)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("New = %v, %v: want an error naming %s", c, err, w)
				}
			}
		})
	}
}

// Azure's errors are OpenAI's: a rate limit (Azure's words, its
// retry-after) is retryable after the time it says.
func TestAzureRateLimited(t *testing.T) {
	clearAzureEnv(t)
	api := newAzureAPI(t, answer{status: http.StatusTooManyRequests, header: http.Header{"Retry-After": {"6"}},
		body: `{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current AIServices S0 pricing tier. Please retry after 6 seconds."}}`})
	_, err := newAzureClient(t, openai.Azure(api.URL, ""), openai.APIKey("k"), openai.Model("my-gpt")).Generate(t.Context(), userRequest("hi"), nil)
	var le *llm.Error
	if !errors.Is(err, llm.ErrRateLimited) || !errors.As(err, &le) || le.RetryAfter.Seconds() != 6 || !strings.Contains(le.Message, "exceeded token rate limit") {
		t.Errorf("error %v, want a rate limit to retry after 6s", err)
	}
}

func TestAzureConformance(t *testing.T) {
	clearAzureEnv(t)
	llmtest.TestClient(t, func(t *testing.T, c llmtest.ClientCase) (llm.Client, func() []*llm.Request) {
		api := newAzureAPI(t, answer{resp: c.Response, err: c.Err})
		return newAzureClient(t, openai.Azure(api.URL, ""), openai.APIKey("azure-key"), openai.Model("my-gpt")), api.seen
	})
}
