// Package responses is the llm.Client of OpenAI's Responses API
// (POST /v1/responses), built on the official Go SDK
// (github.com/openai/openai-go/v3, package responses). It is llm/openai's
// sibling for OpenAI's reasoning models at their best: their reasoning is
// kept between the calls of a turn, and they take tools with it. Chat
// Completions (llm/openai) stays for the servers that speak only that.
//
// Every call streams: text pieces and function-call argument pieces reach
// onDelta as they arrive, and the final message has one block per output
// item, in the order the items started — a redacted_thinking block per
// reasoning item, a text block per message, a tool use per function call,
// none for the API's own web searches (see Web search).
// The SDK never retries (orca retries outside llm_execution, so that every
// attempt passes through it); a stream that ends before response.completed
// (or .incomplete, or .failed) is a retryable server error.
//
// # Reasoning, round-tripped
//
// Requests are sent with store: false (Store changes it): OpenAI keeps
// nothing between calls, so the model's reasoning must travel with the
// conversation. Requests to reasoning models therefore ask for
// include: ["reasoning.encrypted_content"], and each reasoning output item
// becomes an llm.BlockRedactedThinking whose ID is the item's id (rs_…),
// whose Signature is its encrypted content, opaque, and whose Thinking is
// its summary text, if any (ReasoningSummary asks for one). A summary of
// several parts takes one block per part, all with the item's id, the
// first alone with the encrypted content, so that the item goes back part
// for part. Later requests send the item back unchanged — id, encrypted
// content, summary — in place: before the function calls or the message it
// preceded. A reasoning block without encrypted content (a model asked for
// none) cannot be sent back with store: false and is left out then;
// redacted_thinking blocks with no ID (another provider's) are left out
// always, as are thinking blocks.
//
// A model reasons when the catalog (package catalog) says so, or, for one
// it does not know either way, when its name is one of OpenAI's reasoning
// families (o1, o3, o4, gpt-5 but gpt-5-chat, gpt-6 and later, codex); a
// client given ReasoningEffort or ReasoningSummary takes every model as
// reasoning. Other models are not asked for encrypted content: they have
// no reasoning to encrypt, and the include may not be theirs to take.
//
// # How orca's messages are sent
//
// The system prompt is the request's instructions. A user message's tool
// results become function_call_output items, one each, in order, ahead of
// the message's own text, images and documents (a user message of
// input_text, input_image and input_file parts). A tool result that shows
// images or documents has them in its output, after its text: the output
// is then a list of input_text, input_image and input_file parts. The API
// has no field for a failed tool call, so the output of an IsError result
// is prefixed with ErrorPrefix ("Error: "), as in llm/openai. An image is an
// input_image with a data URL (detail auto), a PDF an input_file with a
// data URL and its file name.
//
// An assistant message's text is an assistant message item, its tool uses
// function_call items (call_id, name, the input as the arguments), its
// reasoning blocks reasoning items, all in the message's order. Function
// calls go without their item ids (fc_…): the API pairs an output with its
// call by call_id, and refuses a call whose id names a reasoning item the
// request lacks. Arguments the model produced malformed are sent as a JSON
// object that quotes them, {"_raw_input": "<the bytes as text>"}.
//
// Tools are function tools with strict: false, as llm/openai's are (the
// Responses API's default is true, whose validation refuses the schemas of
// most tools). Request.Output is text.format json_schema, strict as the
// request says. OneToolCall is parallel_tool_calls: false, sent only with
// orca's tools.
//
// # Web search
//
// Request.WebSearch adds the API's own web_search tool to the request's
// tools, with WebSearch.Allowed as its filters.allowed_domains; the API
// has no blocked domains, so Blocked is not sent (the caller filters
// Sources by it, as llm.WebSearch says). MaxUses is max_tool_calls, which
// caps the calls of the API's own tools, web_search the only one orca
// sends. The API searches while it answers: its web_search_call output
// items are no tool uses, take no block, and do not go back in later
// requests. Response.Sources are the pages the answer cites (the
// url_citation annotations of its text, title and URL), in order, then
// the pages a search's action lists (action.sources, URL alone: orca
// asks for them with include web_search_call.action.sources), each URL
// once. The text keeps what the model wrote,
// inline citations included.
//
// # Stop reasons and refusals
//
// A completed response stops with llm.StopToolUse when it called a
// function, llm.StopEndTurn otherwise; an incomplete one with
// llm.StopMaxTokens when max_output_tokens cut it, llm.StopRefusal when the
// content filter did. A refusal content part is not text: the response
// stops with llm.StopRefusal and the refusal goes to Response.Refusal. So
// does a response that failed on a safety policy (codes bio_policy,
// misalignment_policy_violation, image_content_policy_violation), with the
// API's message.
//
// # Usage
//
// The API's input_tokens counts every input token; orca's counts are
// disjoint, so InputTokens is input_tokens less the cached tokens
// (CacheReadTokens) and the tokens written to the cache (CacheWriteTokens).
// OutputTokens includes the reasoning tokens, which are billed as output.
//
// # Errors
//
// Failures are *llm.Error values, classified as llm/openai classifies
// them: code context_length_exceeded, or a message about the context
// window, is KindPromptTooLong — also as the error event the API sends
// inside a 200 stream for an input too long; other 400, 404, 409, 413 and
// 422 are KindInvalidRequest; 401 and 403 KindAuthentication; 429
// KindRateLimited, with RetryAfter from the retry-after-ms or retry-after
// header, except insufficient_quota (KindAuthentication); 503 and 529
// KindOverloaded; other 5xx KindServer. An error event or a failed response
// inside the stream is classified by its code and type. Messages keep the
// API's words.
package responses

