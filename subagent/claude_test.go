package subagent_test

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/catalog"
	"github.com/orca-agent/orca/llm/provider"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/subagent"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/toolset"
	"github.com/orca-agent/orca/workspace"
)

// claudeWorkspace returns a workspace whose .claude/agents holds the
// files of testdata/claude-agents (see its README), as a Claude Code
// user's project does.
func claudeWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	dir := filepath.Join(ws, ".claude", "agents")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("testdata/claude-agents/*.md")
	if err != nil || len(files) < 5 {
		t.Fatalf("testdata: %v, %v", files, err)
	}
	for _, f := range files {
		if filepath.Base(f) == "README.md" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// claudeAgents is what each file of testdata/claude-agents says: its
// model as written, and the tools it has of a parent's.
var claudeAgents = map[string]struct {
	model                  string
	tools, disallowedTools []string
	prompt                 string // the body's opening
}{
	"code-reviewer":       {"", []string{"Read", "Write", "Edit", "Bash", "Glob", "Grep"}, nil, "You are a senior code reviewer."},
	"consistency-checker": {"haiku", []string{"Read", "Grep", "Glob"}, nil, "You are a consistency checker."},
	"test-runner":         {"sonnet", nil, nil, "You are a test automation expert."},
	"architect":           {"opus", nil, []string{"Write", "Edit", "Bash"}, "You are a software architect."},
	"prompt-critic":       {"sonnet", []string{}, nil, "You are a prompt critic."},
}

// Claude Code's subagent files load unchanged from the workspace's
// .claude/agents: their model, tools and disallowedTools as written, the
// keys orca does not use (color, mode, effort) ignored.
func TestClaudeCodeAgentFiles(t *testing.T) {
	fs, err := workspace.OpenLocal(claudeWorkspace(t))
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	defs, problems := subagent.Discover(fs, tool.Folders{Claude: true})
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	got := map[string]subagent.Definition{}
	for _, d := range defs {
		got[d.Name] = d
	}
	for name, want := range claudeAgents {
		d, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s was not loaded", name)
			continue
		case d.Source != "project" || d.Path != ".claude/agents/"+name+".md":
			t.Errorf("%s: from %s %s", name, d.Source, d.Path)
		case d.Model != want.model:
			t.Errorf("%s: model %q, want %q", name, d.Model, want.model)
		case !slices.Equal(d.Tools, want.tools) || (d.Tools == nil) != (want.tools == nil):
			t.Errorf("%s: tools %#v, want %#v", name, d.Tools, want.tools)
		case !slices.Equal(d.DisallowedTools, want.disallowedTools):
			t.Errorf("%s: disallowedTools %#v, want %#v", name, d.DisallowedTools, want.disallowedTools)
		case !strings.HasPrefix(d.Prompt, want.prompt) || d.Description == "":
			t.Errorf("%s: description %q, prompt %q", name, d.Description, d.Prompt)
		}
	}
	if d := got["test-runner"]; !strings.Contains(d.Description, "\n<example>\nContext: The user") {
		t.Errorf("test-runner's escaped newlines were not read as newlines: %q", d.Description)
	}
}

// The files run through orca on Anthropic's table of aliases: each fork's
// model call names the model its alias stands for (model: sonnet is never
// sent as "sonnet"), inherit the parent's, and carries the tools the file
// allows — none for tools: [].
func TestClaudeCodeAgentsRun(t *testing.T) {
	const parentModel = "claude-opus-4-8"
	aliases := provider.ModelAliases(provider.Config{Provider: provider.Anthropic}, nil, nil)
	c := script.New()
	var parent []script.Response
	for name := range claudeAgents {
		parent = append(parent, script.Call("Task", map[string]any{"description": "d", "prompt": "go", "subagent_type": name}))
		c.Script(script.ForkRoute("s", name), script.Text(name+" done"))
	}
	c.Script("s", append(parent, script.Text("all done"))...)
	// As app assembles it: the files of the workspace's .claude/agents.
	ws, err := workspace.OpenLocal(claudeWorkspace(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	folders := tool.Folders{Claude: true}
	subagents, problems := subagent.Discover(ws, folders)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Subagents: subagents, Name: "parent", Model: parentModel, ModelAliases: aliases},
		agent.Collaborators{Client: c, FS: ws, Folders: folders})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "delegate"})
	if err != nil || res.Answer != "all done" || c.Unrouted() != 0 {
		t.Fatalf("turn: %+v, %v (%d unrouted calls)", res, err, c.Unrouted())
	}
	var parentTools []string
	for _, d := range c.CallsTo("s")[0].Tools {
		parentTools = append(parentTools, d.Name)
	}
	for name, want := range claudeAgents {
		calls := c.CallsTo(script.ForkRoute("s", name))
		if len(calls) != 1 {
			t.Errorf("%s: %d model calls", name, len(calls))
			continue
		}
		r := calls[0]
		model := parentModel
		if want.model != "" {
			model = catalog.Default().Aliases("anthropic")[want.model]
		}
		if r.Model != model || r.Model == want.model {
			t.Errorf("%s (model: %s): the model call names %q, want %q", name, cmp.Or(want.model, "inherit"), r.Model, model)
		}
		var wantTools []string
		for _, n := range parentTools {
			if (want.tools == nil || slices.Contains(want.tools, n)) && !slices.Contains(want.disallowedTools, n) {
				wantTools = append(wantTools, n)
			}
		}
		var tools []string
		for _, d := range r.Tools {
			tools = append(tools, d.Name)
		}
		if !slices.Equal(tools, wantTools) {
			t.Errorf("%s: offered %v, want %v", name, tools, wantTools)
		}
		if !strings.HasPrefix(r.System, want.prompt) {
			t.Errorf("%s: system prompt %.80q", name, r.System)
		}
	}
}
