package agent_test

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/subagent"
	"github.com/orca-agent/orca/toolset"
)

// logBuffer collects a runtime's log, safe for the goroutines that write it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// definitions parses subagent files, given by name, as Discover would.
func definitions(t *testing.T, files map[string]string) []subagent.Definition {
	t.Helper()
	var out []subagent.Definition
	for name, front := range files {
		d, err := subagent.Parse(name, []byte("---\ndescription: The "+name+" agent.\n"+front+"---\nYou are "+name+".\n"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d.Source, d.Path = "project", ".orca/agents/"+name+".md"
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b subagent.Definition) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// runForks runs one turn of session s on def in which the parent starts
// each of the forks in order, each fork answering at once, and returns
// the model client and the runtime's log.
func runForks(t *testing.T, def agent.Definition, forks ...string) (*script.Client, string) {
	t.Helper()
	c := script.New()
	var parent []script.Response
	for _, f := range forks {
		parent = append(parent, script.Call("Task", map[string]any{"description": "d", "prompt": "go", "subagent_type": f}))
		c.Script(script.ForkRoute("s", f), script.Text(f+" done"))
	}
	c.Script("s", append(parent, script.Text("all done"))...)
	var log logBuffer
	def.ToolProviders = toolset.Default()
	rt, err := agent.New(def, agent.Collaborators{Client: c, Workspace: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "delegate"})
	if err != nil || res.Answer != "all done" {
		t.Fatalf("turn: %+v, %v", res, err)
	}
	if c.Unrouted() != 0 {
		t.Errorf("%d unrouted model calls", c.Unrouted())
	}
	return c, log.String()
}

func toolNames(r script.Recorded) []string {
	var out []string
	for _, d := range r.Tools {
		out = append(out, d.Name)
	}
	return out
}

// A fork gets the tools its definition allows: tools: [] none at all (not
// every tool, as an empty list once meant), no tools key all of the
// parent's, disallowedTools all but those. The parent's Task tool says so.
func TestForkTools(t *testing.T) {
	c, _ := runForks(t, agent.Definition{Name: "parent", Subagents: definitions(t, map[string]string{
		"bare":     "tools: []\n",
		"all":      "",
		"readonly": "disallowedTools: Write, Edit, Bash\n",
		"picky":    "tools: Read, Grep, Bash\ndisallowedTools: [Bash]\n",
	})}, "bare", "all", "readonly", "picky")
	parentTools := toolNames(c.CallsTo("s")[0])
	want := map[string][]string{
		"bare":  nil,
		"all":   parentTools,
		"picky": {"Read", "Grep"},
	}
	for _, n := range parentTools {
		if n != "Write" && n != "Edit" && n != "Bash" {
			want["readonly"] = append(want["readonly"], n)
		}
	}
	for agentName, w := range want {
		calls := c.CallsTo(script.ForkRoute("s", agentName))
		if len(calls) != 1 {
			t.Fatalf("%s: %d model calls", agentName, len(calls))
		}
		got := toolNames(calls[0])
		slices.Sort(got)
		w = slices.Sorted(slices.Values(w))
		if !slices.Equal(got, w) {
			t.Errorf("%s was offered %v, want %v", agentName, got, w)
		}
	}
	var task llm.ToolDefinition
	for _, d := range c.CallsTo("s")[0].Tools {
		if d.Name == "Task" {
			task = d
		}
	}
	for _, line := range []string{
		"- bare: The bare agent. (Tools: none)\n",
		"- all: The all agent.\n",
		"- readonly: The readonly agent. (Tools: all but Write, Edit, Bash)\n",
		"- picky: The picky agent. (Tools: Read, Grep)\n",
	} {
		if !strings.Contains(task.Description, line) {
			t.Errorf("the Task tool does not list %q:\n%s", line, task.Description)
		}
	}
}

// A fork's model goes through the definition's table of model aliases: an
// alias in it is sent as its model, inherit (or no model) as the
// parent's, a name that is no alias as written; an alias of Claude Code's
// the table lacks runs on the parent's model, and the log says so once,
// naming the subagent's file.
func TestForkModels(t *testing.T) {
	def := agent.Definition{Name: "parent", Model: "parent-model",
		ModelAliases: map[string]string{"sonnet": "sonnet-model", "fast": "fast-model"},
		Subagents: definitions(t, map[string]string{
			"aliased":  "model: sonnet\n",
			"own":      "model: fast\n",
			"inherits": "model: inherit\n",
			"default":  "",
			"pinned":   "model: claude-sonnet-4-5-20250929\n",
			"missing":  "model: haiku\n",
		})}
	c, log := runForks(t, def, "aliased", "own", "inherits", "default", "pinned", "missing", "missing")
	for who, want := range map[string]string{
		"aliased":  "sonnet-model",
		"own":      "fast-model",
		"inherits": "parent-model",
		"default":  "parent-model",
		"pinned":   "claude-sonnet-4-5-20250929",
		"missing":  "parent-model",
	} {
		calls := c.CallsTo(script.ForkRoute("s", who))
		if len(calls) == 0 {
			t.Errorf("%s made no model call", who)
		}
		for _, r := range calls {
			if r.Model != want {
				t.Errorf("%s's model call names %q, want %q", who, r.Model, want)
			}
		}
	}
	if r := c.CallsTo("s"); r[0].Model != "parent-model" {
		t.Errorf("the parent's model call names %q", r[0].Model)
	}
	if n := strings.Count(log, "subagent model alias"); n != 1 ||
		!strings.Contains(log, "alias=haiku") || !strings.Contains(log, "file=.orca/agents/missing.md") || !strings.Contains(log, "model=parent-model") {
		t.Errorf("want one warning naming the alias, the file and the model used, got %d:\n%s", n, log)
	}
}
