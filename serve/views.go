package serve

import (
	"encoding/json"
	"time"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
)

// sessionJSON is a session as the API shows it.
type sessionJSON struct {
	ID         string      `json:"id"`
	Agent      string      `json:"agent"`
	CreatedAt  time.Time   `json:"created_at"`
	UpdatedAt  time.Time   `json:"updated_at"`
	Turns      int         `json:"turns"`
	LastPrompt string      `json:"last_prompt"`
	Totals     *totalsJSON `json:"totals,omitempty"`
	Budget     *budgetJSON `json:"budget,omitempty"`
	Running    string      `json:"running_turn,omitempty"`
	Parked     []Parked    `json:"parked,omitempty"`
	// Transcript is the conversation, on GET of one session.
	Transcript []llm.Message `json:"transcript,omitempty"`
}

type totalsJSON struct {
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	ToolCalls        int64   `json:"tool_calls"`
	WallTimeMS       int64   `json:"wall_time_ms"`
	Turns            int64   `json:"turns"`
}

func totalsOf(t store.Totals) *totalsJSON {
	return &totalsJSON{InputTokens: t.Usage.InputTokens, OutputTokens: t.Usage.OutputTokens, CacheReadTokens: t.Usage.CacheReadTokens,
		CacheWriteTokens: t.Usage.CacheWriteTokens, CostUSD: t.CostUSD, ToolCalls: t.ToolCalls, WallTimeMS: t.WallTime.Milliseconds(), Turns: t.Turns}
}

type budgetJSON struct {
	Tokens     int64   `json:"tokens"`
	CostUSD    float64 `json:"cost_usd"`
	ToolCalls  int64   `json:"tool_calls"`
	WallTimeMS int64   `json:"wall_time_ms"`
}

func budgetOf(l budget.Limits) *budgetJSON {
	return &budgetJSON{Tokens: l.Tokens, CostUSD: l.CostUSD, ToolCalls: l.ToolCalls, WallTimeMS: l.WallTime.Milliseconds()}
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

func sessionOf(st store.Session) sessionJSON {
	return sessionJSON{ID: st.ID, Agent: st.Agent, CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt, Turns: st.Turns, LastPrompt: st.LastPrompt}
}
