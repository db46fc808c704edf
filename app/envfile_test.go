package app_test

import (
	"strings"
	"testing"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/store"
)

// Variables a SessionStart hook writes to $CLAUDE_ENV_FILE reach the
// session's later Bash commands, as in Claude Code; what the file holds
// that is not an assignment is not run.
func TestSessionStartEnvFileReachesBash(t *testing.T) {
	cfgDir, ws := t.TempDir(), t.TempDir()
	write(t, cfgDir, "orca/settings.json", `{"permissions": {"allow": ["Bash"]}, "hooks": {"SessionStart": [{"hooks": [{"type": "command",
		"command": "printf 'export GREETING=hello\\nPLAIN=\"two words\"\\ntouch pwned\\n' >> \"$CLAUDE_ENV_FILE\""}]}]}}`)
	model := script.New().ScriptAny(script.Call("Bash", map[string]string{"command": `echo "[$GREETING] [$PLAIN] [$CLAUDE_CODE_SESSION_ID]"; ls`}), script.Text("done"))
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
	if len(obs) != 1 || !strings.Contains(obs[0].Content, "[hello] [two words] [session_") {
		t.Fatalf("Bash saw %+v; want the hook's variables", obs)
	}
	if strings.Contains(obs[0].Content, "pwned") {
		t.Errorf("a line of the env file was run: %q", obs[0].Content)
	}
}

// What a settings file asks for and does not get is a warning once — in
// App.Warnings and as a config_warning event, which the observation rows
// keep — and the rest of the file works.
func TestConfigWarningIsAnEvent(t *testing.T) {
	cfgDir, ws := t.TempDir(), t.TempDir()
	write(t, cfgDir, "orca/settings.json", `{"hooks": {"Setup": [{"hooks": [{"type": "command", "command": "setup.sh"}]}]}, "permissions": {"allow": ["Read"]}}`)
	st := store.NewMemory()
	a, err := app.Open(t.Context(), app.Config{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: "-", Client: script.New().ScriptAny(script.Text("hi")), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Warnings()) != 1 || !strings.Contains(a.Warnings()[0].Message, `"Setup"`) {
		t.Fatalf("warnings %+v", a.Warnings())
	}
	if got := a.Settings().Permissions.Allow; len(got) != 1 {
		t.Errorf("the rest of the file: allow %v", got)
	}
	a.Close()
	rows, err := st.Observations(t.Context(), store.ObservationFilter{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rows {
		if r.Name == "config_warning" && strings.Contains(string(r.Data), "Setup") && strings.Contains(string(r.Data), "settings.json") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d config_warning rows; want 1", n)
	}
}
