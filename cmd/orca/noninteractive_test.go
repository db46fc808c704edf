package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The model's commands never wait for a person: git commit without -m
// would open the user's $EDITOR (here one that waits 30 seconds) and hold
// the call until its timeout; it is refused at once instead, sandboxed or
// not, and the variables that keep editors, pagers and credential prompts
// away are set whatever the user's environment says.
func TestModelCommandsDoNotWaitForAnEditor(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip(err)
	}
	t.Setenv("EDITOR", "sh -c 'sleep 30' --")
	t.Setenv("VISUAL", "sh -c 'sleep 30' --")
	t.Setenv("PAGER", "less")
	for _, mode := range sandboxModes(t) {
		ws := t.TempDir()
		for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "a@example.com"}, {"config", "user.name", "A"}} {
			if out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		os.WriteFile(filepath.Join(ws, "f.txt"), []byte("x\n"), 0o644)
		call := func(id, command string) map[string]any {
			return map[string]any{"id": id, "name": "Bash", "input": map[string]any{"command": command, "timeout": 15000}}
		}
		b, _ := json.Marshal(map[string]any{"tool_calls": []any{
			call("commit", "git add f.txt && git commit"),
			call("env", `printf '%s|' "$GIT_EDITOR" "$GIT_SEQUENCE_EDITOR" "$EDITOR" "$VISUAL" "$PAGER" "$GIT_PAGER" "$GIT_TERMINAL_PROMPT"`),
		}})
		args := append([]string{"run", "--json", "--script", writeScript(t, string(b), `{"text": "done"}`), "-w", ws, "--permission-mode", "bypass", "go"}, mode.flags...)
		stdout, stderr, code := orca(t, t.Context(), "", args...)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", mode.name, code, stderr)
		}
		evs := parseEvents(t, stdout)
		if out := toolEventOf(t, evs, "commit").str("output"); !strings.Contains(out, "Aborting commit due to empty commit message") {
			t.Errorf("%s: git commit: %s", mode.name, out)
		}
		if out := toolEventOf(t, evs, "env").str("output"); out != "true|true|true|true|cat|cat|0|" {
			t.Errorf("%s: the command's environment: %q", mode.name, out)
		}
	}
}
