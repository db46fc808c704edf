package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/tool"
)

// traitsRun runs one turn in which the model calls the custom tool once
// with input, under pol (nil: no policy), over a fresh workspace, and
// returns the observation the model saw next and the turn's events.
func traitsRun(t *testing.T, custom tool.Tool, input any, pol *policy.Policy) (string, []event.Event) {
	t.Helper()
	return traitsRunIn(t, t.TempDir(), custom, input, pol)
}

func mode(t *testing.T, m policy.Mode, allow ...string) *policy.Policy {
	t.Helper()
	rules, err := policy.ParseRules(allow, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.New(m, rules)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func asked(events []event.Event) bool {
	for _, e := range events {
		if e.Name == event.ApprovalRequested {
			return true
		}
	}
	return false
}

// A custom tool declared read-only runs unasked in the modes that ask
// before changes (default) or refuse them (plan); the same tool without the
// trait is asked about, or refused.
func TestCustomToolDeclaredReadOnly(t *testing.T) {
	for _, readOnly := range []bool{true, false} {
		var ran atomic.Int32
		var opts []tool.Option
		if readOnly {
			opts = append(opts, tool.ReadOnly())
		}
		lookup := tool.New("Lookup", "Looks a word up.", func(ctx context.Context, in struct {
			Word string `json:"word"`
		}) (string, error) {
			ran.Add(1)
			return "a meaning of " + in.Word, nil
		}, opts...)
		for _, m := range []policy.Mode{policy.ModeDefault, policy.ModePlan} {
			ran.Store(0)
			obs, events := traitsRun(t, lookup, map[string]string{"word": "orca"}, mode(t, m))
			switch {
			case readOnly && (ran.Load() != 1 || obs != "a meaning of orca" || asked(events)):
				t.Errorf("read-only, mode %s: ran %d, asked %v, observation %q", m, ran.Load(), asked(events), obs)
			case !readOnly && ran.Load() != 0:
				t.Errorf("not read-only, mode %s: the tool ran (%q)", m, obs)
			case !readOnly && m == policy.ModeDefault && !asked(events):
				t.Errorf("not read-only, mode default: not asked (%q)", obs)
			case !readOnly && m == policy.ModePlan && !strings.Contains(obs, "plan is read-only"):
				t.Errorf("not read-only, mode plan: %q", obs)
			}
		}
	}
}

// saver writes content to the path its input names.
func saver(root *string) tool.Tool {
	return tool.New("Save", "Saves a note.", func(ctx context.Context, in struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}) (string, error) {
		return "saved", os.WriteFile(filepath.Join(*root, in.Path), []byte(in.Content), 0o644)
	}, tool.Writes("path"))
}

// traitsRunIn is traitsRun over the workspace root.
func traitsRunIn(t *testing.T, root string, custom tool.Tool, input any, pol *policy.Policy) (string, []event.Event) {
	t.Helper()
	model := script.New().Script("s", script.Call(custom.Name(), input), script.Text("done"))
	rt, err := agent.New(agent.Definition{Name: "traits", ToolProviders: []tool.Provider{tool.Static("custom", custom)}},
		agent.Collaborators{Client: model, Workspace: root, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var events []event.Event
	res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go", OnEvent: func(e event.Event) { events = append(events, e) }})
	if err != nil || res.StopReason != agent.StopAnswered {
		t.Fatalf("turn: %+v, %v", res, err)
	}
	obs := model.CallsTo("s")[1].Observations()
	if len(obs) != 1 {
		t.Fatalf("observations %+v", obs)
	}
	return obs[0].Content, events
}

// A custom tool that declares the path it writes goes through built-in
// protection (also without a policy), Edit rules and accept-edits mode like
// Write and Edit do.
func TestCustomToolDeclaresWhatItWrites(t *testing.T) {
	var root string
	save := saver(&root)
	// The tool writes wherever its input says: only the policy stands in
	// the way, so root is the test's own folder, made before each run.
	for _, tc := range []struct {
		name  string
		pol   *policy.Policy
		path  string
		wrote bool
		obs   string
	}{
		{"no policy, protected path", nil, ".orca/settings.json", false, "protected"},
		{"bypass, protected path", mode(t, policy.ModeBypass), ".orca/settings.json", false, "protected"},
		{"default, no rule", mode(t, policy.ModeDefault), "notes.md", false, "needs the user's approval"},
		{"default, an Edit rule", mode(t, policy.ModeDefault, "Edit(notes.md)"), "notes.md", true, "saved"},
		{"default, a Read rule", mode(t, policy.ModeDefault, "Read(notes.md)"), "notes.md", false, "needs the user's approval"},
		{"accept-edits", mode(t, policy.ModeAcceptEdits), "notes.md", true, "saved"},
	} {
		root = t.TempDir()
		os.MkdirAll(filepath.Join(root, ".orca"), 0o755)
		obs, _ := traitsRunIn(t, root, save, map[string]string{"path": tc.path, "content": "x"}, tc.pol)
		_, err := os.Stat(filepath.Join(root, tc.path))
		if wrote := err == nil; wrote != tc.wrote || !strings.Contains(obs, tc.obs) {
			t.Errorf("%s: wrote %v (want %v), observation %q (want %q in it)", tc.name, wrote, tc.wrote, obs, tc.obs)
		}
	}
}

// A custom tool that declares the command it runs is judged as parsed
// shell: a prefix rule naming it approves "ls", not "ls && rm -rf x".
func TestCustomToolDeclaresItsCommand(t *testing.T) {
	var ran []string
	sh := tool.New("Sh", "Runs a command.", func(ctx context.Context, in struct {
		Cmd string `json:"cmd"`
	}) (string, error) {
		ran = append(ran, in.Cmd)
		return "ran", nil
	}, tool.RunsCommand("cmd"))
	pol := mode(t, policy.ModeDefault, "Sh(ls:*)")
	traitsRun(t, sh, map[string]string{"cmd": "ls -la"}, pol)
	obs, _ := traitsRun(t, sh, map[string]string{"cmd": "ls && rm -rf x"}, pol)
	if len(ran) != 1 || ran[0] != "ls -la" || !strings.Contains(obs, `"rm -rf x"`) {
		t.Errorf("ran %q; the compound command's observation %q", ran, obs)
	}
}

// The events of a call say how its tool shows it (tool.Display).
func TestToolStartedEventCarriesTheDisplay(t *testing.T) {
	show := tool.New("Show", "Shows.", func(ctx context.Context, in struct {
		N int `json:"n"`
	}) (string, error) {
		return "ok", nil
	}, tool.ReadOnly(), tool.WithDisplay(func(input json.RawMessage) tool.Display {
		return tool.Display{Summary: "item " + string(input), Detail: "line 1\nline 2"}
	}))
	_, events := traitsRun(t, show, map[string]int{"n": 7}, nil)
	for _, e := range events {
		if d, ok := e.Data.(*event.ToolStartedData); ok && e.Name == event.ToolExecStarted {
			if d.Summary != `item {"n":7}` || d.Detail != "line 1\nline 2" {
				t.Errorf("started event: summary %q, detail %q", d.Summary, d.Detail)
			}
			return
		}
	}
	t.Error("no tool_exec_started event")
}
