// Package budget says how much a session may spend and what it has spent,
// in four dimensions: tokens, cost, tool calls and wall time.
package budget

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/orca-agent/orca/catalog"
	"github.com/orca-agent/orca/llm"
)

// Dimension names what a budget limits.
type Dimension string

// The four dimensions.
const (
	Tokens    Dimension = "tokens"
	Cost      Dimension = "cost"
	ToolCalls Dimension = "tool_calls"
	WallTime  Dimension = "wall_time"
)

// Limits caps a session; a zero field is no limit in that dimension.
type Limits struct {
	Tokens    int64         `json:"tokens,omitempty"`
	CostUSD   float64       `json:"cost_usd,omitempty"`
	ToolCalls int64         `json:"tool_calls,omitempty"`
	WallTime  time.Duration `json:"wall_time,omitempty"`
}

// IsZero reports whether l limits nothing.
func (l Limits) IsZero() bool { return l == Limits{} }

// Validate reports whether l can be used: no limit is negative (or NaN).
func (l Limits) Validate() error {
	if l.Tokens < 0 || l.CostUSD < 0 || math.IsNaN(l.CostUSD) || l.ToolCalls < 0 || l.WallTime < 0 {
		return fmt.Errorf("budget %+v has a negative limit", l)
	}
	return nil
}

// Change sets some of a budget's limits and keeps the others: a nil field
// keeps the limit in force, a zero one lifts it. It is what a user asks of
// a session's budget ('orca run --budget-tokens N', PUT
// /v1/sessions/{id}/budget), applied to the budget in force by
// (*session.LiveSession).ChangeBudget.
type Change struct {
	Tokens    *int64
	CostUSD   *float64
	ToolCalls *int64
	WallTime  *time.Duration
}

// IsZero reports whether c changes nothing.
func (c Change) IsZero() bool { return c == Change{} }

// Negative returns the first dimension (tokens, cost, tool calls, wall
// time) c would set below zero, or to a cost that is not a number: a
// caller names it as its user spelled it.
func (c Change) Negative() (Dimension, bool) {
	switch {
	case c.Tokens != nil && *c.Tokens < 0:
		return Tokens, true
	case c.CostUSD != nil && !(*c.CostUSD >= 0):
		return Cost, true
	case c.ToolCalls != nil && *c.ToolCalls < 0:
		return ToolCalls, true
	case c.WallTime != nil && *c.WallTime < 0:
		return WallTime, true
	}
	return "", false
}

// Apply returns l with the limits c sets.
func (c Change) Apply(l Limits) Limits {
	if c.Tokens != nil {
		l.Tokens = *c.Tokens
	}
	if c.CostUSD != nil {
		l.CostUSD = *c.CostUSD
	}
	if c.ToolCalls != nil {
		l.ToolCalls = *c.ToolCalls
	}
	if c.WallTime != nil {
		l.WallTime = *c.WallTime
	}
	return l
}

// Spent is what a session has used.
type Spent struct {
	Tokens    int64
	CostUSD   float64
	ToolCalls int64
	WallTime  time.Duration
}

// Add returns s plus t.
func (s Spent) Add(t Spent) Spent {
	return Spent{Tokens: s.Tokens + t.Tokens, CostUSD: s.CostUSD + t.CostUSD, ToolCalls: s.ToolCalls + t.ToolCalls, WallTime: s.WallTime + t.WallTime}
}

// Exhausted returns the first dimension in which s has reached its limit
// (tokens, cost, tool calls, wall time, in that order).
func (l Limits) Exhausted(s Spent) (Dimension, bool) {
	switch {
	case l.Tokens > 0 && s.Tokens >= l.Tokens:
		return Tokens, true
	case l.CostUSD > 0 && s.CostUSD >= l.CostUSD:
		return Cost, true
	case l.ToolCalls > 0 && s.ToolCalls >= l.ToolCalls:
		return ToolCalls, true
	case l.WallTime > 0 && s.WallTime >= l.WallTime:
		return WallTime, true
	}
	return "", false
}

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Input, Output, CacheRead, CacheWrite float64
}

// Prices maps model names to prices. A model is priced by its exact name,
// else by the longest name in the table that prefixes it (so dated model
// versions find their family), else it costs nothing.
type Prices map[string]Price

// DefaultPrices are the list prices of the models orca's catalog knows
// (catalog.Default: from the providers' own pages, as of its date), for
// standard (not batch, priority or fast) requests; CacheWrite is the
// 5-minute (Anthropic) or 30-minute (OpenAI) cache write. Where a price
// depends on the prompt's length, the short-prompt price is given.
// Override entries with your own table (Prices.With) where they differ
// from what you pay.
var DefaultPrices = PricesOf(catalog.Default())

// PricesOf returns the prices c lists, by model name.
func PricesOf(c *catalog.Catalog) Prices {
	out := Prices{}
	for _, m := range c.Models() {
		if p := m.Price; p != nil {
			out[m.Name] = Price{Input: p.Input, Output: p.Output, CacheRead: p.CacheRead, CacheWrite: p.CacheWrite}
		}
	}
	return out
}

// With returns a new table: p with the entries of over added, replacing
// those of the same name. Neither table is modified.
func (p Prices) With(over Prices) Prices {
	out := make(Prices, len(p)+len(over))
	for name, price := range p {
		out[name] = price
	}
	for name, price := range over {
		out[name] = price
	}
	return out
}

// Lookup returns model's price: by its exact name, else by the longest
// name in the table that prefixes it; false if neither.
func (p Prices) Lookup(model string) (Price, bool) {
	if price, ok := p[model]; ok {
		return price, true
	}
	best, found := -1, false
	var price Price
	for name, pr := range p {
		if len(name) > best && strings.HasPrefix(model, name) {
			best, price, found = len(name), pr, true
		}
	}
	return price, found
}

// Cost returns what usage u of model costs (nothing for a model the table
// does not know).
func (p Prices) Cost(model string, u llm.Usage) float64 {
	price, _ := p.Lookup(model)
	return price.Cost(u)
}

// Cost returns what usage u costs at price p.
func (p Price) Cost(u llm.Usage) float64 {
	return (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheReadTokens)*p.CacheRead + float64(u.CacheWriteTokens)*p.CacheWrite) / 1e6
}
