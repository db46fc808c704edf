package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/rewind"
	"github.com/orca-agent/orca/tui"
)

// rewindFlags are the flags of orca rewind.
type rewindFlags struct {
	workspace string
	session   string
	force     bool
	json      bool
}

func newRewindCmd(o options) *cobra.Command {
	var f rewindFlags
	cmd := &cobra.Command{
		Use:   "rewind [flags] [TURN]",
		Short: "List what a session's turns changed in the workspace, or put it back as it was before one",
		Long: `Every turn of orca run and orca chat keeps a checkpoint of what it changed
in the workspace — by Edit and Write, and by commands: a file a command
edited, removed, moved or made is seen as well (orca compares the files
before and after the turn; git's ignored files and those a deny rule
keeps the agent from reading are not followed, nor files over 16 MB).

Without TURN, the session's checkpoints are listed: each turn with the
paths it changed (+ made, - removed, ~ changed). With TURN — a turn id, or
its number in the list — the workspace is put back as it was before that
turn: every path that turn or a later one changed, and only those. A file
that changed again since (your own edit) is not touched: the rewind stops,
names it, and does nothing until you give --force. Nothing is cleaned: a
file is removed only if a turn made it and it is still what the turn
made. The turns rewound are forgotten. The conversation is not rewound.

The session is the workspace's most recently active one unless --session
names another.`,
		Example: `  orca rewind
  orca rewind 2
  orca rewind turn_0123456789abcdef --force
  orca rewind --session session_0123456789abcdef --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRewind(cmd, &f, args, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.workspace, "workspace", "w", ".", "workspace `DIR` to rewind")
	fl.StringVar(&f.session, "session", "", "the session `ID` whose turns to rewind (default: the most recently active)")
	fl.BoolVar(&f.force, "force", false, "put back files that changed since the turns changed them too")
	fl.BoolVar(&f.json, "json", false, "print the checkpoints, or what was put back, as JSON")
	return cmd
}

func runRewind(cmd *cobra.Command, f *rewindFlags, args []string, o options) error {
	root, err := checkWorkspace(f.workspace)
	if err != nil {
		return err
	}
	session := f.session
	if session == "" {
		if session = latestSession(cmd, root, o, ""); session == "" {
			return usageErrorf("workspace %s has no sessions: 'orca run' or 'orca chat' make them", root)
		}
	}
	st, err := app.RewindStore(root, rewind.Options{})
	if err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	cps, err := st.Checkpoints(session)
	if err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	out := cmd.OutOrStdout()
	if len(args) == 0 {
		if f.json {
			return writeJSON(out, checkpointsJSON(cps))
		}
		if len(cps) == 0 {
			fmt.Fprintf(out, "Session %s has no turn that changed the workspace.\n", session)
			return nil
		}
		fmt.Fprintf(out, "Session %s: %s that changed the workspace, oldest first.\n", session, tui.Plural(len(cps), "turn"))
		for i, cp := range cps {
			fmt.Fprintf(out, "\n%d. %s, %s: %s\n", i+1, cp.ID, cp.Taken.Local().Format("2006-01-02 15:04:05"), tui.Plural(len(cp.Changes), "path"))
			for _, c := range cp.Changes {
				fmt.Fprintf(out, "   %s %s\n", mark(c), c.Path)
			}
		}
		fmt.Fprintf(out, "\n'orca rewind N' puts the workspace back as it was before turn N.\n")
		return nil
	}
	from := -1
	for i, cp := range cps {
		if cp.ID == args[0] || strconv.Itoa(i+1) == args[0] {
			from = i
		}
	}
	if from < 0 {
		return usageErrorf("session %s has no turn %q with changes to rewind: 'orca rewind' lists them", session, args[0])
	}
	undo := cps[from:]
	r, err := st.Restore(undo, f.force)
	if err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	if len(r.Conflicts) > 0 && !f.force {
		if f.json {
			writeJSON(out, restoredJSON(r, false))
		}
		var b strings.Builder
		for _, c := range r.Conflicts {
			fmt.Fprintf(&b, "\n  %s: %s", c.Path, c.Why)
		}
		return &exitError{code: exitTurn, err: fmt.Errorf("nothing was put back: %s changed since the turns changed %s:%s\nLook at %s, then rerun with --force to put %s back too",
			tui.Plural(len(r.Conflicts), "path"), pronoun(len(r.Conflicts)), b.String(), pronoun(len(r.Conflicts)), pronoun(len(r.Conflicts)))}
	}
	ids := make([]string, len(undo))
	for i, cp := range undo {
		ids[i] = cp.ID
	}
	if err := st.Remove(session, ids...); err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	if f.json {
		return writeJSON(out, restoredJSON(r, true))
	}
	fmt.Fprintf(out, "Put back %s as %s before turn %s:\n", tui.Plural(len(r.Paths), "path"), were(len(r.Paths)), undo[0].ID)
	for _, p := range r.Paths {
		fmt.Fprintf(out, "  %s\n", p)
	}
	if len(r.Lost) > 0 {
		fmt.Fprintf(out, "Left as %s: what %s before is not kept (larger than %s):\n", pronoun(len(r.Lost)), were(len(r.Lost)), llm.ByteSize(rewind.DefaultMaxFile))
		for _, p := range r.Lost {
			fmt.Fprintf(out, "  %s\n", p)
		}
	}
	return nil
}

// mark is how a change is listed: + made, - removed, ~ changed.
func mark(c rewind.Change) string {
	switch {
	case c.Before == nil:
		return "+"
	case c.After == nil:
		return "-"
	}
	return "~"
}

func pronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

func were(n int) string {
	if n == 1 {
		return "it was"
	}
	return "they were"
}

type changeJSON struct {
	Path string `json:"path"`
	// Kind is made, removed or changed.
	Kind string `json:"kind"`
}

type checkpointJSON struct {
	Turn    string       `json:"turn"`
	Taken   string       `json:"taken"`
	Changes []changeJSON `json:"changes"`
}

func checkpointsJSON(cps []rewind.Checkpoint) []checkpointJSON {
	out := make([]checkpointJSON, 0, len(cps))
	for _, cp := range cps {
		j := checkpointJSON{Turn: cp.ID, Taken: cp.Taken.UTC().Format("2006-01-02T15:04:05.000Z07:00"), Changes: []changeJSON{}}
		for _, c := range cp.Changes {
			j.Changes = append(j.Changes, changeJSON{Path: c.Path, Kind: map[string]string{"+": "made", "-": "removed", "~": "changed"}[mark(c)]})
		}
		out = append(out, j)
	}
	return out
}

func restoredJSON(r rewind.Restored, done bool) map[string]any {
	conflicts := []map[string]string{}
	for _, c := range r.Conflicts {
		conflicts = append(conflicts, map[string]string{"path": c.Path, "why": c.Why})
	}
	return map[string]any{"rewound": done, "restored": nonNilStrings(r.Paths), "conflicts": conflicts, "lost": nonNilStrings(r.Lost)}
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
