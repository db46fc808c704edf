package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/orca-agent/orca/tui"
)

// No test may leave a goroutine behind: not the turn's, not a spinner's.
// Started with asCLI set, the test binary is the orca command line.
func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" {
		os.Unsetenv(asCLI)
		main()
	}
	// The MCP conformance suite's client command, and the browser of its
	// sign-ins (see TestMCPConformanceClient).
	if os.Getenv(asConformanceClient) == "1" {
		os.Exit(conformanceClient())
	}
	if os.Getenv(asBrowser) == "1" {
		os.Exit(browse(os.Args[len(os.Args)-1]))
	}
	// No Claude Code folder but the tests' own.
	os.Setenv("CLAUDE_CONFIG_DIR", "/nonexistent/orca-tests/claude")
	goleak.VerifyTestMain(m)
}

// orca runs the orca command line in-process, with a configuration folder
// of its own (no user settings, nothing trusted), and returns what it wrote
// and its exit code.
func orca(t *testing.T, ctx context.Context, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return orcaWith(t, ctx, options{configDir: t.TempDir()}, stdin, args...)
}

// orcaWith runs the orca command line in-process with o.
func orcaWith(t *testing.T, ctx context.Context, o options, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = execute(ctx, args, strings.NewReader(stdin), &out, &errOut, o)
	return out.String(), errOut.String(), code
}

// jsonEvent is one decoded line of --json output.
type jsonEvent map[string]any

func (e jsonEvent) str(k string) string { s, _ := e[k].(string); return s }

// parseEvents decodes every stdout line as one JSON object carrying the
// envelope fields, failing the test on any other line.
func parseEvents(t *testing.T, stdout string) []jsonEvent {
	t.Helper()
	if !strings.HasSuffix(stdout, "\n") {
		t.Fatalf("stdout does not end with a newline: %q", stdout)
	}
	var evs []jsonEvent
	started := false // turn_started seen
	for i, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		var ev jsonEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("stdout line %d is not a JSON object: %v\n%s", i+1, err, line)
		}
		keys := []string{"name", "session_id", "turn_id"}
		if n := ev.str("name"); n == "session_started" || n == "session_ended" {
			keys = keys[:2] // a session's own events are in no turn
		} else if (n == "hook_message" || n == "hook_failed") && ev.str("hook") == "SESSION_START" && !started {
			keys = keys[:2] // nor are its SESSION_START hooks', before the turn
		}
		for _, k := range keys {
			if ev.str(k) == "" {
				t.Fatalf("stdout line %d has no %s: %s", i+1, k, line)
			}
		}
		started = started || ev.str("name") == "turn_started"
		evs = append(evs, ev)
	}
	return evs
}

// toolEvents returns the completed and failed tool events, in order.
func toolEvents(evs []jsonEvent) []jsonEvent {
	var out []jsonEvent
	for _, ev := range evs {
		if n := ev.str("name"); n == "tool_exec_completed" || n == "tool_exec_failed" {
			out = append(out, ev)
		}
	}
	return out
}

