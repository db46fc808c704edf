package config_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/policy"
)

// Approvals are kept by workspace, runtime and session, in the user's
// configuration folder; concurrent grants lose nothing.
func TestApprovalStore(t *testing.T) {
	cfgDir, ws := setup(t)
	other := t.TempDir()
	ctx := context.Background()
	s, err := config.NewApprovalStore(cfgDir, ws)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Grant(ctx, "rt", "s1", policy.ScopeSession, []string{"Edit(src/**)"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, r := range []string{"Bash(go test:*)", "Bash(make:*)", "Bash(go test:*)"} {
		wg.Go(func() {
			if err := s.Grant(ctx, "rt", "", policy.ScopeAgent, []string{r}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := s.Rules(ctx, "rt", "s1")
	slices.Sort(got)
	if err != nil || !slices.Equal(got, []string{"Bash(go test:*)", "Bash(make:*)", "Edit(src/**)"}) {
		t.Errorf("rules of rt/s1: %q, %v", got, err)
	}
	if got, _ := s.Rules(ctx, "rt", "s2"); len(got) != 2 {
		t.Errorf("rules of rt/s2: %q, want the agent's two", got)
	}
	if got, _ := s.Rules(ctx, "other-runtime", "s1"); len(got) != 0 {
		t.Errorf("another runtime got %q", got)
	}
	o, _ := config.NewApprovalStore(cfgDir, other)
	if got, _ := o.Rules(ctx, "rt", "s1"); len(got) != 0 {
		t.Errorf("another workspace got %q", got)
	}
	if err := s.Grant(ctx, "rt", "s1", policy.ScopeOnce, []string{"x"}); err == nil {
		t.Error("a once approval was stored")
	}
	// Listed by scope, and revoked from both.
	agentRules, sessionRules, err := s.Granted(ctx, "rt", "s1")
	slices.Sort(agentRules)
	if err != nil || !slices.Equal(agentRules, []string{"Bash(go test:*)", "Bash(make:*)"}) || !slices.Equal(sessionRules, []string{"Edit(src/**)"}) {
		t.Errorf("granted: %q, %q, %v", agentRules, sessionRules, err)
	}
	for rule, want := range map[string]bool{"Edit(src/**)": true, "Bash(make:*)": true, "Bash(never:*)": false} {
		if removed, err := s.Revoke(ctx, "rt", "s1", rule); removed != want || err != nil {
			t.Errorf("Revoke(%s) = %v, %v", rule, removed, err)
		}
	}
	if got, _ := s.Rules(ctx, "rt", "s1"); !slices.Equal(got, []string{"Bash(go test:*)"}) {
		t.Errorf("after revoking: %q", got)
	}
	// A store that cannot be read is an error, not an empty list that
	// would hide the problem.
	os.WriteFile(filepath.Join(cfgDir, "orca", "approvals.json"), []byte("{oops"), 0o600)
	if _, err := s.Rules(ctx, "rt", "s1"); err == nil {
		t.Error("a corrupt store read as empty")
	}
}
