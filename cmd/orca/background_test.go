package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/orca-agent/orca/internal/proctest"
	"github.com/orca-agent/orca/sandbox"
)

// sandboxMode is a way orca runs the model's commands: its name, and the
// flags that choose it.
type sandboxMode struct {
	name  string
	flags []string
}

// sandboxModes are the modes a test of commands goes through: in the OS
// sandbox (where it can be set up here) and with --no-sandbox.
func sandboxModes(t *testing.T) []sandboxMode {
	var modes []sandboxMode
	if err := sandbox.Available(); err != nil {
		t.Logf("no OS sandbox here (%v)", err)
	} else {
		modes = append(modes, sandboxMode{name: "sandboxed"})
	}
	return append(modes, sandboxMode{name: "--no-sandbox", flags: []string{"--no-sandbox"}})
}

// calls is a response of tool calls, each an id, a tool and its input.
func calls(cs ...[3]any) string {
	var out []any
	for _, c := range cs {
		out = append(out, map[string]any{"id": c[0], "name": c[1], "input": c[2]})
	}
	b, _ := json.Marshal(map[string]any{"tool_calls": out})
	return string(b)
}

// A command run in the background (Bash's run_in_background, as models
// trained on Claude Code send it to start a server) goes on after its
// call: AgentOutput reads its output, running or not, TaskStop kills it
// with what it started, and so does orca's exit for one still running;
// one that ends says how. Sandboxed, and without the sandbox.
func TestBashRunsCommandsInTheBackground(t *testing.T) {
	for _, mode := range sandboxModes(t) {
		ws := t.TempDir()
		h, h2 := proctest.NewHolder(t, ws, "hold"), proctest.NewHolder(t, ws, "hold2")
		type m = map[string]any
		sc := writeScript(t,
			calls([3]any{"bg", "Bash", m{"command": "echo serving; exec sleep 1000 3>hold", "run_in_background": true, "description": "Start the server"}}),
			calls([3]any{"wait", "Bash", m{"command": h.Await()}}),
			calls([3]any{"peek", "AgentOutput", m{"task_id": "task_1", "block": false}}),
			calls([3]any{"stop", "TaskStop", m{"task_id": "task_1"}}),
			calls([3]any{"after", "AgentOutput", m{"task_id": "task_1"}}),
			calls([3]any{"quick", "Bash", m{"command": "echo built; exit 3", "run_in_background": true}}),
			calls([3]any{"done", "AgentOutput", m{"task_id": "task_2", "timeout": 20000}}),
			calls([3]any{"bg2", "Bash", m{"command": "exec sleep 1000 3>hold2", "run_in_background": true}}),
			calls([3]any{"wait2", "Bash", m{"command": h2.Await()}}),
			`{"text": "Left one running."}`)
		args := append([]string{"run", "--json", "--script", sc, "-w", ws, "--permission-mode", "bypass", "go"}, mode.flags...)
		stdout, stderr, code := orca(t, t.Context(), "", args...)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", mode.name, code, stderr)
		}
		evs := parseEvents(t, stdout)
		for id, want := range map[string][]string{
			"bg":    {"Started in the background as task_1", "AgentOutput"},
			"peek":  {"Task task_1 (Bash: Start the server) is still running"},
			"stop":  {"Stopped task task_1."},
			"after": {"Task task_1 (Bash: Start the server) was stopped.", "Output:\nserving\n"},
			"quick": {"Started in the background as task_2"},
			"done":  {"Task task_2 (Bash: echo built; exit 3) failed: exit code: 3", "Output:\nbuilt\n"},
			"bg2":   {"Started in the background as task_3"},
		} {
			out := toolEventOf(t, evs, id).str("output")
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Errorf("%s: %s: %q lacks %q", mode.name, id, out, w)
				}
			}
		}
		if want := "orca: stopped what the turn left running in the background (orca run ends with its turn; orca chat keeps them): task_3 (Bash: exec sleep 1000 3>hold2)\n"; !strings.Contains(stderr, want) {
			t.Errorf("%s: stderr lacks %q:\n%s", mode.name, want, stderr)
		}
		h.RequireGone()  // TaskStop killed it
		h2.RequireGone() // the end of the run did
	}
}
