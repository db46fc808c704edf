package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --verify checks the finished turn: a failing check sends the model back
// to work, with the check's output; once it passes, the turn is answered.
func TestRunVerifyRevises(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	sc := writeScript(t,
		`{"text": "Done."}`,
		`{"tool_calls": [{"name": "Write", "input": {"file_path": "done.txt", "content": "done\n"}}]}`,
		`{"text": "Done, really."}`,
	)
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--permission-mode", "accept-edits",
		"--verify", "test -f done.txt", "--json", "finish")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, "done.txt")); err != nil {
		t.Error(err)
	}
	evs := parseEvents(t, stdout)
	var passed []any
	for _, ev := range evs {
		if ev.str("name") == "verification_completed" {
			if ev.str("command") != "test -f done.txt" {
				t.Errorf("verification: %v", ev)
			}
			passed = append(passed, ev["passed"])
		}
	}
	if len(passed) != 2 || passed[0] != false || passed[1] != true {
		t.Errorf("verifications passed: %v, want [false true]", passed)
	}
	if last := evs[len(evs)-1]; last.str("stop_reason") != "answered" || last.str("answer") != "Done, really." || last["iterations"] != 3.0 {
		t.Errorf("last event: %v", last)
	}
}

// A turn whose check keeps failing is escalated (exit 1); the settings'
// verify key sets the check, and --verify "" turns it off.
func TestRunVerifyEscalates(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".orca"), 0o755)
	os.WriteFile(filepath.Join(ws, ".orca", "settings.json"), []byte(`{"verify": "test -f done.txt"}`), 0o644)
	done := `{"text": "Done."}`
	sc := writeScript(t, done, done, done)

	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--trust", "--json", "finish")
	if code != exitTurn {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitTurn, stdout, stderr)
	}
	evs := parseEvents(t, stdout)
	last := evs[len(evs)-1]
	if last.str("name") != "turn_completed" || last.str("stop_reason") != "escalated" || !strings.Contains(last.str("reason"), "test -f done.txt") || last["iterations"] != 3.0 {
		t.Errorf("last event: %v", last)
	}
	if !strings.Contains(stderr, "escalated") || !strings.Contains(stderr, "still failed") {
		t.Errorf("stderr does not say why: %s", stderr)
	}

	// In text mode the summary says it, with the failed check.
	stdout, _, code = orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--trust", "finish")
	for _, want := range []string{"✗ verification failed: test -f done.txt", "✗ escalated · 3 iterations", "still failed after 2 revisions"} {
		if code != exitTurn || !strings.Contains(stdout, want) {
			t.Errorf("text mode: exit %d, stdout lacks %q:\n%s", code, want, stdout)
		}
	}

	// The flag wins over the settings: "" for no check.
	stdout, stderr, code = orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--trust", "--verify", "", "--json", "finish")
	if code != exitOK {
		t.Fatalf("--verify \"\": exit %d\n%s\n%s", code, stdout, stderr)
	}
	if strings.Contains(stdout, "verification_completed") {
		t.Errorf("--verify \"\" still verified:\n%s", stdout)
	}
}
