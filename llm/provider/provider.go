// Package provider builds the model client that a configuration names —
// Anthropic's Messages API (on Anthropic's API or Google Cloud's Vertex
// AI), OpenAI's Chat Completions (and the servers that speak it, and Azure
// OpenAI) and Responses API, Google's Gemini API and Vertex AI, AWS
// Bedrock's Converse API — and resolves that configuration from its
// sources.
//
// Resolve combines, most important first: command-line flags, project
// settings, user settings, and the environment (ORCA_PROVIDER,
// ORCA_MODEL). API keys come from the providers' own variables
// (ANTHROPIC_API_KEY, OPENAI_API_KEY, AZURE_OPENAI_API_KEY) unless a Config
// carries one; Vertex AI's credentials are Google's Application Default
// Credentials.
//
// ModelAliases is the one table of what the model aliases of subagent
// definitions (model: sonnet) stand for with a configuration.
//
// The scripted model of tests and demos (llm/script) is not built here:
// it needs a script, which is no provider setting.
package provider

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/url"
	"strings"
	"time"

	"github.com/orca-agent/orca/catalog"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/anthropic"
	"github.com/orca-agent/orca/llm/bedrock"
	"github.com/orca-agent/orca/llm/gemini"
	"github.com/orca-agent/orca/llm/openai"
	"github.com/orca-agent/orca/llm/openai/responses"
)

// The providers New builds. Vertex is Gemini's models on Google Cloud's
// Vertex AI (a project and a region, Application Default Credentials);
// AnthropicVertex Claude's there, through the Messages API
// (anthropic.Vertex). OpenAIResponses is OpenAI's models on the Responses
// API (reasoning kept between the calls of a turn). Azure is Azure
// OpenAI's Chat Completions (openai.Azure): its model is the name of one
// of the user's deployments, and it has no default.
const (
	Anthropic       = "anthropic"
	AnthropicVertex = "anthropic-vertex"
	OpenAI          = "openai"
	OpenAIResponses = "openai-responses"
	Azure           = "azure"
	Gemini          = "gemini"
	Vertex          = "vertex"
	Bedrock         = "bedrock"
)

// The environment variables Resolve reads.
const (
	ProviderEnv = "ORCA_PROVIDER"
	ModelEnv    = "ORCA_MODEL"
)

// The environment variables ModelAliases reads for Anthropic: Claude
// Code's, which pin its model aliases to model ids. SmallFastModelEnv is
// the older name of HaikuModelEnv, which wins over it.
const (
	SonnetModelEnv    = "ANTHROPIC_DEFAULT_SONNET_MODEL"
	OpusModelEnv      = "ANTHROPIC_DEFAULT_OPUS_MODEL"
	HaikuModelEnv     = "ANTHROPIC_DEFAULT_HAIKU_MODEL"
	SmallFastModelEnv = "ANTHROPIC_SMALL_FAST_MODEL"
)

// Names returns the providers New builds.
func Names() []string {
	return []string{Anthropic, AnthropicVertex, OpenAI, OpenAIResponses, Azure, Gemini, Vertex, Bedrock}
}

// Config says which model to use and how to reach it. Empty fields take
// the provider's defaults.
type Config struct {
	// Provider is one of Names.
	Provider string
	// Model is the model of requests that name none (DefaultModel of the
	// provider if empty; for Azure, a deployment's name, which New needs).
	Model string
	// BaseURL is where the API is (the provider's variable, such as
	// ANTHROPIC_BASE_URL, else the provider's own API, if empty). For
	// OpenAI, a base URL makes the API key optional: local servers need
	// none. For Azure it is the resource's endpoint (else
	// AZURE_OPENAI_ENDPOINT); for AnthropicVertex it replaces the region's
	// endpoint.
	BaseURL string
	// APIKey is the API key (the provider's variable, such as
	// ANTHROPIC_API_KEY, if empty); AnthropicVertex takes none.
	APIKey string
	// MaxTokens caps the output of requests that set no cap.
	MaxTokens int
}

