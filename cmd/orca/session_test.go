package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orca-agent/orca/store/sqlite"
)

// shown is the JSON of orca sessions show.
type shown struct {
	Session struct {
		ID         string `json:"id"`
		Turns      int    `json:"turns"`
		LastPrompt string `json:"last_prompt"`
		Totals     struct {
			Tokens    int64 `json:"tokens"`
			ToolCalls int64 `json:"tool_calls"`
		} `json:"totals"`
		Budget *struct {
			Tokens     int64   `json:"tokens"`
			CostUSD    float64 `json:"cost_usd"`
			ToolCalls  int64   `json:"tool_calls"`
			WallTimeNS int64   `json:"wall_time_ns"`
		} `json:"budget"`
	} `json:"session"`
	Records []shownRecord `json:"records"`
}

// shownRecord is a record in the JSON of orca sessions show.
type shownRecord struct {
	Seq       int64  `json:"seq"`
	TurnID    string `json:"turn_id"`
	Kind      string `json:"kind"`
	Compacted bool   `json:"compacted"`
	Role      string `json:"role"`
	Content   []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
}

// prompts returns the texts of the user's messages, in order: what the
// model was told, turn by turn.
func (s shown) prompts() []string {
	var out []string
	for _, r := range s.Records {
		if r.Role != "user" || r.Kind != "message" {
			continue
		}
		for _, b := range r.Content {
			if b.Type == "text" {
				out = append(out, b.Text)
			}
		}
	}
	return out
}

// show returns what orca sessions show --json says of session id.
func show(t *testing.T, ws, id string) shown {
	t.Helper()
	stdout, stderr, code := orca(t, t.Context(), "", "sessions", "show", "-w", ws, "--json", id)
	if code != 0 {
		t.Fatalf("sessions show %s: exit %d: %s", id, code, stderr)
	}
	var s shown
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("sessions show --json: %v\n%s", err, stdout)
	}
	return s
}

// lastEvent returns the last event of a run --json.
func lastEvent(t *testing.T, stdout string) jsonEvent {
	t.Helper()
	evs := parseEvents(t, stdout)
	return evs[len(evs)-1]
}

func TestRunContinue(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", writeScript(t, `{"text": "one"}`), "-w", ws, "--json", "first prompt")
	if code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	id := lastEvent(t, stdout).str("session_id")
	if !fileExists(filepath.Join(ws, ".orca", "orca.db")) {
		t.Fatal("no store in .orca/orca.db")
	}

	stdout, stderr, code = orca(t, t.Context(), "", "run", "--script", writeScript(t, `{"text": "two"}`), "-w", ws, "--continue", "--json", "second prompt")
	if code != 0 {
		t.Fatalf("second run: exit %d: %s", code, stderr)
	}
	if got := lastEvent(t, stdout).str("session_id"); got != id {
		t.Errorf("--continue ran session %s, want %s", got, id)
	}

	s := show(t, ws, id)
	if s.Session.Turns != 2 || s.Session.LastPrompt != "second prompt" {
		t.Errorf("session: %+v", s.Session)
	}
	if got, want := s.prompts(), []string{"first prompt", "second prompt"}; !slices.Equal(got, want) {
		t.Errorf("the user's messages: %q, want %q", got, want)
	}
	var roles []string
	for _, r := range s.Records {
		roles = append(roles, r.Role)
	}
	if got := strings.Join(roles, " "); got != "user assistant user assistant" {
		t.Errorf("records: %s", got)
	}
	if s.Records[0].TurnID == "" || s.Records[0].TurnID == s.Records[2].TurnID {
		t.Errorf("turn ids: %q, %q", s.Records[0].TurnID, s.Records[2].TurnID)
	}

	// The text output names the session and how to continue it.
	stdout, _, code = orca(t, t.Context(), "", "run", "--script", writeScript(t, `{"text": "three"}`), "-w", ws, "--continue", "third")
	if code != 0 || !strings.Contains(stdout, "session "+id+" · 3 turns · continue it with --continue or --session "+id) {
		t.Errorf("exit %d:\n%s", code, stdout)
	}
}

