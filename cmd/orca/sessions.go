package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/serve"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/sqlite"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/tui"
)

// sessionsFlags are the flags of orca sessions and orca sessions show.
type sessionsFlags struct {
	workspace string
	json      bool
}

func newSessionsCmd(o options) *cobra.Command {
	var f sessionsFlags
	cmd := &cobra.Command{
		Use:   "sessions [flags]",
		Short: "List the sessions of a workspace",
		Long: `List the sessions kept in the workspace's store (.orca/orca.db), most
recently active first: id, when it started, its turns, the tokens and cost
it has spent, and its last prompt. 'orca sessions show ID' shows one
session's transcript, totals and budget.

With --json, stdout is one JSON object:

  {"workspace": DIR, "store": FILE, "sessions": [SESSION, ...]}

where SESSION is

  {"id", "agent", "runtime_id", "workspace", "created_at", "updated_at",
   "turns", "last_prompt",
   "totals": {"tokens", "input_tokens", "output_tokens", "cache_read_tokens",
              "cache_write_tokens", "cost_usd", "tool_calls", "wall_time_ns"},
   "budget": null or {"tokens", "cost_usd", "tool_calls", "wall_time_ns"}}

Times are RFC 3339; "budget" is the session's stored budget (0: no cap in
that dimension). A workspace without a store has no sessions; listing
creates nothing.`,
		Example: `  orca sessions
  orca sessions -w ./project --json | jq -r '.sessions[0].id'
  orca sessions show session_0123456789abcdef`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return listSessions(cmd.Context(), cmd.OutOrStdout(), &f, o)
		},
	}
	cmd.PersistentFlags().StringVarP(&f.workspace, "workspace", "w", ".", "workspace `DIR` whose sessions to show")
	cmd.PersistentFlags().BoolVar(&f.json, "json", false, "print JSON instead of text")
	cmd.AddCommand(&cobra.Command{
		Use:   "show [flags] ID",
		Short: "Show a session: its transcript, totals and budget",
		Long: `Show session ID of the workspace: its transcript, record by record (records a
compaction summarised are kept, and marked compacted: the model no longer
sees them), what it has spent and its budget, and a call of it parked for
approval that waits for a decision.

With --json, stdout is one JSON object:

  {"session": SESSION, "records": [RECORD, ...], "parked": [PARKED, ...]}

where SESSION is as in 'orca sessions --json' and RECORD is

  {"seq", "turn_id", "time", "kind" ("message" or "summary"), "compacted",
   "role" ("user" or "assistant"), "content": [BLOCK, ...]}

and BLOCK is {"type": "text", "text"}, {"type": "tool_use", "id", "name",
"input"} or {"type": "tool_result", "tool_use_id", "content", "is_error"}.
A tool_use input that is not valid JSON (a model may send anything) is a
JSON string holding it verbatim. PARKED is as in 'orca approvals --json':
the session's calls that wait for a decision.`,
		Args: oneArg("the id of a session", "'orca sessions' lists them"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return showSession(cmd.Context(), cmd.OutOrStdout(), &f, args[0], o)
		},
	})
	return cmd
}

// existingStore opens the store the workspace's sessions are in: the
// PostgreSQL database $ORCA_STORE_DSN or the user's "store" names, as orca
// run chooses it, else the workspace's SQLite file if it exists; nil if it
// does not (reading creates nothing).
func existingStore(ctx context.Context, ws string, o options) (st store.Store, root string, err error) {
	if _, err := checkWorkspace(ws); err != nil {
		return nil, "", err
	}
	root, err = config.Canonical(ws)
	if err != nil {
		return nil, "", usageErrorf("workspace %s: %v", ws, err)
	}
	st, err = app.OpenUserStore(ctx, o.configDir, o.env)
	if err != nil {
		return nil, root, fromApp(err) // a settings file: a usage error; the database: exit 1
	}
	if st != nil {
		return st, root, nil
	}
	if _, err := os.Stat(sqlite.DefaultPath(root)); errors.Is(err, os.ErrNotExist) {
		return nil, root, nil
	}
	sq, err := openStore(root)
	if err != nil {
		return nil, root, err
	}
	return sq, root, nil
}