// DefaultModel returns the model a provider uses when none is named, ""
// for an unknown provider and for Azure, whose models are the user's
// deployments. On Vertex AI, Claude's current models have the ids they
// have on Anthropic's API (bare, without the @date of Claude 4.5 and
// older), so AnthropicVertex's default is Anthropic's.
func DefaultModel(provider string) string {
	switch provider {
	case Anthropic, AnthropicVertex:
		return anthropic.DefaultModel
	case OpenAI:
		return openai.DefaultModel
	case OpenAIResponses:
		return responses.DefaultModel
	case Gemini, Vertex:
		return gemini.DefaultModel
	case Bedrock:
		return bedrock.DefaultModel
	}
	return ""
}

// An Option is a choice of New's beside its Config.
type Option func(*options)

type options struct {
	keyFunc func(ctx context.Context) (string, error)
	keyTTL  time.Duration
}

// KeyFunc gives the Anthropic client an API key helper (Claude Code's
// apiKeyHelper: anthropic.KeyFunc), used when neither the Config nor the
// environment has a key. The OpenAI client has no such thing: it ignores it.
func KeyFunc(fn func(ctx context.Context) (string, error), ttl time.Duration) Option {
	return func(o *options) { o.keyFunc, o.keyTTL = fn, ttl }
}

// New returns the client of cfg.Provider. An unknown or missing provider
// is an error that lists the known ones; a missing API key (or project,
// region, endpoint, deployment), one that names what to set.
func New(cfg Config, with ...Option) (llm.Client, error) {
	var o options
	for _, f := range with {
		f(&o)
	}
	switch cfg.Provider {
	case Anthropic:
		opts := optionsOf(cfg, anthropic.APIKey, anthropic.BaseURL, anthropic.Model, anthropic.MaxTokens)
		if o.keyFunc != nil {
			opts = append(opts, anthropic.KeyFunc(o.keyFunc, o.keyTTL))
		}
		return anthropic.New(opts...)
	case AnthropicVertex:
		return anthropic.New(append(optionsOf(cfg, anthropic.APIKey, anthropic.BaseURL, anthropic.Model, anthropic.MaxTokens), anthropic.Vertex("", ""))...)
	case Azure:
		if cfg.Model == "" {
			return nil, fmt.Errorf("provider: azure needs the name of your Azure OpenAI deployment as the model: name it with --model, %s or \"model\" in settings", ModelEnv)
		}
		return openai.New(append(optionsOf(cfg, openai.APIKey, openai.BaseURL, openai.Model, openai.MaxTokens), openai.Azure("", ""))...)
	case OpenAI:
		return openai.New(optionsOf(cfg, openai.APIKey, openai.BaseURL, openai.Model, openai.MaxTokens)...)
	case OpenAIResponses:
		return responses.New(optionsOf(cfg, responses.APIKey, responses.BaseURL, responses.Model, responses.MaxTokens)...)
	case Gemini, Vertex:
		opts := optionsOf(cfg, gemini.APIKey, gemini.BaseURL, gemini.Model, gemini.MaxTokens)
		if cfg.Provider == Vertex {
			opts = append(opts, gemini.Vertex("", ""))
		}
		return gemini.New(opts...)
	case Bedrock:
		return bedrock.New(context.Background(), optionsOf(cfg, bedrock.APIKey, bedrock.BaseURL, bedrock.Model, bedrock.MaxTokens)...)
	case "":
		return nil, fmt.Errorf("provider: none chosen (the providers are %s)", strings.Join(Names(), ", "))
	}
	return nil, fmt.Errorf("provider: unknown provider %q (the providers are %s)", cfg.Provider, strings.Join(Names(), ", "))
}

// optionsOf is cfg as a client package's options: its key, base URL,
// model and output cap, those cfg sets.
func optionsOf[O any](cfg Config, key, baseURL, model func(string) O, maxTokens func(int) O) []O {
	var opts []O
	if cfg.APIKey != "" {
		opts = append(opts, key(cfg.APIKey))
	}
	if cfg.BaseURL != "" {
		opts = append(opts, baseURL(cfg.BaseURL))
	}
	if cfg.Model != "" {
		opts = append(opts, model(cfg.Model))
	}
	if cfg.MaxTokens > 0 {
		opts = append(opts, maxTokens(cfg.MaxTokens))
	}
	return opts
}