import (
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
	// was built with Model.
	DefaultModel = "gpt-6.1-terra"
	// DefaultMaxTokens caps the output of requests that set no MaxTokens;
	// a reasoning model's reasoning counts against it.
	DefaultMaxTokens = 8192
	// APIKeyEnv holds the API key when none is given with APIKey.
	APIKeyEnv = "OPENAI_API_KEY"
	// BaseURLEnv holds the base URL when none is given with BaseURL.
	BaseURLEnv = "OPENAI_BASE_URL"
	// ErrorPrefix starts the output of a failed tool call's result.
	ErrorPrefix = "Error: "
)

// ModelAliases returns the OpenAI models that stand in for Claude Code's
// model aliases on OpenAI's API, by tier, as llm/openai's do: sonnet is
// DefaultModel (terra), opus the larger sol of the same generation, haiku
// the newest luna.
func ModelAliases() map[string]string {
	return map[string]string{
		"sonnet": DefaultModel,
		"opus":   sdk.ChatModelGPT6_1Sol,
		"haiku":  sdk.ChatModelGPT6Luna,
	}
}

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
	summary   string
	store     bool
}

// APIKey sets the API key (default: $OPENAI_API_KEY).
func APIKey(key string) Option { return func(c *config) { c.apiKey = &key } }

// BaseURL sets the API's base URL, such as http://localhost:8000/v1 for a
// local server of the Responses API (default: $OPENAI_BASE_URL, else
// OpenAI's). It wins over the environment. With a base URL, the API key
// may be empty: local servers need none.
func BaseURL(url string) Option { return func(c *config) { c.baseURL = url } }

// Model sets the model of requests that name none (default DefaultModel).
func Model(name string) Option { return func(c *config) { c.model = name } }

// MaxTokens sets the output cap of requests that set none (default
// DefaultMaxTokens); it is sent as max_output_tokens.
func MaxTokens(n int) Option { return func(c *config) { c.maxTokens = n } }

// HTTPClient sets the HTTP client the SDK sends with (default: the SDK's).
// Whoever gives it owns it, idle connections included.
func HTTPClient(h *http.Client) Option { return func(c *config) { c.http = h } }

// ReasoningEffort sets reasoning.effort on every request ("none",
// "minimal", "low", "medium", "high", "xhigh", …; the model decides which
// it takes). Without it the model's default stands. It makes every model
// a reasoning one (see the package documentation).
func ReasoningEffort(effort string) Option { return func(c *config) { c.effort = effort } }

