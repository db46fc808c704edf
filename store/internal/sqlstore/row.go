package sqlstore

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/orca-agent/orca/store"
)

// Scanner is a row of either driver (database/sql's, pgx's).
type Scanner interface{ Scan(dest ...any) error }

// The columns scanSession, ScanTotals and scanParked read, in order.
const (
	sessionColumns = "id, runtime_id, workspace, agent, created_at, updated_at, turns, last_prompt"
	TotalsColumns  = "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, tool_calls, wall_time_ns, turns"
	parkedColumns  = "id, session_id, runtime_id, turn_id, tool_use_id, tool_name, input, reason, rules, status, decided_by, note, created_at, decided_at, trace_parent"
)

// Bytes is how a store whose text columns refuse some strings
// (PostgreSQL's TEXT: no NUL, UTF-8 only) passes the strings people and
// models write to the byte columns it keeps them in instead: their bytes,
// never nil (a nil []byte is NULL). The Scan functions read such columns,
// and SQLite's text ones, into bytes.
func Bytes(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return []byte(s)
}

// ToNanos is how times are stored: Unix nanoseconds, UTC.
func ToNanos(t time.Time) int64 { return t.UnixNano() }

// fromNanos is ToNanos undone.
func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// scanSession reads a row of sessionColumns.
func scanSession(row Scanner) (store.Session, error) {
	var ss store.Session
	var created, updated int64
	var ws, agent, prompt []byte // text or bytes: see Bytes
	if err := row.Scan(&ss.ID, &ss.RuntimeID, &ws, &agent, &created, &updated, &ss.Turns, &prompt); err != nil {
		return store.Session{}, err
	}
	ss.Workspace, ss.Agent, ss.LastPrompt = string(ws), string(agent), string(prompt)
	ss.CreatedAt, ss.UpdatedAt = fromNanos(created), fromNanos(updated)
	return ss, nil
}

// ScanTotals reads a row of TotalsColumns.
func ScanTotals(row Scanner) (store.Totals, error) {
	var t store.Totals
	var wall int64
	err := row.Scan(&t.Usage.InputTokens, &t.Usage.OutputTokens, &t.Usage.CacheReadTokens, &t.Usage.CacheWriteTokens, &t.CostUSD, &t.ToolCalls, &wall, &t.Turns)
	t.WallTime = time.Duration(wall)
	return t, err
}

// scanParked reads a row of parkedColumns.
func scanParked(row Scanner) (store.ParkedCall, error) {
	var p store.ParkedCall
	var input []byte
	var rules string
	var reason, by, note []byte // text or bytes: see Bytes
	var created, decided int64
	if err := row.Scan(&p.ID, &p.SessionID, &p.RuntimeID, &p.TurnID, &p.ToolUseID, &p.ToolName, &input, &reason, &rules, &p.Status, &by, &note, &created, &decided, &p.TraceParent); err != nil {
		return store.ParkedCall{}, err
	}
	p.Input = input
	p.Reason, p.DecidedBy, p.Note = string(reason), string(by), string(note)
	if err := json.Unmarshal([]byte(rules), &p.Rules); err != nil {
		return store.ParkedCall{}, fmt.Errorf("parked call %s: rules: %w", p.ID, err)
	}
	p.CreatedAt = fromNanos(created)
	if decided != 0 {
		p.DecidedAt = fromNanos(decided)
	}
	return p, nil
}

// parking is what a store writes for a call it parks: the call checked,
// its rules as JSON ([] for none), its CreatedAt now if unset.
func parking(p store.ParkedCall, now func() time.Time) (store.ParkedCall, string, error) {
	if err := p.Validate(); err != nil {
		return p, "", err
	}
	rules, err := json.Marshal(p.Rules)
	if err != nil {
		return p, "", err
	}
	if p.Rules == nil {
		rules = []byte("[]")
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = now()
	}
	return p, string(rules), nil
}

// turnCount is how many turns FinishTurn of turnID adds to a session whose
// last finished turn is last: a turn counts once, however many attempts
// end it, and a turn without an id always counts.
func turnCount(turnID, last string) int {
	if turnID == "" || turnID != last {
		return 1
	}
	return 0
}
