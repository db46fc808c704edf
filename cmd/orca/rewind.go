package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/rewind"
	"github.com/orca-agent/orca/tui"
)

// rewindFlags are the flags of orca rewind.
type rewindFlags struct {
	workspace string
	session   string
	force     bool
	diff      bool
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
paths it changed (+ made, - removed, ~ changed); --diff TURN shows what
one turn changed, as unified diffs. With TURN — a turn id, or its number
in the list — the workspace is put back as it was before that turn: every path that turn or a later one changed, and only those. A file
that changed again since (your own edit) is not touched: the rewind stops,
names it, and does nothing until you give --force. Nothing is cleaned: a
file is removed only if a turn made it and it is still what the turn
made. The turns rewound are forgotten. The conversation is not rewound.

The session is the workspace's most recently active one unless --session
names another.`,
		Example: `  orca rewind
  orca rewind 2
  orca rewind --diff 2
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
	fl.BoolVar(&f.diff, "diff", false, "show what TURN changed, as unified diffs, and put nothing back")
	fl.BoolVar(&f.json, "json", false, "print the checkpoints, or what was put back, as JSON")
	return cmd
}

func runRewind(cmd *cobra.Command, f *rewindFlags, args []string, o options) error {
	if len(args) == 0 && (f.diff || f.force) {
		return usageErrorf("--diff and --force need a TURN: 'orca rewind' lists the turns")
	}
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
	out := cmd.OutOrStdout()
	if len(args) == 0 {
		cps, err := st.Checkpoints(session)
		if err != nil {
			return &exitError{code: exitTurn, err: err}
		}
		if f.json {
			return writeJSON(out, checkpointsJSON(cps))
		}
		tui.WriteCheckpoints(out, session, cps, "orca rewind N")
		return nil
	}
	if f.diff {
		return rewindDiff(cmd, st, session, args[0])
	}
	r, undone, err := app.RewindTo(st, session, args[0], f.force)
	switch {
	case errors.Is(err, app.ErrNoCheckpoint):
		return usageErrorf("%v: 'orca rewind' lists them", err)
	case err != nil:
		return &exitError{code: exitTurn, err: err}
	case len(r.Conflicts) > 0 && !f.force:
		if f.json {
			writeJSON(out, restoredJSON(r, false))
		}
		return &exitError{code: exitTurn, err: errors.New(tui.RewindStopped(r, "--force"))}
	}
	if f.json {
		return writeJSON(out, restoredJSON(r, true))
	}
	tui.WriteRewound(out, r, undone[0].ID)
	return nil
}

// rewindDiff writes what turn (an id or a number) changed as unified
// diffs.
func rewindDiff(cmd *cobra.Command, st *rewind.Store, session, turn string) error {
	cps, i, err := app.CheckpointOf(st, session, turn)
	switch {
	case errors.Is(err, app.ErrNoCheckpoint):
		return usageErrorf("%v: 'orca rewind' lists them", err)
	case err != nil:
		return &exitError{code: exitTurn, err: err}
	}
	tui.WriteDiff(cmd.OutOrStdout(), cps[i], st.Content)
	return nil
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
	kinds := map[string]string{"+": "made", "-": "removed", "~": "changed"}
	out := make([]checkpointJSON, 0, len(cps))
	for _, cp := range cps {
		j := checkpointJSON{Turn: cp.ID, Taken: cp.Taken.UTC().Format("2006-01-02T15:04:05.000Z07:00"), Changes: []changeJSON{}}
		for _, c := range cp.Changes {
			j.Changes = append(j.Changes, changeJSON{Path: c.Path, Kind: kinds[tui.ChangeMark(c)]})
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
	return map[string]any{"rewound": done, "restored": nonNil(r.Paths), "conflicts": conflicts, "lost": nonNil(r.Lost)}
}
