package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/policy"
)

// Protection guards the configuration folder the App reads — the one its
// trust store and user skills are in — whatever the permission mode, also
// when the folder is inside the workspace, where the file tools reach and
// only protection stands between the model and the trust store.
func TestProtectionGuardsTheAppsConfigFolder(t *testing.T) {
	for _, mode := range []policy.Mode{policy.ModeBypass, policy.ModeAcceptEdits} {
		ws := t.TempDir()
		cfg := filepath.Join(ws, "config")
		trust := filepath.Join(cfg, "orca", "trust.json")
		model := script.New().ScriptAny(script.Call("Write", map[string]string{"file_path": trust, "content": `{"workspaces": ["/"]}`}), script.Text("done"))
		a, err := app.Open(t.Context(), app.Config{Workspace: ws, ConfigDir: cfg, ClaudeDir: "-", Client: model, NoSandbox: true, NoMCP: true, Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		s, err := a.Session(t.Context(), app.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Run(t.Context(), "go"); err != nil {
			t.Fatal(err)
		}
		a.Close()
		obs := model.Calls()[1].Observations()
		if _, err := os.Stat(trust); err == nil || len(obs) != 1 || !strings.Contains(obs[0].Content, "configuration folder") {
			t.Errorf("mode %s: the trust store was written (%v), or the refusal %+v does not say why", mode, err, obs)
		}
	}
}

// An App built without tool providers offers the default tool set, and the
// subagents of the workspace's agents folders beside the built-in one.
func TestAppAssemblesTheDefaults(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, ".orca/agents/scout.md", "---\nname: scout\ndescription: Looks around.\n---\nLook.\n")
	model := script.New().ScriptAny(script.Text("done"))
	a, err := app.Open(t.Context(), app.Config{Workspace: ws, ConfigDir: "-", ClaudeDir: "-", Client: model, NoSandbox: true, NoMCP: true, Trust: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s, err := a.Session(t.Context(), app.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	var names []string
	var task string
	for _, d := range model.Calls()[0].Tools {
		names = append(names, d.Name)
		if d.Name == "Task" {
			task = d.Description
		}
	}
	for _, want := range []string{"Read", "Write", "Edit", "Glob", "Grep", "Bash", "TodoWrite", "Task", "Skill", "AgentOutput", "TaskStop"} {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+want+" ") {
			t.Errorf("tools offered %v, no %s", names, want)
		}
	}
	if !strings.Contains(task, "scout") || !strings.Contains(task, "general-purpose") {
		t.Errorf("Task offers no scout or general-purpose: %q", task)
	}
}
