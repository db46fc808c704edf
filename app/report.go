package app

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/sqlite"
)

// ExistingStore opens the store workspace ws keeps its sessions in, for a
// program that reads them without opening an App (orca sessions,
// approvals, timeline): the PostgreSQL store OpenUserStore chooses, else
// the workspace's SQLite file if it exists. It returns the workspace's
// canonical root, and a nil store when there is none: reading creates
// nothing. A workspace that is not a folder, and a settings file that
// cannot be read, are a *ConfigError.
func ExistingStore(ctx context.Context, ws, configDir string, getenv func(string) string) (store.Store, string, error) {
	if _, err := CheckWorkspace(ws); err != nil {
		return nil, "", err
	}
	root, err := config.Canonical(ws)
	if err != nil {
		return nil, "", configErrorf("workspace %s: %v", ws, err)
	}
	st, err := OpenUserStore(ctx, configDir, getenv)
	if err != nil || st != nil {
		return st, root, err
	}
	if _, err := os.Stat(sqlite.DefaultPath(root)); errors.Is(err, os.ErrNotExist) {
		return nil, root, nil
	}
	sq, err := OpenStore(root)
	if err != nil {
		return nil, root, err
	}
	return sq, root, nil
}

// SessionView is a session as orca shows it, in one shape wherever it is
// shown: orca sessions --json and orca serve's API (GET /v1/sessions,
// /v1/sessions/{id}) alike — its stored fields, what it has spent, and the
// budget in force.
type SessionView struct {
	ID         string     `json:"id"`
	Agent      string     `json:"agent"`
	RuntimeID  string     `json:"runtime_id"`
	Workspace  string     `json:"workspace"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	Turns      int        `json:"turns"`
	LastPrompt string     `json:"last_prompt"`
	Totals     TotalsView `json:"totals"`
	// Budget is the budget in force (the session's own, else the agent's);
	// nil (null) when there is none.
	Budget *BudgetView `json:"budget"`
}

// TotalsView is what a session has spent, all turns.
type TotalsView struct {
	Tokens           int64   `json:"tokens"`
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	ToolCalls        int64   `json:"tool_calls"`
	WallTimeMS       int64   `json:"wall_time_ms"`
	Turns            int64   `json:"turns"`
	// WallTimeNS is WallTimeMS in nanoseconds, the unit orca sessions
	// --json used before the views were one. Deprecated: read
	// wall_time_ms; it goes in the next release.
	WallTimeNS int64 `json:"wall_time_ns"`
}

// BudgetView is a session's budget: a 0 is no cap in that dimension.
type BudgetView struct {
	Tokens     int64   `json:"tokens"`
	CostUSD    float64 `json:"cost_usd"`
	ToolCalls  int64   `json:"tool_calls"`
	WallTimeMS int64   `json:"wall_time_ms"`
	// WallTimeNS: as TotalsView's. Deprecated: read wall_time_ms.
	WallTimeNS int64 `json:"wall_time_ns"`
}

// TotalsOf returns t as TotalsView.
func TotalsOf(t store.Totals) TotalsView {
	return TotalsView{
		Tokens:      t.Usage.Total(),
		InputTokens: t.Usage.InputTokens, OutputTokens: t.Usage.OutputTokens,
		CacheReadTokens: t.Usage.CacheReadTokens, CacheWriteTokens: t.Usage.CacheWriteTokens,
		CostUSD: t.CostUSD, ToolCalls: t.ToolCalls, Turns: t.Turns,
		WallTimeMS: t.WallTime.Milliseconds(), WallTimeNS: int64(t.WallTime),
	}
}

// BudgetOf returns l as BudgetView.
func BudgetOf(l budget.Limits) BudgetView {
	return BudgetView{Tokens: l.Tokens, CostUSD: l.CostUSD, ToolCalls: l.ToolCalls, WallTimeMS: l.WallTime.Milliseconds(), WallTimeNS: int64(l.WallTime)}
}

// ViewSession returns s as SessionView, its totals and budget read from
// st; def is the agent's budget (agent.Definition.Budget), in force where
// the session has none of its own.
func ViewSession(ctx context.Context, st store.Store, s store.Session, def budget.Limits) (SessionView, error) {
	t, err := st.Totals(ctx, s.ID)
	if err != nil {
		return SessionView{}, fmt.Errorf("session %s: %w", s.ID, err)
	}
	b, err := st.Budget(ctx, s.ID)
	if err != nil {
		return SessionView{}, fmt.Errorf("session %s: %w", s.ID, err)
	}
	v := SessionView{
		ID: s.ID, Agent: s.Agent, RuntimeID: s.RuntimeID, Workspace: s.Workspace,
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, Turns: s.Turns, LastPrompt: s.LastPrompt,
		Totals: TotalsOf(t),
	}
	if b == nil && def != (budget.Limits{}) {
		b = &def
	}
	if b != nil {
		v.Budget = new(BudgetOf(*b))
	}
	return v, nil
}

// SessionInfo is a session as orca sessions --json shows it: its view,
// and whether a workspace can continue it.
type SessionInfo struct {
	SessionView
	// Opens says whether orca run and chat in this workspace can continue
	// the session; WhyNot says why not.
	Opens  bool   `json:"opens"`
	WhyNot string `json:"why_not,omitempty"`
}

// RecordInfo is a transcript record as orca sessions show --json shows
// it: the record's fields and its message's, flat.
type RecordInfo struct {
	Seq       int64     `json:"seq"`
	TurnID    string    `json:"turn_id"`
	Time      time.Time `json:"time"`
	Kind      string    `json:"kind"`
	Compacted bool      `json:"compacted"`
	Role      llm.Role  `json:"role"`
	// Model is, for an answer, the model that served it (with fallback
	// models, not always the session's); empty if unknown.
	Model   string      `json:"model,omitempty"`
	Content []BlockInfo `json:"content"`
}

// BlockInfo is llm.Block, with an input that is not valid JSON encoded as
// a string instead of failing the whole output.
type BlockInfo struct {
	Type      llm.BlockType   `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	// Attachments describe an image or document block's media, or what a
	// tool result showed — never their bytes.
	Attachments []llm.Attachment `json:"attachments,omitempty"`
}

