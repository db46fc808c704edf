// Package anthropic is the llm.Client of Anthropic's Messages API, built on
// the official Go SDK (github.com/anthropics/anthropic-sdk-go/v2): on
// Anthropic's API (or a gateway's), or on Google Cloud's Vertex AI (Vertex;
// the SDK's vertex package), with the same requests and answers.
//
// Every call streams: text and tool-input pieces reach onDelta as they
// arrive, and the final message is assembled from the same events. The SDK
// never retries (orca retries outside llm_execution, so that every attempt
// passes through it); a stream that ends before message_stop is a retryable
// server error.
//
// # What is sent
//
// The request's system prompt, messages and tool definitions, with
// prompt-caching breakpoints (cache_control: ephemeral) at the end of the
// cache-sensitive prefix: on the last tool definition, on the system prompt,
// and on the last message before the newest user turn: three of the four
// the API allows. Each call of a ReAct loop then reads from the cache what
// the call before it marked (tools, system prompt, and the conversation up
// to that call's newest turn); only what came since is new input.
//
// A tool use's input is the model's raw JSON, which may be malformed (orca
// validates it, and answers the model with the error). The API accepts only
// a JSON object there, so an input that is not one is sent as an object
// that quotes it, {"_raw_input": "<the bytes as text>"}: the model sees
// what it produced next to the error that answered it, and the request
// stays valid. An empty input is sent as {}.
//
// Thinking blocks (llm.BlockThinking, llm.BlockRedactedThinking), which
// current models return even unasked, are kept in the final message (they
// are not streamed to onDelta, which has no kind for them) and go back
// unchanged, in place, with their signatures; one that lost its signature
// is left out, since the API would refuse it. Server-side tool blocks are
// not kept.
//
// # Refusals
//
// When the API's classifiers decline a request it ends the stream with
// stop_reason "refusal", often before any content: that is
// llm.StopRefusal, with the explanation (or the policy category) of the
// stop details in Response.Refusal. Text streamed before the refusal stays
// in the message, where it is not an answer.
//
// # Errors
//
// Failures are *llm.Error values: a 400 that says the prompt is too long is
// KindPromptTooLong; other 400, 404, 413 and 422 are KindInvalidRequest;
// 401 and 403 KindAuthentication; 429 KindRateLimited, with RetryAfter from
// the retry-after-ms or retry-after header; 529 KindOverloaded; 5xx
// KindServer. An error event inside the stream is classified by its type.
// On Vertex AI, Google's refusal to give an access token (credentials
// revoked or expired) is KindAuthentication. Messages keep the API's own
// words.
package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/orca-agent/orca/llm"
)

// Defaults, and the environment variables New reads.
const (
	// DefaultModel answers requests that name no model, unless the client
	// was built with Model.
	DefaultModel = "claude-sonnet-5-5"
	// DefaultMaxTokens caps the output of requests that set no MaxTokens
	// (the API requires a cap).
	DefaultMaxTokens = 8192
	// APIKeyEnv holds the API key when none is given with APIKey.
	APIKeyEnv = "ANTHROPIC_API_KEY"
	// AuthTokenEnv holds a bearer token, such as an LLM gateway's (Claude
	// Code's ANTHROPIC_AUTH_TOKEN, beside ANTHROPIC_BASE_URL): used when
	// no key is given with APIKey, and before $ANTHROPIC_API_KEY, as
	// Claude Code does.
	AuthTokenEnv = "ANTHROPIC_AUTH_TOKEN"
	// BaseURLEnv holds the base URL when none is given with BaseURL; the
	// SDK reads it.
	BaseURLEnv = "ANTHROPIC_BASE_URL"
	// MinThinkingBudget is the smallest budget the API accepts for
	// extended thinking.
	MinThinkingBudget = 1024
)

// rawInputKey is the key under which a tool input that is not a JSON
// object is quoted (see the package documentation).
const rawInputKey = "_raw_input"

// Option configures a Client.
type Option func(*config)

type config struct {
	apiKey    *string
	keys      *keySource
	baseURL   string
	model     string
	maxTokens int
	http      *http.Client
	thinking  thinking
	vertex    *vertexConfig
}

type thinking struct {
	adaptive bool
	budget   int
}

// APIKey sets the API key (default: $ANTHROPIC_API_KEY).
func APIKey(key string) Option { return func(c *config) { c.apiKey = &key } }

// BaseURL sets the API's base URL (default: $ANTHROPIC_BASE_URL, else
// Anthropic's). It wins over the environment.
func BaseURL(url string) Option { return func(c *config) { c.baseURL = url } }

// Model sets the model of requests that name none (default DefaultModel).
func Model(name string) Option { return func(c *config) { c.model = name } }

// MaxTokens sets the output cap of requests that set none (default
// DefaultMaxTokens).
func MaxTokens(n int) Option { return func(c *config) { c.maxTokens = n } }

// HTTPClient sets the HTTP client the SDK sends with (default: the SDK's).
// Whoever gives it owns it, idle connections included.
func HTTPClient(h *http.Client) Option { return func(c *config) { c.http = h } }

// Thinking enables extended thinking with a budget of reasoning tokens (at
// least MinThinkingBudget). Thinking tokens count against max_tokens, so
// each request's cap is raised by the budget: the answer keeps the room the
// request gave it. Models that only think adaptively refuse a budget; use
// AdaptiveThinking for them.
func Thinking(budgetTokens int) Option {
	return func(c *config) { c.thinking = thinking{budget: budgetTokens} }
}

