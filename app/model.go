package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/gemini"
	"github.com/orca-agent/orca/llm/openai"
	"github.com/orca-agent/orca/llm/provider"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/store"
)

// ScriptProvider is the provider of the scripted model (llm/script), which
// answers from a script file (ModelConfig.Script). llm/provider does not
// build it: it needs a script, which is no provider setting.
const ScriptProvider = "script"

// ModelConfig chooses the model. Each field left empty comes from the
// project's settings ("provider", "model", "base_url"), else the user's,
// else the environment (ORCA_PROVIDER, ORCA_MODEL), else the provider's
// default. A Script without a Provider chooses the script provider.
type ModelConfig struct {
	Provider, Model, BaseURL string
	// Script is a script file of the scripted model's responses
	// (script.ParseFile), for the script provider.
	Script string
	// Fallbacks are the models a call falls over to when the model fails
	// it with a retryable error after its retries (agent.Fallback), in
	// order: "MODEL" is a model of the same provider, reached the same
	// way (an alias — "haiku" — stands for its model, "default" for the
	// provider's default); "PROVIDER:MODEL" one of another provider, with
	// that provider's credentials from the environment. If empty: the
	// settings' "fallbackModel" (the project's, else the user's, for the
	// provider chosen; Claude Code's files' for anthropic).
	Fallbacks []string
}

// Labels name the model configuration's fields in error messages: how the
// program lets its user set them (the CLI: "--provider NAME", "--script
// FILE", "--base-url"). By default, the Config fields' names.
type Labels struct {
	Provider, Script, BaseURL string
}

func (l Labels) withDefaults() Labels {
	if l.Provider == "" {
		l.Provider = "Config.Model.Provider"
	}
	if l.Script == "" {
		l.Script = "Config.Model.Script"
	}
	if l.BaseURL == "" {
		l.BaseURL = "Config.Model.BaseURL"
	}
	return l
}

// flagName is a label without its argument: "--provider" of "--provider NAME".
func flagName(label string) string {
	name, _, _ := strings.Cut(label, " ")
	return name
}

