package orcatest_test

import (
	"reflect"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/orcatest"
	"github.com/orca-agent/orca/toolset"
	"github.com/orca-agent/orca/workspace"
)

// L0: the shape of an assembled runtime.

func TestL0_DefaultToolSet(t *testing.T) {
	n := orcatest.NewNode(t)
	want := []string{"Read", "Write", "Edit", "Glob", "Grep", "Bash", "TodoWrite", "WebFetch", "WebSearch", "Task", "Skill", "AgentOutput", "TaskStop"}
	if got := n.Runtime.Tools().Names(); !reflect.DeepEqual(got, want) {
		t.Errorf("default tools = %v, want %v", got, want)
	}
}

func TestL0_ModelReceivesTheRegistryDefinitions(t *testing.T) {
	n := orcatest.NewNode(t, orcatest.WithDefinition(agent.Definition{Name: "shape", SystemPrompt: "You fix bugs.", Model: "m-1"}))
	n.Script("s", script.Text("hi"))
	n.Run(t.Context(), "s", "hello")
	call := n.LLM.CallsTo("s")[0]
	if !reflect.DeepEqual(call.Tools, n.Runtime.Tools().Definitions()) {
		t.Errorf("model received tools %+v, registry has %+v", call.Tools, n.Runtime.Tools().Definitions())
	}
	if len(call.Tools) != 13 {
		t.Errorf("model received %d tools, want 13", len(call.Tools))
	}
	if call.System != "You fix bugs." || call.Model != "m-1" {
		t.Errorf("model received system %q, model %q", call.System, call.Model)
	}
	if n.LLM.Unrouted() != 0 {
		t.Errorf("unrouted calls = %d, want 0", n.LLM.Unrouted())
	}
}

func TestL0_CollaboratorsAreWired(t *testing.T) {
	n := orcatest.NewNode(t)
	rt := n.Runtime
	if rt.Client() == nil || rt.FS() == nil || rt.Tools() == nil || rt.Logger() == nil {
		t.Fatalf("nil collaborator: client %v fs %v tools %v logger %v", rt.Client(), rt.FS(), rt.Tools(), rt.Logger())
	}
	if rt.Client() != n.LLM {
		t.Error("runtime does not use the node's model")
	}
	if rt.FS() != workspace.FileSystem(n.FS) {
		t.Error("runtime does not use the node's workspace")
	}
	def := rt.Definition()
	if def.MaxIterations != agent.DefaultMaxIterations || def.MaxTokens != agent.DefaultMaxTokens {
		t.Errorf("defaults not applied: %+v", def)
	}
}

func TestL0_DeterministicRuntimeID(t *testing.T) {
	root := t.TempDir()
	a := orcatest.NewNode(t, orcatest.WithRoot(root))
	b := orcatest.NewNode(t, orcatest.WithRoot(root))
	if a.Runtime.ID() == "" || a.Runtime.ID() != b.Runtime.ID() {
		t.Errorf("same definition and workspace: ids %q and %q", a.Runtime.ID(), b.Runtime.ID())
	}
	c := orcatest.NewNode(t, orcatest.WithRoot(root), orcatest.WithDefinition(agent.Definition{Name: "other"}))
	d := orcatest.NewNode(t)
	if c.Runtime.ID() == a.Runtime.ID() || d.Runtime.ID() == a.Runtime.ID() {
		t.Errorf("different agents share an id: %q %q %q", a.Runtime.ID(), c.Runtime.ID(), d.Runtime.ID())
	}
}

// Close closes what the runtime created (its tools' state, a workspace it
// opened) and nothing it was given.
func TestL0_CloseClosesOnlyWhatTheRuntimeCreated(t *testing.T) {
	client := orcatest.NewScriptedClient(t)
	given, err := workspace.OpenLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer given.Close()
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "c"}, agent.Collaborators{Client: client, FS: given})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if given.Closed() {
		t.Error("closing the runtime closed the file system it was given")
	}
	if _, err := given.Stat("."); err != nil {
		t.Errorf("given file system unusable after runtime close: %v", err)
	}

	rt, err = agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "c"}, agent.Collaborators{Client: client, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	opened := rt.FS().(*workspace.Local)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if !opened.Closed() {
		t.Error("closing the runtime left the workspace it opened open")
	}
}

func TestL0_ProvidersAreTheDefaults(t *testing.T) {
	if got := len(toolset.Default()); got == 0 {
		t.Fatal("no default providers")
	}
	// The registry is per runtime: two nodes do not share tool values.
	a, b := orcatest.NewNode(t), orcatest.NewNode(t)
	ta, _ := a.Runtime.Tools().Lookup("TodoWrite")
	tb, _ := b.Runtime.Tools().Lookup("TodoWrite")
	if ta == tb {
		t.Error("two runtimes share one TodoWrite tool (and its lists)")
	}
}
