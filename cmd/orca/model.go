package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/provider"
)

// scriptProvider is the CLI's own provider: the scripted model of
// llm/script, answering from the --script file. llm/provider does not
// build it: it needs a script, which is no provider setting.
const scriptProvider = "script"

// providerList names every provider the CLI can use: "anthropic, openai and
// script".
func providerList() string {
	names := append(provider.Names(), scriptProvider)
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// model is the model a run uses, resolved: the client, what completes it
// once the session's id is known (nil: nothing), and its configuration.
type model struct {
	client llm.Client
	fill   func(sessionID string)
	cfg    provider.Config
}

// chooseModel resolves the provider, model and base URL — from the flags,
// then the project's settings, then the user's, then the environment
// (ORCA_PROVIDER, ORCA_MODEL) — and builds the client. --script without
// --provider chooses the script provider. Every problem is a usage error
// that says how to fix it.
func (f *agentFlags) chooseModel(cmd *cobra.Command, s *config.Settings, o options) (*model, error) {
	fl := cmd.Flags()
	flags := provider.Config{Provider: f.provider, Model: f.model, BaseURL: f.baseURL}
	if flags.Provider == "" && f.script != "" {
		flags.Provider = scriptProvider
	}
	project := provider.Config{Provider: s.ProjectModel.Provider, Model: s.ProjectModel.Model, BaseURL: s.ProjectModel.BaseURL}
	user := provider.Config{Provider: s.UserModel.Provider, Model: s.UserModel.Model, BaseURL: s.UserModel.BaseURL}
	cfg := provider.Resolve(flags, project, user, o.env)

	// from says where the provider was chosen, for the errors.
	from := ""
	switch cfg.Provider {
	case f.provider:
		from = "--provider"
	case flags.Provider:
		from = "--script"
	case project.Provider:
		from = `"provider" of the project's settings`
	case user.Provider:
		from = `"provider" of your settings`
	default:
		from = provider.ProviderEnv
	}
	switch {
	case cfg.Provider == "":
		return nil, usageErrorf("no model provider chosen: name one with --provider NAME, the %s environment variable, "+
			"or \"provider\" in a settings file (the providers are %s; script, the scripted model, needs --script FILE)",
			provider.ProviderEnv, providerList())
	case cfg.Provider == scriptProvider:
		if f.script == "" {
			return nil, usageErrorf("the script provider (chosen by %s) needs --script FILE, a JSON file of the model's responses", from)
		}
		if fl.Changed("base-url") {
			return nil, usageErrorf("--base-url is for the %s providers, not script", strings.Join(provider.Names(), " and "))
		}
		client, fill, err := loadScript(f.script)
		if err != nil {
			return nil, err
		}
		return &model{client: client, fill: fill, cfg: cfg}, nil
	case !slices.Contains(provider.Names(), cfg.Provider):
		return nil, usageErrorf("unknown provider %q (chosen by %s): the providers are %s", cfg.Provider, from, providerList())
	case f.script != "":
		return nil, usageErrorf("--script is for the script provider, but the provider is %s (chosen by %s): drop --script or give --provider script", cfg.Provider, from)
	}
	client, err := provider.New(cfg)
	if err != nil {
		return nil, usageErrorf("%v (the provider %s was chosen by %s)", err, cfg.Provider, from)
	}
	return &model{client: client, cfg: cfg}, nil
}
