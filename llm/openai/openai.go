// Package openai is the llm.Client of the OpenAI Chat Completions API, built
// on the official Go SDK (github.com/openai/openai-go/v3). It serves
// OpenAI's own API and the servers that speak the same protocol (Ollama,
// vLLM, llama.cpp, LM Studio, gateways): point BaseURL at them; and Azure
// OpenAI's deployments (Azure).
//
// Every call streams, with stream_options.include_usage so that the last
// chunk carries the usage: text pieces reach onDelta as they arrive, tool
// call arguments are assembled per tool-call index (the API interleaves
// them), and the final message has a block for the reasoning, if any, one
// for the text and one per tool use, in the order they started. A piece
// that names a call with an id other than the one already at its index
// starts a new call: some servers (Ollama) send every call of a response
// at index 0. The SDK never retries (orca retries outside llm_execution,
// so that every attempt passes through it); a stream that ends before a
// finish reason is a retryable server error.
//
// # What servers of the protocol add
//
// Reasoning models served over the protocol stream their reasoning beside
// the content, in a delta field the API itself does not have:
// reasoning_content (DeepSeek; vLLM, SGLang and llama.cpp for Qwen, Kimi,
// GLM) or reasoning (OpenRouter, Groq, Cerebras, newer vLLM). It becomes
// the message's llm.BlockThinking, named after its field. Mistral's
// reasoning models send the content itself as a list of parts; text parts
// are text and thinking parts are thinking (unnamed), other parts are left
// out, and content that is neither text nor such a list fails the call as
// a server error.
//
// A refusal message (the delta's refusal) is not text: the response stops
// with llm.StopRefusal and the message goes to Response.Refusal. So does
// finish reason content_filter, without one.
//
// # How orca's messages are sent
//
// The system prompt is a system message. An assistant message's text is
// its content and its tool uses are tool_calls, with the input as the
// arguments string. Its reasoning goes back only where DeepSeek's API
// demands it: thinking that came as reasoning_content is sent as the
// assistant message's reasoning_content, on every later request (DeepSeek
// refuses a conversation whose tool-calling turns lost it, and ignores it
// elsewhere). Other thinking is left out: Groq refuses reasoning_content
// on assistant messages, and the other servers do not need their
// reasoning back. A user message's tool results become one "tool" message
// each, in order, ahead of the message's text (the API wants tool
// messages right after the assistant message that called them). The API
// has no field for a failed tool call, so the content of an IsError
// result is prefixed with ErrorPrefix ("Error: "), which models read as
// intended.
//
// Arguments the model produced malformed are sent as a JSON object that
// quotes them, {"_raw_input": "<the bytes as text>"}, as with Anthropic:
// OpenAI keeps the string as given, but servers of the same protocol parse
// it and refuse the request otherwise.
//
// # Reasoning and tools
//
// OpenAI's current reasoning models (gpt-5.1 and later, gpt-6) refuse
// function tools on Chat Completions unless reasoning_effort is "none". So
// when a request has tools and the client was given no ReasoningEffort,
// requests to those models say "none"; models that cannot think less than
// "low" then refuse the tools, and need the Responses API.
//
// # Usage
//
// The API's prompt_tokens counts every prompt token; orca's counts are
// disjoint, so InputTokens is prompt_tokens less the cached tokens
// (CacheReadTokens) and the tokens written to the cache (CacheWriteTokens).
//
// # Errors
//
// Failures are *llm.Error values: code context_length_exceeded, or a
// message about the maximum context length, is KindPromptTooLong; other
// 400, 404, 409, 413 and 422 are KindInvalidRequest; 401 and 403
// KindAuthentication; 429 KindRateLimited, with RetryAfter from the
// retry-after-ms or retry-after header, except insufficient_quota (no
// credit left: KindAuthentication, since waiting does not help); 503 and
// 529 KindOverloaded; other 5xx KindServer. Messages keep the API's words.
package openai

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/orca-agent/orca/llm"
)

// Defaults, and the environment variables New reads.
const (
	// DefaultModel answers requests that name no model, unless the client
	// was built with Model. It takes function tools on Chat Completions.
	DefaultModel = "gpt-6.1-terra"
	// DefaultMaxTokens caps the output of requests that set no MaxTokens.
	DefaultMaxTokens = 8192
	// APIKeyEnv holds the API key when none is given with APIKey.
	APIKeyEnv = "OPENAI_API_KEY"
	// BaseURLEnv holds the base URL when none is given with BaseURL.
	BaseURLEnv = "OPENAI_BASE_URL"
	// ErrorPrefix starts the content of a failed tool call's result.
	ErrorPrefix = "Error: "
)

// rawInputKey is the key under which arguments that are not a JSON object
// are quoted (see the package documentation).
const rawInputKey = "_raw_input"

// Option configures a Client.
type Option func(*config)

