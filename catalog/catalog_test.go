package catalog_test

import (
	"strings"
	"testing"

	"github.com/orca-agent/orca/catalog"
)

// The catalog orca ships parses, and each entry is whole enough to use:
// a source, a window, prices for the models orca prices.
func TestDefault(t *testing.T) {
	c := catalog.Default()
	ms := c.Models()
	if len(ms) < 30 {
		t.Fatalf("%d models", len(ms))
	}
	providers := map[string]int{}
	for _, m := range ms {
		providers[m.Provider]++
		if m.Source == "" || !strings.HasPrefix(m.Source, "https://") {
			t.Errorf("%s %s: source %q", m.Provider, m.Name, m.Source)
		}
		if m.ContextWindow == 0 && m.Name != "claude-mythos-5-2" { // not published yet
			t.Errorf("%s %s: no context window", m.Provider, m.Name)
		}
		if m.ContextWindow > 0 && m.MaxOutput > m.ContextWindow {
			t.Errorf("%s %s: answers (%d) longer than its window (%d)", m.Provider, m.Name, m.MaxOutput, m.ContextWindow)
		}
	}
	for _, p := range []string{"anthropic", "openai", "gemini"} {
		if providers[p] == 0 {
			t.Errorf("no %s models", p)
		}
	}
	if m, ok := c.Lookup("", "claude-sonnet-4-20250514"); !ok || m.Name != "claude-sonnet-4" || !m.TakesImages() {
		t.Errorf("claude-sonnet-4-20250514: %+v %v", m, ok)
	}
	// Bedrock's default model is its Claude.
	if m, ok := c.Lookup("bedrock", "us.anthropic.claude-sonnet-4-6"); !ok || m.Name != "claude-sonnet-4-6" {
		t.Errorf("us.anthropic.claude-sonnet-4-6: %+v %v", m, ok)
	}
	// At least one model the catalog knows takes no images: what it is for.
	if !strings.Contains(names(ms, func(m catalog.Model) bool { return !m.TakesImages() }), "deepseek-v4-pro") {
		t.Errorf("no text-only model: %s", names(ms, func(m catalog.Model) bool { return !m.TakesImages() }))
	}
}

func names(ms []catalog.Model, keep func(catalog.Model) bool) string {
	var out []string
	for _, m := range ms {
		if keep(m) {
			out = append(out, m.Name)
		}
	}
	return strings.Join(out, ", ")
}

const sample = `{"version": 1, "models": [
  {"provider": "anthropic", "name": "claude-opus-4", "context_window": 200000, "max_output": 32000, "images": true, "source": "https://a"},
  {"provider": "anthropic", "name": "claude-opus-4-1", "context_window": 200000, "max_output": 32000, "source": "https://b"},
  {"provider": "openai", "name": "gpt-5", "context_window": 400000, "images": true, "source": "https://c"},
  {"provider": "openai", "name": "gpt-5-mini", "context_window": 400000, "source": "https://d"},
  {"provider": "openai", "name": "deepseek-chat", "served_by": "deepseek", "context_window": 128000, "images": false, "pdfs": false, "source": "https://e"},
  {"provider": "gemini", "name": "gemini-2.5-flash", "context_window": 1048576, "source": "https://f"}
]}`

// A model is found by its name, by its family's for a dated or tagged
// version, never by another family's; a provider narrows the search.
func TestLookup(t *testing.T) {
	c, err := catalog.Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ provider, name, want string }{
		{"", "claude-opus-4", "claude-opus-4"},
		{"", "claude-opus-4-20250514", "claude-opus-4"},
		{"", "claude-opus-4-1-20250805", "claude-opus-4-1"},
		{"", "claude-opus-4-1", "claude-opus-4-1"},
		{"", "gpt-5-2025-08-07", "gpt-5"},
		{"", "gpt-5-mini-2025-08-07", "gpt-5-mini"},
		{"", "gpt-5.2", ""},
		{"", "gpt-5-codex", ""},
		{"", "gemini-2.5-flash-preview-05-20", "gemini-2.5-flash"},
		{"", "gemini-2.5-flash-latest", "gemini-2.5-flash"},
		{"openai", "claude-opus-4", ""},
		{"anthropic", "claude-opus-4", "claude-opus-4"},
		{"", "", ""},
		{"", "llama3", ""},
		{"", "us.anthropic.claude-opus-4-1-20250805-v1:0", "claude-opus-4-1"},
		{"", "anthropic.claude-opus-4-v1", "claude-opus-4"},
		{"bedrock", "global.anthropic.claude-opus-4", "claude-opus-4"},
		{"", "us.meta.llama3-v1:0", ""},
		{"", "gpt-5.v1", ""},
	} {
		m, ok := c.Lookup(tc.provider, tc.name)
		if ok != (tc.want != "") || m.Name != tc.want {
			t.Errorf("Lookup(%q, %q) = %q %v, want %q", tc.provider, tc.name, m.Name, ok, tc.want)
		}
	}
	ds, _ := c.Lookup("", "deepseek-chat")
	if ds.TakesImages() || ds.TakesPDFs() || ds.ServedBy != "deepseek" {
		t.Errorf("deepseek-chat: %+v", ds)
	}
	// A capability the catalog does not state is taken as there.
	if m, _ := c.Lookup("", "gpt-5-mini"); !m.TakesImages() || !m.TakesPDFs() {
		t.Errorf("gpt-5-mini: %+v", m)
	}
}