// ReasoningSummary asks for summaries of the reasoning ("auto", "concise"
// or "detailed"), which reasoning blocks then carry in Thinking. Without
// it none is asked for: OpenAI gives them to verified organisations only.
// It makes every model a reasoning one (see the package documentation).
func ReasoningSummary(summary string) Option { return func(c *config) { c.summary = summary } }

// Store sets store on every request (default false): whether OpenAI keeps
// the responses, for 30 days, for its dashboard and evals. Reasoning
// travels with the conversation either way.
func Store(store bool) Option { return func(c *config) { c.store = store } }

// Client is the Responses API llm.Client. It is safe for concurrent use.
type Client struct {
	sdk       sdk.Client
	model     string
	maxTokens int
	effort    string
	summary   string
	store     bool
}

var _ llm.Client = (*Client)(nil)

// New returns a client. It needs an API key (APIKey, or $OPENAI_API_KEY)
// unless a base URL is given (BaseURL, or $OPENAI_BASE_URL); without
// either it fails with an error that says which variable to set.
func New(opts ...Option) (*Client, error) {
	cfg := config{model: DefaultModel, maxTokens: DefaultMaxTokens}
	for _, o := range opts {
		o(&cfg)
	}
	key := os.Getenv(APIKeyEnv)
	if cfg.apiKey != nil {
		key = *cfg.apiKey
	}
	baseURL := cfg.baseURL
	if baseURL == "" {
		baseURL = os.Getenv(BaseURLEnv)
	}
	if key == "" && baseURL == "" {
		return nil, fmt.Errorf("openai responses: no API key: set %s (a server at your own base URL may need none: set %s)", APIKeyEnv, BaseURLEnv)
	}
	if cfg.maxTokens < 1 {
		return nil, fmt.Errorf("openai responses: MaxTokens %d: want at least 1", cfg.maxTokens)
	}
	if cfg.model == "" {
		cfg.model = DefaultModel
	}
	sdkOpts := []option.RequestOption{
		// orca retries, outside llm_execution; a retry here would be an
		// attempt no middleware sees.
		option.WithMaxRetries(0),
		option.WithMiddleware(errorBodies),
	}
	if key != "" {
		sdkOpts = append(sdkOpts, option.WithAPIKey(key))
	}
	if baseURL != "" {
		sdkOpts = append(sdkOpts, option.WithBaseURL(baseURL))
	}
	if cfg.http != nil {
		sdkOpts = append(sdkOpts, option.WithHTTPClient(cfg.http))
	}
	return &Client{
		sdk:       sdk.NewClient(sdkOpts...),
		model:     cfg.model,
		maxTokens: cfg.maxTokens,
		effort:    cfg.effort,
		summary:   cfg.summary,
		store:     cfg.store,
	}, nil
}

// NativeOutput implements llm.OutputNative: Request.Output is sent as
// text.format json_schema, strict when the request says so.
func (*Client) NativeOutput() bool { return true }

// SearchesWeb implements llm.WebSearcher: Request.WebSearch is sent as the
// Responses API's web_search tool, which OpenAI's current models take; not
// with ReasoningEffort "minimal", with which OpenAI documents that GPT-5
// does not search.
func (c *Client) SearchesWeb(string) bool { return c.effort != "minimal" }

// Generate streams one response; see llm.Client.
func (c *Client) Generate(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("openai responses: %w", err)
	}
	params, err := c.params(req)
	if err != nil {
		return nil, err
	}
	body, err := c.body(params, req)
	if err != nil {
		return nil, err
	}
	stream := c.sdk.Responses.NewStreaming(ctx, params, option.WithRequestBody("application/json", body))
	defer stream.Close()
	acc := newAccumulator(onDelta)
	for stream.Next() {
		if err := acc.add(stream.Current()); err != nil {
			if ctx.Err() != nil {
				return nil, classify(ctx, err)
			}
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
		return nil, &llm.Error{Kind: llm.KindServer, Message: "the stream ended before the response completed", Err: errors.New("openai responses: stream cut short")}
	}
	return acc.response(), nil
}