type config struct {
	apiKey    *string
	baseURL   string
	model     string
	maxTokens int
	http      *http.Client
	effort    string
	azure     *azureConfig
}

// APIKey sets the API key (default: $OPENAI_API_KEY).
func APIKey(key string) Option { return func(c *config) { c.apiKey = &key } }

// BaseURL sets the API's base URL, such as http://localhost:11434/v1 for
// Ollama (default: $OPENAI_BASE_URL, else OpenAI's). It wins over the
// environment. With a base URL, the API key may be empty: local servers
// need none.
func BaseURL(url string) Option { return func(c *config) { c.baseURL = url } }

// Model sets the model of requests that name none (default DefaultModel;
// with Azure, a deployment's name, and no default).
func Model(name string) Option { return func(c *config) { c.model = name } }

// MaxTokens sets the output cap of requests that set none (default
// DefaultMaxTokens); it is sent as max_completion_tokens.
func MaxTokens(n int) Option { return func(c *config) { c.maxTokens = n } }

// HTTPClient sets the HTTP client the SDK sends with (default: the SDK's).
// Whoever gives it owns it, idle connections included.
func HTTPClient(h *http.Client) Option { return func(c *config) { c.http = h } }

// ReasoningEffort sets reasoning_effort on every request ("none", "low",
// "medium", "high", …; the model decides which it takes). Without it, see
// the package documentation.
func ReasoningEffort(effort string) Option { return func(c *config) { c.effort = effort } }

// Client is the OpenAI llm.Client. It is safe for concurrent use.
type Client struct {
	sdk       sdk.Client
	model     string
	maxTokens int
	effort    string
}

var _ llm.Client = (*Client)(nil)

// New returns a client. It needs an API key (APIKey, or $OPENAI_API_KEY)
// unless a base URL is given (BaseURL, or $OPENAI_BASE_URL); without
// either it fails with an error that says which variable to set. With
// Azure, it needs Azure's endpoint, key and deployment instead (see there).
func New(opts ...Option) (*Client, error) {
	cfg := config{maxTokens: DefaultMaxTokens}
	for _, o := range opts {
		o(&cfg)
	}
	sdkOpts := []option.RequestOption{
		// orca retries, outside llm_execution; a retry here would be an
		// attempt no middleware sees.
		option.WithMaxRetries(0),
		option.WithMiddleware(errorBodies),
	}
	if cfg.azure != nil {
		aopts, err := cfg.azureOptions()
		if err != nil {
			return nil, err
		}
		sdkOpts = append(sdkOpts, aopts...)
	} else {
		key := os.Getenv(APIKeyEnv)
		if cfg.apiKey != nil {
			key = *cfg.apiKey
		}
		baseURL := cfg.baseURL
		if baseURL == "" {
			baseURL = os.Getenv(BaseURLEnv)
		}
		if key == "" && baseURL == "" {
			return nil, fmt.Errorf("openai: no API key: set %s (a server at your own base URL may need none: set %s)", APIKeyEnv, BaseURLEnv)
		}
		if key != "" {
			sdkOpts = append(sdkOpts, option.WithAPIKey(key))
		}
		if baseURL != "" {
			sdkOpts = append(sdkOpts, option.WithBaseURL(baseURL))
		}
		cfg.model = cmp.Or(cfg.model, DefaultModel)
	}
	if cfg.maxTokens < 1 {
		return nil, fmt.Errorf("openai: MaxTokens %d: want at least 1", cfg.maxTokens)
	}
	if cfg.http != nil {
		sdkOpts = append(sdkOpts, option.WithHTTPClient(cfg.http))
	}
	return &Client{
		sdk:       sdk.NewClient(sdkOpts...),
		model:     cfg.model,
		maxTokens: cfg.maxTokens,
		effort:    cfg.effort,
	}, nil
}

// NativeOutput implements llm.OutputNative: Request.Output is sent as
// response_format json_schema, strict when the schema allows it.
func (*Client) NativeOutput() bool { return true }

// Generate streams one chat completion; see llm.Client.
func (c *Client) Generate(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	params, err := c.params(req)
	if err != nil {
		return nil, err
	}
	body, err := c.body(params, req)
	if err != nil {
		return nil, err
	}
	stream := c.sdk.Chat.Completions.NewStreaming(ctx, params, option.WithRequestBody("application/json", body))
	defer stream.Close()
	acc := newAccumulator(onDelta)
	for stream.Next() {
		if err := acc.add(stream.Current()); err != nil {
			return nil, err
		}
	}
	if err := stream.Err(); err != nil {
		return nil, classify(ctx, err)
	}
	if !acc.finished {
		if ctx.Err() != nil {
			return nil, classify(ctx, ctx.Err())
		}
		return nil, &llm.Error{Kind: llm.KindServer, Message: "the stream ended before a finish reason", Err: errors.New("openai: stream cut short")}
	}
	return acc.response(), nil
}
