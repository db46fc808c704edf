package provider_test

import (
	"fmt"

	"github.com/orca-agent/orca/llm/provider"
)

// The project's settings choose Anthropic; the user's settings are for a
// local OpenAI-compatible server, so their model is not taken; a flag
// names the model.
func ExampleResolve() {
	flags := provider.Config{Model: "claude-opus-5-5"}
	project := provider.Config{Provider: "anthropic"}
	user := provider.Config{Provider: "openai", Model: "llama3.2", BaseURL: "http://localhost:11434/v1"}
	env := map[string]string{"ORCA_MODEL": "claude-haiku-5-5"}

	cfg := provider.Resolve(flags, project, user, func(k string) string { return env[k] })
	fmt.Printf("%s %s %q\n", cfg.Provider, cfg.Model, cfg.BaseURL)

	cfg = provider.Resolve(provider.Config{}, project, user, nil)
	fmt.Printf("%s %s\n", cfg.Provider, cfg.Model)
	// Output:
	// anthropic claude-opus-5-5 ""
	// anthropic claude-sonnet-5-5
}