// AdaptiveThinking lets the model decide when and how much to think.
func AdaptiveThinking() Option {
	return func(c *config) { c.thinking = thinking{adaptive: true} }
}

// Client is the Anthropic llm.Client. It is safe for concurrent use.
type Client struct {
	sdk       sdk.Client
	model     string
	maxTokens int
	thinking  thinking
	vertex    bool // on Vertex AI
}

var _ llm.Client = (*Client)(nil)

// New returns a client. Without a credential (APIKey, $ANTHROPIC_AUTH_TOKEN
// or $ANTHROPIC_API_KEY; with Vertex, a project, a region and Application
// Default Credentials) it fails with an error that says what to set.
func New(opts ...Option) (*Client, error) {
	cfg := config{model: DefaultModel, maxTokens: DefaultMaxTokens}
	for _, o := range opts {
		o(&cfg)
	}
	var sdkOpts []option.RequestOption
	if cfg.vertex != nil {
		vopts, err := cfg.vertexOptions()
		if err != nil {
			return nil, err
		}
		sdkOpts = vopts
	} else {
		aopts, err := cfg.apiOptions()
		if err != nil {
			return nil, err
		}
		sdkOpts = aopts
	}
	if cfg.maxTokens < 1 {
		return nil, fmt.Errorf("anthropic: MaxTokens %d: want at least 1", cfg.maxTokens)
	}
	if t := cfg.thinking; !t.adaptive && t.budget != 0 && t.budget < MinThinkingBudget {
		return nil, fmt.Errorf("anthropic: Thinking budget %d: want at least %d tokens", t.budget, MinThinkingBudget)
	}
	if cfg.model == "" {
		cfg.model = DefaultModel
	}
	// orca retries, outside llm_execution; a retry here would be an
	// attempt no middleware sees.
	sdkOpts = append(sdkOpts, option.WithMaxRetries(0))
	return &Client{
		sdk:       sdk.NewClient(sdkOpts...),
		model:     cfg.model,
		maxTokens: cfg.maxTokens,
		thinking:  cfg.thinking,
		vertex:    cfg.vertex != nil,
	}, nil
}

// apiOptions are the SDK's options for Anthropic's API (or a gateway's):
// the credential — the key given, else a gateway's bearer token, else the
// key of the environment, else the key helper's (Claude Code's order) —,
// the base URL and the HTTP client.
func (c *config) apiOptions() ([]option.RequestOption, error) {
	var cred, keys option.RequestOption // keys: the key helper's middleware, when its key is the one
	switch token := os.Getenv(AuthTokenEnv); {
	case c.apiKey != nil && *c.apiKey != "":
		cred = option.WithAPIKey(*c.apiKey)
	case c.apiKey == nil && token != "":
		cred = option.WithAuthToken(token)
	case c.apiKey == nil && os.Getenv(APIKeyEnv) != "":
		cred = option.WithAPIKey(os.Getenv(APIKeyEnv))
	case c.apiKey == nil && c.keys != nil:
		// The helper's key, set on each request by its middleware: the
		// credential given here only keeps the SDK from looking for
		// another in the environment.
		cred, keys = option.WithAuthToken("-"), option.WithMiddleware(c.keys.middleware)
	default:
		return nil, fmt.Errorf("anthropic: no API key: set %s (or %s, with %s, for a gateway's bearer token)", APIKeyEnv, AuthTokenEnv, BaseURLEnv)
	}
	opts := []option.RequestOption{cred}
	if c.baseURL != "" {
		opts = append(opts, option.WithBaseURL(c.baseURL))
	}
	if c.http != nil {
		opts = append(opts, option.WithHTTPClient(c.http))
	}
	if keys != nil {
		opts = append(opts, keys)
	}
	return opts, nil
}

// NativeOutput implements llm.OutputNative: Request.Output is sent as
// output_config.format: a JSON Schema.
func (*Client) NativeOutput() bool { return true }

// SearchesWeb implements llm.WebSearcher: Request.WebSearch is sent as
// Anthropic's web search tool (web_search_20250305), on Anthropic's API;
// not on Vertex AI, where orca has not seen it served.
func (c *Client) SearchesWeb(string) bool { return !c.vertex }

// Generate streams one Messages request; see llm.Client.
func (c *Client) Generate(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	params, err := c.params(req)
	if err != nil {
		return nil, err
	}
	body, err := c.body(params, req)
	if err != nil {
		return nil, err
	}
	stream := c.sdk.Messages.NewStreaming(ctx, params, option.WithRequestBody("application/json", body))
	defer stream.Close()
	acc := newAccumulator(onDelta)
	for stream.Next() {
		acc.add(stream.Current())
		if acc.stopped {
			break
		}
	}
	if err := stream.Err(); err != nil {
		return nil, classify(ctx, err)
	}
	if !acc.stopped {
		if ctx.Err() != nil {
			return nil, classify(ctx, ctx.Err())
		}
		return nil, &llm.Error{Kind: llm.KindServer, Message: "the stream ended before message_stop", Err: errors.New("anthropic: stream cut short")}
	}
	return acc.response(), nil
}
