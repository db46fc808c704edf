// Package catalog is what orca knows of the models it talks to, per
// provider: the context window, the longest answer, list prices, and what
// a request may show them (images, PDFs) or ask of them (tools,
// reasoning, prompt caching). It is data, not code: models.json, from the
// providers' own pages (each entry names its source), overridable by the
// settings' "models".
//
// orca compacts before a model's window, prices usage by the model that
// served it, and describes images and PDFs to a model that takes none
// instead of sending them. A model the catalog lacks is taken as able,
// and learnt from its answers (a refusal of images, a prompt too long).
package catalog

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

//go:embed models.json
var modelsJSON []byte

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Input      float64 `json:"input,omitempty"`
	Output     float64 `json:"output,omitempty"`
	CacheRead  float64 `json:"cache_read,omitempty"`
	CacheWrite float64 `json:"cache_write,omitempty"`
}

// Model is what the catalog says of one model. A capability left nil is
// not known: orca takes the model as able, and learns otherwise from its
// answers.
type Model struct {
	// Provider is the API shape the model is reached through: anthropic,
	// openai, gemini.
	Provider string `json:"provider"`
	// Name is the API's model id, undated: a dated id (claude-sonnet-4-
	// 20250514) finds its family by prefix.
	Name string `json:"name"`
	// ServedBy is the vendor of a model reached through another's API
	// shape (deepseek through the OpenAI shape).
	ServedBy string `json:"served_by,omitempty"`
	// ContextWindow and MaxOutput are in tokens (0: not known).
	ContextWindow int64  `json:"context_window,omitempty"`
	MaxOutput     int64  `json:"max_output,omitempty"`
	Price         *Price `json:"price,omitempty"`
	Images        *bool  `json:"images,omitempty"`
	PDFs          *bool  `json:"pdfs,omitempty"`
	Tools         *bool  `json:"tools,omitempty"`
	Reasoning     *bool  `json:"reasoning,omitempty"`
	Caching       *bool  `json:"caching,omitempty"`
	// Source is the page the facts come from.
	Source string `json:"source,omitempty"`
}

// TakesImages reports whether a request may show the model images: false
// only when the catalog says it takes none.
func (m Model) TakesImages() bool { return m.Images == nil || *m.Images }

// TakesPDFs reports whether a request may show the model PDFs: false only
// when the catalog says it takes none.
func (m Model) TakesPDFs() bool { return m.PDFs == nil || *m.PDFs }

// Catalog is a set of models. It is never modified once made: With makes
// another.
type Catalog struct {
	models []Model
	// aliases are, by provider, the models Claude Code's model aliases
	// (sonnet, opus, haiku) stand for.
	aliases map[string]map[string]string
}

// Default returns the catalog orca ships (models.json).
var Default = sync.OnceValue(func() *Catalog {
	c, err := Parse(modelsJSON)
	if err != nil {
		panic("catalog: models.json: " + err.Error()) // a test keeps it valid
	}
	return c
})

// Parse reads a catalog in models.json's form: {"models": [Model, …],
// "aliases": {provider: {alias: model}}}. A
// model without a provider or a name, a negative number, or a second
// entry of the same provider and name is an error naming it.
func Parse(data []byte) (*Catalog, error) {
	var f struct {
		Version int                          `json:"version"`
		AsOf    string                       `json:"as_of"`
		Aliases map[string]map[string]string `json:"aliases"`
		Models  []Model                      `json:"models"`
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	seen := map[[2]string]bool{}
	for i, m := range f.Models {
		if m.Provider == "" {
			return nil, fmt.Errorf("models[%d]: %q has no provider", i, m.Name)
		}
		if err := m.Check(); err != nil {
			return nil, fmt.Errorf("models[%d]: %w", i, err)
		}
		k := [2]string{m.Provider, m.Name}
		if seen[k] {
			return nil, fmt.Errorf("models[%d]: %s %s is listed twice", i, m.Provider, m.Name)
		}
		seen[k] = true
	}
	for provider, table := range f.Aliases {
		for alias, m := range table {
			if provider == "" || alias == "" || m == "" {
				return nil, fmt.Errorf("aliases: %q of %q stands for %q: want a provider, an alias and a model", alias, provider, m)
			}
		}
	}
	return &Catalog{models: f.Models, aliases: f.Aliases}, nil
}

// Aliases returns the models Claude Code's model aliases (sonnet, opus,
// haiku: subagents' "model:") stand for on provider — an API shape
// (anthropic, openai, gemini) or bedrock —; nil if the catalog has no
// table for it. The map is the caller's.
func (c *Catalog) Aliases(provider string) map[string]string {
	return maps.Clone(c.aliases[provider])
}

// Check reports what is wrong with m, naming it: no name, a negative
// number.
func (m Model) Check() error {
	switch {
	case m.Name == "":
		return fmt.Errorf("a model of %s has no name", m.Provider)
	case m.ContextWindow < 0 || m.MaxOutput < 0:
		return fmt.Errorf("%s: a negative token count", strings.TrimSpace(m.Provider+" "+m.Name))
	case m.Price != nil && (m.Price.Input < 0 || m.Price.Output < 0 || m.Price.CacheRead < 0 || m.Price.CacheWrite < 0):
		return fmt.Errorf("%s: a negative price", strings.TrimSpace(m.Provider+" "+m.Name))
	}
	return nil
}

// With returns a catalog of c's models and over's: an entry of over
// replaces c's of the same provider and name — of every provider, for an
// entry that names none —, its fields left empty taken from the entry it
// replaces (a setting may give a model's window alone). An entry that
// replaces none is added.
func (c *Catalog) With(over ...Model) *Catalog {
	out := &Catalog{models: slices.Clone(c.models), aliases: c.aliases}
	for _, o := range over {
		replaced := false
		for i, m := range out.models {
			if m.Name == o.Name && (o.Provider == "" || m.Provider == o.Provider) {
				out.models[i], replaced = merge(m, o), true
			}
		}
		if !replaced {
			out.models = append(out.models, o)
		}
	}
	return out
}

func merge(m, o Model) Model {
	m.ServedBy = cmpOr(o.ServedBy, m.ServedBy)
	m.ContextWindow = cmpOr(o.ContextWindow, m.ContextWindow)
	m.MaxOutput = cmpOr(o.MaxOutput, m.MaxOutput)
	m.Price = cmpOr(o.Price, m.Price)
	m.Images = cmpOr(o.Images, m.Images)
	m.PDFs = cmpOr(o.PDFs, m.PDFs)
	m.Tools = cmpOr(o.Tools, m.Tools)
	m.Reasoning = cmpOr(o.Reasoning, m.Reasoning)
	m.Caching = cmpOr(o.Caching, m.Caching)
	m.Source = cmpOr(o.Source, m.Source)
	return m
}

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}

