// Package bedrock is the llm.Client of the models on Amazon Bedrock,
// through its Converse API (ConverseStream), on the official AWS SDK for
// Go v2 (github.com/aws/aws-sdk-go-v2/service/bedrockruntime). Converse
// is one request shape for every Bedrock model that takes messages:
// Anthropic's Claude, Amazon's Nova, Meta's Llama, Mistral, DeepSeek,
// OpenAI's open-weight models…
//
// # Credentials and region
//
// New reads the standard AWS configuration (config.LoadDefaultConfig):
// the region from $AWS_REGION (or $AWS_DEFAULT_REGION, or the profile's),
// the credentials from the standard chain — $AWS_ACCESS_KEY_ID and
// $AWS_SECRET_ACCESS_KEY, the profile of $AWS_PROFILE in the shared
// config and credentials files (IAM Identity Center after aws sso login,
// a role to assume, a credential process), web identity, the container's
// or the EC2 instance's role. A Bedrock API key ($AWS_BEARER_TOKEN_BEDROCK,
// or APIKey) is sent as a bearer token instead of a signature. New
// retrieves the credentials once, so that a client without any fails at
// once, with an error that says what to set.
//
// # What is sent
//
// The system prompt is the system content block; tools are tool
// specifications, their schemas JSON; tool uses and results are toolUse
// and toolResult blocks (status "error" for a failed call; an empty
// result "(no output)", as Converse refuses blank text), the images and
// PDFs a result showed inside its toolResult; the user's images (PNG,
// JPEG, GIF, WebP) and PDFs are image and document blocks (a document's
// name, which Bedrock restricts to letters, digits, single spaces,
// hyphens, parentheses and brackets, is made from the file's name). A
// tool use's input that is not a JSON object is quoted in one,
// {"_raw_input": "…"}, as llm/anthropic does; a tool use's id that
// Converse would refuse (another provider's) is replaced by one made from
// its digest, in the use and in its result. Consecutive messages of one
// role are sent as one: Converse wants the roles to alternate. A request
// without tools cannot carry tool blocks (Converse refuses them without a
// tool configuration): its tool uses and results are sent as text.
// Request.Output and Request.OneToolCall are not sent: Converse has no
// form of them that every model takes (the runtime offers a final-answer
// tool instead).
//
// For Anthropic's models (an id or ARN naming anthropic.claude-…, but
// Claude 3, Claude 3.5 Sonnet and older, for which Bedrock caches
// nothing) the request carries cache points where llm/anthropic puts its
// cache breakpoints: after the tool specifications, after the system
// prompt, and after the last message before the newest user turn. Other
// models get none.
//
// # Reasoning
//
// Reasoning content comes back as llm.BlockThinking (its text and
// signature) or llm.BlockRedactedThinking (the redacted bytes, base64,
// in Signature); both go back unchanged, in place, in later requests, as
// Claude requires in a conversation of tool calls. Reasoning without a
// signature is not sent back. Thinking and AdaptiveThinking ask Claude to
// think.
//
// # Usage and stops
//
// Bedrock counts disjoint tokens, as orca does: inputTokens are those
// neither read from nor written to the cache (cacheReadInputTokens,
// cacheWriteInputTokens). Stop reasons end_turn, tool_use, max_tokens
// (and model_context_window_exceeded) and stop_sequence are orca's;
// guardrail_intervened and content_filtered are refusals, their reason in
// Response.Refusal. Response.ID is the request's id (x-amzn-RequestId),
// what AWS support knows the call by.
//
// # Errors
//
// Failures are *llm.Error values, classified by the exception Bedrock
// names, in the HTTP answer or inside the stream: ThrottlingException and
// ServiceQuotaExceededException KindRateLimited;
// ServiceUnavailableException and ModelNotReadyException KindOverloaded;
// InternalServerException, ModelStreamErrorException,
// ModelTimeoutException and ModelErrorException KindServer;
// AccessDeniedException, UnrecognizedClientException,
// ExpiredTokenException and the other failures of a signature or a token
// KindAuthentication; a ValidationException that says the input is too
// long KindPromptTooLong; other ValidationExceptions KindInvalidRequest.
// A stream that ends before messageStop is a retryable server error. The
// SDK never retries: orca does.
package bedrock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/schemas"
	"github.com/aws/smithy-go/auth/bearer"
	"github.com/aws/smithy-go/transport/http/protocol/restjson1"

	"github.com/orca-agent/orca/llm"
)