// writeScript writes a script file with the given responses and returns
// its path.
func writeScript(t *testing.T, responses ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.json")
	body := `{"responses": [` + strings.Join(responses, ",\n") + `]}`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDemo(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // os.MkdirTemp puts the demo workspace here

	stdout, stderr, code := orca(t, t.Context(), "", "demo")
	if code != 0 {
		t.Fatalf("demo exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	dir := demoDir(t, tmp)
	if !strings.Contains(stdout, dir) {
		t.Errorf("the output does not name the workspace %s:\n%s", dir, stdout)
	}
	assertFixed(t, dir)
	for _, want := range []string{"❯ " + demoPrompt, "● TodoWrite", "● Grep", "● Read calc.go", "● Edit calc.go", "● Bash go test ./...", "☒ Run the tests", "✓ answered · 7 iterations · 6 tool calls"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the output lacks %q:\n%s", want, stdout)
		}
	}
	if _, err := exec.LookPath("go"); err == nil && !strings.Contains(stdout, "⎿  ok  \texample.com/calc") {
		t.Errorf("go is on PATH but the output shows no passing test:\n%s", stdout)
	}
	if stderr != "" {
		t.Errorf("stderr: %s", stderr)
	}
}

func TestDemoJSON(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)

	stdout, stderr, code := orca(t, t.Context(), "", "demo", "--json")
	if code != 0 {
		t.Fatalf("demo --json exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	dir := demoDir(t, tmp)
	if !strings.Contains(stderr, dir) {
		t.Errorf("stderr does not name the workspace %s: %s", dir, stderr)
	}
	assertFixed(t, dir)

	evs := parseEvents(t, stdout)
	var names []string
	for _, ev := range toolEvents(evs) {
		names = append(names, ev.str("tool_name"))
		if ev.str("tool_name") == "Bash" {
			if _, err := exec.LookPath("go"); err != nil {
				continue // no go: the observation says so, and the demo still ends
			}
			if ev["is_error"] != false || !strings.HasPrefix(ev.str("output"), "ok  \texample.com/calc") {
				t.Errorf("go test did not pass after the fix: %v", ev)
			}
			continue
		}
		if ev["is_error"] != false {
			t.Errorf("%s failed: %s", ev.str("tool_name"), ev.str("output"))
		}
	}
	if got, want := strings.Join(names, " "), "TodoWrite Grep Read Edit Bash TodoWrite"; got != want {
		t.Errorf("tool calls: %s, want %s", got, want)
	}
	last := evs[len(evs)-1]
	if last.str("name") != "turn_completed" || last.str("stop_reason") != "answered" {
		t.Errorf("last event: %v", last)
	}
}

// demoDir returns the one demo workspace created under tmp.
func demoDir(t *testing.T, tmp string) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(tmp, "orca-demo-*"))
	if len(dirs) != 1 {
		t.Fatalf("want one demo workspace in %s, found %v", tmp, dirs)
	}
	return dirs[0]
}

// assertFixed checks that the demo's Edit really fixed calc.go on disk.
func assertFixed(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "calc.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), demoFix) || strings.Contains(string(b), demoBug) {
		t.Errorf("calc.go is not fixed:\n%s", b)
	}
	if want := strings.Replace(demoBuggy, demoBug, demoFix, 1); string(b) != want {
		t.Errorf("calc.go changed more than the bug:\n%s", b)
	}
}

func TestRunJSON(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	sc := writeScript(t,
		`{"text": "I'll write it.", "tool_calls": [{"id": "t1", "name": "Write", "input": {"file_path": "notes/hello.txt", "content": "hello from orca\n"}}]}`,
		`{"tool_calls": [{"id": "t2", "name": "Read", "input": {"file_path": "notes/hello.txt"}}]}`,
		`{"text": "Wrote notes/hello.txt."}`,
	)
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "--workspace", ws, "--session", "s-1", "--json", "--permission-mode", "accept-edits", "Write a note")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if stderr != "" {
		t.Errorf("stderr: %s", stderr)
	}
	evs := parseEvents(t, stdout)
	seen := map[string]int{}
	for _, ev := range evs {
		seen[ev.str("name")]++
		if ev.str("session_id") != "s-1" {
			t.Errorf("session_id %q, want s-1", ev.str("session_id"))
		}
		if strings.HasPrefix(ev.str("name"), "tool_exec_") {
			for _, k := range []string{"tool_name", "input", "is_error"} {
				_, ok := ev[k]
				if k == "is_error" && ev.str("name") == "tool_exec_started" {
					if ok {
						t.Errorf("%s has %s: a call that has not ended has no outcome: %v", ev.str("name"), k, ev)
					}
					continue
				}
				if !ok {
					t.Errorf("%s has no %s: %v", ev.str("name"), k, ev)
				}
			}
		}
	}
	for _, n := range []string{"turn_started", "iteration_started", "llm_call_started", "llm_delta", "llm_call_completed", "tool_exec_started", "tool_exec_completed", "turn_completed"} {
		if seen[n] == 0 {
			t.Errorf("no %s event", n)
		}
	}
	tools := toolEvents(evs)
	if len(tools) != 2 {
		t.Fatalf("want 2 tool events, got %v", tools)
	}
	for i, name := range []string{"Write", "Read"} {
		ev := tools[i]
		if ev.str("name") != "tool_exec_completed" || ev.str("tool_name") != name || ev["is_error"] != false || ev.str("output") == "" {
			t.Errorf("tool event %d: %v", i, ev)
		}
		if in, _ := ev["input"].(map[string]any); in["file_path"] != "notes/hello.txt" {
			t.Errorf("%s input: %v", name, ev["input"])
		}
	}
	if !strings.Contains(tools[1].str("output"), "hello from orca") {
		t.Errorf("Read observed %q", tools[1].str("output"))
	}
	b, err := os.ReadFile(filepath.Join(ws, "notes", "hello.txt"))
	if err != nil || string(b) != "hello from orca\n" {
		t.Errorf("notes/hello.txt on disk: %q, %v", b, err)
	}
	last := evs[len(evs)-1]
	if last.str("name") != "turn_completed" || last.str("stop_reason") != "answered" || last.str("answer") != "Wrote notes/hello.txt." {
		t.Errorf("last event: %v", last)
	}
	if last["tool_calls"] != 2.0 || last["iterations"] != 3.0 {
		t.Errorf("turn_completed counts: %v", last)
	}
}

