package budget_test

import (
	"math"
	"testing"
	"time"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/llm"
)

func TestExhausted(t *testing.T) {
	l := budget.Limits{Tokens: 100, CostUSD: 1, ToolCalls: 3, WallTime: time.Minute}
	for _, tc := range []struct {
		s    budget.Spent
		want budget.Dimension
	}{
		{budget.Spent{Tokens: 99, CostUSD: 0.99, ToolCalls: 2, WallTime: 59 * time.Second}, ""},
		{budget.Spent{Tokens: 100}, budget.Tokens},
		{budget.Spent{CostUSD: 1.5}, budget.Cost},
		{budget.Spent{ToolCalls: 3}, budget.ToolCalls},
		{budget.Spent{WallTime: time.Minute}, budget.WallTime},
		{budget.Spent{Tokens: 500, ToolCalls: 9}, budget.Tokens},
	} {
		d, ok := l.Exhausted(tc.s)
		if d != tc.want || ok != (tc.want != "") {
			t.Errorf("Exhausted(%+v) = %q, %v; want %q", tc.s, d, ok, tc.want)
		}
	}
	if _, ok := (budget.Limits{}).Exhausted(budget.Spent{Tokens: 1 << 40}); ok {
		t.Error("zero limits exhausted")
	}
}

func TestCost(t *testing.T) {
	u := llm.Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CacheReadTokens: 2_000_000}
	got := budget.DefaultPrices.Cost("claude-sonnet-4-5-20250929", u) // family prefix
	if want := 3 + 1.5 + 0.6; math.Abs(got-want) > 1e-9 {
		t.Errorf("cost = %v, want %v", got, want)
	}
	if got := budget.DefaultPrices.Cost("gpt-4o-mini-2024", u); math.Abs(got-(0.15+0.06+0.15)) > 1e-9 {
		t.Errorf("longest prefix: cost = %v", got)
	}
	if got := budget.DefaultPrices.Cost("script", u); got != 0 {
		t.Errorf("unknown model costs %v", got)
	}
	own := budget.Prices{"script": {Input: 1, Output: 1}}
	if got := own.Cost("script", llm.Usage{InputTokens: 500_000, OutputTokens: 500_000}); got != 1 {
		t.Errorf("override: %v", got)
	}
}

// Dated and family names find the longest entry that prefixes them.
func TestDefaultPricesLongestPrefix(t *testing.T) {
	million := llm.Usage{InputTokens: 1_000_000}
	for model, want := range map[string]float64{
		"claude-sonnet-5-5":          2,
		"claude-sonnet-5-5-20261001": 2,
		"claude-sonnet-5":            2,
		"claude-opus-5-5":            4,
		"claude-opus-5":              5,
		"claude-opus-4-5-20251101":   5,
		"claude-opus-4-1-20250805":   15,
		"claude-opus-4-20250514":     15,
		"claude-haiku-4-5-20251001":  1,
		"claude-haiku-5-5":           0.1,
		"gpt-6.1-terra":              1,
		"gpt-6.1-sol":                2,
		"gpt-5.4-nano-2026-03-17":    0.2,
		"gpt-5.4":                    2.5,
		"gpt-5-mini-2025-08-07":      0.25,
		"gpt-4o-2024-11-20":          2.5,
		"llama3.2":                   0,
	} {
		if got := budget.DefaultPrices.Cost(model, million); math.Abs(got-want) > 1e-9 {
			t.Errorf("a million input tokens of %s cost %v, want %v", model, got, want)
		}
	}
	// Cache writes and reads are priced apart from input.
	u := llm.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000, CacheReadTokens: 1_000_000, CacheWriteTokens: 1_000_000}
	if got, want := budget.DefaultPrices.Cost("claude-sonnet-5-5", u), 2+10+0.1+2.5; math.Abs(got-want) > 1e-9 {
		t.Errorf("claude-sonnet-5-5: %v, want %v", got, want)
	}
}

func TestPricesWith(t *testing.T) {
	base := budget.Prices{"a": {Input: 1}, "b": {Input: 2}}
	got := base.With(budget.Prices{"b": {Input: 20}, "c": {Input: 30}})
	if len(got) != 3 || got["a"].Input != 1 || got["b"].Input != 20 || got["c"].Input != 30 {
		t.Errorf("With = %v", got)
	}
	if base["b"].Input != 2 || len(base) != 2 {
		t.Errorf("With modified its receiver: %v", base)
	}
	if got := budget.DefaultPrices.With(nil); len(got) != len(budget.DefaultPrices) {
		t.Errorf("With(nil) has %d entries", len(got))
	}
}

func TestChange(t *testing.T) {
	l := budget.Limits{Tokens: 10, CostUSD: 1, ToolCalls: 3, WallTime: time.Minute}
	if got := (budget.Change{}).Apply(l); got != l || !(budget.Change{}).IsZero() {
		t.Errorf("an empty change changed %+v to %+v", l, got)
	}
	zero := int64(0)
	if got, want := (budget.Change{ToolCalls: &zero, WallTime: new(time.Hour)}).Apply(l), (budget.Limits{Tokens: 10, CostUSD: 1, WallTime: time.Hour}); got != want {
		t.Errorf("Apply = %+v, want %+v", got, want)
	}
	for _, c := range []struct {
		change budget.Change
		want   budget.Dimension
	}{
		{budget.Change{Tokens: new(int64(-1)), CostUSD: new(-1.0)}, budget.Tokens},
		{budget.Change{CostUSD: new(math.NaN())}, budget.Cost},
		{budget.Change{ToolCalls: new(int64(-2))}, budget.ToolCalls},
		{budget.Change{WallTime: new(-time.Nanosecond)}, budget.WallTime},
		{budget.Change{Tokens: &zero, CostUSD: new(0.0)}, ""},
	} {
		if d, _ := c.change.Negative(); d != c.want {
			t.Errorf("Negative(%+v) = %q, want %q", c.change, d, c.want)
		}
	}
}