// DescribeSession returns s with its totals and budget read from st, and
// whether orca run and chat in the workspace root (its id wsID) can
// continue it (Opens). orca's agent has no budget of its own: a session's
// budget is what it stores.
func DescribeSession(ctx context.Context, st store.Store, s store.Session, wsID, root string) (SessionInfo, error) {
	v, err := ViewSession(ctx, st, s, budget.Limits{})
	if err != nil {
		return SessionInfo{}, err
	}
	sj := SessionInfo{SessionView: v}
	sj.Opens, sj.WhyNot = Opens(DefaultName, wsID, root, s)
	return sj, nil
}

// RecordOf returns r as RecordInfo; a tool_use input that is not valid
// JSON (a model may send anything) is a JSON string holding it.
func RecordOf(r store.Record) RecordInfo {
	rj := RecordInfo{Seq: r.Seq, TurnID: r.TurnID, Time: r.Time, Kind: r.Kind, Compacted: r.Compacted,
		Role: r.Message.Role, Model: r.Model, Content: make([]BlockInfo, len(r.Message.Content))}
	for i, b := range r.Message.Content {
		in := b.Input
		if len(in) > 0 && !json.Valid(in) {
			in, _ = json.Marshal(string(in))
		}
		rj.Content[i] = BlockInfo{Type: b.Type, Text: b.Text, ID: b.ID, Name: b.Name, Input: in,
			ToolUseID: b.ToolUseID, Content: b.Content, IsError: b.IsError}
		if b.Media != nil {
			rj.Content[i].Attachments = llm.Attachments([]*llm.Media{b.Media})
		}
	}
	return rj
}

// ModelUsage is what one model served in a session: its calls, their
// usage, and what they cost at its price.
type ModelUsage struct {
	Model   string    `json:"model"`
	Calls   int       `json:"calls"`
	Usage   llm.Usage `json:"usage"`
	CostUSD float64   `json:"cost_usd"`
}

// UsageByModel returns what each model served in session sessionID, from
// its observation rows (the llm_call_completed events: the model that
// served each call, its usage and its cost), the model that served the
// most calls first. A store that keeps no observation rows has none; the
// session's totals (store.Totals) stay the sum, background tasks
// included.
func UsageByModel(ctx context.Context, st store.Store, sessionID string) ([]ModelUsage, error) {
	obs, ok := st.(store.Observations)
	if !ok {
		return nil, nil
	}
	rows, err := obs.Observations(ctx, store.ObservationFilter{SessionID: sessionID})
	if err != nil {
		return nil, fmt.Errorf("session %s: the model calls: %w", sessionID, err)
	}
	var out []ModelUsage
	at := map[string]int{}
	for _, r := range rows {
		if r.Name != string(event.LLMCallCompleted) {
			continue
		}
		var d struct {
			Model   string     `json:"model"`
			Usage   *llm.Usage `json:"usage"`
			CostUSD float64    `json:"cost_usd"`
		}
		if json.Unmarshal(r.Data, &d) != nil {
			continue // a row of another version's shape: not counted
		}
		i, seen := at[d.Model]
		if !seen {
			i = len(out)
			at[d.Model] = i
			out = append(out, ModelUsage{Model: d.Model})
		}
		out[i].Calls++
		if d.Usage != nil {
			out[i].Usage = out[i].Usage.Add(*d.Usage)
		}
		out[i].CostUSD += d.CostUSD
	}
	slices.SortStableFunc(out, func(a, b ModelUsage) int { return cmp.Compare(b.Calls, a.Calls) })
	return out, nil
}