// ProviderList names every provider Open can use: "anthropic, openai and
// script".
func ProviderList() string {
	names := append(provider.Names(), ScriptProvider)
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// model is the resolved model: the client, what completes it once a
// session's id is known (nil: nothing; the script provider's routes are
// per session), its configuration and what the subagents' model aliases
// stand for on it.
type model struct {
	client    llm.Client
	fill      func(sessionID string, done []llm.Message)
	cfg       provider.Config
	aliases   map[string]string
	fallbacks []agent.Fallback
}

// modelAliases returns the table of the subagents' model aliases on the
// resolved configuration rc (llm/provider.ModelAliases): the settings'
// "modelAliases" — the project's over the user's, each only if its file
// names no other provider — over Claude Code's variables, from the
// settings' env block or else the environment, over the provider's own.
func modelAliases(rc provider.Config, s *config.Settings, getenv func(string) string) map[string]string {
	overrides := map[string]string{}
	for _, m := range []config.ModelSettings{s.UserModel, s.ProjectModel} {
		if m.Provider == "" || m.Provider == rc.Provider {
			maps.Copy(overrides, m.Aliases)
		}
	}
	env := func(k string) string {
		switch k {
		case provider.SonnetModelEnv, provider.OpusModelEnv, provider.HaikuModelEnv, provider.SmallFastModelEnv:
			if v, ok := s.Env[k]; ok {
				return v
			}
		}
		return getenv(k)
	}
	return provider.ModelAliases(rc, overrides, env)
}

// chooseModel resolves the model of cfg over the settings and the
// environment and builds its client (whose apiKeyHelper, if the settings
// have one, runs in dir). Every problem says how to fix it.
func chooseModel(cfg *Config, s *config.Settings, dir string, getenv func(string) string) (*model, error) {
	l := cfg.Labels.withDefaults()
	given := provider.Config{Provider: cfg.Model.Provider, Model: cfg.Model.Model, BaseURL: cfg.Model.BaseURL}
	if given.Provider == "" && cfg.Model.Script != "" {
		given.Provider = ScriptProvider
	}
	project := provider.Config{Provider: s.ProjectModel.Provider, Model: s.ProjectModel.Model, BaseURL: s.ProjectModel.BaseURL}
	user := provider.Config{Provider: s.UserModel.Provider, Model: s.UserModel.Model, BaseURL: s.UserModel.BaseURL}
	rc := provider.Resolve(given, project, user, getenv)
	aliases := modelAliases(rc, s, getenv)
	if claudes(rc.Provider) && s.ClaudeModel != "" && !modelGiven(rc.Provider, getenv, given, project, user) {
		// Claude Code's settings chose a Claude model, often by alias
		// ("model": "sonnet"), which stands for what it would for a
		// subagent.
		rc.Model = cmp.Or(aliases[s.ClaudeModel], s.ClaudeModel)
	} else if m, ok := aliases[rc.Model]; ok && m != "" {
		// An alias given as the model (--model sonnet, ORCA_MODEL=opus,
		// "model": "haiku"), as Claude Code takes it.
		rc.Model = m
	}

	// from says where the provider was chosen, for the errors.
	var from string
	switch rc.Provider {
	case cfg.Model.Provider:
		from = flagName(l.Provider)
	case given.Provider:
		from = flagName(l.Script)
	case project.Provider:
		from = `"provider" of the project's settings`
	case user.Provider:
		from = `"provider" of your settings`
	default:
		from = provider.ProviderEnv
	}
	switch {
	case rc.Provider == "":
		return nil, configErrorf("%w: name one with %s, the %s environment variable, "+
			"or \"provider\" in a settings file (the providers are %s; script, the scripted model, needs %s, a JSON file of the model's responses)",
			ErrNoProvider, l.Provider, provider.ProviderEnv, ProviderList(), l.Script)
	case rc.Provider == ScriptProvider:
		if cfg.Model.Script == "" {
			return nil, configErrorf("the script provider (chosen by %s) needs %s, a JSON file of the model's responses", from, l.Script)
		}
		if cfg.Model.BaseURL != "" {
			return nil, configErrorf("%s is for the model providers (%s), not script", flagName(l.BaseURL), strings.Join(provider.Names(), ", "))
		}
		if len(cfg.Model.Fallbacks) > 0 {
			return nil, configErrorf("fallback models are for the model providers (%s), not script", strings.Join(provider.Names(), ", "))
		}
		client, fill, err := loadScript(cfg.Model.Script)
		if err != nil {
			return nil, err
		}
		return &model{client: client, fill: fill, cfg: rc, aliases: aliases}, nil
	case !slices.Contains(provider.Names(), rc.Provider):
		return nil, configErrorf("unknown provider %q (chosen by %s): the providers are %s", rc.Provider, from, ProviderList())
	case cfg.Model.Script != "":
		return nil, configErrorf("%s is for the script provider, but the provider is %s (chosen by %s): drop %s or choose the script provider",
			flagName(l.Script), rc.Provider, from, flagName(l.Script))
	}
	var with []provider.Option
	if rc.Provider == provider.Anthropic && s.APIKeyHelper != "" {
		ttl, err := helperTTL(getenv)
		if err != nil {
			return nil, err
		}
		with = append(with, provider.KeyFunc(keyHelper(s.APIKeyHelper, dir), ttl))
	}
	client, err := provider.New(rc, with...)
	if err != nil {
		if s.UntrustedKeyHelper != "" && s.APIKeyHelper == "" {
			// The key would have come from the project's helper.
			return nil, configErrorf("%v (the provider %s was chosen by %s); the workspace's apiKeyHelper %q was not run: the workspace is not trusted (orca trust)",
				err, rc.Provider, from, s.UntrustedKeyHelper)
		}
		return nil, configErrorf("%v (the provider %s was chosen by %s)", err, rc.Provider, from)
	}
	fallbacks, err := fallbacksOf(fallbackChain(cfg.Model.Fallbacks, rc, s, aliases), rc, client)
	if err != nil {
		return nil, err
	}
	return &model{client: client, cfg: rc, aliases: aliases, fallbacks: fallbacks}, nil
}

// fallbackChain is the chain of fallback models for the resolved
// configuration rc: given (the flags'), else the settings' "fallbackModel"
// — the project's, else the user's, unless they are for another
// provider; Claude Code's for anthropic —; its aliases resolved, each
// model once, never the primary itself.
func fallbackChain(given []string, rc provider.Config, s *config.Settings, aliases map[string]string) []string {
	chain := given
	for _, m := range []config.ModelSettings{s.ProjectModel, s.UserModel} {
		if chain == nil && (m.Provider == "" || m.Provider == rc.Provider) {
			chain = m.Fallbacks
		}
	}
	if chain == nil && claudes(rc.Provider) {
		chain = s.ClaudeFallbacks
	}
	var out []string
	for _, spec := range chain {
		if p, _, ok := strings.Cut(spec, ":"); !ok || p == rc.Provider {
			m := strings.TrimPrefix(spec, rc.Provider+":")
			switch {
			case m == "default":
				m = provider.DefaultModel(rc.Provider)
			case aliases[m] != "":
				m = aliases[m]
			}
			if m == rc.Model {
				continue
			}
			spec = m
		}
		if !slices.Contains(out, spec) {
			out = append(out, spec)
		}
	}
	return out
}

// fallbacksOf builds the fallback chain specs name (ModelConfig.Fallbacks)
// for the resolved configuration rc, whose client is primary: a model of
// rc's provider goes through primary itself (the request names it);
// another provider's gets a client of its own.
func fallbacksOf(specs []string, rc provider.Config, primary llm.Client) ([]agent.Fallback, error) {
	var out []agent.Fallback
	for _, spec := range specs {
		p, m, ok := strings.Cut(spec, ":")
		if !ok {
			p, m = rc.Provider, spec
		}
		switch {
		case strings.TrimSpace(m) == "":
			return nil, configErrorf("fallback model %q: no model named (MODEL, or PROVIDER:MODEL)", spec)
		case p == rc.Provider:
			out = append(out, agent.Fallback{Client: primary, Model: m})
			continue
		case !slices.Contains(provider.Names(), p):
			return nil, configErrorf("fallback model %q: unknown provider %q (the providers are %s)", spec, p, strings.Join(provider.Names(), ", "))
		}
		client, err := provider.New(provider.Config{Provider: p, Model: m, MaxTokens: rc.MaxTokens})
		if err != nil {
			return nil, configErrorf("fallback model %q: %v", spec, err)
		}
		out = append(out, agent.Fallback{Client: client, Model: m, Provider: p})
	}
	return out, nil
}

// claudes reports whether provider p speaks Anthropic's Messages API with
// Claude's model ids, which Claude Code's settings name: Anthropic's own
// API, and Claude on Vertex AI.
func claudes(p string) bool { return p == provider.Anthropic || p == provider.AnthropicVertex }

// modelGiven reports whether a model for provider p was chosen by one of
// the configurations or the environment, rather than defaulted.
func modelGiven(p string, getenv func(string) string, cs ...provider.Config) bool {
	if getenv(provider.ModelEnv) != "" {
		return true
	}
	for _, c := range cs {
		if c.Model != "" && (c.Provider == "" || c.Provider == p) {
			return true
		}
	}
	return false
}

// loadScript reads a script file into a client that answers a session's
// model calls from it: its routes once the session's id is known (fill),
// the rest from its responses, in order.
func loadScript(path string) (llm.Client, func(sessionID string, done []llm.Message), error) {
	f, err := script.ParseFile(path)
	if err != nil {
		return nil, nil, &ConfigError{Err: err}
	}
	empty := len(f.Responses) == 0
	for _, rs := range f.Routes {
		empty = empty && len(rs) == 0
	}
	if empty {
		return nil, nil, configErrorf("script file %s has no responses: it needs {\"responses\": [...]} with one element per model response, "+
			"or {\"routes\": {\"main\": [...], \"subagent\": [...]}}", path)
	}
	c := script.New()
	return c, func(sessionID string, done []llm.Message) { f.InstallFrom(c, sessionID, f.Given(done)) }, nil
}

// ErrNoProvider is wrapped by Open's *ConfigError when nothing chose a
// model provider: a program that can do without a model (serving tools
// alone) gives Config.Client one of its own then.
var ErrNoProvider = errors.New("no model provider chosen")

// ConfigError is a configuration Open cannot use — a workspace that is no
// folder, a settings file, a rule, a model choice, an extension manifest,
// a session of another runtime — said so that its user can fix it. Nothing
// was left open.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func configErrorf(format string, args ...any) error {
	return &ConfigError{Err: fmt.Errorf(format, args...)}
}

