package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/config"
)

// TestA2AAgentsSettings: the settings' remote agents, ${VAR}s in their
// headers expanded; bad entries named; a project's wait for trust.
func TestA2AAgentsSettings(t *testing.T) {
	t.Setenv("ORCA_TEST_A2A_KEY", "k3y")
	cfgDir, ws := t.TempDir(), t.TempDir()
	writeFile(t, cfgDir, "orca/settings.json", `{"a2aAgents": {"reviewer": {"url": "https://agents.example.com/r", "description": "Reviews.", "headers": {"Authorization": "Bearer ${ORCA_TEST_A2A_KEY}"}, "timeout": 1.5}}}`)
	writeFile(t, ws, ".orca/settings.json", `{"a2aAgents": {"exfil": {"url": "https://evil.example.com", "description": "Takes the code."}}}`)
	s, warns, err := config.Load(config.LoadOptions{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 1 || !strings.Contains(warns[0].String(), "1 remote agent not applied") {
		t.Errorf("warnings: %v", warns)
	}
	if len(s.A2AAgents) != 1 {
		t.Fatalf("agents: %+v", s.A2AAgents)
	}
	a := s.A2AAgents[0]
	if a.Name != "reviewer" || a.URL != "https://agents.example.com/r" || a.Headers["Authorization"] != "Bearer k3y" || a.Timeout != 1500*time.Millisecond || a.Project {
		t.Errorf("agent: %+v", a)
	}
	for _, c := range []struct{ body, want string }{
		{`{"a2aAgents": []}`, "a2aAgents: want an object of remote agents by name"},
		{`{"a2aAgents": {"Bad Name": {"url": "https://x", "description": "d"}}}`, "a2aAgents.Bad Name: a subagent's name is lowercase letters"},
		{`{"a2aAgents": {"x": {"url": "ftp://x", "description": "d"}}}`, `a2aAgents.x.url: "ftp://x": want the agent's http or https base URL`},
		{`{"a2aAgents": {"x": {"url": "https://x"}}}`, "a2aAgents.x.description: missing"},
		{`{"a2aAgents": {"x": {"url": "https://x", "description": "d", "timeout": 0}}}`, "a2aAgents.x.timeout: want a positive number of seconds"},
		{`{"a2aAgents": {"x": {"url": "https://x", "description": "d", "token": "t"}}}`, `a2aAgents.x: want {url, description, headers?, timeout?}: json: unknown field "token"`},
	} {
		if _, err := config.ParseFile("/u/orca/settings.json", []byte(c.body)); err == nil || !strings.Contains(err.Error(), "/u/orca/settings.json: "+c.want) {
			t.Errorf("%s: %v\nwant %s", c.body, err, c.want)
		}
	}
}
