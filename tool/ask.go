package tool

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/orca-agent/orca/llm"
)

// Asker asks a model a question of a tool's own, outside the
// conversation (WebFetch's prompt over the page it fetched): the runtime
// hands one to each call of a tool that declares Traits.AsksModel. The
// runtime's asks the model it keeps for such questions (a small one, where
// the definition names one), through its model middleware, and counts
// what the question spends in the turn's usage and cost.
type Asker interface {
	// Ask sends system and question as one request and returns the
	// model's text answer.
	Ask(ctx context.Context, system, question string) (string, error)
	// SearchWeb is Ask with the provider's own web search (Anthropic's
	// web search tool, OpenAI's Responses web_search, …), limited as ws
	// says: the answer, and the pages the search found (llm.Source).
	// ErrNoWebSearch when the provider has none.
	SearchWeb(ctx context.Context, system, question string, ws llm.WebSearch) (string, []llm.Source, error)
}

// ErrNoWebSearch: the model's provider has no web search of its own
// (llm.SearchesWeb).
var ErrNoWebSearch = errors.New("the model's provider has no web search of its own")

// Permitter tells a tool whether a permission rule allows a call it did
// not make yet: where a call reaches further than its input said
// (WebFetch redirected to another host, or to an address in the user's
// own network), the tool asks before it goes there. The runtime hands one
// to each call of a tool that declares Traits.ChecksRules.
type Permitter interface {
	// Permits reports whether a call of the tool with input is allowed by
	// a rule — the policy's, one an "always allow" approval kept, or one
	// granted for the turn — and not only by the permission mode, and no
	// rule denies it.
	Permits(input json.RawMessage) bool
}

type (
	askerKey     struct{}
	permitterKey struct{}
)

// WithAsker returns ctx carrying a.
func WithAsker(ctx context.Context, a Asker) context.Context {
	return context.WithValue(ctx, askerKey{}, a)
}

// AskerFrom returns the Asker carried by ctx, or nil.
func AskerFrom(ctx context.Context) Asker {
	a, _ := ctx.Value(askerKey{}).(Asker)
	return a
}

// WithPermitter returns ctx carrying p.
func WithPermitter(ctx context.Context, p Permitter) context.Context {
	return context.WithValue(ctx, permitterKey{}, p)
}

// PermitterFrom returns the Permitter carried by ctx, or nil.
func PermitterFrom(ctx context.Context) Permitter {
	p, _ := ctx.Value(permitterKey{}).(Permitter)
	return p
}
