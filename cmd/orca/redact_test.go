package main

import (
	"strings"
	"testing"
)

// A PostToolUse hook that answers with updatedToolOutput (Claude Code's
// field for it; updatedMCPToolOutput for MCP tools) replaces what the
// model sees of the call: the secret a command printed is neither in the
// events nor in the session's stored transcript.
func TestPostToolUseHookRedactsOutput(t *testing.T) {
	ws := t.TempDir()
	writeFileAt(t, ws, ".orca/settings.json", `{"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
  "command": "grep -q SECRET && printf '{\"hookSpecificOutput\": {\"hookEventName\": \"PostToolUse\", \"updatedToolOutput\": \"[output withheld: it held a secret]\"}}' || true"}]}]}}`)
	writeFileAt(t, ws, "creds.txt", "token=SECRET-42\n")
	sc := writeScript(t, bashCall("leak", "cat creds.txt"), bashCall("fine", "echo hello"), `{"text": "done"}`)
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--json", "--script", sc, "-w", ws, "--trust", "--no-sandbox", "--permission-mode", "bypass", "--session", "s", "go")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	evs := parseEvents(t, stdout)
	if out := toolEventOf(t, evs, "leak").str("output"); out != "[output withheld: it held a secret]" {
		t.Errorf("the redacted call's observation: %q", out)
	}
	if out := toolEventOf(t, evs, "fine").str("output"); !strings.Contains(out, "hello") {
		t.Errorf("the other call's observation: %q", out)
	}
	show, stderr, code := orca(t, t.Context(), "", "sessions", "show", "-w", ws, "--json", "s")
	if code != 0 {
		t.Fatalf("sessions show: exit %d\n%s", code, stderr)
	}
	if strings.Contains(show, "SECRET-42") || !strings.Contains(show, "[output withheld: it held a secret]") {
		t.Errorf("the stored transcript:\n%s", show)
	}
}
