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
)

// Protection guards the configuration folder the runtime reads — the one
// its trust store and user skills are in — whatever folder the policy it
// was given would have guarded on its own (on macOS os.UserConfigDir and
// orca's folder differ).
func TestProtectionGuardsTheRuntimesConfigFolder(t *testing.T) {
	bypass, err := policy.New(policy.ModeBypass, policy.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pol := range []*policy.Policy{nil, bypass} {
		// The folder is inside the workspace, where the file tools reach:
		// only protection stands between the model and the trust store.
		ws := t.TempDir()
		cfg := filepath.Join(ws, "config")
		trust := filepath.Join(cfg, "orca", "trust.json")
		model := script.New().Script("s", script.Call("Write", map[string]string{"file_path": trust, "content": `{"workspaces": ["/"]}`}), script.Text("done"))
		rt, err := agent.New(agent.Definition{Name: "guard"}, agent.Collaborators{Client: model, Workspace: ws, Policy: pol, ConfigDir: cfg})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go"}); err != nil {
			t.Fatal(err)
		}
		rt.Close()
		obs := model.CallsTo("s")[1].Observations()
		if _, err := os.Stat(trust); err == nil || len(obs) != 1 || !strings.Contains(obs[0].Content, "configuration folder") {
			t.Errorf("policy %v: the trust store was written (%v), or the refusal %+v does not say why", pol != nil, err, obs)
		}
	}
}

// A runtime given no services has its own: hooks registered on it fire,
// and it closes them with itself.
func TestRuntimeWithoutServicesHasItsOwn(t *testing.T) {
	model := script.New().Script("s", script.Call("Bash", map[string]string{"command": "touch ran"}), script.Text("done"))
	ws := t.TempDir()
	rt, err := agent.New(agent.Definition{Name: "own"}, agent.Collaborators{Client: model, Workspace: ws, ConfigDir: "-"})
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
	rt, err := agent.New(agent.Definition{Name: "violation"}, agent.Collaborators{Client: model, Workspace: ws, ConfigDir: "-", ClaudeDir: "-", Logger: logger})
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