func listSessions(ctx context.Context, out io.Writer, f *sessionsFlags, o options) error {
	st, root, err := existingStore(ctx, f.workspace, o)
	if err != nil {
		return err
	}
	list := []sessionJSON{}
	if st != nil {
		defer st.Close()
		// Every session of the store: also those started before the
		// workspace moved to this path, which their "workspace" tells.
		ss, err := st.Sessions(ctx, store.Filter{})
		if err != nil {
			return &exitError{code: exitTurn, err: fmt.Errorf("listing the sessions of %s: %w", root, err)}
		}
		wsID, _ := app.ReadWorkspaceID(root)
		for _, s := range ss {
			sj, err := describe(ctx, st, s, wsID, root)
			if err != nil {
				return err
			}
			list = append(list, sj)
		}
	}
	if f.json {
		return writeJSON(out, struct {
			Workspace string        `json:"workspace"`
			Store     string        `json:"store"`
			Sessions  []sessionJSON `json:"sessions"`
		}{root, sqlite.DefaultPath(root), list})
	}
	if len(list) == 0 {
		_, err := fmt.Fprintf(out, "No sessions in %s yet: 'orca run' and 'orca chat' start them.\n", root)
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTARTED\tTURNS\tTOKENS\tCOST\tLAST PROMPT")
	var closed []string
	for _, s := range list {
		id := s.ID
		if !s.Opens {
			id += " *"
			closed = append(closed, fmt.Sprintf("* %s cannot be continued here: %s", s.ID, s.WhyNot))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", id, s.CreatedAt.Local().Format("2006-01-02 15:04"),
			s.Turns, tui.TokenCount(s.Totals.Tokens), tui.USD(s.Totals.CostUSD), tui.OneLine(s.LastPrompt, 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(closed) > 0 {
		_, err := fmt.Fprintf(out, "\n%s\n", strings.Join(closed, "\n"))
		return err
	}
	return nil
}

func showSession(ctx context.Context, out io.Writer, f *sessionsFlags, id string, o options) error {
	st, root, err := existingStore(ctx, f.workspace, o)
	if err != nil {
		return err
	}
	if st == nil {
		return usageErrorf("workspace %s has no session %s: it has no session store yet", root, id)
	}
	defer st.Close()
	s, err := st.Session(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return usageErrorf("workspace %s has no session %s: 'orca sessions' lists its sessions", root, id)
	} else if err != nil {
		return &exitError{code: exitTurn, err: fmt.Errorf("session %s: %w", id, err)}
	}
	wsID, _ := app.ReadWorkspaceID(root)
	sj, err := describe(ctx, st, s, wsID, root)
	if err != nil {
		return err
	}
	recs, err := st.Records(ctx, id, store.RecordFilter{IncludeCompacted: true})
	if err != nil {
		return &exitError{code: exitTurn, err: fmt.Errorf("session %s: %w", id, err)}
	}
	parked, err := st.ParkedCalls(ctx, store.ParkFilter{SessionID: id, Status: store.ParkPending})
	if err != nil {
		return &exitError{code: exitTurn, err: fmt.Errorf("session %s: %w", id, err)}
	}
	if f.json {
		rj := make([]recordJSON, len(recs))
		for i, r := range recs {
			rj[i] = recordOf(r)
		}
		pj := make([]serve.Parked, len(parked))
		for i, p := range parked {
			pj[i] = serve.ParkedOf(p)
		}
		return writeJSON(out, struct {
			Session sessionJSON    `json:"session"`
			Records []recordJSON   `json:"records"`
			Parked  []serve.Parked `json:"parked"`
		}{sj, rj, pj})
	}

	var b strings.Builder
	fmt.Fprintf(&b, "Session %s\n", s.ID)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  agent\t%s (runtime %s)\n", s.Agent, s.RuntimeID)
	fmt.Fprintf(tw, "  workspace\t%s\n", s.Workspace)
	fmt.Fprintf(tw, "  started\t%s · last active %s\n", s.CreatedAt.Local().Format(time.DateTime), s.UpdatedAt.Local().Format(time.DateTime))
	fmt.Fprintf(tw, "  turns\t%d\n", s.Turns)
	if !sj.Opens {
		fmt.Fprintf(tw, "  continue\tnot in this workspace: %s\n", sj.WhyNot)
	}
	tw.Flush()
	b.WriteString("\n")
	totals, _ := st.Totals(ctx, id) // describe read them already
	var limits budget.Limits
	if bud, _ := st.Budget(ctx, id); bud != nil {
		limits = *bud
	}
	tui.WriteSpending(&b, totals, limits)
	compacted := 0
	for _, r := range recs {
		if r.Compacted {
			compacted++
		}
	}
	fmt.Fprintf(&b, "\nTranscript: %s", tui.Plural(len(recs), "record"))
	if compacted > 0 {
		fmt.Fprintf(&b, ", %d compacted (summarised by a later summary record: kept, but no longer sent to the model)", compacted)
	}
	b.WriteString("\n")
	display := app.ToolDisplays(root)
	for _, r := range recs {
		b.WriteString("\n")
		writeRecord(&b, r, display)
	}
	for _, p := range parked {
		fmt.Fprintf(&b, "\nWaiting for a decision: %s · %s\n  'orca approve %s' or 'orca deny %s', then 'orca run --session %s' goes on with the turn.\n",
			p.ID, tui.OneLine(p.ToolName+" "+tool.CompactArgs(p.Input), 80), p.ID, p.ID, id)
	}
	_, err = io.WriteString(out, b.String())
	return err
}

// sessionJSON is a session in the JSON output of orca sessions.
type sessionJSON struct {
	ID         string      `json:"id"`
	Agent      string      `json:"agent"`
	RuntimeID  string      `json:"runtime_id"`
	Workspace  string      `json:"workspace"`
	CreatedAt  time.Time   `json:"created_at"`
	UpdatedAt  time.Time   `json:"updated_at"`
	Turns      int         `json:"turns"`
	LastPrompt string      `json:"last_prompt"`
	Totals     totalsJSON  `json:"totals"`
	Budget     *budgetJSON `json:"budget"`
	// Opens says whether orca run and chat in this workspace can continue
	// the session; WhyNot says why not.
	Opens  bool   `json:"opens"`
	WhyNot string `json:"why_not,omitempty"`
}

type totalsJSON struct {
	Tokens           int64   `json:"tokens"`
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	ToolCalls        int64   `json:"tool_calls"`
	WallTimeNS       int64   `json:"wall_time_ns"`
}

type budgetJSON struct {
	Tokens     int64   `json:"tokens"`
	CostUSD    float64 `json:"cost_usd"`
	ToolCalls  int64   `json:"tool_calls"`
	WallTimeNS int64   `json:"wall_time_ns"`
}

// recordJSON is a transcript record in the JSON output of orca sessions
// show: the record's fields and its message's, flat.
type recordJSON struct {
	Seq       int64       `json:"seq"`
	TurnID    string      `json:"turn_id"`
	Time      time.Time   `json:"time"`
	Kind      string      `json:"kind"`
	Compacted bool        `json:"compacted"`
	Role      llm.Role    `json:"role"`
	Content   []blockJSON `json:"content"`
}

// blockJSON is llm.Block, with an input that is not valid JSON encoded as
// a string instead of failing the whole output.
type blockJSON struct {
	Type      llm.BlockType   `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// describe returns s with its totals and budget, and whether orca run
// and chat in the workspace root (its id wsID) can continue it.
func describe(ctx context.Context, st store.Store, s store.Session, wsID, root string) (sessionJSON, error) {
	t, err := st.Totals(ctx, s.ID)
	if err != nil {
		return sessionJSON{}, &exitError{code: exitTurn, err: fmt.Errorf("session %s: %w", s.ID, err)}
	}
	b, err := st.Budget(ctx, s.ID)
	if err != nil {
		return sessionJSON{}, &exitError{code: exitTurn, err: fmt.Errorf("session %s: %w", s.ID, err)}
	}
	sj := sessionJSON{
		ID: s.ID, Agent: s.Agent, RuntimeID: s.RuntimeID, Workspace: s.Workspace,
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, Turns: s.Turns, LastPrompt: s.LastPrompt,
		Totals: totalsJSON{
			Tokens:      t.Usage.Total(),
			InputTokens: t.Usage.InputTokens, OutputTokens: t.Usage.OutputTokens,
			CacheReadTokens: t.Usage.CacheReadTokens, CacheWriteTokens: t.Usage.CacheWriteTokens,
			CostUSD: t.CostUSD, ToolCalls: t.ToolCalls, WallTimeNS: int64(t.WallTime),
		},
	}
	sj.Opens, sj.WhyNot = app.Opens(app.DefaultName, wsID, root, s)
	if b != nil {
		sj.Budget = &budgetJSON{Tokens: b.Tokens, CostUSD: b.CostUSD, ToolCalls: b.ToolCalls, WallTimeNS: int64(b.WallTime)}
	}
	return sj, nil
}

func recordOf(r store.Record) recordJSON {
	rj := recordJSON{Seq: r.Seq, TurnID: r.TurnID, Time: r.Time, Kind: r.Kind, Compacted: r.Compacted,
		Role: r.Message.Role, Content: make([]blockJSON, len(r.Message.Content))}
	for i, b := range r.Message.Content {
		in := b.Input
		if len(in) > 0 && !json.Valid(in) {
			in, _ = json.Marshal(string(in))
		}
		rj.Content[i] = blockJSON{Type: b.Type, Text: b.Text, ID: b.ID, Name: b.Name, Input: in,
			ToolUseID: b.ToolUseID, Content: b.Content, IsError: b.IsError}
	}
	return rj
}

func writeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeRecord writes one transcript record for people: a header line,
// then the message's blocks, indented; display says how tools show their
// calls.
func writeRecord(b *strings.Builder, r store.Record, display func(name string, input json.RawMessage) tool.Display) {
	head := []string{fmt.Sprintf("#%d %s", r.Seq, r.Message.Role)}
	if r.Kind == store.KindSummary {
		head = append(head, "summary")
	}
	if r.TurnID != "" {
		head = append(head, r.TurnID)
	}
	if r.Compacted {
		head = append(head, "compacted")
	}
	b.WriteString(strings.Join(head, " · ") + "\n")
	for _, bl := range r.Message.Content {
		switch bl.Type {
		case llm.BlockText:
			b.WriteString(tui.Indent("   ", "   ", printableText(bl.Text)) + "\n")
		case llm.BlockToolUse:
			b.WriteString("   → " + strings.TrimPrefix(tui.ToolHeader(bl.Name, bl.Input, display(bl.Name, bl.Input)), "● "))
		case llm.BlockToolResult:
			// Under the tool use it answers, one column further in.
			b.WriteString(tui.Indent(" ", " ", tui.Observation(bl.Content, bl.IsError)) + "\n")
		default:
			fmt.Fprintf(b, "   (%s block)\n", bl.Type)
		}
	}
}

// printableText drops control characters from each line of s.
func printableText(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = tui.Printable(l)
	}
	return strings.Join(lines, "\n")
}