func TestRunSessionFlag(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	// An id the store does not know starts that session.
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", writeScript(t, `{"text": "one"}`), "-w", ws, "--session", "my-session", "--json", "hello")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := lastEvent(t, stdout).str("session_id"); got != "my-session" {
		t.Errorf("session_id %q", got)
	}
	// Another session, then --session goes back to the first.
	if _, stderr, code := orca(t, t.Context(), "", "run", "--script", writeScript(t, `{"text": "x"}`), "-w", ws, "other"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, stderr, code := orca(t, t.Context(), "", "run", "--script", writeScript(t, `{"text": "two"}`), "-w", ws, "--session", "my-session", "again"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := show(t, ws, "my-session").prompts(); !slices.Equal(got, []string{"hello", "again"}) {
		t.Errorf("my-session's prompts: %q", got)
	}

	// A session belongs to the runtime that started it: an agent over a
	// workspace, named by its .orca/workspace-id. Moved or copied, the
	// folder keeps its sessions.
	parent := t.TempDir()
	before, after, copied := filepath.Join(parent, "before"), filepath.Join(parent, "after"), filepath.Join(parent, "copied")
	os.Mkdir(before, 0o755)
	if _, stderr, code := orca(t, t.Context(), "", "run", "--script", writeScript(t, `{"text": "one"}`), "-w", before, "--session", "moved", "hello"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if err := os.Rename(before, after); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("cp", "-a", after, copied).Run(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{after, copied} {
		if _, stderr, code := orca(t, t.Context(), "", "run", "--script", writeScript(t, `{"text": "two"}`), "-w", dir, "--continue", "hi"); code != 0 {
			t.Fatalf("%s: exit %d: %s", dir, code, stderr)
		}
		if got := show(t, dir, "moved"); got.Session.Turns != 2 {
			t.Errorf("%s: the session after --continue: %+v", dir, got.Session)
		}
	}

	// --continue needs a session; it and --session exclude each other.
	_, stderr, code = orca(t, t.Context(), "", "run", "--script", writeScript(t, `{"text": "no"}`), "-w", t.TempDir(), "--continue", "hi")
	if code != exitUsage || !strings.Contains(stderr, "no session to continue") {
		t.Errorf("--continue in an empty workspace: exit %d: %s", code, stderr)
	}
	_, stderr, code = orca(t, t.Context(), "", "run", "--script", writeScript(t, `{"text": "no"}`), "-w", ws, "--continue", "--session", "x", "hi")
	if code != exitUsage || !strings.Contains(stderr, "--continue and --session") {
		t.Errorf("--continue --session: exit %d: %s", code, stderr)
	}
}

func TestRunBudget(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	call := `{"text": "Looking.", "tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}], "usage": {"input_tokens": 120, "output_tokens": 30}}`
	sc := writeScript(t, call, call, `{"text": "done"}`)
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--session", "s", "--budget-tokens", "100", "--json", "look")
	if code != exitTurn {
		t.Errorf("exit %d, want %d", code, exitTurn)
	}
	last := lastEvent(t, stdout)
	if last.str("name") != "turn_completed" || last.str("stop_reason") != "budget_exhausted" || last.str("budget_dimension") != "tokens" || last["iterations"] != 1.0 {
		t.Errorf("last event: %v", last)
	}
	if !strings.Contains(stderr, "budget_exhausted (the session's tokens budget)") {
		t.Errorf("stderr: %s", stderr)
	}
	// The budget is stored: it outlives the run.
	s := show(t, ws, "s")
	if b := s.Session.Budget; b == nil || b.Tokens != 100 || b.ToolCalls != 0 {
		t.Errorf("stored budget: %+v", b)
	}
	// The budget was spent when the model answered: its tool call did not
	// run.
	if s.Session.Totals.Tokens != 150 || s.Session.Totals.ToolCalls != 0 {
		t.Errorf("totals: %+v", s.Session.Totals)
	}
	stdout, _, code = orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--session", "s", "--json", "again")
	if last := lastEvent(t, stdout); code != exitTurn || last.str("stop_reason") != "budget_exhausted" || last["iterations"] != 0.0 {
		t.Errorf("the next run: exit %d, %v", code, last)
	}

	// Flags change only their own dimension; 0 lifts a cap. In text, the
	// summary names the dimension.
	stdout, _, code = orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--session", "s", "--budget-tool-calls", "1", "--budget-tokens", "0", "look")
	if code != exitTurn || !strings.Contains(stdout, "✗ budget exhausted (tool calls) · 1 iteration · 1 tool call") {
		t.Errorf("exit %d:\n%s", code, stdout)
	}
	if b := show(t, ws, "s").Session.Budget; b == nil || b.Tokens != 0 || b.ToolCalls != 1 {
		t.Errorf("stored budget: %+v", b)
	}

	// The wall-time budget takes Go durations.
	stdout, _, code = orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--session", "t", "--budget-time", "1ns", "--json", "look")
	if last := lastEvent(t, stdout); code != exitTurn || last.str("budget_dimension") != "wall_time" {
		t.Errorf("--budget-time: exit %d, %v", code, last)
	}

	for _, bad := range [][]string{{"--budget-tokens", "-1"}, {"--budget-cost", "-0.5"}, {"--budget-tool-calls", "-3"}, {"--budget-time", "-1s"}, {"--budget-time", "10"}} {
		_, stderr, code := orca(t, t.Context(), "", append([]string{"run", "--script", sc, "-w", ws}, append(bad, "hi")...)...)
		if code != exitUsage || !strings.Contains(stderr, bad[0]) {
			t.Errorf("%v: exit %d: %s", bad, code, stderr)
		}
	}
}

// The JSON of orca sessions has the documented shape.
func TestSessionsJSON(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	// No store yet: no sessions, and listing creates none.
	stdout, stderr, code := orca(t, t.Context(), "", "sessions", "-w", ws, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var empty map[string]any
	if err := json.Unmarshal([]byte(stdout), &empty); err != nil || !reflect.DeepEqual(empty["sessions"], []any{}) {
		t.Errorf("empty list: %v %s", err, stdout)
	}
	if fileExists(filepath.Join(ws, ".orca")) {
		t.Error("listing created .orca")
	}
	stdout, _, _ = orca(t, t.Context(), "", "sessions", "-w", ws)
	if !strings.Contains(stdout, "No sessions") {
		t.Errorf("text, no sessions: %q", stdout)
	}

	usage := `"usage": {"input_tokens": 100, "output_tokens": 20}`
	for i, p := range []string{"older", "newer"} {
		sc := writeScript(t, `{"tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}], `+usage+`}`, `{"text": "ok", `+usage+`}`)
		args := []string{"run", "--script", sc, "-w", ws, "--session", p, p + " prompt"}
		if i == 1 {
			args = append(args, "--budget-cost", "1.5")
		}
		if _, stderr, code := orca(t, t.Context(), "", args...); code != 0 {
			t.Fatalf("run: exit %d: %s", code, stderr)
		}
	}
	stdout, _, code = orca(t, t.Context(), "", "sessions", "-w", ws, "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var list struct {
		Workspace string           `json:"workspace"`
		Store     string           `json:"store"`
		Sessions  []map[string]any `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(stdout), &list); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(ws)
	if list.Workspace != real || list.Store != sqlite.DefaultPath(real) {
		t.Errorf("workspace %q, store %q", list.Workspace, list.Store)
	}
	if len(list.Sessions) != 2 || list.Sessions[0]["id"] != "newer" || list.Sessions[1]["id"] != "older" {
		t.Fatalf("sessions, most recently active first: %v", list.Sessions)
	}
	keys := func(m map[string]any) []string {
		var k []string
		for key := range m {
			k = append(k, key)
		}
		slices.Sort(k)
		return k
	}
	s := list.Sessions[0]
	if got, want := keys(s), []string{"agent", "budget", "created_at", "id", "last_prompt", "opens", "runtime_id", "totals", "turns", "updated_at", "workspace"}; !slices.Equal(got, want) {
		t.Errorf("session keys: %v, want %v", got, want)
	}
	totals, _ := s["totals"].(map[string]any)
	if got, want := keys(totals), []string{"cache_read_tokens", "cache_write_tokens", "cost_usd", "input_tokens", "output_tokens", "tokens", "tool_calls", "turns", "wall_time_ms", "wall_time_ns"}; !slices.Equal(got, want) {
		t.Errorf("totals keys: %v, want %v", got, want)
	}
	if totals["tokens"] != 240.0 || totals["input_tokens"] != 200.0 || totals["tool_calls"] != 1.0 || totals["wall_time_ns"].(float64) <= 0 {
		t.Errorf("totals: %v", totals)
	}
	bud, _ := s["budget"].(map[string]any)
	if got, want := keys(bud), []string{"cost_usd", "tokens", "tool_calls", "wall_time_ms", "wall_time_ns"}; !slices.Equal(got, want) || bud["cost_usd"] != 1.5 {
		t.Errorf("budget: %v", bud)
	}
	if list.Sessions[1]["budget"] != nil {
		t.Errorf("a session without a budget: %v", list.Sessions[1]["budget"])
	}
	if s["agent"] != "orca" || s["turns"] != 1.0 || s["last_prompt"] != "newer prompt" || s["workspace"] != real || s["opens"] != true {
		t.Errorf("session: %v", s)
	}
	for _, k := range []string{"created_at", "updated_at"} {
		if _, err := time.Parse(time.RFC3339Nano, s[k].(string)); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}

	// Text: a header, then one line per session, newest first.
	stdout, _, _ = orca(t, t.Context(), "", "sessions", "-w", ws)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") || !strings.HasPrefix(lines[1], "newer ") ||
		!strings.Contains(lines[1], "newer prompt") || !strings.Contains(lines[1], "240") || !strings.HasPrefix(lines[2], "older ") {
		t.Errorf("text list:\n%s", stdout)
	}

	// show: a record's shape, and an input that is not JSON kept verbatim.
	sc := writeScript(t, `{"tool_calls": [{"id": "bad", "name": "Read", "input_raw": "{\"file_path\": "}]}`, `{"text": "broken"}`)
	if _, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--session", "raw", "go"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	stdout, _, _ = orca(t, t.Context(), "", "sessions", "show", "raw", "-w", ws, "--json")
	var sh struct {
		Session map[string]any   `json:"session"`
		Records []map[string]any `json:"records"`
	}
	if err := json.Unmarshal([]byte(stdout), &sh); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if len(sh.Records) != 4 || sh.Session["id"] != "raw" || sh.Session["opens"] != true {
		t.Fatalf("show: %v", sh)
	}
	if got, want := keys(sh.Records[0]), []string{"compacted", "content", "kind", "role", "seq", "time", "turn_id"}; !slices.Equal(got, want) {
		t.Errorf("record keys: %v, want %v", got, want)
	}
	use := sh.Records[1]["content"].([]any)[0].(map[string]any)
	if use["type"] != "tool_use" || use["name"] != "Read" || use["input"] != `{"file_path": ` {
		t.Errorf("tool use: %v", use)
	}

	// Unknown ids are usage errors.
	if _, stderr, code := orca(t, t.Context(), "", "sessions", "show", "nope", "-w", ws); code != exitUsage || !strings.Contains(stderr, "no session nope") {
		t.Errorf("unknown id: exit %d: %s", code, stderr)
	}
	if _, stderr, code := orca(t, t.Context(), "", "sessions", "show", "nope", "-w", t.TempDir()); code != exitUsage || !strings.Contains(stderr, "no session nope") {
		t.Errorf("no store: exit %d: %s", code, stderr)
	}
}

// A session of a store copied from another workspace cannot be continued
// in this one: the list marks it and says why, and so do show and --json,
// and orca run refuses it.
func TestSessionsOfAnotherWorkspace(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	sc := writeScript(t, `{"text": "ok"}`)
	if _, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", a, "--session", "theirs", "go"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	if err := os.MkdirAll(filepath.Join(b, ".orca"), 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := os.ReadFile(filepath.Join(a, ".orca", "orca.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b, ".orca", "orca.db"), db, 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, _, _ := orca(t, t.Context(), "", "sessions", "-w", b)
	if !strings.Contains(stdout, "theirs *") || !strings.Contains(stdout, "* theirs cannot be continued here: it belongs to runtime") {
		t.Errorf("list:\n%s", stdout)
	}
	var list struct {
		Sessions []map[string]any `json:"sessions"`
	}
	stdout, _, _ = orca(t, t.Context(), "", "sessions", "-w", b, "--json")
	if err := json.Unmarshal([]byte(stdout), &list); err != nil || len(list.Sessions) != 1 || list.Sessions[0]["opens"] != false || !strings.Contains(fmt.Sprint(list.Sessions[0]["why_not"]), "belongs to runtime") {
		t.Errorf("list --json: %v\n%s", err, stdout)
	}
	var sh struct {
		Session map[string]any `json:"session"`
	}
	stdout, _, _ = orca(t, t.Context(), "", "sessions", "show", "theirs", "-w", b, "--json")
	if err := json.Unmarshal([]byte(stdout), &sh); err != nil || sh.Session["opens"] != false || !strings.Contains(fmt.Sprint(sh.Session["why_not"]), "belongs to runtime") {
		t.Errorf("show --json: %v\n%s", err, stdout)
	}
	stdout, _, _ = orca(t, t.Context(), "", "sessions", "show", "theirs", "-w", b)
	if !strings.Contains(stdout, "continue   not in this workspace: it belongs to runtime") {
		t.Errorf("show:\n%s", stdout)
	}
	if _, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", b, "--session", "theirs", "again"); code == 0 || !strings.Contains(stderr, "session theirs cannot be opened here: it belongs to runtime") {
		t.Errorf("run --session of another workspace's session: exit %d: %s", code, stderr)
	}
	// In its own workspace it opens.
	stdout, _, _ = orca(t, t.Context(), "", "sessions", "show", "theirs", "-w", a, "--json")
	if err := json.Unmarshal([]byte(stdout), &sh); err != nil || sh.Session["opens"] != true {
		t.Errorf("show --json in its workspace: %v\n%s", err, stdout)
	}
}

// A store that cannot be opened is an error naming the file, exit 1.
func TestStoreCannotBeOpened(t *testing.T) {
	t.Parallel()
	sc := writeScript(t, `{"text": "hi"}`)

	corrupt := t.TempDir()
	writeFileAt(t, corrupt, ".orca/orca.db", strings.Repeat("not a database\n", 100))
	isDir := t.TempDir()
	os.MkdirAll(filepath.Join(isDir, ".orca", "orca.db"), 0o755)
	cases := map[string]string{"corrupt file": corrupt, "a folder": isDir}
	if os.Geteuid() != 0 { // root writes into read-only folders
		ro := t.TempDir()
		os.Chmod(ro, 0o555)
		t.Cleanup(func() { os.Chmod(ro, 0o755) })
		cases["read-only workspace"] = ro
	}
	for name, ws := range cases {
		for _, args := range [][]string{
			{"run", "--script", sc, "-w", ws, "hi"},
			{"chat", "--script", sc, "-w", ws},
		} {
			stdout, stderr, code := orca(t, t.Context(), "/exit\n", args...)
			if code != exitTurn || !strings.Contains(stderr, "cannot open the session store "+filepath.Join(ws, ".orca", "orca.db")) {
				t.Errorf("%s, %s: exit %d\nstdout: %s\nstderr: %s", name, args[0], code, stdout, stderr)
			}
		}
	}
	// Reading a corrupt store fails the same way.
	if _, stderr, code := orca(t, t.Context(), "", "sessions", "-w", corrupt); code != exitTurn || !strings.Contains(stderr, filepath.Join(corrupt, ".orca", "orca.db")) {
		t.Errorf("sessions: exit %d: %s", code, stderr)
	}
}

// syncBuffer is an output stream a test reads while orca writes it. It is
// safe for concurrent use, and waitFor wakes on every write.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed on the next write
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until the output holds s n times.
func (b *syncBuffer) waitFor(t *testing.T, s string, n int) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		b.mu.Lock()
		if strings.Count(b.buf.String(), s) >= n {
			b.mu.Unlock()
			return
		}
		if b.changed == nil {
			b.changed = make(chan struct{})
		}
		ch := b.changed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("the output never held %q %d times:\n%s", s, n, b.String())
		}
	}
}

// terminalBuffer is a syncBuffer that passes for a terminal.
type terminalBuffer struct{ *syncBuffer }

func (terminalBuffer) Terminal() (int, bool) { return 0, true }

// proc is orca running in the background with its input, output and
// signals in the test's hands.
type proc struct {
	t      *testing.T
	in     *io.PipeWriter
	out    *syncBuffer
	errOut *syncBuffer
	sigs   chan os.Signal
	code   chan int
}

// start runs orca args in the background. tty makes the standard input
// pass for a terminal, and the standard output too.
func start(t *testing.T, tty bool, args ...string) *proc {
	t.Helper()
	r, w := io.Pipe()
	s := &proc{t: t, in: w, out: &syncBuffer{}, errOut: &syncBuffer{}, sigs: make(chan os.Signal), code: make(chan int, 1)}
	var stdin io.Reader = r
	var stdout io.Writer = s.out
	if tty {
		stdin, stdout = fakeTTY{r}, terminalBuffer{s.out}
	}
	o := options{configDir: t.TempDir(), signals: s.sigs}
	go func() {
		code := execute(t.Context(), args, stdin, stdout, s.errOut, o)
		// What is typed from now on fails instead of waiting for ever.
		r.CloseWithError(fmt.Errorf("orca exited %d", code))
		s.code <- code
	}()
	t.Cleanup(func() { w.Close(); r.Close() })
	return s
}

// send types a line.
func (s *proc) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("typing %q: %v\nstdout:\n%s\nstderr:\n%s", line, err, s.out, s.errOut)
	}
}

// interrupt sends Ctrl-C.
func (s *proc) interrupt() {
	s.t.Helper()
	select {
	case s.sigs <- os.Interrupt:
	case <-time.After(20 * time.Second):
		s.t.Fatal("nobody took the signal")
	}
}

// wait waits for orca to exit and returns its exit code.
func (s *proc) wait() int {
	s.t.Helper()
	select {
	case c := <-s.code:
		return c
	case <-time.After(20 * time.Second):
		s.t.Fatalf("orca did not exit\nstdout:\n%s\nstderr:\n%s", s.out, s.errOut)
		return -1
	}
}

// Ctrl-C interrupts orca run's turn: it ends as interrupted, its running
// tool stopped, and orca exits with 1.
func TestRunInterrupt(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	sc := writeScript(t, bashCall("sleep", "sleep 30"), `{"text": "never"}`)
	s := start(t, false, "run", "--script", sc, "-w", ws, "--permission-mode", "bypass", "--session", "s", "--json", "wait")
	s.out.waitFor(t, `"name":"tool_exec_started"`, 1)
	began := time.Now()
	s.interrupt()
	if code := s.wait(); code != exitTurn {
		t.Errorf("exit %d, want %d", code, exitTurn)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("the interrupt took %v", d)
	}
	last := lastEvent(t, s.out.String())
	if last.str("stop_reason") != "interrupted" {
		t.Errorf("last event: %v", last)
	}
	// The transcript stays whole: the call has its result.
	sh := show(t, ws, "s")
	if n := len(sh.Records); n != 3 || sh.Records[2].Role != "user" || sh.Session.Turns != 1 {
		t.Errorf("records after the interrupt: %+v", sh.Records)
	}
}

// An "always" approval is stored with the session: continued in another
// process, the session does not ask again.
func TestRunApprovalOutlivesTheRun(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	o := options{configDir: t.TempDir()}
	run := func(answers string, sc string) string {
		t.Helper()
		out := &fakeTerminal{}
		var errOut bytes.Buffer
		code := execute(t.Context(), []string{"run", "--script", sc, "-w", ws, "--session", "s", "go"}, fakeTTY{strings.NewReader(answers)}, out, &errOut, o)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut.String())
		}
		return out.String()
	}
	out := run("a\n", writeScript(t, bashCall("one", "touch one.txt"), `{"text": "done"}`))
	if !strings.Contains(out, "allow Bash(touch:*) for this session") {
		t.Fatalf("no question:\n%s", out)
	}
	// No answer this time: a question would be refused.
	out = run("", writeScript(t, bashCall("two", "touch two.txt"), `{"text": "done"}`))
	if strings.Contains(out, "? Allow") || !fileExists(filepath.Join(ws, "two.txt")) {
		t.Errorf("the stored approval did not hold:\n%s", out)
	}
}

// fakeTerminal is an output that passes for a terminal of unknown width,
// safe for concurrent use (the spinner writes from its own goroutine).
type fakeTerminal struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (f *fakeTerminal) Terminal() (int, bool) { return 0, true }

func (f *fakeTerminal) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.Write(p)
}

func (f *fakeTerminal) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.String()
}

// A command missing its one argument, or given more, says what the
// argument is and where to find one (exit 2), not cobra's count.
func TestCommandsSayWhatArgumentTheyNeed(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"deny"}, "orca deny needs the id of a parked call: 'orca approvals' lists them"},
		{[]string{"approve", " "}, "orca approve needs the id of a parked call: 'orca approvals' lists them"},
		{[]string{"approve", "a", "b"}, `orca approve takes one argument, the id of a parked call, not 2: ["a" "b"]`},
		{[]string{"sessions", "show"}, "orca sessions show needs the id of a session: 'orca sessions' lists them"},
		{[]string{"mcp", "get"}, "orca mcp get needs the name of an MCP server"},
		{[]string{"mcp", "remove", "a", "b"}, "orca mcp remove takes one argument, the name of an MCP server, not 2"},
		{[]string{"mcp", "add", "x"}, "orca mcp add needs a name and then the server: NAME -- COMMAND"},
	} {
		_, stderr, code := orca(t, t.Context(), "", append(tc.args, "-w", ws)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "arg(s)") {
			t.Errorf("orca %s: exit %d\n%s", strings.Join(tc.args, " "), code, stderr)
		}
	}
}