// modelServer is where the model's API is — the host and port of the base
// URL its client uses: the configuration's, else the provider's variable
// (ANTHROPIC_BASE_URL, OPENAI_BASE_URL), else the provider's own — for the
// spans' server.address and server.port; "" for the scripted model.
func modelServer(cfg provider.Config, getenv func(string) string) (string, int) {
	base := cfg.BaseURL
	switch cfg.Provider {
	case provider.Anthropic:
		base = cmp.Or(base, getenv("ANTHROPIC_BASE_URL"), "https://api.anthropic.com")
	case provider.OpenAI, provider.OpenAIResponses:
		base = cmp.Or(base, getenv("OPENAI_BASE_URL"), "https://api.openai.com/v1")
	case provider.Azure:
		base = cmp.Or(base, getenv(openai.AzureEndpointEnv))
	case provider.Gemini:
		base = cmp.Or(base, getenv(gemini.BaseURLEnv), "https://generativelanguage.googleapis.com")
	}
	u, err := url.Parse(base)
	if base == "" || err != nil || u.Hostname() == "" {
		return "", 0
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		port = 443
		if u.Scheme == "http" {
			port = 80
		}
	}
	return u.Hostname(), port
}

// windowsKept is how long a context window learnt from a refusal is kept
// (store.Windows): a server whose window grew since gets the whole of it
// back after that, for the price of one refusal if it did not.
const windowsKept = 7 * 24 * time.Hour

// learntWindows returns the context windows runtime runtimeID learnt in
// the last windowsKept, by model (agent.Definition.Windows). A store that
// cannot say is a warning, not a failure: the windows are learnt again.
func (a *App) learntWindows(ctx context.Context, runtimeID string) map[string]int64 {
	ws, err := a.store.LearntWindows(ctx, runtimeID)
	if err != nil {
		a.logger.Warn("could not read the context windows learnt before: learning them again", "err", err)
		return nil
	}
	out := map[string]int64{}
	for _, w := range ws {
		if time.Since(w.LearntAt) < windowsKept {
			out[w.Model] = w.Tokens
		}
	}
	return out
}

// keepWindow keeps a context window the runtime learnt in the store, for
// the next process (agent.Collaborators.OnWindowLearnt).
func (a *App) keepWindow(model string, tokens int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.store.LearnWindow(ctx, store.LearntWindow{RuntimeID: a.rt.ID(), Model: model, Tokens: tokens}); err != nil {
		a.logger.Warn("could not keep the context window learnt: the next process learns it again", "model", model, "window", tokens, "err", err)
	}
}
