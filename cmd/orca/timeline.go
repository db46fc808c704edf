package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/observe"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tool"
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
events.jsonl; without RUN, the workspace's newest run.

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
		if err != nil {
			if run == "" {
				return usageErrorf("%v: 'orca run --timeline' and 'orca chat --timeline' write them; 'orca timeline --session ID' shows a session's events from the store", err)
			}
			return usageErrorf("%v ('orca timeline' without RUN shows the newest)", err)
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
	return writeTimeline(out, title, lines)
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

// writeTimeline writes the events as a table: offset from the first
// event, name (a fork's indented under a │), what it is about.
func writeTimeline(out io.Writer, title string, lines []json.RawMessage) error {
	var b strings.Builder
	evs := make([]event.Event, 0, len(lines))
	deltas := 0
	for _, l := range lines {
		ev, err := event.Decode(l)
		if err != nil {
			continue // not an event: --json shows the line as it is
		}
		if ev.Name == event.LLMDelta {
			deltas++
			continue
		}
		evs = append(evs, ev)
	}
	fmt.Fprintf(&b, "%s · %s", title, tui.Plural(len(lines), "event"))
	if deltas > 0 {
		fmt.Fprintf(&b, " (%s not listed)", tui.Plural(deltas, "llm_delta event"))
	}
	b.WriteString("\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	starts := map[string]*event.ToolData{} // a call's start, by tool use id: how its end is shown
	for _, ev := range evs {
		if d, ok := ev.Data.(*event.ToolData); ok && ev.Name == event.ToolExecStarted {
			starts[d.ToolUseID] = d
		}
		name := strings.Repeat("│ ", ev.Depth) + string(ev.Name)
		fmt.Fprintf(tw, "  +%.3fs\t%s\t%s\n", ev.Time.Sub(evs[0].Time).Seconds(), name, eventSummary(ev, starts))
	}
	tw.Flush()
	_, err := io.WriteString(out, b.String())
	return err
}

// eventSummary says in a line what a timeline event is about; starts are
// the tool calls started so far, whose display their ends share.
func eventSummary(ev event.Event, starts map[string]*event.ToolData) string {
	var s string
	switch d := ev.Data.(type) {
	case *event.SessionData:
		s = cmp.Or(d.Source, d.Reason)
	case *event.TurnStartedData:
		s = "❯ " + d.Input
	case *event.IterationStartedData:
		s = fmt.Sprintf("iteration %d", d.Iteration)
	case *event.LLMCallData:
		parts := []string{fmt.Sprintf("iteration %d", d.Iteration)}
		if d.Attempt > 1 {
			parts = append(parts, fmt.Sprintf("attempt %d", d.Attempt))
		}
		if d.StopReason != "" {
			parts = append(parts, string(d.StopReason))
		}
		if d.Error != "" {
			parts = append(parts, "✗ "+d.Error)
		}
		s = strings.Join(parts, " · ")
	case *event.ToolData:
		shown := tool.Display{Summary: d.Summary, Detail: d.Detail}
		if st, ok := starts[d.ToolUseID]; ok {
			shown = tool.Display{Summary: st.Summary, Detail: st.Detail}
		}
		first, _, _ := strings.Cut(tui.ToolHeader(d.ToolName, d.Input, shown), "\n")
		s = strings.TrimPrefix(first, "● ")
		if ev.Name != event.ToolExecStarted {
			mark := "→ "
			if d.IsError {
				mark = "✗ "
			}
			out, _, _ := strings.Cut(strings.TrimSpace(d.Output), "\n")
			s += " " + mark + out
		}
	case *event.ToolBlockedData:
		s = d.ToolName + ": " + d.Reason
	case *event.HookFailedData:
		s = d.Handler + ": " + d.Error
	case *event.HookMessageData:
		s = d.Handler + ": " + d.Message
	case *event.CompactionData:
		s = d.Trigger
		if d.Error != "" {
			s += " ✗ " + d.Error
		}
	case *event.SubagentData:
		s = d.Agent
		if d.StopReason != "" {
			s += " · " + d.StopReason
		}
		if d.TaskID != "" {
			s += " · " + d.TaskID
		}
	case *event.TurnCompletedData:
		s = fmt.Sprintf("%s · %s · %s", d.StopReason, tui.Plural(d.Iterations, "iteration"), tui.Plural(d.ToolCalls, "tool call"))
		if d.Error != "" {
			s += " · " + d.Error
		}
	}
	return tui.OneLine(s, tui.MaxSummaryRunes)
}