func TestRunText(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	sc := writeScript(t,
		`{"text": "Writing.", "tool_calls": [{"name": "Write", "input": {"file_path": "a.txt", "content": "x\n"}}, {"name": "Read", "input": {"file_path": "missing.txt"}}]}`,
		`{"text": "Done."}`,
	)
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--permission-mode", "accept-edits", "write", "a", "file")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"❯ write a file", "Writing.", "● Write a.txt\n  ⎿  ", "● Read missing.txt\n  ✗  ", "Done.", "✓ answered · 2 iterations · 2 tool calls"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	// Not a terminal: nothing is animated or redrawn.
	if strings.ContainsAny(stdout, "\r\x1b") {
		t.Errorf("stdout has terminal controls: %q", stdout)
	}
}

func TestRunTerminal(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	sc := writeScript(t,
		`{"text": "Writing.", "tool_calls": [{"name": "Write", "input": {"file_path": "a.txt", "content": "x\n"}}, {"name": "Read", "input": {"file_path": "missing.txt"}}]}`,
		`{"text": "Done.", "usage": {"input_tokens": 1234, "output_tokens": 340}}`,
	)
	// On a terminal each tool call's line is a spinner, replaced by the
	// bullet line when the call ends; so is the model's, until it writes. (How many frames it draws depends on
	// how long the tools take: the renderer's tests count them.)
	out := &fakeTerminal{}
	var errOut bytes.Buffer
	o := options{configDir: t.TempDir()}
	code := execute(t.Context(), []string{"run", "--script", sc, "-w", ws, "--permission-mode", "accept-edits", "write", "a", "file"}, strings.NewReader(""), out, &errOut, o)
	stdout := out.String()
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%q\nstderr:\n%s", code, stdout, errOut.String())
	}
	for _, want := range []string{
		"❯ write a file\n\n" + tui.EraseLine + "⠋ Thinking… (0s)", // until the model's first words, which start on its line
		tui.EraseLine + "Writing.\n\n" + tui.EraseLine + "⠋ Write a.txt (0s)",
		tui.EraseLine + "● Write a.txt\n  ⎿  ",
		"\n\n" + tui.EraseLine + "⠋ Read missing.txt (0s)",
		tui.EraseLine + "● Read missing.txt\n  ✗  ",
		"Done.\n\n✓ answered · 2 iterations · 2 tool calls · 1.2k tokens in · 340 out", // then the wall time, unless it rounds to 0
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%q", want, stdout)
		}
	}
	if n := strings.Count(stdout, "●"); n != 2 {
		t.Errorf("%d bullet lines, want one per tool call:\n%q", n, stdout)
	}

	// --json on a terminal: still exactly one event per line.
	out = &fakeTerminal{}
	code = execute(t.Context(), []string{"run", "--script", sc, "-w", ws, "--permission-mode", "accept-edits", "--json", "write", "a", "file"}, strings.NewReader(""), out, &errOut, o)
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errOut.String())
	}
	if evs := parseEvents(t, out.String()); len(toolEvents(evs)) != 2 {
		t.Errorf("--json: tool events: %v", toolEvents(evs))
	}
}

