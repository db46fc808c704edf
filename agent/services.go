package agent

import (
	"log/slog"
	"sync"

	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/middleware"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/queue"
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
}

// NewServices creates a process's services; logger receives the bus's
// warnings (slog.Default() if nil).
func NewServices(logger *slog.Logger) *Services {
	return &Services{
		Hooks:      hook.NewRegistry(),
		Middleware: middleware.NewRegistry(),
		Bus:        event.NewBus(logger),
		Queues:     queue.NewManager(),
	}
}

// Close closes the event bus (after delivering what it holds).
func (s *Services) Close() error {
	if s == nil || s.Bus == nil {
		return nil
	}
	return s.Bus.Close()
}

// grants are "always allow" approvals: rules approved for one session, or
// for every session of the runtime (never another runtime's). They live as
// long as the runtime.
type grants struct {
	mu      sync.Mutex
	agent   []string
	session map[string][]string
}

// allowed reports whether the approved rules allow req for sessionID.
func (g *grants) allowed(base *policy.Policy, sessionID string, req policy.Request) bool {
	g.mu.Lock()
	rules := append(append([]string(nil), g.agent...), g.session[sessionID]...)
	g.mu.Unlock()
	if len(rules) == 0 {
		return false
	}
	allow, err := policy.ParseRules(rules, nil, nil)
	if err != nil {
		return false
	}
	var p *policy.Policy
	if base != nil {
		p, err = base.With(allow)
	} else {
		p, err = policy.New(policy.ModeDefault, allow)
	}
	return err == nil && p.Decide(req).Decision == policy.Allow
}

// grant records rules approved with scope.
func (g *grants) grant(sessionID string, scope policy.Scope, rules []string) {
	if len(rules) == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch scope {
	case policy.ScopeAgent:
		g.agent = append(g.agent, rules...)
	case policy.ScopeSession:
		if g.session == nil {
			g.session = make(map[string][]string)
		}
		g.session[sessionID] = append(g.session[sessionID], rules...)
	}
}
