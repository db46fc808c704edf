package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orca-agent/orca/internal/proctest"
	"github.com/orca-agent/orca/serve"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/sqlite"
)

// startOrca starts the orca command line as a process of its own (the
// test binary, as orca) in the configuration folder cfgDir.
func startOrca(t *testing.T, cfgDir string, args ...string) *exec.Cmd {
	t.Helper()
	return startOrcaEnv(t, cfgDir, nil, args...)
}

// startOrcaEnv is startOrca with env (KEY=value) added to its environment.
func startOrcaEnv(t *testing.T, cfgDir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(append(os.Environ(), asCLI+"=1", "XDG_CONFIG_HOME="+cfgDir), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

// storeOf opens the workspace's session store.
func storeOf(t *testing.T, ws string) store.Store {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(ws, ".orca", "orca.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Two runs of one session at once: the second is refused, naming the
// first, and the transcript stays the first's alone.
func TestConcurrentRunsOfOneSession(t *testing.T) {
	ws, cfgDir := t.TempDir(), t.TempDir()
	h := proctest.NewHolder(t, ws, "hold")
	a := startOrca(t, cfgDir, "run", "--script", writeScript(t, bashCall("a", "sleep 1000 3>hold"), `{"text": "A done"}`),
		"-w", ws, "--session", "shared", "--permission-mode", "bypass", "--no-sandbox", "A")
	h.Opened() // A is in the middle of its turn
	_, stderr, code := orca(t, t.Context(), "", "run", "--script", writeScript(t, `{"text": "B done"}`), "-w", ws, "--session", "shared", "B")
	if code != exitBusy || !strings.Contains(stderr, "session shared is open in another writer, pid ") {
		t.Fatalf("the second run: exit %d, %s", code, stderr)
	}
	a.Process.Signal(syscall.SIGTERM)
	a.Wait()
	h.RequireGone()
	// Now B may run; the transcript is A's turn, then B's, whole.
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", writeScript(t, `{"text": "B done"}`), "-w", ws, "--session", "shared", "--json", "B")
	if code != 0 {
		t.Fatalf("B after A: exit %d\n%s\n%s", code, stdout, stderr)
	}
	sh := show(t, ws, "shared")
	var roles []string
	for _, r := range sh.Records {
		roles = append(roles, r.Role)
	}
	if got := strings.Join(roles, " "); got != "user assistant user user assistant" {
		t.Errorf("records: %s", got) // A's prompt, its call, its (cancelled) result; B's prompt and answer
	}
	if p := sh.prompts(); len(p) != 2 || p[0] != "A" || p[1] != "B" {
		t.Errorf("prompts: %q", p)
	}
}

// A crash loses no spending: totals are written with each step, so the
// budget holds across a SIGKILL.
func TestSpendingSurvivesACrash(t *testing.T) {
	ws, cfgDir := t.TempDir(), t.TempDir()
	h := proctest.NewHolder(t, ws, "hold")
	// Each model call reports 100 tokens in and 10 out.
	call := func(id, command string) string {
		return strings.TrimSuffix(bashCall(id, command), "}") + `, "usage": {"input_tokens": 100, "output_tokens": 10}}`
	}
	sc := writeScript(t, call("c1", "true"), call("c2", "true"), call("c3", "true"), call("c4", "true"),
		call("c5", "sleep 1000 3>hold"), `{"text": "never"}`)
	run := startOrca(t, cfgDir, "run", "--script", sc, "-w", ws, "--session", "crash", "--permission-mode", "bypass", "--no-sandbox", "go")
	h.Opened()
	run.Process.Kill()
	run.Wait()
	h.RequireGone()
	st := storeOf(t, ws)
	totals, err := st.Totals(t.Context(), "crash")
	// The 5 model calls were recorded with their answers, the 4 finished
	// tool calls with their results; the one that ran when orca died was
	// not finished.
	if err != nil || totals.ToolCalls != 4 || totals.Usage.InputTokens != 500 || totals.Usage.OutputTokens != 50 || totals.WallTime <= 0 {
		t.Fatalf("totals after the crash: %+v, %v; want 4 tool calls and 5 model calls' tokens", totals, err)
	}
	st.Close()

	// The call that ran when orca died may have taken effect: once the
	// session is opened again and it is answered so, it counts — 5 spent.
	// With a budget of 7 tool calls, the next run may make 2 more.
	sc = writeScript(t, bashCall("r1", "touch r1"), bashCall("r2", "touch r2"), bashCall("r3", "touch r3"), `{"text": "done"}`)
	stdout, stderr, _ := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--session", "crash", "--permission-mode", "bypass", "--no-sandbox", "--budget-tool-calls", "7", "--json", "again")
	if last := lastEvent(t, stdout); last.str("stop_reason") != "budget_exhausted" {
		t.Errorf("the run after the crash: %v\n%s", last, stderr)
	}
	if !fileExists(filepath.Join(ws, "r2")) || fileExists(filepath.Join(ws, "r3")) {
		t.Errorf("r2 %v, r3 %v: the budget should stop the third call", fileExists(filepath.Join(ws, "r2")), fileExists(filepath.Join(ws, "r3")))
	}
	st = storeOf(t, ws)
	defer st.Close()
	if totals, err := st.Totals(t.Context(), "crash"); err != nil || totals.ToolCalls != 7 {
		t.Errorf("totals at the end: %+v, %v; want 7 tool calls (4, the one in doubt, 2)", totals, err)
	}
}

// --fork-session starts a new session from another's conversation and
// leaves that one as it was.
func TestForkSession(t *testing.T) {
	ws := t.TempDir()
	if _, stderr, code := orca(t, t.Context(), "", "run", "--script", writeScript(t, `{"text": "one"}`), "-w", ws, "--session", "orig", "hello"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", writeScript(t, `{"text": "branched"}`), "-w", ws, "--session", "orig", "--fork-session", "--json", "branch")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	forked := lastEvent(t, stdout).str("session_id")
	if forked == "" || forked == "orig" {
		t.Fatalf("the fork's session id: %q", forked)
	}
	if got := show(t, ws, forked).prompts(); !slices.Equal(got, []string{"hello", "branch"}) {
		t.Errorf("the fork's prompts: %q", got)
	}
	if o := show(t, ws, "orig"); o.Session.Turns != 1 || !slices.Equal(o.prompts(), []string{"hello"}) {
		t.Errorf("the original changed: %+v %q", o.Session, o.prompts())
	}
	if _, stderr, code := orca(t, t.Context(), "", "run", "--script", writeScript(t, `{"text": "x"}`), "-w", ws, "--fork-session", "x"); code != exitUsage || !strings.Contains(stderr, "--fork-session needs the session to fork") {
		t.Errorf("--fork-session alone: exit %d: %s", code, stderr)
	}
}

// orca killed (SIGKILL) at random points of a long session, again and
// again: the store always opens, the session always goes on, and no tool
// call ever takes effect twice.
func TestKillLoop(t *testing.T) {
	runs := 150 // .ci/run runs it so, as an unprivileged user, without -race
	if testing.Short() || raceEnabled {
		runs = 25
	}
	ws, cfgDir := t.TempDir(), t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	script := func(run int) string {
		var steps []string
		for j := range 6 {
			id := fmt.Sprintf("r%d-c%d", run, j)
			steps = append(steps, bashCall(id, "echo "+id+" >> log"))
		}
		return writeScript(t, append(steps, `{"text": "done"}`)...)
	}
	// How long a whole run takes here (a -race build is slower): the kills
	// land anywhere in it.
	start := time.Now()
	if err := startOrca(t, cfgDir, "run", "--script", script(-1), "-w", ws, "--session", "loop", "--permission-mode", "bypass", "go").Wait(); err != nil {
		t.Fatalf("a whole run: %v", err)
	}
	whole := time.Since(start)
	logSize := func() int64 {
		fi, err := os.Stat(filepath.Join(ws, "log"))
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	killed := 0
	for run := range runs {
		size, began := logSize(), time.Now()
		delay := time.Duration(rng.Int64N(int64(whole) * 5 / 4))
		cmd := startOrca(t, cfgDir, "run", "--script", script(run), "-w", ws, "--session", "loop", "--permission-mode", "bypass", "go")
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("run %d ended on its own with %v", run, err)
			}
			whole = time.Since(began) // how long a run takes now
		case <-time.After(delay):
			cmd.Process.Kill()
			<-done
			killed++
			if logSize() == size && delay > whole/3 {
				// Well into the run and no call yet: the machine is
				// slower now than when a run was timed (other tests run
				// beside this one); let the kills land later.
				whole = whole * 5 / 4
			}
		}
	}
	// The last run, to its end: the store opens and the session is whole.
	stdout, stderr, code := orcaWith(t, t.Context(), options{configDir: cfgDir}, "", "run", "--script", script(runs), "-w", ws, "--session", "loop", "--permission-mode", "bypass", "--json", "go")
	if code != 0 {
		t.Fatalf("after %d kills: exit %d\n%s\n%s", killed, code, stdout, stderr)
	}
	log, _ := os.ReadFile(filepath.Join(ws, "log"))
	seen := map[string]int{}
	for _, id := range strings.Fields(string(log)) {
		if seen[id]++; seen[id] > 1 {
			t.Errorf("%s took effect twice", id)
		}
	}
	if killed < runs/4 || len(seen) < runs {
		t.Errorf("%d of %d runs killed, %d calls took effect: the loop did not test much", killed, runs, len(seen))
	}
	t.Logf("%d runs, %d killed, %d calls took effect once each", runs, killed, len(seen))
}

// --park-approvals: a headless run parks the call the policy asks about;
// orca approvals lists it, orca approve lets it run at the next run,
// exactly once.
func TestParkApprovals(t *testing.T) {
	ws := t.TempDir()
	sc := writeScript(t, bashCall("p1", "echo parked >> ran"), `{"text": "done"}`)
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--session", "s", "--park-approvals", "--no-sandbox", "go")
	if code != exitParked || !strings.Contains(stderr, "the turn waits for approval of Bash (park_") || fileExists(filepath.Join(ws, "ran")) {
		t.Fatalf("the parking run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	stdout, _, _ = orca(t, t.Context(), "", "approvals", "-w", ws, "--json")
	var list struct {
		Parked []serve.Parked `json:"parked"`
	}
	if err := json.Unmarshal([]byte(stdout), &list); err != nil || len(list.Parked) != 1 || list.Parked[0].ToolName != "Bash" || list.Parked[0].Status != "pending" {
		t.Fatalf("orca approvals: %s (%v)", stdout, err)
	}
	id := list.Parked[0].ID
	// The session waits: another run is refused until someone decides.
	if _, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--session", "s", "--no-sandbox", "again"); code != exitParked || !strings.Contains(stderr, id) {
		t.Errorf("a run before the decision: exit %d: %s", code, stderr)
	}
	if stdout, stderr, code := orca(t, t.Context(), "", "approve", "-w", ws, id); code != 0 || !strings.Contains(stdout, "Approved "+id) {
		t.Fatalf("orca approve: exit %d: %s %s", code, stdout, stderr)
	}
	if _, stderr, code := orca(t, t.Context(), "", "deny", "-w", ws, id); code != exitUsage || !strings.Contains(stderr, "was approved already") {
		t.Errorf("a second decision: exit %d: %s", code, stderr)
	}
	sc = writeScript(t, `{"text": "it ran"}`)
	if _, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--session", "s", "--no-sandbox", "go on"); code != 0 {
		t.Fatalf("the run after approval: exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "ran")); string(b) != "parked\n" {
		t.Errorf("ran = %q, want the approved call once", b)
	}
}

// orca run --session ID with no PROMPT goes on with the turn that parked a
// call, once the call is decided: approved, the call runs (once) and the
// turn answers, one turn counted; denied, the model hears it and the turn
// answers. With nothing parked, or no session, a PROMPT is needed.
func TestParkedTurnGoesOnWithoutAPrompt(t *testing.T) {
	ws := t.TempDir()
	park := writeScript(t, bashCall("p1", "echo parked >> ran"), `{"text": "done"}`)
	goOn := writeScript(t, `{"text": "it went on"}`)
	parkedID := func(session string) string {
		t.Helper()
		if _, stderr, code := orca(t, t.Context(), "", "run", "--script", park, "-w", ws, "--session", session, "--park-approvals", "--no-sandbox", "go"); code != exitParked {
			t.Fatalf("parking in %s: exit %d: %s", session, code, stderr)
		}
		stdout, _, _ := orca(t, t.Context(), "", "approvals", "-w", ws, "--json")
		var list struct {
			Parked []serve.Parked `json:"parked"`
		}
		if err := json.Unmarshal([]byte(stdout), &list); err != nil {
			t.Fatal(err)
		}
		for _, p := range list.Parked {
			if p.SessionID == session && p.Status == "pending" {
				return p.ID
			}
		}
		t.Fatalf("no parked call of %s: %s", session, stdout)
		return ""
	}

	id := parkedID("a")
	if out, _, _ := orca(t, t.Context(), "", "sessions", "show", "-w", ws, "a"); !strings.Contains(out, "Waiting for a decision: "+id) {
		t.Errorf("sessions show does not say the call waits:\n%s", out)
	}
	if out, _, _ := orca(t, t.Context(), "", "sessions", "show", "-w", ws, "a", "--json"); !strings.Contains(out, `"parked": [`) || !strings.Contains(out, id) {
		t.Errorf("sessions show --json has no parked call:\n%s", out)
	}
	if _, stderr, code := orca(t, t.Context(), "", "run", "--script", goOn, "-w", ws, "--session", "a", "--no-sandbox"); code != exitParked || !strings.Contains(stderr, id) {
		t.Errorf("before the decision: exit %d: %s", code, stderr)
	}
	if _, stderr, code := orca(t, t.Context(), "", "approve", "-w", ws, id); code != 0 {
		t.Fatalf("orca approve: %s", stderr)
	}
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", goOn, "-w", ws, "--session", "a", "--no-sandbox", "--json")
	if code != 0 || !strings.Contains(stdout, `"answer":"it went on"`) {
		t.Fatalf("going on: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "ran")); string(b) != "parked\n" {
		t.Errorf("ran = %q, want the approved call once", b)
	}
	stdout, _, _ = orca(t, t.Context(), "", "sessions", "-w", ws, "--json")
	if !strings.Contains(stdout, `"id": "a"`) || !strings.Contains(stdout, `"turns": 1`) {
		t.Errorf("the session counts one turn:\n%s", stdout)
	}
	if out, _, _ := orca(t, t.Context(), "", "sessions", "show", "-w", ws, "a"); strings.Contains(out, "Waiting for a decision") {
		t.Errorf("sessions show says a decided call waits:\n%s", out)
	}
	if _, stderr, code := orca(t, t.Context(), "", "run", "--script", goOn, "-w", ws, "--session", "a", "--no-sandbox"); code != exitUsage || !strings.Contains(stderr, "no turn that parked a call") {
		t.Errorf("going on twice: exit %d: %s", code, stderr)
	}

	id = parkedID("d")
	if _, stderr, code := orca(t, t.Context(), "", "deny", "-w", ws, "--note", "not today", id); code != 0 {
		t.Fatalf("orca deny: %s", stderr)
	}
	if _, stderr, code := orca(t, t.Context(), "", "run", "--script", goOn, "-w", ws, "--session", "d", "--no-sandbox"); code != 0 {
		t.Fatalf("going on after a denial: exit %d: %s", code, stderr)
	}
	if stdout, _, _ := orca(t, t.Context(), "", "sessions", "show", "-w", ws, "d"); !strings.Contains(stdout, "not today") || !strings.Contains(stdout, "it went on") {
		t.Errorf("the denied turn's transcript:\n%s", stdout)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "ran")); string(b) != "parked\n" {
		t.Errorf("ran = %q: the denied call ran", b)
	}

	if _, stderr, code := orca(t, t.Context(), "", "run", "--script", goOn, "-w", ws, "--no-sandbox"); code != exitUsage || !strings.Contains(stderr, "the prompt is missing") {
		t.Errorf("no PROMPT, no session: exit %d: %s", code, stderr)
	}
	// A session that does not exist is not started empty.
	if _, stderr, code := orca(t, t.Context(), "", "run", "--script", goOn, "-w", ws, "--session", "nope", "--no-sandbox"); code != exitUsage || !strings.Contains(stderr, "no session nope") {
		t.Errorf("no PROMPT, an unknown session: exit %d: %s", code, stderr)
	}
	if out, _, _ := orca(t, t.Context(), "", "sessions", "-w", ws, "--json"); strings.Contains(out, `"id": "nope"`) {
		t.Errorf("an empty session was started:\n%s", out)
	}
}

// The example of orca run --help, word for word: park, approve, go on
// with the same script — the continued run goes on from the response
// after the parked call's, runs the approved call once and answers (it
// used to read the script from its start and park the call again).
func TestParkApproveGoOnWithTheSameScript(t *testing.T) {
	ws := t.TempDir()
	fix := writeScript(t, bashCall("p1", "echo parked >> ran"), `{"text": "Fixed."}`)
	if _, stderr, code := orca(t, t.Context(), "", "run", "--script", fix, "-w", ws, "--park-approvals", "--session", "s1", "--no-sandbox", "Fix the failing test"); code != exitParked {
		t.Fatalf("the parking run: exit %d\n%s", code, stderr)
	}
	stdout, _, _ := orca(t, t.Context(), "", "approvals", "-w", ws, "--json")
	var list struct {
		Parked []serve.Parked `json:"parked"`
	}
	if err := json.Unmarshal([]byte(stdout), &list); err != nil || len(list.Parked) != 1 {
		t.Fatalf("orca approvals: %s (%v)", stdout, err)
	}
	if _, stderr, code := orca(t, t.Context(), "", "approve", "-w", ws, list.Parked[0].ID); code != 0 {
		t.Fatalf("approve: %s", stderr)
	}
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", fix, "-w", ws, "--session", "s1", "--no-sandbox", "--json")
	evs := parseEvents(t, stdout)
	if last := evs[len(evs)-1]; code != 0 || last.str("answer") != "Fixed." || last["iterations"] != 1.0 {
		t.Errorf("going on with the same script: exit %d, %v\n%s", code, last, stderr)
	}
	if n := len(toolEvents(evs)); n != 1 {
		t.Errorf("%d tool calls ended in the continued run, want the approved one alone (the script was read from its start):\n%s", n, stdout)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "ran")); string(b) != "parked\n" {
		t.Errorf("the approved call ran %q", b)
	}
}

// orca run … | head: the reader goes away mid-turn; orca is not killed by
// SIGPIPE in the middle of it, but ends the turn as an interrupt, which
// the store keeps (it kept a session of 0 turns).
func TestRunCutByItsReaderKeepsTheTurn(t *testing.T) {
	ws, cfgDir := t.TempDir(), t.TempDir()
	sc := writeScript(t, bashCall("b", "sleep 0.3; echo done"), `{"text": "line one\nline two"}`)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "run", "--script", sc, "-w", ws, "--no-sandbox", "--permission-mode", "bypass", "--session", "cut", "go")
	cmd.Env = append(os.Environ(), asCLI+"=1", "XDG_CONFIG_HOME="+cfgDir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if first, err := bufio.NewReader(out).ReadString('\n'); err != nil || first != "❯ go\n" {
		t.Fatalf("the first line %q, %v", first, err)
	}
	out.Close() // head has what it wanted
	cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("orca was killed by %v", ws.Signal())
	}
	s, err := storeOf(t, ws).Session(t.Context(), "cut")
	if err != nil || s.Turns != 1 {
		t.Errorf("the session after its reader went: %+v, %v", s, err)
	}
}
