package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Piped input is a script: one line per turn, in order, commands
// included. The script provider answers the session's model calls in
// order across turns, the compaction summariser's too.
func TestChatScript(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	usage := `"usage": {"input_tokens": 100, "output_tokens": 20}`
	sc := writeScript(t,
		`{"text": "One.", `+usage+`}`,
		`{"text": "Two.", `+usage+`}`,
		`{"text": "Three.", `+usage+`}`,
		`{"text": "SUMMARY: the user said hello.", `+usage+`}`, // the summariser's, for /compact
		`{"text": "Four.", `+usage+`}`,
	)
	input := "hello\nsecond \\\nline two\n/cost\nthird\n\n/compact keep the names\n/nope\n/etc/hosts?\n/exit\nnever sent\n"
	stdout, stderr, code := orca(t, t.Context(), input, "chat", "--script", sc, "-w", ws, "--session", "c", "--budget-tokens", "100000")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"orca chat · session c (new)",
		"❯ hello\n\nOne.\n\n✓ answered",
		"❯ second \n  line two\n\nTwo.",
		"Session c · 2 turns\n",
		"  tokens      240 (200 tokens in · 40 out)  100000\n",
		"  tool calls  0                             no cap\n",
		"⟳ compacted the conversation (manual): 6 messages → 4, the oldest summarised · 100 tokens in · 20 out",
		"Unknown command /nope",
		"❯ /etc/hosts?\n\nFour.", // a path is a message, not a command
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "never sent") || stderr != "" {
		t.Errorf("after /exit:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}

	s := show(t, ws, "c")
	if s.Session.Turns != 4 {
		t.Errorf("turns: %d", s.Session.Turns)
	}
	// The compaction kept every record, marked those it summarised, and
	// appended the conversation the model sees from then on.
	summary := slices.IndexFunc(s.Records, func(r shownRecord) bool { return r.Kind == "summary" })
	if summary < 0 {
		t.Fatalf("no summary record: %+v", s.Records)
	}
	for i, r := range s.Records {
		if r.Compacted != (i < summary) {
			t.Errorf("record %d (%s %s): compacted %v", r.Seq, r.Role, r.Kind, r.Compacted)
		}
	}
	if sum := s.Records[summary]; !strings.Contains(sum.Content[0].Text, "SUMMARY: the user said hello.") || sum.Content[1].Text != "second \nline two" {
		t.Errorf("summary record: %+v", sum)
	}
	// (The summary record carries the first kept turn's input.)
	if got, want := s.prompts(), []string{"hello", "second \nline two", "third", "third", "/etc/hosts?"}; !slices.Equal(got, want) {
		t.Errorf("user messages: %q, want %q", got, want)
	}

	// The end of the input ends the chat too, after the running turn.
	stdout, _, code = orca(t, t.Context(), "again", "chat", "--script", writeScript(t, `{"text": "Five."}`), "-w", ws, "--continue")
	if code != 0 || !strings.Contains(stdout, "orca chat · session c (resumed: 4 turns so far)") || !strings.Contains(stdout, "Five.") {
		t.Errorf("exit %d:\n%s", code, stdout)
	}
}

// Ctrl-C interrupts the running turn, which ends as interrupted; the chat
// goes on.
func TestChatInterrupt(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	sc := writeScript(t, bashCall("sleep", "sleep 30"), `{"text": "Back."}`)
	s := start(t, false, "chat", "--script", sc, "-w", ws, "--permission-mode", "bypass", "--session", "c")
	s.send("wait for it")
	s.out.waitFor(t, "● Bash sleep 30", 1)
	s.interrupt()
	s.out.waitFor(t, "✗ interrupted", 1)
	s.send("are you there?")
	s.out.waitFor(t, "Back.", 1)
	s.send("/exit")
	if code := s.wait(); code != 0 {
		t.Errorf("exit %d\n%s\n%s", code, s.out, s.errOut)
	}
	out := s.out.String()
	if !strings.Contains(out, "Interrupting the turn… (Ctrl-C again to leave the chat)") {
		t.Errorf("stdout:\n%s", out)
	}
	sh := show(t, ws, "c")
	if got := sh.prompts(); sh.Session.Turns != 2 || !slices.Equal(got, []string{"wait for it", "are you there?"}) {
		t.Errorf("turns %d, prompts %q", sh.Session.Turns, got)
	}
}

// On a terminal, what is typed while a turn runs is queued into it; the
// prompt is shown, and the input is not echoed again.
func TestChatTerminalQueues(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	sc := writeScript(t, bashCall("sleep", "sleep 30"), `{"text": "Both seen."}`)
	s := start(t, true, "chat", "--script", sc, "-w", ws, "--permission-mode", "bypass", "--session", "c")
	s.out.waitFor(t, "❯ ", 1)
	s.send("first")
	s.out.waitFor(t, "Bash sleep 30", 1)
	s.send("also this")
	s.out.waitFor(t, "↳ queued: the running turn reads it at its next step.", 1)
	// The sleep would keep the queued line waiting: interrupt the turn.
	// The queue keeps the line for the next turn.
	s.interrupt()
	s.out.waitFor(t, "✗ interrupted", 1)
	s.out.waitFor(t, "❯ ", 2)
	s.send("go on")
	s.out.waitFor(t, "Both seen.", 1)
	if out := s.out.String(); !strings.Contains(out, "↳ into the turn: also this") {
		t.Errorf("the queued line is not shown entering the turn:\n%s", out)
	}
	s.send("/exit")
	if code := s.wait(); code != 0 {
		t.Errorf("exit %d\n%s\n%s", code, s.out, s.errOut)
	}
	if out := s.out.String(); strings.Contains(out, "❯ first") || strings.Contains(out, "❯ go on") {
		t.Errorf("the typed input was echoed:\n%q", out)
	}
	if got, want := show(t, ws, "c").prompts(), []string{"first", "go on", "also this"}; !slices.Equal(got, want) {
		t.Errorf("user messages: %q, want %q", got, want)
	}
}

// On a terminal, the approver's question takes the next line typed.
func TestChatApproval(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	sc := writeScript(t, bashCall("t", "touch x.txt"), `{"text": "Touched."}`)
	s := start(t, true, "chat", "--script", sc, "-w", ws)
	s.send("touch it")
	s.out.waitFor(t, "? Allow Bash touch x.txt?", 1)
	s.send("y")
	s.out.waitFor(t, "Touched.", 1)
	s.send("/exit")
	if code := s.wait(); code != 0 {
		t.Errorf("exit %d\n%s\n%s", code, s.out, s.errOut)
	}
	if !fileExists(filepath.Join(ws, "x.txt")) {
		t.Errorf("the approved command did not run:\n%s", s.out)
	}
}

// Ctrl-C at the prompt leaves; so do two Ctrl-C during a turn.
func TestChatCtrlCLeaves(t *testing.T) {
	t.Parallel()
	sc := writeScript(t, bashCall("sleep", "sleep 30"))
	s := start(t, true, "chat", "--script", sc, "-w", t.TempDir())
	s.out.waitFor(t, "❯ ", 1)
	s.interrupt()
	if code := s.wait(); code != 0 {
		t.Errorf("Ctrl-C at the prompt: exit %d\n%s", code, s.out)
	}

	s = start(t, true, "chat", "--script", sc, "-w", t.TempDir(), "--permission-mode", "bypass")
	s.send("sleep")
	s.out.waitFor(t, "Bash sleep 30", 1)
	began := time.Now()
	s.interrupt()
	s.interrupt()
	if code := s.wait(); code != 0 || time.Since(began) > 10*time.Second {
		t.Errorf("Ctrl-C twice: exit %d after %v\n%s", code, time.Since(began), s.out)
	}
}

// Lines pasted at once reach the model in the order they were typed,
// however the turns and the queue take them.
func TestChatTerminalKeepsOrder(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	sc := writeScript(t, `{"tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]}`,
		`{"text": "ok"}`, `{"text": "ok"}`, `{"text": "ok"}`, `{"text": "ok"}`)
	s := start(t, true, "chat", "--script", sc, "-w", ws, "--session", "c")
	s.out.waitFor(t, "❯ ", 1)
	s.send("a\nb\nc\nd")
	s.in.Close() // the end of the input: the chat ends after the turns
	if code := s.wait(); code != 0 {
		t.Errorf("exit %d\n%s\n%s", code, s.out, s.errOut)
	}
	if got, want := show(t, ws, "c").prompts(), []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("user messages: %q, want %q\n%s", got, want, s.out)
	}
}