// An entry of With replaces the one of the same provider and name field
// by field; a new one is added; the catalog it came from is unchanged.
func TestWith(t *testing.T) {
	c, _ := catalog.Parse([]byte(sample))
	no := false
	d := c.With(catalog.Model{Provider: "openai", Name: "gpt-5", ContextWindow: 90_000, Images: &no},
		catalog.Model{Provider: "openai", Name: "qwen3-coder", ContextWindow: 32_000})
	if m, _ := d.Lookup("", "gpt-5"); m.ContextWindow != 90_000 || m.TakesImages() || m.Source != "https://c" {
		t.Errorf("replaced: %+v", m)
	}
	if m, ok := d.Lookup("openai", "qwen3-coder"); !ok || m.ContextWindow != 32_000 {
		t.Errorf("added: %+v", m)
	}
	if m, _ := c.Lookup("", "gpt-5"); m.ContextWindow != 400_000 || !m.TakesImages() {
		t.Errorf("the original changed: %+v", m)
	}
}

// A catalog that is not whole is refused, naming the entry.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"models": [{"name": "x"}]}`, `models[0]: "x" has no provider`},
		{`{"models": [{"provider": "openai"}]}`, "has no name"},
		{`{"models": [{"provider": "openai", "name": "x", "context_window": -1}]}`, "negative"},
		{`{"models": [{"provider": "openai", "name": "x", "price": {"input": -1}}]}`, "negative price"},
		{`{"models": [{"provider": "openai", "name": "x"}, {"provider": "openai", "name": "x"}]}`, "models[1]: openai x is listed twice"},
		{`{"models": [{"provider": "openai", "name": "x", "window": 5}]}`, `unknown field "window"`},
		{`{"models": 5}`, "cannot unmarshal"},
		{`{"aliases": {"openai": {"sonnet": ""}}, "models": []}`, `aliases: "sonnet" of "openai" stands for ""`},
	} {
		if _, err := catalog.Parse([]byte(tc.json)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.json, err, tc.want)
		}
	}
}

// Claude Code's model aliases stand for a model of each provider's
// table, one the catalog knows (a Bedrock id: the model it names); the
// tables are the caller's to change.
func TestAliases(t *testing.T) {
	c := catalog.Default()
	for _, p := range []string{"anthropic", "openai", "gemini", "bedrock"} {
		table := c.Aliases(p)
		for _, alias := range []string{"sonnet", "opus", "haiku"} {
			m := table[alias]
			if m == "" {
				t.Errorf("%s has no model for %s", p, alias)
				continue
			}
			within := p
			if p == "bedrock" {
				within = ""
			}
			if _, ok := c.Lookup(within, m); !ok {
				t.Errorf("%s's %s is %s, which the catalog does not know", p, alias, m)
			}
		}
		table["sonnet"] = "changed"
		if c.Aliases(p)["sonnet"] == "changed" {
			t.Errorf("%s: the table is the catalog's own", p)
		}
	}
	if c.Aliases("azure") != nil {
		t.Errorf("azure has a table")
	}
	if got := c.With(catalog.Model{Provider: "openai", Name: "x"}).Aliases("openai")["opus"]; got != c.Aliases("openai")["opus"] {
		t.Errorf("With lost the aliases: %q", got)
	}
}