// Defaults, and the environment variables New and the SDK read.
const (
	// DefaultModel answers requests that name no model, unless the client
	// was built with Model: Claude Sonnet 4.6 through the cross-region
	// inference profile of the US regions, the newest Claude that Bedrock
	// serves through Converse (Anthropic's page "Claude on Amazon Bedrock
	// (legacy)", whose models are the ones InvokeModel and Converse take).
	// Elsewhere, name the profile of your geography (eu., jp., apac.) or
	// global. with Model.
	DefaultModel = "us.anthropic.claude-sonnet-4-6"
	// DefaultMaxTokens caps the output of requests that set no MaxTokens.
	DefaultMaxTokens = 8192
	// MinThinkingBudget is the smallest budget Claude accepts for extended
	// thinking.
	MinThinkingBudget = 1024

	// RegionEnv names the region (the SDK also reads AWS_DEFAULT_REGION,
	// and the profile's region).
	RegionEnv = "AWS_REGION"
	// ProfileEnv names the profile of the shared configuration files
	// (~/.aws/config, ~/.aws/credentials) to take credentials and region
	// from.
	ProfileEnv = "AWS_PROFILE"
	// AccessKeyIDEnv and SecretAccessKeyEnv hold an access key (with
	// AWS_SESSION_TOKEN for temporary ones).
	AccessKeyIDEnv     = "AWS_ACCESS_KEY_ID"
	SecretAccessKeyEnv = "AWS_SECRET_ACCESS_KEY"
	// APIKeyEnv holds a Bedrock API key when none is given with APIKey.
	APIKeyEnv = "AWS_BEARER_TOKEN_BEDROCK"
	// BaseURLEnv holds Bedrock Runtime's endpoint when none is given with
	// BaseURL (the SDK reads it, and AWS_ENDPOINT_URL for every service).
	BaseURLEnv = "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"
)

// Option configures a Client.
type Option func(*options)

type options struct {
	model     string
	maxTokens int
	http      *http.Client
	baseURL   string
	region    string
	apiKey    string
	creds     aws.CredentialsProvider
	thinking  thinking
}

type thinking struct {
	adaptive bool
	budget   int
}

// Model sets the model of requests that name none (default
// DefaultModel): a model id, an inference profile's id or an ARN.
func Model(name string) Option { return func(o *options) { o.model = name } }

// MaxTokens sets the output cap of requests that set none (default
// DefaultMaxTokens).
func MaxTokens(n int) Option { return func(o *options) { o.maxTokens = n } }

// HTTPClient sets the HTTP client the SDK sends to Bedrock with (default:
// the SDK's, which trusts $AWS_CA_BUNDLE's certificates besides the
// system's; the credential providers keep it). Whoever gives it owns it,
// idle connections included.
func HTTPClient(h *http.Client) Option { return func(o *options) { o.http = h } }

// BaseURL sets Bedrock Runtime's endpoint (default: $AWS_ENDPOINT_URL_BEDROCK_RUNTIME,
// else the region's): a VPC endpoint, a proxy, a test server. Requests
// are still signed for the region.
func BaseURL(url string) Option { return func(o *options) { o.baseURL = url } }

// Region sets the AWS region (default: $AWS_REGION, $AWS_DEFAULT_REGION
// or the profile's).
func Region(name string) Option { return func(o *options) { o.region = name } }

// APIKey sets a Bedrock API key, sent as a bearer token in place of the
// AWS credentials (default: $AWS_BEARER_TOKEN_BEDROCK).
func APIKey(key string) Option { return func(o *options) { o.apiKey = key } }

// Credentials sets the provider of the AWS credentials requests are
// signed with, in place of the standard chain: a role assumed in code,
// say. New retrieves them once.
func Credentials(p aws.CredentialsProvider) Option { return func(o *options) { o.creds = p } }

// Thinking asks Claude models for extended thinking with a budget of
// reasoning tokens (at least MinThinkingBudget). Thinking tokens count
// against the output cap, so each request's cap is raised by the budget.
// Other models are sent no such field (the ones that reason do so
// unasked). Claude models that only think adaptively refuse a budget; use
// AdaptiveThinking for them.
func Thinking(budgetTokens int) Option {
	return func(o *options) { o.thinking = thinking{budget: budgetTokens} }
}

// AdaptiveThinking lets Claude models decide when and how much to think.
func AdaptiveThinking() Option {
	return func(o *options) { o.thinking = thinking{adaptive: true} }
}

// Client is the Bedrock llm.Client. It is safe for concurrent use.
type Client struct {
	sdk       *bedrockruntime.Client
	model     string
	maxTokens int
	thinking  thinking
}

var _ llm.Client = (*Client)(nil)

