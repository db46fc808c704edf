package session

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/sandbox"
	"github.com/orca-agent/orca/tool"
)

// CallTool runs one call of the runtime's tool name with input in the
// session, outside any turn (agent.Runtime.CallTool): through the
// pipeline a model's call takes, with the session's approvals, its
// budget (a call past it does not run), the variables its SESSION_START
// hooks left for commands, its events on the session's feed. What the
// call spent — one tool call, and what the forks it starts spend — is
// added to the session's totals; its conversation is left as it is.
//
// Calls may run beside each other and beside a turn; End waits for them.
// The error is for the session alone (closed, taken over, its store
// unreadable); a refused or failed call is a Result with IsError set.
func (s *LiveSession) CallTool(ctx context.Context, name string, input json.RawMessage) (tool.Result, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return tool.Result{}, ErrClosed
	}
	if s.lost.Load() {
		s.mu.Unlock()
		return tool.Result{}, ErrLeaseLost
	}
	s.calls.Add(1)
	env := s.env
	s.mu.Unlock()
	defer s.calls.Done()

	totals, err := s.spentBefore(ctx)
	if err != nil {
		return tool.Result{}, fmt.Errorf("session %s: %w", s.id, err)
	}
	limits, err := s.Budget(ctx)
	if err != nil {
		return tool.Result{}, fmt.Errorf("session %s: %w", s.id, err)
	}
	return s.r.rt.CallTool(sandbox.WithEnv(ctx, env), agent.ToolRequest{
		SessionID:         s.id,
		Name:              name,
		Input:             input,
		OnEvent:           s.feedFunc(),
		OnBackgroundEvent: s.feedFunc(),
		Budget:            &limits,
		Spent:             budget.Spent{Tokens: totals.Usage.Total(), CostUSD: totals.CostUSD, ToolCalls: totals.ToolCalls, WallTime: totals.WallTime},
		Account: func(sp budget.Spent, u llm.Usage) {
			if err := s.addSpending(context.WithoutCancel(ctx), spentTotals(u, sp)); err != nil {
				s.r.rt.Logger().Warn("could not add a tool call's spending to the session's totals", "session", s.id, "tool", name, "err", err)
			}
		},
	}), nil
}
