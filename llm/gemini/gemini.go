// Package gemini is the llm.Client of Google's Gemini models, built on the
// official Go SDK (google.golang.org/genai): the Gemini API (an API key)
// and Vertex AI (a Google Cloud project and region, with Application
// Default Credentials).
//
// Every call streams (streamGenerateContent): text pieces reach onDelta as
// they arrive; the final message has a block per part the model sent, in
// order — its thoughts (parts marked thought) as llm.BlockThinking, its
// text, its function calls as tool uses. Gemini calls functions in
// parallel without ids on the Gemini API; a call without one gets
// "call_<response id>_<n>", which goes back with its call and its response
// (the API matches them by name and order, and takes the ids).
//
// # Thought signatures
//
// A thinking model signs the parts that follow its reasoning (a function
// call, the first text part): the signature, opaque bytes, must come back
// on the same part in later requests, or the API refuses a conversation
// of function calls. The signature goes in the block's Signature (base64),
// on a tool use, a text or a thinking block, and back from it. Thought
// summaries themselves are not sent back (a signed one is, for its
// signature).
//
// # How orca's messages are sent
//
// The system prompt is the system instruction. A user message's tool
// results become functionResponse parts ({"result": content}, or
// {"error": content} for a failed call), named after the calls they answer;
// the images and PDFs a result showed follow as inline data. Images and
// PDFs of the user's are inline data too. Tool schemas are sent as JSON
// Schema (parametersJsonSchema).
//
// # Usage and stops
//
// The API's promptTokenCount counts every prompt token; orca's counts are
// disjoint: InputTokens is it less the cached tokens (CacheReadTokens).
// OutputTokens counts the answer and the thoughts. Finish reason STOP is
// end_turn (tool_use when the model called functions); MAX_TOKENS
// max_tokens; SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII and
// a blocked prompt (promptFeedback) are refusals, their reason in
// Response.Refusal.
//
// # Errors
//
// Failures are *llm.Error values: 429 (RESOURCE_EXHAUSTED) KindRateLimited;
// 503 KindOverloaded; other 5xx KindServer; 401 and 403 KindAuthentication;
// a 400 that says the input exceeds the token limit KindPromptTooLong;
// other 4xx KindInvalidRequest. The SDK never retries: orca does.
package gemini

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"google.golang.org/genai"

	"github.com/orca-agent/orca/llm"
)

// Defaults, and the environment variables New reads.
const (
	// DefaultModel answers requests that name no model, unless the client
	// was built with Model.
	DefaultModel = "gemini-3.8-flash"
	// DefaultMaxTokens caps the output of requests that set no MaxTokens.
	DefaultMaxTokens = 8192
	// APIKeyEnv and GoogleAPIKeyEnv hold the Gemini API's key when none is
	// given with APIKey (GoogleAPIKeyEnv wins, as with Google's SDKs).
	APIKeyEnv       = "GEMINI_API_KEY"
	GoogleAPIKeyEnv = "GOOGLE_API_KEY"
	// BaseURLEnv holds the base URL when none is given with BaseURL.
	BaseURLEnv = "GOOGLE_GEMINI_BASE_URL"
	// ProjectEnv and LocationEnv name Vertex AI's project and region when
	// Vertex is given empty ones.
	ProjectEnv  = "GOOGLE_CLOUD_PROJECT"
	LocationEnv = "GOOGLE_CLOUD_LOCATION"
)

// Option configures a Client.
type Option func(*config)

type config struct {
	apiKey            *string
	baseURL           string
	model             string
	maxTokens         int
	http              *http.Client
	vertex            bool
	project, location string
}

// APIKey sets the Gemini API's key (default: $GOOGLE_API_KEY, else
// $GEMINI_API_KEY).
func APIKey(key string) Option { return func(c *config) { c.apiKey = &key } }

// BaseURL sets the API's base URL (default: $GOOGLE_GEMINI_BASE_URL, else
// Google's).
func BaseURL(url string) Option { return func(c *config) { c.baseURL = url } }

// Model sets the model of requests that name none (default DefaultModel).
func Model(name string) Option { return func(c *config) { c.model = name } }

// MaxTokens sets the output cap of requests that set none (default
// DefaultMaxTokens).
func MaxTokens(n int) Option { return func(c *config) { c.maxTokens = n } }

// HTTPClient sets the HTTP client the SDK sends with. For Vertex AI it
// must authenticate its requests itself.
func HTTPClient(h *http.Client) Option { return func(c *config) { c.http = h } }

