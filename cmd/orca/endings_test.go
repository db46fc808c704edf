package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Ctrl-C at an approval question ends the turn as interrupted, the call's
// observation saying the user interrupted it — in the demo as in run —
// and never "context canceled".
func TestInterruptAtApproval(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "--fast", "--permission-mode", "default"},
		{"run", "--script", writeScript(t, bashCall("t", "touch x"), `{"text": "never"}`), "-w", t.TempDir(), "go"},
	} {
		t.Run(args[0], func(t *testing.T) {
			if args[0] == "demo" {
				t.Setenv("TMPDIR", t.TempDir())
			}
			s := start(t, true, args...)
			s.out.waitFor(t, "? Allow", 1)
			s.interrupt()
			if code := s.wait(); code != exitTurn {
				t.Errorf("exit %d, want %d", code, exitTurn)
			}
			out := s.out.String() + s.errOut.String()
			for _, want := range []string{"✗  Not run: the user interrupted the turn.", "✗ interrupted · "} {
				if !strings.Contains(out, want) {
					t.Errorf("the output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "context canceled") || strings.Contains(out, "failed") {
				t.Errorf("the output says the turn failed:\n%s", out)
			}
		})
	}
}

// A refused call's observation is shown whole, however long the command:
// the --allow hint at its end is what the user needs.
func TestRefusalHintWhole(t *testing.T) {
	t.Parallel()
	cmd := "touch " + strings.Repeat("a-rather-long-file-name-", 8) + ".txt"
	sc := writeScript(t, bashCall("t", cmd), `{"text": "done"}`)
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", t.TempDir(), "go")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, `To allow it, rerun with --allow "Bash(touch:*)" or add "Bash(touch:*)" to the settings key permissions.allow.`+"\n") ||
		!strings.Contains(stdout, cmd) {
		t.Errorf("the refusal is cut:\n%s", stdout)
	}
}

// orca run --help gives the exit code of every stop reason.
func TestRunHelpExitCodes(t *testing.T) {
	t.Parallel()
	stdout, _, code := orca(t, t.Context(), "", "run", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	_, codes, ok := strings.Cut(stdout, "Exit codes, by how the turn ended")
	if !ok {
		t.Fatalf("no exit codes:\n%s", stdout)
	}
	for reason, want := range map[string]string{
		"answered": "0", "compacted": "0", "failed": "1", "interrupted": "1", "escalated": "1", "refused": "1",
		"blocked": "1", "budget_exhausted": "1", "max_iterations": "1", "awaiting_approval": "3",
	} {
		i := strings.Index(codes, reason)
		if i < 0 {
			t.Errorf("%s is not documented", reason)
			continue
		}
		// The code is the last one written before the reason.
		got := ""
		for _, c := range []string{"  0  ", "  1  ", "  2  ", "  3  "} {
			if j := strings.LastIndex(codes[:i], c); j >= 0 && (got == "" || j > strings.LastIndex(codes[:i], "  "+got+"  ")) {
				got = strings.TrimSpace(c)
			}
		}
		if got != want {
			t.Errorf("%s: exit code %s, want %s", reason, got, want)
		}
	}
}

// Leaving the chat names the session and the command that resumes it;
// the resumed chat shows the earlier exchange and names the model.
func TestChatFarewellAndRecap(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	root, err := filepath.EvalSymlinks(ws)
	if err != nil {
		t.Fatal(err)
	}
	sc := writeScript(t, `{"text": "One."}`, bashCall("t", "echo hi"), `{"text": "Two,\nover two lines."}`)
	stdout, stderr, code := orca(t, t.Context(), "hello\nrun it\n", "chat", "--script", sc, "-w", ws, "--session", "c", "--permission-mode", "bypass")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	resume := "orca chat --session c -w " + shellQuote(root)
	if !strings.Contains(stdout, "orca chat · session c (new) · script\n") || !strings.HasSuffix(stdout, "\nSession c · 2 turns · resume it with: "+resume+"\n") {
		t.Errorf("stdout:\n%s", stdout)
	}

	stdout, stderr, code = orca(t, t.Context(), "/exit\n", "chat", "--script", writeScript(t, `{"text": "unused"}`), "-w", ws, "--session", "c")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	want := "Earlier in this session (its 2 exchanges):\n\n❯ hello\nOne.\n\n❯ run it\nTwo,\nover two lines.\n"
	if !strings.Contains(stdout, "orca chat · session c (resumed: 2 turns so far) · script\n") || !strings.Contains(stdout, want) {
		t.Errorf("the resumed chat does not show %q:\n%s", want, stdout)
	}
}

// On a terminal the demo's model takes a thinking time before each
// response; --fast, --json and other outputs skip it.
func TestDemoPaced(t *testing.T) {
	t.Parallel()
	total := 0
	for i, r := range demoScript(true) {
		if r.DelayMS <= 0 {
			t.Errorf("response %d comes at once", i)
		}
		total += r.DelayMS
	}
	if total < 5000 || total > 12000 {
		t.Errorf("the demo thinks %dms in all", total)
	}
	for i, r := range demoScript(false) {
		if r.DelayMS != 0 {
			t.Errorf("unpaced response %d waits %dms", i, r.DelayMS)
		}
	}
}

// /model, /permissions, /resume and /clear: what they show, and /clear
// going on in a new session while the old one keeps its turns.
func TestChatCommands(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	sc := writeScript(t, `{"text": "One."}`, `{"text": "Two."}`)
	input := "/model\n/permissions\nhello\n/clear\nagain\n/resume\n/exit\n"
	stdout, stderr, code := orca(t, t.Context(), input, "chat", "--script", sc, "-w", ws, "--session", "c",
		"--allow", "Bash(go test:*)", "--deny", "Write", "--permission-mode", "accept-edits")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"Model: script\n",
		"Permission mode: accept-edits (",
		"  deny   Write (--deny)\n",
		"  ask    none\n",
		"  allow  Bash(go test:*) (--allow)\n",
		"Session c is kept (orca chat --session c -w ",
		"The workspace's other sessions, most recently active first:\n  c  ",
		"  1 turn  hello\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if got := show(t, ws, "c").prompts(); !slices.Equal(got, []string{"hello"}) {
		t.Errorf("session c holds %q", got)
	}
	// The farewell names the new session, which holds the turn after /clear.
	_, after, _ := strings.Cut(stdout, "A new session: ")
	id, _, _ := strings.Cut(after, ".")
	if got := show(t, ws, id).prompts(); !slices.Equal(got, []string{"again"}) || !strings.Contains(stdout, "Session "+id+" · 1 turn · resume it with: orca chat --session "+id) {
		t.Errorf("session %q holds %q:\n%s", id, got, stdout)
	}
}

// The session /clear starts runs SessionStart hooks with the source
// "clear", as Claude Code's /clear does: a "clear" matcher runs then, a
// "startup" one only for the chat's first session.
func TestChatClearIsSessionStartClear(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeFileAt(t, ws, ".claude/settings.json", `{"hooks": {"SessionStart": [
		{"matcher": "startup", "hooks": [{"type": "command", "command": "echo startup >> starts.log"}]},
		{"matcher": "clear", "hooks": [{"type": "command", "command": "echo clear >> starts.log"}]},
		{"matcher": "compact|resume", "hooks": [{"type": "command", "command": "echo other >> starts.log"}]}]}}`)
	sc := writeScript(t, `{"text": "One."}`, `{"text": "Two."}`)
	stdout, stderr, code := orca(t, t.Context(), "hello\n/clear\nagain\n/exit\n", "chat", "--script", sc, "-w", ws, "--trust")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "starts.log")); string(b) != "startup\nclear\n" {
		t.Errorf("the SessionStart hooks that ran: %q (%v), want startup then clear", b, err)
	}
}

// /resume ID goes on in that session inside the chat: its earlier
// exchange is shown, the next message joins it, the session left is kept;
// an unknown id is refused, naming it.
func TestChatResumeSwitches(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	sc := writeScript(t, `{"text": "First answer."}`, `{"text": "Second answer."}`, `{"text": "Third answer."}`)
	input := "first question\n/clear\nsecond question\n/resume nope\n/resume c\nthird question\n/exit\n"
	stdout, stderr, code := orca(t, t.Context(), input, "chat", "--script", sc, "-w", ws, "--session", "c")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	_, after, _ := strings.Cut(stdout, "A new session: ")
	other, _, _ := strings.Cut(after, ".")
	for _, want := range []string{
		"✗ no session nope in this workspace",
		"Session " + other + " is kept (orca chat --session " + other,
		"Going on in session c (1 turn so far).\n\nEarlier in this session:\n\n❯ first question\nFirst answer.\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if got := show(t, ws, "c").prompts(); !slices.Equal(got, []string{"first question", "third question"}) {
		t.Errorf("session c holds %q", got)
	}
	if got := show(t, ws, other).prompts(); !slices.Equal(got, []string{"second question"}) {
		t.Errorf("session %s holds %q", other, got)
	}
}