// A skill whose name is a chat command's shape (/review) is invoked from
// the chat, not refused as an unknown command; /help lists it with its
// description.
func TestChatInvokesSkill(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeFileAt(t, ws, ".orca/skills/review/SKILL.md", "---\nname: review\ndescription: Reviews the staged change for bugs.\n---\nRead the diff, then list the bugs you find.\n")
	sc := writeScript(t, `{"text": "No bugs."}`)
	stdout, stderr, code := orca(t, t.Context(), "/help\n/review the parser\n/exit\n", "chat", "--script", sc, "-w", ws, "--session", "c")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "/review                  Reviews the staged change for bugs.") || strings.Contains(stdout, "Unknown command") || !strings.Contains(stdout, "No bugs.") {
		t.Errorf("stdout:\n%s", stdout)
	}
	prompts := show(t, ws, "c").prompts()
	if len(prompts) != 1 || !strings.HasPrefix(prompts[0], "The user invoked the review skill (/review).") || !strings.Contains(prompts[0], "Arguments: the parser") || !strings.Contains(prompts[0], "list the bugs you find") {
		t.Errorf("the model was sent %q", prompts)
	}
}

// orca chat on a session whose call was parked (orca run
// --park-approvals) says so, and /approve or /deny decides the call: its
// turn goes on, in the chat.
func TestChatDecidesAParkedCall(t *testing.T) {
	ws := t.TempDir()
	park := writeScript(t, bashCall("p1", "echo parked >> ran"), `{"text": "done"}`)
	for _, s := range []string{"a", "d"} {
		if _, stderr, code := orca(t, t.Context(), "", "run", "--script", park, "-w", ws, "--session", s, "--park-approvals", "--no-sandbox", "go"); code != exitParked {
			t.Fatalf("parking in %s: exit %d: %s", s, code, stderr)
		}
	}
	goOn := writeScript(t, `{"text": "it went on"}`, `{"text": "and hello"}`)
	stdout, stderr, code := orca(t, t.Context(), "/approve\nhello\n/approve\n/exit\n", "chat", "--script", goOn, "-w", ws, "--session", "a", "--no-sandbox")
	for _, want := range []string{"waits for a decision: Bash", "Approved Bash park_", "it went on", "and hello", "No call of this session waits"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the chat of a lacks %q (exit %d):\n%s\n%s", want, code, stdout, stderr)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "ran")); string(b) != "parked\n" {
		t.Errorf("ran = %q, want the approved call once", b)
	}
	stdout, stderr, code = orca(t, t.Context(), "/deny not today\n/exit\n", "chat", "--script", goOn, "-w", ws, "--session", "d", "--no-sandbox")
	if !strings.Contains(stdout, "Denied Bash park_") || !strings.Contains(stdout, "it went on") {
		t.Errorf("the chat of d (exit %d):\n%s\n%s", code, stdout, stderr)
	}
	if out, _, _ := orca(t, t.Context(), "", "sessions", "show", "-w", ws, "d"); !strings.Contains(out, "not today") {
		t.Errorf("the denial is not in d's transcript:\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "ran")); string(b) != "parked\n" {
		t.Errorf("ran = %q: the denied call ran", b)
	}
}
