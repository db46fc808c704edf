package agent

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/middleware"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/queue"
	"github.com/orca-agent/orca/subagent"
)

// Services are the collaborators every runtime of a process shares: create
// them once (NewServices) and give the same value to every runtime. A
// registry created per request sees no registrations; that is a bug this
// type exists to prevent. Closing a runtime does not close its services.
type Services struct {
	Hooks      *hook.Registry
	Middleware *middleware.Registry
	Bus        *event.Bus
	Queues     *queue.Manager
	// Tasks runs the background subagent tasks of every runtime: one
	// store, so ownership checks are what keep sessions apart.
	Tasks *subagent.Manager
}

// NewServices creates a process's services; logger receives the bus's
// warnings (slog.Default() if nil).
func NewServices(logger *slog.Logger) *Services {
	return &Services{
		Hooks:      hook.NewRegistry(),
		Middleware: middleware.NewRegistry(),
		Bus:        event.NewBus(logger),
		Queues:     queue.NewManager(),
		Tasks:      subagent.NewManager(),
	}
}

// Close stops the background tasks, then closes the event bus (after
// delivering what it holds).
func (s *Services) Close() error {
	if s == nil {
		return nil
	}
	if s.Tasks != nil {
		s.Tasks.Close()
	}
	if s.Bus != nil {
		return s.Bus.Close()
	}
	return nil
}

// Approvals keeps "always allow" approvals: permission rules a person
// approved for one session, or for every session of the runtime — never
// for another runtime. Implementations must be safe for concurrent use.
type Approvals interface {
	// Grant stores rules with scope policy.ScopeSession (for sessionID) or
	// policy.ScopeAgent (for every session of runtimeID).
	Grant(ctx context.Context, runtimeID, sessionID string, scope policy.Scope, rules []string) error
	// Rules returns the rules that reach sessionID of runtimeID.
	Rules(ctx context.Context, runtimeID, sessionID string) ([]string, error)
}

// GrantEditor is Approvals that can say what was granted, by scope, and
// take a rule back: what a person reviews and revokes (orca chat's
// /permissions). MemoryApprovals and config.ApprovalStore are ones.
type GrantEditor interface {
	Approvals
	// Granted returns the rules granted for every session of runtimeID
	// (agent) and for sessionID alone (session), in the order given.
	Granted(ctx context.Context, runtimeID, sessionID string) (agent, session []string, err error)
	// Revoke removes rule from both and reports whether it was there.
	Revoke(ctx context.Context, runtimeID, sessionID, rule string) (bool, error)
}

// MemoryApprovals is the in-memory Approvals, the default of a runtime
// given none: its approvals last as long as the runtime.
type MemoryApprovals struct {
	mu      sync.Mutex
	agent   map[string][]string    // runtime → rules
	session map[[2]string][]string // (runtime, session) → rules
}

// Grant implements Approvals.
func (m *MemoryApprovals) Grant(_ context.Context, runtimeID, sessionID string, scope policy.Scope, rules []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch scope {
	case policy.ScopeAgent:
		if m.agent == nil {
			m.agent = make(map[string][]string)
		}
		m.agent[runtimeID] = append(m.agent[runtimeID], rules...)
	case policy.ScopeSession:
		if m.session == nil {
			m.session = make(map[[2]string][]string)
		}
		k := [2]string{runtimeID, sessionID}
		m.session[k] = append(m.session[k], rules...)
	default:
		return fmt.Errorf("agent: approvals: scope %q is not stored", scope)
	}
	return nil
}

// Rules implements Approvals.
func (m *MemoryApprovals) Rules(_ context.Context, runtimeID, sessionID string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append(slices.Clone(m.agent[runtimeID]), m.session[[2]string{runtimeID, sessionID}]...), nil
}

// Granted implements GrantEditor.
func (m *MemoryApprovals) Granted(_ context.Context, runtimeID, sessionID string) (agent, session []string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.agent[runtimeID]), slices.Clone(m.session[[2]string{runtimeID, sessionID}]), nil
}

// Revoke implements GrantEditor.
func (m *MemoryApprovals) Revoke(_ context.Context, runtimeID, sessionID, rule string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{runtimeID, sessionID}
	a, s := len(m.agent[runtimeID]), len(m.session[k])
	if a > 0 {
		m.agent[runtimeID] = slices.DeleteFunc(m.agent[runtimeID], func(r string) bool { return r == rule })
	}
	if s > 0 {
		m.session[k] = slices.DeleteFunc(m.session[k], func(r string) bool { return r == rule })
	}
	return len(m.agent[runtimeID]) < a || len(m.session[k]) < s, nil
}

// approved reports whether the approved rules allow req for the turn's
// session.
func (t *turn) approved(req policy.Request) bool {
	p, added := t.withApproved()
	return added && p.Decide(req).Decision == policy.Allow
}

// withApproved returns the runtime's policy with the rules approvals kept
// for the session and the turn's grants added as allow rules (a
// default-mode policy of them when the runtime has none), and whether
// there were any. With none, it is the runtime's policy (nil if none);
// rules that do not parse add nothing.
func (t *turn) withApproved() (*policy.Policy, bool) {
	rules, err := t.rt.approvals.Rules(t.ctx, t.res.Root(), t.res.SessionID)
	if err != nil {
		rules = nil
	}
	rules = t.grants.appendTo(rules)
	if len(rules) == 0 {
		return t.rt.policy, false
	}
	allow, err := policy.ParseRules(rules, nil, nil)
	if err != nil {
		return t.rt.policy, false
	}
	var p *policy.Policy
	if t.rt.policy != nil {
		p, err = t.rt.policy.With(allow)
	} else {
		p, err = policy.New(policy.ModeDefault, allow)
	}
	if err != nil {
		return t.rt.policy, false
	}
	return p, true
}