// Resolve returns the configuration to use: each field from the most
// important source that sets it — flags, then project settings, then user
// settings, then the environment (env(ProviderEnv), env(ModelEnv); env
// may be nil) — and the provider's default model if no source names one.
//
// The provider is resolved first. A source that names another provider
// than the resolved one gives nothing else either: its model, base URL and
// key are for that provider. (User settings for OpenAI do not leak a model
// name into a project that chose Anthropic.)
func Resolve(flags, project, user Config, env func(string) string) Config {
	var fromEnv Config
	if env != nil {
		fromEnv = Config{Provider: env(ProviderEnv), Model: env(ModelEnv)}
	}
	sources := []Config{flags, project, user, fromEnv}
	var out Config
	for _, s := range sources {
		if s.Provider != "" {
			out.Provider = s.Provider
			break
		}
	}
	for _, s := range sources {
		if s.Provider != "" && s.Provider != out.Provider {
			continue
		}
		if out.Model == "" {
			out.Model = s.Model
		}
		if out.BaseURL == "" {
			out.BaseURL = s.BaseURL
		}
		if out.APIKey == "" {
			out.APIKey = s.APIKey
		}
		if out.MaxTokens <= 0 {
			out.MaxTokens = s.MaxTokens
		}
	}
	if out.Model == "" {
		out.Model = DefaultModel(out.Provider)
	}
	return out
}

// ModelAliases returns the table of what the model names of subagent
// definitions (Claude Code's sonnet, opus and haiku, and any others the
// overrides name) stand for under cfg, a resolved configuration. Each
// name takes the first of:
//
//   - overrides: the user's own table (the settings' "modelAliases");
//   - for Anthropic and AnthropicVertex, Claude Code's variables, read
//     with env (which may be nil): SonnetModelEnv, OpusModelEnv,
//     HaikuModelEnv, then SmallFastModelEnv for haiku (with Vertex AI,
//     Claude Code's users set them to Vertex's ids);
//   - the provider's table in orca's model catalog
//     (catalog.Catalog.Aliases): anthropic's (also through a gateway's
//     base URL: gateways serve Claude's model ids; and on Vertex AI, where
//     the current models have the same ids), gemini's (also on Vertex),
//     bedrock's, or openai's on OpenAI's own API only. Any other base URL for
//     OpenAI (cfg.BaseURL, else env(openai.BaseURLEnv)) is a server whose
//     models are its own — often only the one the user named — so it has
//     no table; nor has Azure, whose models are the user's deployments,
//     named as the user chose, nor any other provider (script).
//
// A name the table leaves out is the runtime's to handle
// (agent.Definition.ModelAliases: an alias runs on its parent's model).
// The table is the caller's to change.
func ModelAliases(cfg Config, overrides map[string]string, env func(string) string) map[string]string {
	if env == nil {
		env = func(string) string { return "" }
	}
	out := map[string]string{}
	switch cfg.Provider {
	case Anthropic, AnthropicVertex:
		maps.Copy(out, catalog.Default().Aliases(Anthropic))
		for alias, vars := range map[string][]string{
			"sonnet": {SonnetModelEnv},
			"opus":   {OpusModelEnv},
			"haiku":  {HaikuModelEnv, SmallFastModelEnv},
		} {
			for _, v := range vars {
				if m := strings.TrimSpace(env(v)); m != "" {
					out[alias] = m
					break
				}
			}
		}
	case OpenAI, OpenAIResponses:
		if openAIsOwn(cmp.Or(cfg.BaseURL, env(openai.BaseURLEnv))) {
			maps.Copy(out, catalog.Default().Aliases(OpenAI))
		}
	case Gemini, Vertex:
		maps.Copy(out, catalog.Default().Aliases(Gemini))
	case Bedrock:
		maps.Copy(out, catalog.Default().Aliases(Bedrock))
	}
	for alias, m := range overrides {
		if m != "" {
			out[alias] = m
		}
	}
	return out
}

// openAIsOwn reports whether base, a base URL ("" for the default), is
// OpenAI's own API.
func openAIsOwn(base string) bool {
	if base == "" {
		return true
	}
	u, err := url.Parse(base)
	return err == nil && strings.EqualFold(u.Hostname(), "api.openai.com")
}
