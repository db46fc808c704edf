package session

import (
	"context"
	"fmt"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/store"
)

// Approvals adapts a store to agent.Approvals, so that "always allow"
// approvals persist with their reach.
func Approvals(st store.Store) agent.Approvals { return storeApprovals{st} }

type storeApprovals struct{ st store.Store }

func (a storeApprovals) Grant(ctx context.Context, runtimeID, sessionID string, scope policy.Scope, rules []string) error {
	if scope == policy.ScopeAgent {
		sessionID = ""
	} else if scope != policy.ScopeSession {
		return fmt.Errorf("session: approvals: scope %q is not stored", scope)
	}
	for _, r := range rules {
		if err := a.st.AddApproval(ctx, store.Approval{RuntimeID: runtimeID, SessionID: sessionID, Rule: r}); err != nil {
			return err
		}
	}
	return nil
}

func (a storeApprovals) Rules(ctx context.Context, runtimeID, sessionID string) ([]string, error) {
	as, err := a.st.Approvals(ctx, runtimeID, sessionID)
	if err != nil {
		return nil, err
	}
	rules := make([]string, len(as))
	for i, x := range as {
		rules[i] = x.Rule
	}
	return rules, nil
}

// ParkedTurn returns the turn that parked the session's latest parked
// call, if nothing has run since (the transcript's last records are that
// turn's, and it has not answered); "" if there is none. Run(ctx, "",
// WithTurnID(id), Retry()) goes on with it once the call is decided; while
// the call waits, Run says so (ErrAwaitingApproval).
func (s *LiveSession) ParkedTurn(ctx context.Context) (string, error) {
	calls, err := s.r.store.ParkedCalls(ctx, store.ParkFilter{SessionID: s.id})
	if err != nil || len(calls) == 0 {
		return "", err
	}
	p := calls[len(calls)-1]
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.TurnID == "" || p.TurnID != s.lastTurn {
		return "", nil // a later turn has run
	}
	if n := len(s.transcript); n > 0 {
		if last := s.transcript[n-1]; last.Role == llm.RoleAssistant && len(last.ToolUses()) == 0 {
			return "", nil // it went on, and answered
		}
	}
	return p.TurnID, nil
}

// Parked returns the call the session's last turn parked that no one has
// decided on yet, if any.
func (s *LiveSession) Parked() *store.ParkedCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.parked == nil {
		return nil
	}
	p := *s.parked
	return &p
}

// Decide approves or denies a parked call of this session's store (by its
// id), as orca approve and orca deny do; the session's next turn runs an
// approved call first.
func (r *Router) Decide(ctx context.Context, id string, approve bool, by, note string) (store.ParkedCall, error) {
	status := store.ParkDenied
	if approve {
		status = store.ParkApproved
	}
	return r.store.SetParkStatus(ctx, id, status, by, note)
}
