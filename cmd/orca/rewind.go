package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/rewind"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tui"
)

// rewindFlags are the flags of orca rewind.
type rewindFlags struct {
	workspace    string
	session      string
	force        bool
	diff         bool
	json         bool
	conversation bool
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
made. The turns rewound are forgotten.

The conversation stays as it is unless --conversation rewinds it too: it
goes on in a new session, a branch holding the conversation as it was
before that turn (the session itself keeps every message: nothing is
lost), with the checkpoints of the turns it keeps. orca rewind prints the
new session's id and the commands that go on in it.

The session is the workspace's most recently active one unless --session
names another.`,
		Example: `  orca rewind
  orca rewind 2
  orca rewind --diff 2
  orca rewind 2 --conversation
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
	fl.BoolVar(&f.conversation, "conversation", false, "rewind the conversation too: go on from before TURN in a new session (the session is kept)")
	fl.BoolVar(&f.json, "json", false, "print the checkpoints, or what was put back, as JSON")
	return cmd
}

// rewoundJSON is what orca rewind TURN --json prints.
type rewoundJSON struct {
	app.RewoundView
	// Continue are the commands that go on in the branch (--conversation).
	Continue []string `json:"continue,omitempty"`
}

func runRewind(cmd *cobra.Command, f *rewindFlags, args []string, o options) error {
	switch {
	case len(args) == 0 && (f.diff || f.force || f.conversation):
		return usageErrorf("--diff, --force and --conversation need a TURN: 'orca rewind' lists the turns")
	case f.diff && (f.force || f.conversation):
		return usageErrorf("--diff puts nothing back: give --force and --conversation without it")
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
	rs, err := app.RewindStore(root, rewind.Options{})
	if err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	out := cmd.OutOrStdout()
	if len(args) == 0 {
		cps, err := rs.Checkpoints(session)
		if err != nil {
			return &exitError{code: exitTurn, err: err}
		}
		if f.json {
			return writeJSON(out, app.CheckpointsOf(cps))
		}
		tui.WriteCheckpoints(out, session, cps, "orca rewind N")
		return nil
	}
	if f.diff {
		return rewindDiff(cmd, rs, session, args[0])
	}
	var st store.Store
	if f.conversation {
		if st, _, err = existingStore(cmd.Context(), root, o); err != nil {
			return err
		}
		if st == nil {
			return usageErrorf("workspace %s has no sessions to rewind the conversation of", root)
		}
		defer st.Close()
	}
	r, err := app.Rewind(cmd.Context(), rs, st, session, args[0], app.RewindOptions{Force: f.force, Conversation: f.conversation})
	switch {
	case errors.Is(err, app.ErrNoCheckpoint):
		return usageErrorf("%v: 'orca rewind' lists them", err)
	case errors.Is(err, app.ErrNoTurn), errors.Is(err, store.ErrNotFound):
		return usageErrorf("%v: the conversation cannot be rewound (leave out --conversation to put the files back alone)", err)
	case err != nil:
		return &exitError{code: exitTurn, err: err}
	case r.Stopped:
		if f.json {
			writeJSON(out, rewoundJSON{RewoundView: app.RewoundOf(r)})
		}
		return &exitError{code: exitTurn, err: errors.New(tui.RewindStopped(r.Restored, "--force"))}
	}
	var goOn []string
	if id := r.Branch.ID; id != "" {
		goOn = []string{sessionCommand("chat", id, root), sessionCommand("run", id, root) + " PROMPT"}
	}
	if f.json {
		return writeJSON(out, rewoundJSON{RewoundView: app.RewoundOf(r), Continue: goOn})
	}
	tui.WriteRewound(out, r.Restored, r.Undone[0].ID)
	if r.Branch.ID != "" {
		fmt.Fprintf(out, "The conversation goes on as it was before turn %s in a new session, %s (session %s is kept as it was):\n  %s\n  %s\n",
			r.Undone[0].ID, r.Branch.ID, session, goOn[0], goOn[1])
	}
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
	app.WriteDiff(cmd.OutOrStdout(), cps[i], st.Content)
	return nil
}
