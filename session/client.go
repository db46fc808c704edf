package session

import "github.com/orca-agent/orca/llm"

// ClientCalls returns the calls the session's last turn left for its
// caller (agent.StopClientTools) that have no result yet, and that turn:
// the unanswered calls of the transcript's last assistant message of
// tools the runtime does not have. Run(ctx, "",
// WithTurnID(turn), Retry(), WithResults(...)) answers them and goes on
// with the turn. None while a turn runs.
func (s *LiveSession) ClientCalls() (turn string, calls []llm.Block) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return "", nil
	}
	for _, u := range unansweredUses(s.transcript) {
		if _, known := s.r.rt.Tools().Lookup(u.Name); !known {
			calls = append(calls, u)
		}
	}
	if len(calls) == 0 {
		return "", nil
	}
	return s.lastTurn, calls
}
