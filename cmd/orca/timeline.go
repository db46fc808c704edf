package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/observe"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tool"
)

// timelineFlags are the flags of orca timeline.
type timelineFlags struct {
	workspace string
	session   string
	json      bool
}

func newTimelineCmd() *cobra.Command {
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
			return runTimeline(cmd, &f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.workspace, "workspace", "w", ".", "workspace `DIR` whose runs (or store) to read")
	fl.StringVar(&f.session, "session", "", "show the observation rows of session `ID` from the store instead of a run's timeline")
	fl.BoolVar(&f.json, "json", false, "print the events as JSON lines instead of a table")
	return cmd
}

func runTimeline(cmd *cobra.Command, f *timelineFlags, args []string) error {
	var lines []json.RawMessage
	var title string
	if f.session != "" {
		if len(args) > 0 {
			return usageErrorf("give a RUN or --session, not both")
		}
		rows, root, err := sessionRows(cmd, f)
		if err != nil {
			return err
		}
		for _, r := range rows {
			lines = append(lines, r.Data)
		}
		title = fmt.Sprintf("Session %s (observation rows of %s)", f.session, root)
	} else {
		path, err := timelineFile(f.workspace, args)
		if err != nil {
			return err
		}
		if lines, err = readTimeline(path); err != nil {
			return err
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
func sessionRows(cmd *cobra.Command, f *timelineFlags) ([]store.Observation, string, error) {
	st, root, err := existingStore(f.workspace)
	if err != nil {
		return nil, "", err
	}
	if st == nil {
		return nil, "", usageErrorf("workspace %s has no session store yet, so no observation rows", root)
	}
	defer st.Close()
	rows, err := st.Observations(cmd.Context(), store.ObservationFilter{SessionID: f.session})
	if err != nil {
		return nil, "", &exitError{code: exitTurn, err: fmt.Errorf("session %s: reading the observation rows: %w", f.session, err)}
	}
	if len(rows) == 0 {
		return nil, "", usageErrorf("workspace %s has no observation rows of session %s: 'orca sessions' lists its sessions", root, f.session)
	}
	return rows, root, nil
}

// timelineFile returns the events.jsonl that args name: a file, a run's
// folder, a run id of the workspace ws, or (no args) its newest run.
func timelineFile(ws string, args []string) (string, error) {
	if len(args) == 1 {
		arg := args[0]
		if fi, err := os.Stat(arg); err == nil {
			if fi.IsDir() {
				return filepath.Join(arg, "events.jsonl"), nil
			}
			return arg, nil
		}
		if strings.ContainsRune(arg, os.PathSeparator) || strings.HasSuffix(arg, ".jsonl") {
			return "", usageErrorf("%s does not exist", arg)
		}
	}
	if _, err := checkWorkspace(ws); err != nil {
		return "", err
	}
	runs := filepath.Join(ws, filepath.FromSlash(observe.RunsDir))
	if len(args) == 1 {
		path := filepath.Join(runs, args[0], "events.jsonl")
		if _, err := os.Stat(path); err != nil {
			return "", usageErrorf("workspace %s has no run %s ('orca timeline' without RUN shows the newest)", ws, args[0])
		}
		return path, nil
	}
	entries, err := os.ReadDir(runs)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", &exitError{code: exitTurn, err: err}
	}
	type run struct {
		name string
		mod  time.Time
	}
	var found []run
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		fi, err := os.Stat(filepath.Join(runs, e.Name(), "events.jsonl"))
		if err != nil {
			continue
		}
		found = append(found, run{e.Name(), fi.ModTime()})
	}
	if len(found) == 0 {
		return "", usageErrorf("workspace %s has no runs yet: 'orca run --timeline' and 'orca chat --timeline' write them", ws)
	}
	newest := slices.MaxFunc(found, func(a, b run) int {
		if c := a.mod.Compare(b.mod); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	return filepath.Join(runs, newest.name, "events.jsonl"), nil
}

// readTimeline reads the events of a timeline file, one JSON object a
// line.
func readTimeline(path string) ([]json.RawMessage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	defer f.Close()
	var lines []json.RawMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for n := 1; sc.Scan(); n++ {
		l := sc.Bytes()
		if len(strings.TrimSpace(string(l))) == 0 {
			continue
		}
		if !json.Valid(l) {
			return nil, usageErrorf("%s:%d: not a JSON event", path, n)
		}
		lines = append(lines, json.RawMessage(slices.Clone(l)))
	}
	if err := sc.Err(); err != nil {
		return nil, &exitError{code: exitTurn, err: fmt.Errorf("%s: %w", path, err)}
	}
	return lines, nil
}

// timelineEvent is the part of an event's flat JSON the table shows.
type timelineEvent struct {
	Name       string          `json:"name"`
	Time       time.Time       `json:"time"`
	Depth      int             `json:"depth"`
	Input      json.RawMessage `json:"input"`
	Iteration  int             `json:"iteration"`
	Attempt    int             `json:"attempt"`
	StopReason string          `json:"stop_reason"`
	Error      string          `json:"error"`
	ToolName   string          `json:"tool_name"`
	ToolUseID  string          `json:"tool_use_id"`
	Summary    string          `json:"summary"`
	Detail     string          `json:"detail"`
	Output     string          `json:"output"`
	IsError    bool            `json:"is_error"`
	Reason     string          `json:"reason"`
	Handler    string          `json:"handler"`
	Trigger    string          `json:"trigger"`
	Iterations int             `json:"iterations"`
	ToolCalls  int             `json:"tool_calls"`
}

// writeTimeline writes the events as a table: offset from the first
// event, name, summary.
func writeTimeline(out io.Writer, title string, lines []json.RawMessage) error {
	var b strings.Builder
	evs := make([]timelineEvent, 0, len(lines))
	deltas := 0
	for _, l := range lines {
		var ev timelineEvent
		json.Unmarshal(l, &ev) // a field of another type is left empty
		if ev.Name == "llm_delta" {
			deltas++
			continue
		}
		evs = append(evs, ev)
	}
	fmt.Fprintf(&b, "%s · %s", title, plural(len(lines), "event"))
	if deltas > 0 {
		fmt.Fprintf(&b, " (%s not listed)", plural(deltas, "llm_delta event"))
	}
	b.WriteString("\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	var start time.Time
	shown := map[string]timelineEvent{} // a call's start, by tool use id: how its end is shown
	for _, ev := range evs {
		if start.IsZero() {
			start = ev.Time
		}
		if ev.Name == "tool_exec_started" {
			shown[ev.ToolUseID] = ev
		} else if st, ok := shown[ev.ToolUseID]; ok && strings.HasPrefix(ev.Name, "tool_exec_") {
			ev.Summary, ev.Detail = st.Summary, st.Detail
		}
		name := strings.Repeat("│ ", ev.Depth) + ev.Name
		fmt.Fprintf(tw, "  +%.3fs\t%s\t%s\n", ev.Time.Sub(start).Seconds(), name, eventSummary(ev))
	}
	tw.Flush()
	_, err := io.WriteString(out, b.String())
	return err
}

// eventSummary says in a line what a timeline event is about.
func eventSummary(ev timelineEvent) string {
	var s string
	switch {
	case ev.Name == "turn_started":
		var in string
		json.Unmarshal(ev.Input, &in)
		s = "❯ " + in
	case ev.Name == "iteration_started":
		s = fmt.Sprintf("iteration %d", ev.Iteration)
	case strings.HasPrefix(ev.Name, "llm_call_"):
		parts := []string{fmt.Sprintf("iteration %d", ev.Iteration)}
		if ev.Attempt > 1 {
			parts = append(parts, fmt.Sprintf("attempt %d", ev.Attempt))
		}
		if ev.StopReason != "" {
			parts = append(parts, ev.StopReason)
		}
		if ev.Error != "" {
			parts = append(parts, "✗ "+ev.Error)
		}
		s = strings.Join(parts, " · ")
	case strings.HasPrefix(ev.Name, "tool_exec_"):
		first, _, _ := strings.Cut(toolHeader(ev.ToolName, ev.Input, tool.Display{Summary: ev.Summary, Detail: ev.Detail}), "\n")
		s = strings.TrimPrefix(first, "● ")
		if ev.Name != "tool_exec_started" {
			mark := "→ "
			if ev.IsError {
				mark = "✗ "
			}
			out, _, _ := strings.Cut(strings.TrimSpace(ev.Output), "\n")
			s += " " + mark + out
		}
	case ev.Name == "tool_blocked":
		s = ev.ToolName + ": " + ev.Reason
	case ev.Name == "hook_failed":
		s = ev.Handler + ": " + ev.Error
	case strings.HasPrefix(ev.Name, "compaction_"):
		s = ev.Trigger
		if ev.Error != "" {
			s += " ✗ " + ev.Error
		}
	case ev.Name == "turn_completed":
		s = fmt.Sprintf("%s · %s · %s", ev.StopReason, plural(ev.Iterations, "iteration"), plural(ev.ToolCalls, "tool call"))
		if ev.Error != "" {
			s += " · " + ev.Error
		}
	}
	return oneLine(s, maxSummaryRunes)
}
