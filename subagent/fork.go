package subagent

import (
	"context"
	"encoding/json"

	"github.com/orca-agent/orca/scope"
)

// Forker starts subagent forks on behalf of the calling turn: the one
// mechanism of the Task tool and of skills that run as forks. The runtime
// hands a Forker to the tools whose traits say they fork (tool.Traits.Forks)
// through their context (ForkerFrom); a fork inherits the calling turn's
// identity (one level deeper), hooks, middleware, policy, approvals and
// budget.
type Forker interface {
	// Fork prepares a fork of the subagent named agent (GeneralPurpose's
	// if empty) on prompt. The checks run now — the subagent exists, the
	// depth limit, SUBAGENT_START (which may refuse the fork or rewrite
	// its prompt) — and an error says, for the model, why the fork will
	// not run. Background says the fork runs after the call returns, as a
	// background task: its spending reaches the session when it ends. A
	// foreground fork's spending is the calling turn's.
	Fork(ctx context.Context, agent, prompt string, background bool) (*Fork, error)
	// Tasks is the manager of the process's background tasks.
	Tasks() *Manager
}

// Fork is a prepared fork.
type Fork struct {
	// Agent is the subagent's name.
	Agent string
	// Run runs the fork and returns its answer, or why it has none.
	Run func(ctx context.Context) (answer string, err error)
}

type forkerKey struct{}

// WithForker returns a context carrying f.
func WithForker(ctx context.Context, f Forker) context.Context {
	return context.WithValue(ctx, forkerKey{}, f)
}

// ForkerFrom returns the Forker the runtime gave the call, or nil.
func ForkerFrom(ctx context.Context) Forker {
	f, _ := ctx.Value(forkerKey{}).(Forker)
	return f
}

type outputKey struct{}

// WithOutputSchema returns a context carrying schema, a JSON Schema of an
// object: a fork started with it must answer with a JSON value of it
// (agent.Output), checked before the answer is returned.
func WithOutputSchema(ctx context.Context, schema json.RawMessage) context.Context {
	return context.WithValue(ctx, outputKey{}, schema)
}

// OutputSchemaFrom returns the schema WithOutputSchema put in ctx, or nil.
func OutputSchemaFrom(ctx context.Context) json.RawMessage {
	s, _ := ctx.Value(outputKey{}).(json.RawMessage)
	return s
}

// Owner returns who owns the background tasks started in s: the user's
// session of the runtime serving it. A fork's tasks are its user's.
func Owner(s scope.Scope) string { return s.Root() + "\x00" + s.SessionID }
