package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/observe"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tui"
)

// timelineFlags are the flags of orca timeline.
type timelineFlags struct {
	workspace string
	session   string
	json      bool
}

func newTimelineCmd(o options) *cobra.Command {
	var f timelineFlags
	cmd := &cobra.Command{
		Use:   "timeline [flags] [RUN]",
		Short: "Show the events of a run, or of a session",
		Long: `Show the events of a run that was started with --timeline ('orca run
--timeline', 'orca chat --timeline'): RUN is a run id (a folder of
.orca/runs in the workspace), a run's folder, or the path of its
events.jsonl; without RUN, the workspace's newest run — or its most
recently active session, when that is newer (or there are no runs).

With --session ID, the events of session ID are read instead from the
observation rows that every run and chat writes into the workspace's store
(.orca/orca.db), --timeline or not.

The table shows each event's time from the first one, its name (the events
of subagent forks indented under a │) and what it is about; llm_delta
events are counted, not listed. With --json, stdout carries the events
themselves, one JSON object per line, as 'orca run --json' prints them.`,
		Example: `  orca run --script fix.json --timeline "Fix the failing test"
  orca timeline
  orca timeline run_20250102-150405_1a2b3c4d --json | jq -r .name
  orca timeline .orca/runs/run_20250102-150405_1a2b3c4d/events.jsonl
  orca timeline --session session_0123456789abcdef`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTimeline(cmd, &f, args, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.workspace, "workspace", "w", ".", "workspace `DIR` whose runs (or store) to read")
	fl.StringVar(&f.session, "session", "", "show the observation rows of session `ID` from the store instead of a run's timeline")
	fl.BoolVar(&f.json, "json", false, "print the events as JSON lines instead of a table")
	return cmd
}

func runTimeline(cmd *cobra.Command, f *timelineFlags, args []string, o options) error {
	var lines []json.RawMessage
	var title string
	if f.session != "" {
		if len(args) > 0 {
			return usageErrorf("give a RUN or --session, not both")
		}
		rows, root, err := sessionRows(cmd, f, o)
		if err != nil {
			return err
		}
		for _, r := range rows {
			lines = append(lines, r.Data)
		}
		title = fmt.Sprintf("Session %s (observation rows of %s)", f.session, root)
	} else {
		ws := f.workspace
		if root, err := checkWorkspace(f.workspace); err != nil && len(args) == 0 {
			return err
		} else if err == nil {
			ws = root
		}
		run := ""
		if len(args) > 0 {
			run = args[0]
		}
		path, err := observe.FindRun(ws, run)
		if run == "" {
			// The newest of the runs and the sessions: every run and chat
			// writes a session's observation rows, --timeline or not.
			if id := latestSession(cmd, ws, o, path); id != "" {
				f.session = id
				return runTimeline(cmd, f, nil, o)
			}
		}
		if err != nil {
			if run == "" {
				return usageErrorf("%v, and no session either: 'orca run' and 'orca chat' write a session's events to the store, and with --timeline a run's to .orca/runs", err)
			}
			return usageErrorf("%v ('orca timeline' without RUN shows the newest run or session)", err)
		}
		if lines, err = observe.ReadTimeline(path); err != nil {
			return usageErrorf("%v", err)
		}
		title = fmt.Sprintf("Run %s (%s)", filepath.Base(filepath.Dir(path)), path)
	}
	out := cmd.OutOrStdout()
	if f.json {
		w := bufio.NewWriter(out)
		for _, l := range lines {
			w.Write(l)
			w.WriteByte('\n')
		}
		return w.Flush()
	}
	return tui.WriteTimeline(out, title, lines)
}

// sessionRows returns the observation rows of session f.session.
func sessionRows(cmd *cobra.Command, f *timelineFlags, o options) ([]store.Observation, string, error) {
	st, root, err := existingStore(cmd.Context(), f.workspace, o)
	if err != nil {
		return nil, "", err
	}
	if st == nil {
		return nil, "", usageErrorf("workspace %s has no session store yet, so no observation rows", root)
	}
	defer st.Close()
	obs, ok := st.(store.Observations)
	if !ok {
		return nil, "", usageErrorf("the session store of %s keeps no observation rows", root)
	}
	rows, err := obs.Observations(cmd.Context(), store.ObservationFilter{SessionID: f.session})
	if err != nil {
		return nil, "", &exitError{code: exitTurn, err: fmt.Errorf("session %s: reading the observation rows: %w", f.session, err)}
	}
	if len(rows) == 0 {
		return nil, "", usageErrorf("workspace %s has no observation rows of session %s: 'orca sessions' lists its sessions", root, f.session)
	}
	return rows, root, nil
}

// latestSession returns the workspace's most recently active session when
// it is newer than the run at runPath ("" for none), else "".
func latestSession(cmd *cobra.Command, ws string, o options, runPath string) string {
	st, _, err := existingStore(cmd.Context(), ws, o)
	if err != nil || st == nil {
		return ""
	}
	defer st.Close()
	ss, err := st.Sessions(cmd.Context(), store.Filter{Limit: 1})
	if err != nil || len(ss) == 0 {
		return ""
	}
	if runPath != "" {
		// The run shows the session itself, or came after it.
		if lines, err := observe.ReadTimeline(runPath); err == nil {
			for _, l := range lines {
				var ev struct {
					SessionID string `json:"session_id"`
				}
				if json.Unmarshal(l, &ev) == nil && ev.SessionID == ss[0].ID {
					return ""
				}
			}
		}
		if fi, err := os.Stat(runPath); err == nil && !fi.ModTime().Before(ss[0].UpdatedAt) {
			return ""
		}
	}
	return ss[0].ID
}
