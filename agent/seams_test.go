package agent_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/toolset"
)

// Protection is the policy's: the configuration folder that the policy
// the runtime is given guards (policy.WithUserConfigDir, which app adds)
// is refused to the file tools — also in bypass mode, and also when the
// folder is inside the workspace, where only protection stands between
// the model and the trust store. Without a policy the runtime protects
// the workspace's own state alone: what else to protect is the caller's
// to say.
func TestProtectionIsThePolicys(t *testing.T) {
	for _, tc := range []struct {
		name    string
		guarded bool
	}{{"guarded bypass", true}, {"no policy", false}} {
		ws := t.TempDir()
		cfg := filepath.Join(ws, "config")
		var pol *policy.Policy
		if tc.guarded {
			var err error
			if pol, err = policy.New(policy.ModeBypass, policy.Rules{}, policy.WithUserConfigDir(cfg)); err != nil {
				t.Fatal(err)
			}
		}
		trust := filepath.Join(cfg, "orca", "trust.json")
		state := filepath.Join(ws, ".orca", "settings.json")
		model := script.New().Script("s",
			script.Call("Write", map[string]string{"file_path": trust, "content": `{"workspaces": ["/"]}`}),
			script.Call("Write", map[string]string{"file_path": state, "content": `{}`}),
			script.Text("done"))
		rt, err := agent.New(agent.Definition{Name: "guard", ToolProviders: toolset.Default()}, agent.Collaborators{Client: model, Workspace: ws, Policy: pol, Folders: tool.Folders{ConfigDir: cfg}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go"}); err != nil {
			t.Fatal(err)
		}
		rt.Close()
		calls := model.CallsTo("s")
		obs := calls[1].Observations()
		_, err = os.Stat(trust)
		if tc.guarded && (err == nil || len(obs) != 1 || !strings.Contains(obs[0].Content, "configuration folder")) {
			t.Errorf("%s: the trust store was written (%v), or the refusal %+v does not say why", tc.name, err, obs)
		}
		if !tc.guarded && err != nil {
			t.Errorf("%s: a folder no one protects was refused: %v %+v", tc.name, err, obs)
		}
		if _, err := os.Stat(state); err == nil {
			t.Errorf("%s: the workspace's .orca was written", tc.name)
		}
	}
}

// The runtime offers the tools its providers give, no others: without
// providers, none (orca's own set is toolset.Default, which app gives);
// without subagents, Task's only one is the built-in general-purpose
// agent, whatever agents folders the workspace has.
func TestRuntimeKnowsNoToolsOfItsOwn(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".orca", "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".orca", "agents", "scout.md"), []byte("---\nname: scout\ndescription: Looks.\n---\nLook.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, providers := range [][]tool.Provider{nil, {}, toolset.Default()} {
		model := script.New().Script("s", script.Text("done"))
		rt, err := agent.New(agent.Definition{Name: "bare", ToolProviders: providers}, agent.Collaborators{Client: model, Workspace: ws})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go"}); err != nil {
			t.Fatal(err)
		}
		rt.Close()
		offered := model.CallsTo("s")[0].Tools
		if len(offered) != len(rt.Tools().Names()) || providers == nil && len(offered) != 0 {
			t.Errorf("providers %v: offered %d tools, registry %v", providers, len(offered), rt.Tools().Names())
		}
		for _, d := range offered {
			if d.Name == "Task" && (strings.Contains(d.Description, "scout") || !strings.Contains(d.Description, "general-purpose")) {
				t.Errorf("Task offers the workspace's files or not the built-in agent: %q", d.Description)
			}
		}
	}
}

// A runtime given no services has its own: hooks registered on it fire,
// and it closes them with itself.
func TestRuntimeWithoutServicesHasItsOwn(t *testing.T) {
	model := script.New().Script("s", script.Call("Bash", map[string]string{"command": "touch ran"}), script.Text("done"))
	ws := t.TempDir()
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "own"}, agent.Collaborators{Client: model, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	if rt.Services() == nil || rt.Hooks() == nil || rt.Bus() == nil {
		t.Fatalf("no services of its own: %+v", rt.Services())
	}
	if _, err := hook.Handle(rt.Hooks(), "no-shell", func(ctx context.Context, p *hook.PreToolUsePayload) (*hook.Decision, error) {
		return &hook.Decision{Action: hook.Block, Reason: "no shell"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	var got []event.Event
	if _, err := rt.Bus().Subscribe("test", event.ToolBlocked, func(e event.Event) error { got = append(got, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Error("the hook did not fire: the command ran")
	}
	rt.Close()
	if len(got) != 1 || got[0].Name != event.ToolBlocked {
		t.Errorf("the bus delivered %v, want one tool_blocked (and was closed, flushed, with the runtime)", got)
	}
}

// A handler that answers what its hook does not allow (PRE_TOOL_USE has
// no revise) is a mistake in its program: the decision is ignored — the
// call goes on — and the runtime's logger gets an error naming the hook,
// the handler and the action, not only a hook_failed event.
func TestHookViolationIsLogged(t *testing.T) {
	model := script.New().Script("s", script.Call("Write", map[string]string{"file_path": "x.txt", "content": "x"}), script.Text("done"))
	ws := t.TempDir()
	var logged bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logged, nil))
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "violation"}, agent.Collaborators{Client: model, Workspace: ws, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if _, err := hook.Handle(rt.Hooks(), "confused", func(ctx context.Context, p *hook.PreToolUsePayload) (*hook.Decision, error) {
		return &hook.Decision{Action: hook.Revise, Instruction: "stop"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws, "x.txt")); err != nil {
		t.Errorf("the ignored decision stopped the call: %v", err)
	}
	out := logged.String()
	for _, want := range []string{"level=ERROR", "outside its hook's contract", "hook=PRE_TOOL_USE", "handler=confused", `does not allow action \"revise\"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
}