// Vertex sends the requests to Vertex AI in project and location
// (default: $GOOGLE_CLOUD_PROJECT and $GOOGLE_CLOUD_LOCATION),
// authenticated with Application Default Credentials (gcloud auth
// application-default login, or a service account's key file in
// $GOOGLE_APPLICATION_CREDENTIALS).
func Vertex(project, location string) Option {
	return func(c *config) { c.vertex, c.project, c.location = true, project, location }
}

// Client is the Gemini llm.Client. It is safe for concurrent use.
type Client struct {
	sdk       *genai.Client
	model     string
	maxTokens int
	vertex    bool // on Vertex AI
}

var _ llm.Client = (*Client)(nil)

// New returns a client. The Gemini API needs an API key (APIKey, or one of
// the variables) unless a base URL is given; Vertex AI needs a project and
// a location. Without them it fails with an error that says what to set.
func New(opts ...Option) (*Client, error) {
	cfg := config{model: DefaultModel, maxTokens: DefaultMaxTokens}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.maxTokens < 1 {
		return nil, fmt.Errorf("gemini: MaxTokens %d: want at least 1", cfg.maxTokens)
	}
	if cfg.model == "" {
		cfg.model = DefaultModel
	}
	cc := &genai.ClientConfig{HTTPClient: cfg.http, HTTPOptions: genai.HTTPOptions{BaseURL: cfg.baseURL}}
	if cfg.vertex {
		cc.Backend = genai.BackendVertexAI
		cc.Project, cc.Location = cmpOr(cfg.project, os.Getenv(ProjectEnv)), cmpOr(cfg.location, os.Getenv(LocationEnv))
		if cc.Project == "" || cc.Location == "" {
			return nil, fmt.Errorf("gemini: Vertex AI needs a project and a location: set %s and %s (e.g. us-central1), and sign in with gcloud auth application-default login", ProjectEnv, LocationEnv)
		}
	} else {
		cc.Backend = genai.BackendGeminiAPI
		cc.HTTPOptions.APIVersion = "v1beta" // thought signatures, JSON Schema tools
		key := cmpOr(os.Getenv(GoogleAPIKeyEnv), os.Getenv(APIKeyEnv))
		if cfg.apiKey != nil {
			key = *cfg.apiKey
		}
		if cc.HTTPOptions.BaseURL == "" {
			cc.HTTPOptions.BaseURL = os.Getenv(BaseURLEnv)
		}
		if key == "" && cc.HTTPOptions.BaseURL == "" {
			return nil, fmt.Errorf("gemini: no API key: set %s (or %s)", APIKeyEnv, GoogleAPIKeyEnv)
		}
		// The SDK refuses to start without one, even for a server that
		// wants none.
		cc.APIKey = cmpOr(key, "none")
	}
	c, err := genai.NewClient(context.Background(), cc)
	if err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	return &Client{sdk: c, model: cfg.model, maxTokens: cfg.maxTokens, vertex: cfg.vertex}, nil
}

// NativeOutput implements llm.OutputNative: Request.Output is sent as the
// response's JSON schema.
func (*Client) NativeOutput() bool { return true }

// SearchesWeb implements llm.WebSearcher: Request.WebSearch is sent as
// Grounding with Google Search (the google_search tool) — blocked domains
// as its excludeDomains on Vertex AI, which alone takes them; allowed
// domains nowhere (the caller filters Sources, whose Site is the page's
// site: the URL is Google's redirect to it). Gemini 1.x models had
// another tool, and are not searched with.
func (*Client) SearchesWeb(model string) bool { return !strings.HasPrefix(model, "gemini-1.") }

// Generate streams one answer; see llm.Client.
func (c *Client) Generate(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	model := cmpOr(req.Model, c.model)
	contents, conf, err := c.request(req)
	if err != nil {
		return nil, err
	}
	acc := newAccumulator(onDelta)
	for chunk, err := range c.sdk.Models.GenerateContentStream(ctx, model, contents, conf) {
		if err != nil {
			return nil, classify(ctx, err)
		}
		acc.add(chunk)
	}
	if ctx.Err() != nil {
		return nil, classify(ctx, ctx.Err())
	}
	if !acc.finished {
		return nil, &llm.Error{Kind: llm.KindServer, Message: "the stream ended before a finish reason", Err: errors.New("gemini: stream cut short")}
	}
	resp := acc.response()
	resp.Model = cmpOr(resp.Model, model)
	return resp, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
