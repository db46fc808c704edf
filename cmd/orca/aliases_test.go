package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/internal/proctest"
)

// Claude Code's names of orca's tools work where its users and models
// write them: a settings rule Agent(Explore) denies Task's Explore
// subagent, a PreToolUse matcher TaskOutput|KillShell runs for AgentOutput
// and TaskStop, and a model that calls TaskOutput (as get-shit-done-cc's
// workflows tell it to) or KillShell with Claude Code's shell_id gets
// what it asked for, under orca's names.
func TestClaudeCodeToolNames(t *testing.T) {
	ws := t.TempDir()
	writeFileAt(t, ws, ".claude/settings.json", `{
  "permissions": {"deny": ["Agent(Explore)"]},
  "hooks": {"PreToolUse": [{"matcher": "Agent|TaskOutput|KillShell",
    "hooks": [{"type": "command", "command": "{ cat; echo; } >> \"$CLAUDE_PROJECT_DIR/pre.jsonl\""}]}]}
}`)
	h := proctest.NewHolder(t, ws, "hold")
	type m = map[string]any
	sc := writeScript(t,
		calls([3]any{"explore", "Task", m{"description": "Map the code", "prompt": "Map it", "subagent_type": "Explore"}}),
		calls([3]any{"bg", "Bash", m{"command": "echo serving; exec sleep 1000 3>hold", "run_in_background": true}}),
		calls([3]any{"wait", "Bash", m{"command": h.Await()}}),
		calls([3]any{"peek", "TaskOutput", m{"task_id": "task_1", "block": false}}),
		calls([3]any{"kill", "KillShell", m{"shell_id": "task_1"}}),
		calls([3]any{"old", "BashOutput", m{"bash_id": "task_1"}}),
		`{"text": "Done."}`)
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--json", "--script", sc, "-w", ws, "--trust", "--no-sandbox", "--permission-mode", "bypass", "go")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	evs := parseEvents(t, stdout)
	for id, want := range map[string]string{
		"explore": "Agent(Explore)",
		"peek":    "Task task_1 (Bash: echo serving; exec sleep 1000 3>hold) is still running",
		"kill":    "Stopped task task_1.",
		// BashOutput took bash_id: AgentOutput's schema says what it takes.
		"old": "task_id",
	} {
		if out := toolEventOf(t, evs, id).str("output"); !strings.Contains(out, want) {
			t.Errorf("%s: %q lacks %q", id, out, want)
		}
	}
	for id, name := range map[string]string{"peek": "AgentOutput", "kill": "TaskStop", "old": "AgentOutput"} {
		if got := toolEventOf(t, evs, id).str("tool_name"); got != name {
			t.Errorf("%s ran as %q, want %s", id, got, name)
		}
	}
	h.RequireGone() // KillShell stopped it
	pre, err := os.ReadFile(filepath.Join(ws, "pre.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(pre)), "\n") {
		var p struct {
			ToolName string `json:"tool_name"`
		}
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		names = append(names, p.ToolName)
	}
	// Not for BashOutput's call: its input did not hold.
	if got := strings.Join(names, ","); got != "Task,AgentOutput,TaskStop" {
		t.Errorf("the PreToolUse hook ran for %s, want Task,AgentOutput,TaskStop", got)
	}
}
