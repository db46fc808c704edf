// Package scope is the identity of a run: which runtime executes it, for
// which user's session, in which turn and execution, and how deep in a tree
// of subagent forks. One Scope value travels wherever a run's ids go — tool
// calls, events, hook payloads, observation rows, approval requests — so
// that they cannot drift apart.
//
// The runtime fills a Scope in; nothing a caller passes in a request can
// make an execution claim to be a fork, or a fork claim to be its parent.
package scope

// Scope identifies one execution: a user's turn (Depth 0) or a subagent
// fork started from it (Depth ≥ 1).
//
// A fork has no session of its own: it serves the session of the user
// whose turn started it, so its SessionID is that session's (a fork of a
// fork inherits the user's, never the middle fork's identity), and its
// own state — a todo list, say — is keyed by StateKey, not by the
// session.
type Scope struct {
	// RuntimeID is the runtime executing: a subagent's runtime in a fork.
	RuntimeID string `json:"runtime_id" jsonschema:"the runtime running the agent (a subagent's runtime in a fork)"`
	// RootRuntimeID is the runtime serving the user's session, in a fork;
	// empty at depth 0, where that is RuntimeID (Root returns whichever
	// it is). Background tasks belong to (Root(), SessionID).
	RootRuntimeID string `json:"root_runtime_id,omitempty" jsonschema:"in a fork: the runtime serving the user's session"`
	// SessionID is the user's session the execution serves.
	SessionID string `json:"session_id" jsonschema:"the user's session (a fork serves its invoking user's session)"`
	// TurnID is the user's turn the execution belongs to: a fork's is the
	// turn that started it.
	TurnID string `json:"turn_id,omitempty" jsonschema:"the user's turn, when inside one"`
	// ExecutionID names this execution: every turn and every fork has its
	// own.
	ExecutionID string `json:"execution_id,omitempty" jsonschema:"the execution: the turn's own, or the fork's"`
	// ParentExecutionID is the execution that started a fork; empty at
	// depth 0.
	ParentExecutionID string `json:"parent_execution_id,omitempty" jsonschema:"the execution that started this fork"`
	// Depth is 0 in a user's turn, 1 in a fork of it, 2 in a fork's fork.
	Depth int `json:"depth,omitempty" jsonschema:"0 in a user's turn, 1 in a subagent fork, 2 in a fork's fork"`
}

// Fork reports whether s is a subagent fork's.
func (s Scope) Fork() bool { return s.Depth > 0 }

// StateKey returns the key of per-execution state (a todo list): the
// session in a user's turn, "exec:<id>" in a fork, which keeps its own;
// "" when s has neither.
func (s Scope) StateKey() string {
	switch {
	case s.Depth == 0 && s.SessionID != "":
		return s.SessionID
	case s.ExecutionID != "":
		return "exec:" + s.ExecutionID
	}
	return ""
}

// Child returns the scope of a fork started by s: a subagent runtime
// serving the same user's session and turn, one level deeper, under a new
// execution.
func (s Scope) Child(runtimeID, executionID string) Scope {
	return Scope{
		RuntimeID:         runtimeID,
		RootRuntimeID:     s.Root(),
		SessionID:         s.SessionID,
		TurnID:            s.TurnID,
		ExecutionID:       executionID,
		ParentExecutionID: s.ExecutionID,
		Depth:             s.Depth + 1,
	}
}

// Root returns the runtime serving the user's session: RootRuntimeID in a
// fork, RuntimeID at depth 0.
func (s Scope) Root() string {
	if s.RootRuntimeID != "" {
		return s.RootRuntimeID
	}
	return s.RuntimeID
}
