package serve

import (
	"context"
	"encoding/json"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
)

// sessionJSON is a session as the API shows it: app.SessionView, the
// shape orca sessions --json shows too, and what only a server knows.
type sessionJSON struct {
	app.SessionView
	Running string   `json:"running_turn,omitempty"`
	Parked  []Parked `json:"parked,omitempty"`
	// Transcript is the conversation, on GET of one session: its images
	// and documents described, their bytes left out (GET
	// .../attachments/{digest} gives them).
	Transcript []llm.Message `json:"transcript,omitempty"`
}

// Parked is a parked call as the API (and orca approvals --json) shows it.
type Parked struct {
	ID        string          `json:"id"`
	SessionID string          `json:"session_id"`
	TurnID    string          `json:"turn_id"`
	ToolUseID string          `json:"tool_use_id"`
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input"`
	Reason    string          `json:"reason"`
	Rules     []string        `json:"rules"`
	Status    string          `json:"status"`
	DecidedBy string          `json:"decided_by,omitempty"`
	Note      string          `json:"note,omitempty"`
}

// ParkedOf returns p as the API shows it (arguments that are not JSON
// become a JSON string).
func ParkedOf(p store.ParkedCall) Parked {
	in := p.Input
	if !json.Valid(in) {
		in, _ = json.Marshal(string(in))
	}
	rules := p.Rules
	if rules == nil {
		rules = []string{}
	}
	return Parked{ID: p.ID, SessionID: p.SessionID, TurnID: p.TurnID, ToolUseID: p.ToolUseID, ToolName: p.ToolName, Input: in,
		Reason: p.Reason, Rules: rules, Status: p.Status, DecidedBy: p.DecidedBy, Note: p.Note}
}

// sessionOf returns st as the API shows it, its totals and budget read
// from the store.
func (s *Server) sessionOf(ctx context.Context, st store.Session) (sessionJSON, error) {
	v, err := app.ViewSession(ctx, s.app.Store(), st, s.app.Runtime().Definition().Budget)
	return sessionJSON{SessionView: v}, err
}
