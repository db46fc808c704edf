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

// knownTotals are the session's totals as its last write left them (a
// step's write returns them), so that a turn need not read them from the
// store: while the session holds its lease no one else writes them. A
// write that may overlap another — a background task's spending, a
// call's outside a turn — forgets them, and the next turn reads them
// again: gen counts such forgettings, and a write that began before one
// does not keep what it returns.
type knownTotals struct {
	t   store.Totals
	ok  bool
	gen uint64
}

// spentBefore returns the session's totals: those known, else the
// store's (then known).
func (s *LiveSession) spentBefore(ctx context.Context) (store.Totals, error) {
	s.mu.Lock()
	k := s.totals
	s.mu.Unlock()
	if k.ok {
		return k.t, nil
	}
	t, err := s.r.store.Totals(ctx, s.id)
	if err == nil {
		s.noteRead(k.gen, t)
	}
	return t, err
}

// noteRead keeps t, what a read begun at generation gen found, if the
// totals are still unknown: a write that ended meanwhile (a turn's,
// beside a call outside it) knows newer ones.
func (s *LiveSession) noteRead(gen uint64, t store.Totals) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.totals.gen == gen && !s.totals.ok {
		s.totals = knownTotals{t: t, ok: true, gen: gen}
	}
}

// totalsGen returns the generation a write of the totals begins at.
func (s *LiveSession) totalsGen() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totals.gen
}

// noteTotals keeps t, what a write begun at generation gen found, unless
// the totals were forgotten since.
func (s *LiveSession) noteTotals(gen uint64, t store.Totals) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.totals.gen == gen {
		s.totals = knownTotals{t: t, ok: true, gen: gen}
	}
}

// forgetTotals forgets the totals: a write that may overlap the
// session's others, or that failed, is coming or came.
func (s *LiveSession) forgetTotals() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.totals = knownTotals{gen: s.totals.gen + 1}
}

// appendStep writes step (store.Steps.AppendStep) and keeps the totals it
// returns as those known, or forgets them if it fails.
func (s *LiveSession) appendStep(ctx context.Context, step store.Step) ([]store.Record, error) {
	gen := s.totalsGen()
	stored, sum, err := s.r.store.AppendStep(ctx, s.id, step)
	if err != nil {
		s.forgetTotals()
		return nil, err
	}
	s.noteTotals(gen, sum)
	return stored, nil
}

// addSpending adds what a background task or a call outside a turn
// spent to the session's totals: beside the turns' writes, so the
// totals known are forgotten, before and after.
func (s *LiveSession) addSpending(ctx context.Context, d store.Totals) error {
	s.forgetTotals()
	defer s.forgetTotals()
	_, err := s.r.store.AddTotals(ctx, s.id, d)
	return err
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
