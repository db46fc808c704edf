package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A Claude Code Notification hook in the shape public ones have
// (testdata/claude/notify: jq the payload into a log a notifier follows)
// runs when a call waits for the user: here `orca run --park-approvals`
// without a terminal parks the Write call, and the hook hears "orca needs your permission to
// use Write", with the session and a transcript it can read. Its entry for
// idle_prompt (orca chat's, after a minute) does not run; nor does any entry
// when no one is needed: an allow rule lets the call run, or a run with no
// one to ask refuses it.
func TestClaudeNotificationOnPermission(t *testing.T) {
	needPrograms(t, "jq")
	t.Parallel()
	ws := orcaArtifact(t, "notify")
	write := writeScript(t, `{"tool_calls": [{"name": "Write", "input": {"file_path": "made", "content": "x"}}]}`, `{"text": "done"}`)
	o := options{configDir: t.TempDir(), getenv: noEnv}

	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--script", write, "-w", ws, "--trust", "--park-approvals", "--json", "make it")
	if code != exitParked {
		t.Fatalf("exit %d, want %d (parked)\nstderr:\n%s", code, exitParked, stderr)
	}
	evs := parseEvents(t, stdout)
	session := evs[0].str("session_id")
	log := filepath.Join(ws, ".claude", "permission.log")
	got, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("the Notification hook wrote nothing: %v\nstderr:\n%s", err, stderr)
	}
	fields := strings.Split(strings.TrimSuffix(string(got), "\n"), "\t")
	if len(fields) != 5 || strings.Count(string(got), "\n") != 1 {
		t.Fatalf("permission.log = %q, want one line of 5 fields", got)
	}
	if fields[0] != "Notification" || fields[1] != "permission_prompt" || fields[2] != "orca needs your permission to use Write" || fields[3] != session {
		t.Errorf("the hook heard %q; want Notification, permission_prompt, the message, session %s", fields, session)
	}
	if fi, err := os.Stat(fields[4]); err != nil || fi.Size() == 0 {
		t.Errorf("transcript_path %q is no transcript: %v", fields[4], err)
	}
	if _, err := os.Stat(filepath.Join(ws, ".claude", "idle.log")); !os.IsNotExist(err) {
		t.Errorf("the idle_prompt entry ran (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "made")); !os.IsNotExist(err) {
		t.Errorf("the parked call ran (%v)", err)
	}

	// Refused, or allowed: no one is told anything.
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = orcaWith(t, t.Context(), o, "", "run", "--script", write, "-w", ws, "--trust", "--json", "make it")
	if code != 0 || !strings.Contains(stdout, "No one can approve it in this run") {
		t.Fatalf("refused: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(log); !os.IsNotExist(err) {
		t.Errorf("a Notification ran for a call refused without asking anyone (%v)", err)
	}
	stdout, stderr, code = orcaWith(t, t.Context(), o, "", "run", "--script", write, "-w", ws, "--trust", "--allow", "Write", "--json", "make it")
	if code != 0 {
		t.Fatalf("allowed: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, "made")); err != nil {
		t.Errorf("the allowed call did not run: %v", err)
	}
	if _, err := os.Stat(log); !os.IsNotExist(err) {
		t.Errorf("a Notification ran for a call no one was asked about (%v)", err)
	}
}

// A StopFailure hook (testdata/claude/notify) runs when the provider ends
// the turn: with the model refusing the key, it hears
// authentication_failed and the error; a failure its matcher does not
// name (invalid_request) runs nothing.
func TestClaudeStopFailure(t *testing.T) {
	needPrograms(t, "jq")
	t.Parallel()
	ws := orcaArtifact(t, "notify")
	o := options{configDir: t.TempDir(), getenv: noEnv}
	log := filepath.Join(ws, ".claude", "failure.log")

	denied := writeScript(t, `{"error": {"kind": "invalid_request", "message": "bad model"}}`)
	if _, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--script", denied, "-w", ws, "--trust", "--json", "go"); code != exitTurn {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitTurn, stderr)
	}
	if _, err := os.Stat(log); !os.IsNotExist(err) {
		t.Errorf("a failure the matcher does not name ran the hook (%v)", err)
	}

	auth := writeScript(t, `{"error": {"kind": "authentication", "message": "invalid x-api-key"}}`)
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--script", auth, "-w", ws, "--trust", "--json", "go")
	if code != exitTurn {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitTurn, stderr)
	}
	session := parseEvents(t, stdout)[0].str("session_id")
	got, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("the StopFailure hook wrote nothing: %v\nstderr:\n%s", err, stderr)
	}
	fields := strings.Split(strings.TrimSuffix(string(got), "\n"), "\t")
	if len(fields) != 5 || fields[0] != "StopFailure" || fields[1] != "authentication_failed" || !strings.Contains(fields[2], "invalid x-api-key") || fields[3] != session {
		t.Errorf("the hook heard %q; want StopFailure, authentication_failed, the error, session %s", fields, session)
	}
	for _, f := range []string{"permission.log", "idle.log"} {
		if _, err := os.Stat(filepath.Join(ws, ".claude", f)); !os.IsNotExist(err) {
			t.Errorf("a Notification entry ran for a failed turn: %s (%v)", f, err)
		}
	}
}
