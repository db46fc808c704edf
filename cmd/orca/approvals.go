package main

import (
	"errors"
	"fmt"
	"os/user"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/serve"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/tui"
)

func newApprovalsCmd(o options) *cobra.Command {
	var ws string
	var asJSON, all bool
	cmd := &cobra.Command{
		Use:   "approvals [flags]",
		Short: "List the tool calls parked for approval in a workspace",
		Long: `List the tool calls that runs with --park-approvals parked in the
workspace's sessions, waiting for a person: 'orca approve ID' runs one at the
session's next turn, 'orca deny ID' refuses it. --all lists the decided ones
too. With --json, stdout is {"parked": [CALL, ...]}, CALL being {"id",
"session_id", "tool_use_id", "tool_name", "input", "reason", "rules",
"status", "decided_by", "note"}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, root, err := existingStore(cmd.Context(), ws, o)
			if err != nil {
				return err
			}
			var calls []store.ParkedCall
			if st != nil {
				defer st.Close()
				f := store.ParkFilter{Status: store.ParkPending}
				if all {
					f.Status = ""
				}
				if calls, err = st.ParkedCalls(cmd.Context(), f); err != nil {
					return &exitError{code: exitTurn, err: err}
				}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				list := []serve.Parked{}
				for _, p := range calls {
					list = append(list, serve.ParkedOf(p))
				}
				return writeJSON(out, struct {
					Parked []serve.Parked `json:"parked"`
				}{list})
			}
			if len(calls) == 0 {
				_, err := fmt.Fprintf(out, "No tool calls wait for approval in %s.\n", root)
				return err
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSESSION\tSTATUS\tCALL")
			for _, p := range calls {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.ID, p.SessionID, p.Status, tui.OneLine(p.ToolName+" "+tool.CompactArgs(p.Input), 80))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			_, err = fmt.Fprintln(out, "\n'orca approve ID' or 'orca deny ID' decides one; the session's next run goes on from it.")
			return err
		},
	}
	cmd.Flags().StringVarP(&ws, "workspace", "w", ".", "workspace `DIR`")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of text")
	cmd.Flags().BoolVar(&all, "all", false, "list the decided calls too")
	return cmd
}

// newDecideCmd is orca approve (approve) or orca deny.
func newDecideCmd(o options, approve bool) *cobra.Command {
	var ws, note string
	name, status, what := "deny", store.ParkDenied, "refuses it: the model is told so, and the turn goes on"
	if approve {
		name, status, what = "approve", store.ParkApproved, "lets it run, exactly once and with the arguments it was parked with"
	}
	cmd := &cobra.Command{
		Use:   name + " [flags] ID",
		Short: fmt.Sprintf("%s a tool call parked for approval", map[bool]string{true: "Approve", false: "Deny"}[approve]),
		Long: fmt.Sprintf(`Decide the parked call ID ('orca approvals' lists them): %s %s. The
session's next run (orca run --session SESSION) goes on from the parked
call. A call is decided once.`, name, what),
		Args: oneArg("the id of a parked call", "'orca approvals' lists them"),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, root, err := existingStore(cmd.Context(), ws, o)
			if err != nil {
				return err
			}
			if st == nil {
				return usageErrorf("workspace %s has no parked call %s: it has no session store", root, args[0])
			}
			defer st.Close()
			by := "the user"
			if u, err := user.Current(); err == nil {
				by = u.Username
			}
			p, err := st.SetParkStatus(cmd.Context(), args[0], status, by, note)
			switch {
			case errors.Is(err, store.ErrNotFound):
				return usageErrorf("workspace %s has no parked call %s: 'orca approvals' lists them", root, args[0])
			case errors.Is(err, store.ErrInvalid):
				return usageErrorf("%v", err)
			case err != nil:
				return &exitError{code: exitTurn, err: err}
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s of session %s: 'orca run --session %s' goes on with its turn.\n",
				map[bool]string{true: "Approved", false: "Denied"}[approve], p.ID, p.ToolName, p.SessionID, p.SessionID)
			return err
		},
	}
	cmd.Flags().StringVarP(&ws, "workspace", "w", ".", "workspace `DIR`")
	cmd.Flags().StringVar(&note, "note", "", "a note for the model (with deny: why)")
	return cmd
}
