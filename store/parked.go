package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// A parked call is a tool call the policy asked about in a run with no one
// to answer: instead of refusing it, the turn stopped and left it here
// for a person to decide later (Decide); the session's next turn runs it
// if approved.
type ParkedCall struct {
	// ID names the parked call ("park_…"); required.
	ID        string
	SessionID string
	RuntimeID string
	TurnID    string
	ToolUseID string
	ToolName  string
	// Input is the call's arguments: what runs if it is approved.
	Input json.RawMessage
	// TraceParent is the W3C traceparent of the turn that parked the
	// call ("" for none), so that the turn that resumes it — in any
	// process — joins its trace (tracing interceptors set it:
	// agent.Parked.TraceParent).
	TraceParent string
	// Reason is why the policy asked; Rules the rules it suggested.
	Reason string
	Rules  []string
	// Status is ParkPending, then ParkApproved or ParkDenied, and
	// ParkStarted once an approved call was handed to a turn.
	Status    string
	DecidedBy string
	Note      string
	CreatedAt time.Time
	DecidedAt time.Time
}

// The statuses of a parked call.
const (
	ParkPending  = "pending"
	ParkApproved = "approved"
	ParkDenied   = "denied"
	ParkStarted  = "started"
)

// ParkFilter selects parked calls; empty fields match every one.
type ParkFilter struct {
	SessionID string
	Status    string
}

// Validate checks a call to park.
func (p ParkedCall) Validate() error {
	switch {
	case p.ID == "":
		return fmt.Errorf("%w: the parked call has no ID", ErrInvalid)
	case p.SessionID == "" || p.ToolUseID == "" || p.ToolName == "":
		return fmt.Errorf("%w: parked call %s needs its session, tool use id and tool", ErrInvalid, p.ID)
	case p.Status != "" && p.Status != ParkPending:
		return fmt.Errorf("%w: a call is parked pending, not %q", ErrInvalid, p.Status)
	}
	return nil
}

// ValidateTransition checks a parked call's change of status: pending to
// approved or denied (a decision), approved to started.
func ValidateTransition(id, from, to string) error {
	if from == ParkPending && (to == ParkApproved || to == ParkDenied) || from == ParkApproved && to == ParkStarted {
		return nil
	}
	if from != ParkPending && (to == ParkApproved || to == ParkDenied) {
		return fmt.Errorf("%w: parked call %s was %s already", ErrInvalid, id, from)
	}
	return fmt.Errorf("%w: parked call %s cannot go from %s to %s", ErrInvalid, id, from, to)
}
