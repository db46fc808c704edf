package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orca-agent/orca/observe"
)

// eventNames returns the names of the events of stdout, in order, the
// session's own (session_started, session_ended: orca run shows only its
// turn) and the llm_delta ones (not observation rows) left out.
func eventNames(t *testing.T, stdout string) []string {
	t.Helper()
	var names []string
	for _, ev := range parseEvents(t, stdout) {
		if n := ev.str("name"); n != "session_started" && n != "session_ended" && n != "llm_delta" {
			names = append(names, n)
		}
	}
	return names
}

func TestObservationRowsAndTimeline(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeFileAt(t, ws, "a.txt", "hello\n")
	sc := writeScript(t, `{"tool_calls": [{"id": "r", "name": "Read", "input": {"file_path": "a.txt"}}]}`, `{"text": "it says hello"}`)
	runs := filepath.Join(ws, filepath.FromSlash(observe.RunsDir))

	// Without --timeline: observation rows, and no timeline.
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--json", "read it")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	first := lastEvent(t, stdout).str("session_id")
	if _, err := os.Stat(runs); err == nil || strings.Contains(stderr, "timeline") {
		t.Errorf("a run without --timeline wrote a timeline: %s", stderr)
	}
	rows, stderr, code := orca(t, t.Context(), "", "timeline", "-w", ws, "--session", first, "--json")
	if code != 0 {
		t.Fatalf("timeline --session: exit %d\n%s", code, stderr)
	}
	if got, want := eventNames(t, rows), eventNames(t, stdout); !slices.Equal(got, want) {
		t.Errorf("the rows are\n%v\nthe run printed\n%v", got, want)
	}

	// With --timeline: the run's timeline lists the events the rows do.
	stdout, stderr, code = orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--json", "--timeline", "read it")
	if code != 0 {
		t.Fatalf("run --timeline: exit %d\n%s", code, stderr)
	}
	second := lastEvent(t, stdout).str("session_id")
	entries, _ := os.ReadDir(runs)
	if len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), "run_") {
		t.Fatalf("runs: %v", entries)
	}
	path := filepath.Join(runs, entries[0].Name(), "events.jsonl")
	if !strings.Contains(stderr, "timeline is in "+path) {
		t.Errorf("stderr does not say where the timeline went (%s):\n%s", path, stderr)
	}
	timeline, stderr, code := orca(t, t.Context(), "", "timeline", "-w", ws, "--json")
	if code != 0 {
		t.Fatalf("timeline: exit %d\n%s", code, stderr)
	}
	rows, _, _ = orca(t, t.Context(), "", "timeline", "-w", ws, "--session", second, "--json")
	names := eventNames(t, timeline)
	if !slices.Equal(names, eventNames(t, rows)) || names[0] != "turn_started" || names[len(names)-1] != "turn_completed" {
		t.Errorf("the timeline lists\n%v\nthe rows\n%v", names, eventNames(t, rows))
	}
	// The same run, by id and by file.
	for _, arg := range []string{entries[0].Name(), path} {
		if out, stderr, _ := orca(t, t.Context(), "", "timeline", "-w", ws, arg, "--json"); out != timeline {
			t.Errorf("timeline %s: %s\n%s", arg, out, stderr)
		}
	}

	table, stderr, code := orca(t, t.Context(), "", "timeline", "-w", ws)
	if code != 0 {
		t.Fatalf("timeline table: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"Run " + entries[0].Name(), "+0.000s  session_started", "turn_started", "❯ read it", "session_ended", "tool_exec_completed", "Read a.txt → ", "answered · 2 iterations · 1 tool call"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}

	if _, stderr, code := orca(t, t.Context(), "", "timeline", "-w", t.TempDir()); code != exitUsage || !strings.Contains(stderr, "no runs yet") {
		t.Errorf("no runs: %d %s", code, stderr)
	}
	if _, stderr, code := orca(t, t.Context(), "", "timeline", "-w", ws, "--session", "nope"); code != exitUsage || !strings.Contains(stderr, "no observation rows of session nope") {
		t.Errorf("unknown session: %d %s", code, stderr)
	}
}

// routesScript writes a script whose main agent starts a background fork
// and waits for the file the fork writes; the fork answers from the
// subagent list.
func routesScript(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "routes.json")
	body := `{"routes": {
  "main": [
    {"tool_calls": [{"id": "t", "name": "Task", "input": {"description": "Write the marker", "prompt": "Write fork.txt", "subagent_type": "general-purpose", "run_in_background": true}}]},
    {"tool_calls": [{"id": "w", "name": "Bash", "input": {"command": "i=0; while [ ! -s fork.txt ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; cat fork.txt"}}]},
    {"tool_calls": [{"id": "o", "name": "AgentOutput", "input": {"task_id": "task_unknown", "block": false}}]},
    {"text": "the fork wrote it"}
  ],
  "subagent": [
    {"tool_calls": [{"id": "f", "name": "Write", "input": {"file_path": "fork.txt", "content": "forked\n"}}]},
    {"text": "wrote fork.txt"}
  ]
}}`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunScriptRoutesBackgroundFork(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	sc := routesScript(t)
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--json", "--permission-mode", "bypass", "go")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	evs := parseEvents(t, stdout)
	if last := evs[len(evs)-1]; last.str("name") != "turn_completed" || last["depth"] != nil || last.str("answer") != "the fork wrote it" {
		t.Errorf("the last event is %v", last)
	}
	main := evs[0].str("execution_id")
	var fork []jsonEvent
	for _, ev := range evs {
		if ev["depth"] == float64(1) {
			fork = append(fork, ev)
		}
	}
	if len(fork) == 0 {
		t.Fatalf("no event of depth 1:\n%s", stdout)
	}
	var write bool
	for _, ev := range fork {
		if ev.str("execution_id") == main || ev.str("execution_id") == "" || ev.str("session_id") != evs[0].str("session_id") {
			t.Errorf("fork event with the ids of the main turn: %v", ev)
		}
		write = write || (ev.str("name") == "tool_exec_started" && ev.str("tool_name") == "Write")
	}
	if !write {
		t.Errorf("the fork's Write is not among its events: %v", fork)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "fork.txt")); string(b) != "forked\n" {
		t.Errorf("fork.txt: %q", b)
	}
	// Every event once.
	seen := map[string]bool{}
	for _, ev := range evs {
		k := ev.str("execution_id") + ev.str("name") + ev.str("time")
		if seen[k] {
			t.Errorf("shown twice: %v", ev)
		}
		seen[k] = true
	}

	// In text mode, the fork's tool calls are indented under the Task call.
	stdout, stderr, code = orca(t, t.Context(), "", "run", "--script", sc, "-w", t.TempDir(), "--permission-mode", "bypass", "go")
	if code != 0 {
		t.Fatalf("text: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"● Task Write the marker (general-purpose, in the background)", "  │ ● Write fork.txt"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestScriptWithoutResponses(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "empty.json")
	os.WriteFile(path, []byte(`{"routes": {"main": []}}`), 0o644)
	if _, stderr, code := orca(t, t.Context(), "", "run", "--script", path, "-w", t.TempDir(), "hi"); code != exitUsage || !strings.Contains(stderr, "has no responses") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	path = filepath.Join(t.TempDir(), "main.json")
	os.WriteFile(path, []byte(`{"routes": {"main": [{"text": "from the main route"}]}}`), 0o644)
	if stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", path, "-w", t.TempDir(), "hi"); code != 0 || !strings.Contains(stdout, "from the main route") {
		t.Errorf("exit %d: %s\n%s", code, stdout, stderr)
	}
}

// A workspace with no runs: the error names it by its path and says where
// a session's events are.
func TestTimelineWithoutRuns(t *testing.T) {
	ws := t.TempDir()
	t.Chdir(ws)
	_, stderr, code := orca(t, t.Context(), "", "timeline", "-w", ".")
	if code != exitUsage || !strings.Contains(stderr, "workspace "+ws+" has no runs yet, and no session either") || !strings.Contains(stderr, "--timeline") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// Without RUN, orca timeline shows the newest of the --timeline runs and
// the sessions: the session's observation rows when it came later (or
// there are no runs), the run's events when it did.
func TestTimelineShowsTheLatest(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	hi := writeScript(t, `{"text": "hi"}`)
	if _, _, code := orca(t, t.Context(), "", "run", "--script", hi, "-w", ws, "--session", "first", "x"); code != 0 {
		t.Fatal("first run")
	}
	stdout, stderr, code := orca(t, t.Context(), "", "timeline", "-w", ws)
	if code != 0 || !strings.Contains(stdout, "Session first (observation rows") || !strings.Contains(stdout, "turn_completed") {
		t.Errorf("no runs, one session: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, _, code := orca(t, t.Context(), "", "run", "--script", hi, "-w", ws, "--session", "second", "--timeline", "x"); code != 0 {
		t.Fatal("second run")
	}
	if stdout, _, _ := orca(t, t.Context(), "", "timeline", "-w", ws); !strings.Contains(stdout, "Run run_") {
		t.Errorf("a run as new as the session: not shown\n%s", stdout)
	}
	if _, _, code := orca(t, t.Context(), "", "run", "--script", hi, "-w", ws, "--session", "third", "x"); code != 0 {
		t.Fatal("third run")
	}
	if stdout, _, _ := orca(t, t.Context(), "", "timeline", "-w", ws, "--json"); !strings.Contains(stdout, `"session_id":"third"`) || strings.Contains(stdout, `"session_id":"second"`) {
		t.Errorf("a session newer than the run: not shown\n%s", stdout)
	}
}
