package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
)

// Totals returns the session's totals, from the store.
func (s *LiveSession) Totals(ctx context.Context) (store.Totals, error) {
	return s.r.store.Totals(ctx, s.id)
}

// SetBudget overrides the runtime's budget for this session (nil clears
// the override). The override is stored: it outlives this handle.
func (s *LiveSession) SetBudget(ctx context.Context, b *budget.Limits) error {
	return s.r.store.SetBudget(ctx, s.id, b)
}

// ChangeBudget sets the limits c names on the session's stored override,
// starting from the budget in force (the other dimensions keep theirs),
// and returns the budget now in force. A limit c would set below zero is
// refused, naming its dimension, and nothing changes. Changes through one
// LiveSession do not lose each other.
func (s *LiveSession) ChangeBudget(ctx context.Context, c budget.Change) (budget.Limits, error) {
	if d, ok := c.Negative(); ok {
		return budget.Limits{}, fmt.Errorf("session %s: the %s budget must not be negative", s.id, strings.ReplaceAll(string(d), "_", " "))
	}
	s.budgetMu.Lock()
	defer s.budgetMu.Unlock()
	l, err := s.Budget(ctx)
	if err != nil || c.IsZero() {
		return l, err
	}
	l = c.Apply(l)
	if err := s.SetBudget(ctx, &l); err != nil {
		return budget.Limits{}, err
	}
	return l, nil
}

// Budget returns the budget in force: the session's override, else the
// runtime's.
func (s *LiveSession) Budget(ctx context.Context) (budget.Limits, error) {
	b, err := s.r.store.Budget(ctx, s.id)
	if err != nil {
		return budget.Limits{}, err
	}
	if b == nil {
		return s.r.rt.Definition().Budget, nil
	}
	return *b, nil
}

// spentTotals is a turn's spending as totals.
func spentTotals(u llm.Usage, sp budget.Spent) store.Totals {
	return store.Totals{Usage: u, CostUSD: sp.CostUSD, ToolCalls: sp.ToolCalls, WallTime: sp.WallTime}
}
