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
