package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm/script"
)

// A settings file's prompt hook asks the session's model (through the
// alias table for its model) and its "no" blocks the call.
func TestPromptHookFromSettings(t *testing.T) {
	cfgDir, ws := t.TempDir(), t.TempDir()
	write(t, cfgDir, "orca/settings.json", `{"permissions": {"allow": ["Bash"]}, "modelAliases": {"haiku": "small-model-id"},
		"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "Allow only read-only commands. $ARGUMENTS", "model": "haiku"}]}]}}`)
	model := script.New().ScriptAny(
		script.Call("Bash", map[string]string{"command": "touch made.txt"}),
		script.Text(`{"ok": false, "reason": "touch writes a file; only read-only commands here"}`),
		script.Text("done"))
	a, err := app.Open(t.Context(), app.Config{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: "-", Client: model, NoSandbox: true, Trust: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s, err := a.Session(t.Context(), app.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(t.Context(), "make a file"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws, "made.txt")); err == nil {
		t.Fatal("the prompt hook's no did not block the call")
	}
	calls := model.Calls()
	if len(calls) != 3 {
		t.Fatalf("%d model calls; want the agent's, the hook's, the agent's", len(calls))
	}
	if hookCall := calls[1]; hookCall.Model != "small-model-id" || !strings.Contains(hookCall.Messages[0].Text(), `"command":"touch made.txt"`) {
		t.Errorf("the hook asked model %q with %q", hookCall.Model, hookCall.Messages[0].Text())
	}
	if obs := calls[2].Observations(); len(obs) != 1 || !obs[0].IsError || !strings.Contains(obs[0].Content, "only read-only commands here") {
		t.Errorf("the agent saw %+v", obs)
	}
}
