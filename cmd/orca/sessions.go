package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/budget"
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

// existingStore opens the store the workspace's sessions are in
// (app.ExistingStore); its errors end orca with the right code.
func existingStore(ctx context.Context, ws string, o options) (store.Store, string, error) {
	st, root, err := app.ExistingStore(ctx, ws, o.configDir, o.env)
	if err != nil {
		return nil, root, fromApp(err)
	}
	return st, root, nil
}

func listSessions(ctx context.Context, out io.Writer, f *sessionsFlags, o options) error {
	st, root, err := existingStore(ctx, f.workspace, o)
	if err != nil {
		return err
	}
	list := []app.SessionInfo{}
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
			sj, err := app.DescribeSession(ctx, st, s, wsID, root)
			if err != nil {
				return &exitError{code: exitTurn, err: err}
			}
			list = append(list, sj)
		}
	}
	if f.json {
		return writeJSON(out, struct {
			Workspace string            `json:"workspace"`
			Store     string            `json:"store"`
			Sessions  []app.SessionInfo `json:"sessions"`
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
	sj, err := app.DescribeSession(ctx, st, s, wsID, root)
	if err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	recs, err := st.Records(ctx, id, store.RecordFilter{IncludeCompacted: true})
	if err != nil {
		return &exitError{code: exitTurn, err: fmt.Errorf("session %s: %w", id, err)}
	}
	parked, err := st.ParkedCalls(ctx, store.ParkFilter{SessionID: id, Status: store.ParkPending})
	if err != nil {
		return &exitError{code: exitTurn, err: fmt.Errorf("session %s: %w", id, err)}
	}
	models, err := app.UsageByModel(ctx, st, id)
	if err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	if f.json {
		rj := make([]app.RecordInfo, len(recs))
		for i, r := range recs {
			rj[i] = app.RecordOf(r)
		}
		pj := make([]serve.Parked, len(parked))
		for i, p := range parked {
			pj[i] = serve.ParkedOf(p)
		}
		if models == nil {
			models = []app.ModelUsage{}
		}
		return writeJSON(out, struct {
			Session app.SessionInfo  `json:"session"`
			Models  []app.ModelUsage `json:"models"`
			Records []app.RecordInfo `json:"records"`
			Parked  []serve.Parked   `json:"parked"`
		}{sj, models, rj, pj})
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
	if len(models) > 0 {
		b.WriteString("\nModels (the calls each served, forks' included)\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, m := range models {
			fmt.Fprintf(tw, "  %s\t%s\t%d tokens\t%s\n", tui.Printable(cmp.Or(m.Model, "(unnamed)")), tui.Plural(m.Calls, "call"), m.Usage.Total(), tui.USD(m.CostUSD))
		}
		tw.Flush()
	}
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
		tui.WriteRecord(&b, r, display)
	}
	for _, p := range parked {
		fmt.Fprintf(&b, "\nWaiting for a decision: %s · %s\n  'orca approve %s' or 'orca deny %s', then 'orca run --session %s' goes on with the turn.\n",
			p.ID, tui.OneLine(p.ToolName+" "+tool.CompactArgs(p.Input), 80), p.ID, p.ID, id)
	}
	_, err = io.WriteString(out, b.String())
	return err
}

func writeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