// Models returns the catalog's models, in its order.
func (c *Catalog) Models() []Model { return slices.Clone(c.models) }

// Lookup returns the model named name of provider ("" for any): the entry
// of that exact name, else the one whose name is the longest prefix of
// name followed by "-" or "@" (claude-sonnet-4-20250514 is claude-sonnet-4,
// claude-opus-4-1 is not claude-opus-4's) — or, for any provider, the
// first provider's in the catalog's order that has one.
//
// A Bedrock model id names its model after a region's prefix and the
// vendor's, with a version suffix (us.anthropic.claude-sonnet-4-6,
// anthropic.claude-haiku-4-5-20251001-v1:0): it is looked up as the
// model it names, for any provider, when the catalog has no entry of its
// own.
func (c *Catalog) Lookup(provider, name string) (Model, bool) {
	if name == "" {
		return Model{}, false
	}
	if m, ok := c.lookup(provider, name); ok {
		return m, true
	}
	if inner, ok := bedrockModel(name); ok {
		return c.lookup("", inner)
	}
	return Model{}, false
}

// bedrockModel returns the model a Bedrock model id names: without its
// region's and vendor's prefixes and its version suffix.
func bedrockModel(id string) (string, bool) {
	rest := id
	if geo, after, ok := strings.Cut(rest, "."); ok && slices.Contains([]string{"us", "eu", "apac", "jp", "au", "ca", "global", "us-gov"}, geo) {
		rest = after
	}
	vendor, model, ok := strings.Cut(rest, ".")
	if !ok || !slices.Contains([]string{"anthropic", "amazon", "meta", "mistral", "cohere", "ai21", "deepseek", "openai", "qwen", "google"}, vendor) {
		return "", false
	}
	if i := strings.LastIndex(model, "-v"); i > 0 && strings.Trim(model[i+2:], "0123456789:") == "" && len(model) > i+2 {
		model = model[:i]
	}
	return model, model != ""
}

func (c *Catalog) lookup(provider, name string) (Model, bool) {
	best := -1
	for i, m := range c.models {
		if provider != "" && m.Provider != provider {
			continue
		}
		if m.Name == name {
			return m, true
		}
		if family(name, m.Name) && (best < 0 || len(m.Name) > len(c.models[best].Name)) {
			best = i
		}
	}
	if best < 0 {
		return Model{}, false
	}
	return c.models[best], true
}

// family reports whether name is a version of the model family f: f
// followed by a date, a release number or a tag ("-20250514",
// "-2025-08-07", "@001", "-latest", "-preview-05-20") — not by another
// family's name ("gpt-5-mini" is not "gpt-5"'s).
func family(name, f string) bool {
	rest, ok := strings.CutPrefix(name, f)
	if !ok || rest == "" || rest[0] != '-' && rest[0] != '@' {
		return false
	}
	rest = rest[1:]
	for _, tag := range []string{"latest", "preview", "exp"} {
		if r, ok := strings.CutPrefix(rest, tag); ok {
			rest = strings.TrimPrefix(r, "-")
			if rest == "" {
				return true
			}
		}
	}
	// Digits and dashes only: claude-opus-4-1 is one of claude-opus-4's
	// too, which is why Lookup takes the longest family.
	return rest != "" && strings.Trim(rest, "0123456789-") == ""
}