func TestRunMalformedInput(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	sc := writeScript(t,
		`{"tool_calls": [{"name": "Read", "input_raw": "{\"file_path\": \"a.txt\""}]}`,
		`{"text": "The arguments were broken."}`,
	)
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--json", "read a.txt")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	evs := parseEvents(t, stdout)
	tools := toolEvents(evs)
	if len(tools) != 1 {
		t.Fatalf("want 1 tool event, got %v", tools)
	}
	ev := tools[0]
	if ev.str("name") != "tool_exec_failed" || ev["is_error"] != true || !strings.Contains(ev.str("output"), "not valid JSON") {
		t.Errorf("tool event: %v", ev)
	}
	if ev.str("input") != `{"file_path": "a.txt"` {
		t.Errorf("the malformed input is not carried verbatim as a string: %#v", ev["input"])
	}
	if last := evs[len(evs)-1]; last.str("stop_reason") != "answered" {
		t.Errorf("last event: %v", last)
	}
}

func TestRunScriptExhausted(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	sc := writeScript(t, `{"tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]}`)

	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--json", "look around")
	if code != exitTurn {
		t.Errorf("exit %d, want %d", code, exitTurn)
	}
	evs := parseEvents(t, stdout)
	last := evs[len(evs)-1]
	if last.str("name") != "turn_completed" || last.str("stop_reason") != "failed" || !strings.Contains(last.str("error"), "used up") {
		t.Errorf("last event: %v", last)
	}
	if !strings.Contains(stderr, "failed") || !strings.Contains(stderr, "used up") {
		t.Errorf("stderr does not say why: %q", stderr)
	}

	// In text mode the summary says it, once, on stdout.
	stdout, stderr, code = orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "look around")
	if code != exitTurn || !strings.Contains(stdout, "✗ failed") || !strings.Contains(stdout, "used up") || stderr != "" {
		t.Errorf("text mode: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

func TestRunMaxIterations(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	call := `{"tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]}`
	sc := writeScript(t, call, call, call)
	stdout, _, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--max-iterations", "2", "--json", "loop")
	if code != exitTurn {
		t.Errorf("exit %d, want %d", code, exitTurn)
	}
	evs := parseEvents(t, stdout)
	if last := evs[len(evs)-1]; last.str("stop_reason") != "max_iterations" || last["iterations"] != 2.0 {
		t.Errorf("last event: %v", last)
	}
}

// The CLI sets no cap on a turn's model calls by default, as Claude Code:
// a turn of 60 tool calls (the library's default cap is 50) answers.
func TestRunHasNoIterationCap(t *testing.T) {
	t.Parallel()
	call := `{"tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]}`
	script := make([]string, 60, 61)
	for i := range script {
		script[i] = call
	}
	sc := writeScript(t, append(script, `{"text": "done"}`)...)
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", t.TempDir(), "--json", "loop")
	evs := parseEvents(t, stdout)
	if last := evs[len(evs)-1]; code != 0 || last.str("stop_reason") != "answered" || last["iterations"] != 61.0 {
		t.Errorf("exit %d, last event %v\n%s", code, last, stderr)
	}
}

func TestRunPathEscape(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	sc := writeScript(t,
		`{"tool_calls": [{"name": "Read", "input": {"file_path": "../../etc/passwd"}}]}`,
		`{"text": "I may not read that."}`,
	)
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--json", "read the passwords")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	tools := toolEvents(parseEvents(t, stdout))
	if len(tools) != 1 || tools[0]["is_error"] != true || !strings.Contains(tools[0].str("output"), "../../etc/passwd") {
		t.Errorf("tool events: %v", tools)
	}
	if strings.Contains(stdout, "root:") {
		t.Errorf("the password file leaked:\n%s", stdout)
	}
}

func TestRunPromptFromStdin(t *testing.T) {
	t.Parallel()
	sc := writeScript(t, `{"text": "hi"}`)
	stdout, stderr, code := orca(t, t.Context(), "a prompt\nfrom stdin\n", "run", "--script", sc, "-w", t.TempDir(), "--json", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	first := parseEvents(t, stdout)[0]
	if first.str("name") != "turn_started" || first.str("input") != "a prompt\nfrom stdin" {
		t.Errorf("first event: %v", first)
	}
	if !strings.HasPrefix(first.str("session_id"), "session_") {
		t.Errorf("generated session id: %q", first.str("session_id"))
	}
}

// A - after the prompt's words adds standard input to them, as a block
// the model sees in its first request; without it, stdin is not read.
func TestRunPromptWithStdin(t *testing.T) {
	t.Parallel()
	sc := writeScript(t, `{"text": "hi"}`)
	ws := t.TempDir()
	stdout, stderr, code := orca(t, t.Context(), "panic: nil map\ngoroutine 1\n\n", "run", "--script", sc, "-w", ws, "--json", "why does it", "fail", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "why does it fail\n\n<stdin>\npanic: nil map\ngoroutine 1\n</stdin>"
	first := parseEvents(t, stdout)[0]
	if first.str("input") != want {
		t.Errorf("turn input %q, want %q", first.str("input"), want)
	}
	out, stderr, code := orca(t, t.Context(), "", "sessions", "show", first.str("session_id"), "-w", ws, "--json")
	if code != 0 || !strings.Contains(out, `<stdin>\npanic: nil map`) {
		t.Errorf("the stored prompt: exit %d, %s%s", code, out, stderr)
	}
	// Empty stdin adds nothing; without the -, stdin is not read.
	for _, args := range [][]string{{"why", "-"}, {"why"}} {
		stdin := ""
		if len(args) == 1 {
			stdin = "not read"
		}
		stdout, stderr, code = orca(t, t.Context(), stdin, append([]string{"run", "--script", sc, "-w", ws, "--json"}, args...)...)
		if first := parseEvents(t, stdout)[0]; code != 0 || first.str("input") != "why" {
			t.Errorf("%q: exit %d, input %q: %s", args, code, first.str("input"), stderr)
		}
	}
}

// A command cancelled before it could open the session (Ctrl-C during the
// setup) ends with 1 and says why.
func TestRunCancelled(t *testing.T) {
	t.Parallel()
	sc := writeScript(t, `{"text": "never"}`)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	stdout, stderr, code := orca(t, ctx, "", "run", "--script", sc, "-w", t.TempDir(), "--json", "hi")
	if code != exitTurn {
		t.Errorf("exit %d, want %d", code, exitTurn)
	}
	if stdout != "" || !strings.Contains(stderr, "cancel") {
		t.Errorf("stdout %q, stderr %q", stdout, stderr)
	}
}

func TestRunUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeScript(t, `{"text": "hi"}`)
	badJSON := filepath.Join(dir, "bad.json")
	os.WriteFile(badJSON, []byte("{\"responses\": [\n  {\"text\": \"a\"},\n]}"), 0o644)
	unknownField := filepath.Join(dir, "field.json")
	os.WriteFile(unknownField, []byte(`{"responses": [{"txt": "a"}]}`), 0o644)
	empty := filepath.Join(dir, "empty.json")
	os.WriteFile(empty, []byte(`{"responses": []}`), 0o644)
	missing := filepath.Join(dir, "nope.json")
	notDir := filepath.Join(dir, "file")
	os.WriteFile(notDir, nil, 0o644)

	for _, tc := range []struct {
		name string
		args []string
		want []string // in stderr
	}{
		{"unknown provider", []string{"--provider", "mistral", "--script", good}, []string{`"mistral"`, "anthropic, anthropic-vertex, openai, openai-responses, azure, gemini, vertex, bedrock and script"}},
		{"no script", []string{"--provider", "script"}, []string{"--script FILE"}},
		{"missing script file", []string{"--script", missing}, []string{missing, "no such file"}},
		{"bad JSON", []string{"--script", badJSON}, []string{badJSON, "line 3, column 1", "invalid character"}},
		{"unknown field", []string{"--script", unknownField}, []string{unknownField, `unknown field "txt"`}},
		{"no responses", []string{"--script", empty}, []string{empty, "no responses"}},
		{"missing workspace", []string{"--script", good, "-w", filepath.Join(dir, "nowhere")}, []string{filepath.Join(dir, "nowhere"), "does not exist"}},
		{"workspace is a file", []string{"--script", good, "-w", notDir}, []string{notDir, "not a folder"}},
		{"bad max iterations", []string{"--script", good, "--max-iterations", "-1"}, []string{"--max-iterations must be at least 1 (or 0: no cap), not -1"}},
		{"bad max turns", []string{"--script", good, "--max-turns", "0"}, []string{"--max-turns must be at least 1, not 0"}},
		{"bad max parallel tools", []string{"--script", good, "--max-parallel-tools", "-2"}, []string{"--max-parallel-tools", "-2"}},
		{"zero max parallel tools", []string{"--script", good, "--max-parallel-tools", "0"}, []string{"--max-parallel-tools must be at least 1, not 0"}},
		{"unknown flag", []string{"--frobnicate"}, []string{"unknown flag: --frobnicate", "orca run --help"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"run"}, tc.args...), "--json", "hello")
			stdout, stderr, code := orca(t, t.Context(), "", args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if stdout != "" {
				t.Errorf("stdout is not empty: %q", stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q: %s", w, stderr)
				}
			}
		})
	}
	if _, stderr, code := orca(t, t.Context(), "", "run", "--script", good); code != exitUsage || !strings.Contains(stderr, "the prompt is missing") || !strings.Contains(stderr, "| orca run -") {
		t.Errorf("no prompt: exit %d, %s", code, stderr)
	}
}

func TestHelpAndVersion(t *testing.T) {
	t.Parallel()
	stdout, _, code := orca(t, t.Context(), "", "--help")
	if code != 0 {
		t.Errorf("--help exited %d", code)
	}
	for _, cmd := range []string{"demo", "run", "chat", "sessions", "trust", "version"} {
		if !strings.Contains(stdout, "\n  "+cmd+" ") {
			t.Errorf("--help does not list %s:\n%s", cmd, stdout)
		}
	}
	stdout, _, code = orca(t, t.Context(), "", "version")
	if code != 0 || !strings.HasPrefix(stdout, "orca ") {
		t.Errorf("version: exit %d, %q", code, stdout)
	}
	for _, flag := range []string{"--version", "-v"} {
		if got, _, code := orca(t, t.Context(), "", flag); code != 0 || got != stdout {
			t.Errorf("%s: exit %d, %q; want what orca version says, %q", flag, code, got, stdout)
		}
	}
	if _, stderr, code := orca(t, t.Context(), "", "frob"); code != exitUsage || !strings.Contains(stderr, `unknown command "frob"`) {
		t.Errorf("unknown command: exit %d, %s", code, stderr)
	}
}

// A prompt larger than any model's context window is a usage error that
// says its size and what to do, before anything is stored: the store does
// not grow by it.
func TestRunRefusesAHugePrompt(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	huge := strings.Repeat("0123456789abcdef", 20<<20/16) // 20 MiB
	_, stderr, code := orca(t, t.Context(), "", "run", "--script", writeScript(t, `{"text": "hi"}`), "-w", ws, huge)
	if code != exitUsage || !strings.Contains(stderr, "the prompt is more than orca takes, 4 MiB (it is 20 MiB") || !strings.Contains(stderr, "put the text in a file") {
		t.Errorf("exit %d: %.300s", code, stderr)
	}
	_, stderr, code = orca(t, t.Context(), huge, "run", "--script", writeScript(t, `{"text": "hi"}`), "-w", ws, "-")
	if code != exitUsage || !strings.Contains(stderr, "more than orca takes") {
		t.Errorf("from stdin: exit %d: %.300s", code, stderr)
	}
	if fi, err := os.Stat(filepath.Join(ws, ".orca", "orca.db")); err == nil && fi.Size() > 1<<20 {
		t.Errorf("the store grew to %d bytes", fi.Size())
	}
}
