package app_test

import (
	"strings"
	"testing"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm/script"
)

// Variables a SessionStart hook writes to $CLAUDE_ENV_FILE reach the
// session's later Bash commands, as in Claude Code; what the file holds
// that is not an assignment is not run.
func TestSessionStartEnvFileReachesBash(t *testing.T) {
	cfgDir, ws := t.TempDir(), t.TempDir()
	write(t, cfgDir, "orca/settings.json", `{"permissions": {"allow": ["Bash"]}, "hooks": {"SessionStart": [{"hooks": [{"type": "command",
		"command": "printf 'export GREETING=hello\\nPLAIN=\"two words\"\\ntouch pwned\\n' >> \"$CLAUDE_ENV_FILE\""}]}]}}`)
	model := script.New().ScriptAny(script.Call("Bash", map[string]string{"command": `echo "[$GREETING] [$PLAIN]"; ls`}), script.Text("done"))
	a, err := app.Open(t.Context(), app.Config{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: "-", Client: model, NoSandbox: true, Trust: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s, err := a.Session(t.Context(), app.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(t.Context(), "greet"); err != nil {
		t.Fatal(err)
	}
	calls := model.Calls()
	if len(calls) != 2 {
		t.Fatalf("%d model calls", len(calls))
	}
	obs := calls[1].Observations()
	if len(obs) != 1 || !strings.Contains(obs[0].Content, "[hello] [two words]") {
		t.Fatalf("Bash saw %+v; want the hook's variables", obs)
	}
	if strings.Contains(obs[0].Content, "pwned") {
		t.Errorf("a line of the env file was run: %q", obs[0].Content)
	}
}