// New returns a client for the region and credentials of the standard AWS
// configuration (see the package documentation), read with ctx. Without a
// region, or without credentials, it fails with an error that says what
// to set.
func New(ctx context.Context, opts ...Option) (*Client, error) {
	o := options{model: DefaultModel, maxTokens: DefaultMaxTokens}
	for _, f := range opts {
		f(&o)
	}
	if o.maxTokens < 1 {
		return nil, fmt.Errorf("bedrock: MaxTokens %d: want at least 1", o.maxTokens)
	}
	if t := o.thinking; !t.adaptive && t.budget != 0 && t.budget < MinThinkingBudget {
		return nil, fmt.Errorf("bedrock: Thinking budget %d: want at least %d tokens", t.budget, MinThinkingBudget)
	}
	if o.model == "" {
		o.model = DefaultModel
	}
	if o.apiKey != "" && strings.HasPrefix(strings.ToLower(o.baseURL), "http:") {
		return nil, fmt.Errorf("bedrock: BaseURL %s: an API key is sent over HTTPS only", o.baseURL)
	}
	var load []func(*config.LoadOptions) error
	if o.region != "" {
		load = append(load, config.WithRegion(o.region))
	}
	if o.creds != nil {
		load = append(load, config.WithCredentialsProvider(o.creds))
	}
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("bedrock: the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("bedrock: no AWS region: set %s (e.g. us-east-1), or a region in the profile %s names", RegionEnv, ProfileEnv)
	}
	apiKey := o.apiKey
	if apiKey == "" {
		apiKey = os.Getenv(APIKeyEnv)
	}
	if apiKey == "" {
		if cfg.Credentials == nil {
			return nil, noCredentials(errors.New("no credential provider"))
		}
		if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("bedrock: the AWS credentials: %w", ctx.Err())
			}
			return nil, noCredentials(err)
		}
	}
	sdk := bedrockruntime.NewFromConfig(cfg, func(so *bedrockruntime.Options) {
		// orca retries, outside llm_execution; a retry here would be an
		// attempt no middleware sees. (The credential providers keep the
		// SDK's retries.)
		so.Retryer = aws.NopRetryer{}
		so.RetryMaxAttempts = 1
		if o.http != nil {
			so.HTTPClient = o.http
		}
		so.HTTPClient = ownBody{so.HTTPClient}
		if o.baseURL != "" {
			so.BaseEndpoint = aws.String(o.baseURL)
		}
		if o.apiKey != "" {
			// As the SDK does with $AWS_BEARER_TOKEN_BEDROCK.
			so.BearerAuthTokenProvider = bearer.StaticTokenProvider{Token: bearer.Token{Value: o.apiKey}}
			so.AuthSchemePreference = []string{"httpBearerAuth"}
		}
	})
	return &Client{sdk: sdk, model: o.model, maxTokens: o.maxTokens, thinking: o.thinking}, nil
}

func noCredentials(err error) error {
	return fmt.Errorf("bedrock: no AWS credentials (%v): set %s (a profile of ~/.aws/config, e.g. after aws sso login), %s and %s, or %s (a Bedrock API key)",
		err, ProfileEnv, AccessKeyIDEnv, SecretAccessKeyEnv, APIKeyEnv)
}

// Generate streams one answer through ConverseStream; see llm.Client.
func (c *Client) Generate(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bedrock: %w", err)
	}
	in, err := c.input(req)
	if err != nil {
		return nil, err
	}
	out, err := c.sdk.ConverseStream(ctx, in, ownCodec)
	if err != nil {
		return nil, classify(ctx, err)
	}
	stream := out.GetStream()
	defer stream.Close()
	acc := newAccumulator(onDelta)
	events := stream.Events()
read:
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				break read
			}
			acc.add(ev)
		case <-ctx.Done():
			return nil, classify(ctx, ctx.Err())
		}
	}
	// The SDK's reader may report a failure of the connection after the
	// stream's last event; an answer that came whole stands. (The read on
	// a closed connection that did so, also before the last event, was
	// net/http's, closing the connection over a request body the SDK had
	// closed: ownBody.)
	if err := stream.Err(); err != nil && !acc.whole {
		return nil, classify(ctx, err)
	}
	if ctx.Err() != nil {
		return nil, classify(ctx, ctx.Err())
	}
	if !acc.stopped {
		return nil, &llm.Error{Kind: llm.KindServer, Message: "the stream ended before messageStop", Err: errors.New("bedrock: stream cut short")}
	}
	resp := acc.response()
	resp.Model = *in.ModelId
	resp.ID, _ = awsmiddleware.GetRequestIDMetadata(out.ResultMetadata)
	return resp, nil
}

// ownCodec gives a call a protocol of its own. The SDK's (bedrockruntime
// v1.63.13 on smithy-go v1.28.9) keeps one event-stream codec per client,
// its decoding state shared by every stream open on it: concurrent calls
// race on it (aws/smithy-go#714).
func ownCodec(o *bedrockruntime.Options) {
	o.Protocol = restjson1.New(schemas.AmazonBedrockFrontendService)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ownBody sends each request with a body of its own, read whole first.
// The SDK closes a request's body once the response has come; net/http
// may still be reading it then (after the last byte of a body of known
// length, it reads once more, to see that nothing follows), and a read
// of a closed body makes it close the connection — under the stream of
// the answer still being read ("use of closed network connection", about
// one call in a hundred under load). The requests are small JSON.
type ownBody struct{ next bedrockruntime.HTTPClient }

func (c ownBody) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the request: %w", err)
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		req.ContentLength = int64(len(b))
	}
	return c.next.Do(req)
}
