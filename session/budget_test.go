package session_test

import (
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/toolset"
)

// ChangeBudget starts from the budget in force (the runtime's, before the
// session has an override of its own), keeps the dimensions it does not
// name, refuses a negative limit without changing anything, and loses no
// change made at the same time through the same session.
func TestChangeBudget(t *testing.T) {
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "budgets", Budget: budget.Limits{Tokens: 1000, WallTime: time.Hour}},
		agent.Collaborators{Client: script.New(), Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	st := store.NewMemory()
	defer st.Close()
	ctx := t.Context()
	s, err := session.NewRouter(rt, st, nil).Open(ctx, "s", session.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.End(ctx, "")

	calls := int64(5)
	l, err := s.ChangeBudget(ctx, budget.Change{ToolCalls: &calls})
	if want := (budget.Limits{Tokens: 1000, ToolCalls: 5, WallTime: time.Hour}); err != nil || l != want {
		t.Fatalf("ChangeBudget(tool calls 5) = %+v, %v; want %+v", l, err, want)
	}
	if stored, _ := st.Budget(ctx, "s"); stored == nil || *stored != l {
		t.Errorf("stored override %+v, want %+v", stored, l)
	}
	lift := int64(0)
	if l, err = s.ChangeBudget(ctx, budget.Change{Tokens: &lift}); err != nil || l.Tokens != 0 || l.ToolCalls != 5 || l.WallTime != time.Hour {
		t.Errorf("lifting the token cap: %+v, %v", l, err)
	}

	for _, c := range []budget.Change{{Tokens: new(int64(-1))}, {CostUSD: new(math.NaN())}, {CostUSD: new(-0.5)}, {WallTime: new(-time.Second)}} {
		if _, err := s.ChangeBudget(ctx, c); err == nil || !strings.Contains(err.Error(), "must not be negative") {
			t.Errorf("ChangeBudget(%+v): %v, want it refused", c, err)
		}
	}
	if in, _ := s.Budget(ctx); in != l {
		t.Errorf("a refused change changed the budget: %+v, want %+v", in, l)
	}

	// Two writers, each raising a dimension of its own: both end where
	// their last change put them.
	var wg sync.WaitGroup
	for _, set := range []func(i int64) budget.Change{
		func(i int64) budget.Change { return budget.Change{Tokens: &i} },
		func(i int64) budget.Change { return budget.Change{ToolCalls: &i} },
	} {
		wg.Go(func() {
			for i := int64(1); i <= 200; i++ {
				if _, err := s.ChangeBudget(ctx, set(i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if in, _ := s.Budget(ctx); in.Tokens != 200 || in.ToolCalls != 200 {
		t.Errorf("after concurrent changes: %+v, want tokens and tool calls 200", in)
	}
}
