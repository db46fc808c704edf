package subagent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/orca-agent/orca/subagent"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParse(t *testing.T) {
	d, err := subagent.Parse("reviewer", []byte("---\nname: reviewer\ndescription: Reviews diffs.\ntools: Read, Grep, Bash(git diff:*)\nmodel: inherit\n---\nYou review code.\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "reviewer" || d.Description != "Reviews diffs." || d.Model != "" || d.Prompt != "You review code." ||
		strings.Join(d.Tools, "|") != "Read|Grep|Bash(git diff:*)" {
		t.Errorf("parsed %+v", d)
	}
	for _, bad := range []struct{ in, want string }{
		{"no front matter", "must begin with a ---"},
		{"---\ndescription: x\n---\nbody", ""}, // name from the file
		{"---\nname: Bad Name\ndescription: x\n---\nbody", "not valid"},
		{"---\nname: ok\n---\nbody", "description is missing"},
		{"---\nname: ok\ndescription: x\n---\n", "body"},
		{"---\nname: ok\ndescription: x\ntools: {a: 1}\n---\nbody", "tools"},
	} {
		_, err := subagent.Parse("from-file", []byte(bad.in))
		if bad.want == "" {
			if err != nil {
				t.Errorf("Parse(%q) = %v", bad.in, err)
			}
			continue
		}
		if !errors.Is(err, subagent.ErrMalformed) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Parse(%q) = %v, want %q", bad.in, err, bad.want)
		}
	}
}

// tools: [] (or "") gives no tools, a missing or null tools all of the
// parent's; disallowedTools takes tools away from either.
func TestParseTools(t *testing.T) {
	parse := func(fm string) subagent.Definition {
		t.Helper()
		d, err := subagent.Parse("x", []byte("---\ndescription: d\n"+fm+"---\nprompt\n"))
		if err != nil {
			t.Fatalf("%q: %v", fm, err)
		}
		return d
	}
	parent := []string{"Read", "Grep", "Bash", "Write", "Task"}
	for _, tc := range []struct {
		fm   string
		want []string
	}{
		{"", parent},
		{"tools:\n", parent},
		{"tools: []\n", nil},
		{"tools: \"\"\n", nil},
		{"tools: Read, Bash\n", []string{"Read", "Bash"}},
		{"disallowedTools: Bash, Write\n", []string{"Read", "Grep", "Task"}},
		{"tools: [Read, Bash]\ndisallowedTools: [Bash]\n", []string{"Read"}},
		// Agent is Claude Code's current name of the subagent tool, an
		// alias of Task's.
		{"tools: Read, Agent\n", []string{"Read", "Task"}},
		{"tools: Read, Task\n", []string{"Read", "Task"}},
		{"disallowedTools: Agent\n", []string{"Read", "Grep", "Bash", "Write"}},
		{"disallowedTools: []\n", parent},
	} {
		d := parse(tc.fm)
		var got []string
		for _, name := range parent {
			names := []string{name}
			if name == "Task" {
				names = append(names, "Agent")
			}
			if d.Allows(names...) {
				got = append(got, name)
			}
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%q allows %v, want %v", tc.fm, got, tc.want)
		}
	}
	if d := parse("tools: []\n"); d.Tools == nil {
		t.Error("tools: [] parsed as no tools key")
	}
	if d := parse("tools:\n"); d.Tools != nil {
		t.Errorf("tools: with no value parsed as %#v", d.Tools)
	}
	if _, err := subagent.Parse("x", []byte("---\ndescription: d\ndisallowedTools: {Bash: 1}\n---\nprompt")); !errors.Is(err, subagent.ErrMalformed) || !strings.Contains(err.Error(), "disallowedTools") {
		t.Errorf("a malformed disallowedTools: %v", err)
	}
}

// The Task tool tells the model which tools each subagent has: none for
// tools: [], never "all" by omission.
func TestTaskListsTools(t *testing.T) {
	tools, err := subagent.TaskProvider().Tools(tool.Env{Subagents: []tool.Subagent{
		{Name: "all", Description: "Has all."},
		{Name: "none", Description: "Has none.", Tools: []string{}},
		{Name: "some", Description: "Has some.", Tools: []string{"Read", "Bash"}, DisallowedTools: []string{"Bash"}},
		{Name: "most", Description: "Has most.", DisallowedTools: []string{"Write", "Edit"}},
		{Name: "emptied", Description: "Had one.", Tools: []string{"Bash"}, DisallowedTools: []string{"Bash"}},
	}})
	if err != nil || len(tools) != 1 {
		t.Fatal(tools, err)
	}
	desc := tools[0].Description()
	for _, want := range []string{
		"- all: Has all.\n",
		"- none: Has none. (Tools: none)\n",
		"- some: Has some. (Tools: Read)\n",
		"- most: Has most. (Tools: all but Write, Edit)\n",
		"- emptied: Had one. (Tools: none)\n",
	} {
		if !strings.Contains(desc, want) {
			t.Errorf("the Task description lacks %q:\n%s", want, desc)
		}
	}
}

func TestDiscover(t *testing.T) {
	root, config := t.TempDir(), t.TempDir()
	write := func(dir, rel, s string) {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(s), 0o644)
	}
	write(config, "orca/agents/shared.md", "---\nname: shared\ndescription: user version\n---\nuser prompt")
	write(config, "orca/agents/mine.md", "---\nname: mine\ndescription: only mine\n---\nmine")
	write(root, ".orca/agents/shared.md", "---\nname: shared\ndescription: project version\n---\nproject prompt")
	write(root, ".orca/agents/broken.md", "---\nname: broken\n---\nno description")
	write(root, ".orca/agents/notes.txt", "ignored")
	// In subfolders, as Claude Code finds them; not in hidden ones, nor
	// deeper than three folders.
	write(root, ".claude/agents/core/coder.md", "---\nname: coder\ndescription: writes code\n---\ncode")
	write(root, ".claude/agents/a/b/c/deep.md", "---\nname: deep\ndescription: three deep\n---\nx")
	write(root, ".claude/agents/a/b/c/d/deeper.md", "---\nname: deeper\ndescription: four deep\n---\nx")
	write(root, ".claude/agents/.git/hidden.md", "---\nname: hidden\ndescription: in .git\n---\nx")
	write(config, "orca/agents/team/lead.md", "---\nname: lead\ndescription: leads\n---\nlead")
	// The shallowest of a name in one folder wins; the other is reported.
	write(root, ".claude/agents/coder2/v3/coder.md", "---\nname: coder\ndescription: v3 coder\n---\nnewer")
	fs, err := workspace.OpenLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	plugin := t.TempDir()
	write(plugin, "agents/executor.md", "---\nname: executor\ndescription: runs plans\nmodel: sonnet\n---\nexecute")
	defs, problems := subagent.Discover(fs, tool.Folders{ConfigDir: config, Claude: true, Plugins: []tool.PluginFolder{{Name: "omc", Dir: plugin}}})
	var names []string
	for _, d := range defs {
		names = append(names, d.Name+"/"+d.Source)
		if d.Name == "shared" && d.Description != "project version" {
			t.Errorf("project does not win: %+v", d)
		}
	}
	if strings.Join(names, ",") != "coder/project,deep/project,general-purpose/builtin,lead/user,mine/user,omc:executor/plugin,shared/project" {
		t.Errorf("discovered %v", names)
	}
	if len(problems) != 2 || !strings.Contains(problems[0].Error(), "v3/coder.md") || !errors.Is(problems[0], subagent.ErrShadowed) || !strings.Contains(problems[1].Error(), "broken.md") {
		t.Errorf("problems %v", problems)
	}
	for _, d := range defs {
		if d.Name == "coder" && d.Description != "writes code" {
			t.Errorf("a deeper coder won: %+v", d)
		}
	}
}

func TestManagerOwnership(t *testing.T) {
	m := subagent.NewManager()
	defer m.Close()
	release := make(chan struct{})
	id, err := m.Start("alice", "explorer", "look", func(ctx context.Context) (string, error) {
		select {
		case <-release:
			return "found it", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Get("mallory", id); ok {
		t.Error("another owner sees the task")
	}
	if m.Stop("mallory", id) {
		t.Error("another owner stopped the task")
	}
	if info, ok := m.Get("alice", id); !ok || info.Status != subagent.Running {
		t.Errorf("owner: %+v %v", info, ok)
	}
	close(release)
	info, ok := m.Wait(context.Background(), "alice", id)
	if !ok || info.Status != subagent.Completed || info.Output != "found it" {
		t.Errorf("after finish: %+v", info)
	}
	if m.Stop("alice", id) {
		t.Error("stopping a finished task reported success")
	}
}

func TestManagerStopAndClose(t *testing.T) {
	m := subagent.NewManager()
	var running atomic.Int32
	start := func() string {
		id, _ := m.Start("o", "w", "wait", func(ctx context.Context) (string, error) {
			running.Add(1)
			defer running.Add(-1)
			<-ctx.Done()
			return "", ctx.Err()
		})
		return id
	}
	a, b := start(), start()
	if !m.Stop("o", a) {
		t.Fatal("owner could not stop")
	}
	if info, _ := m.Get("o", a); info.Status != subagent.Stopped {
		t.Errorf("status %s", info.Status)
	}
	m.Close()
	if info, _ := m.Get("o", b); info.Status != subagent.Stopped || running.Load() != 0 {
		t.Errorf("after Close: %s, %d running", info.Status, running.Load())
	}
	if _, err := m.Start("o", "w", "late", func(context.Context) (string, error) { return "", nil }); !errors.Is(err, subagent.ErrClosed) {
		t.Errorf("Start after Close: %v", err)
	}
}

// A definition may name MCP tools by their server or a wildcard, as
// get-shit-done-cc's agents do (tools: Read, mcp__context7__*).
func TestAllowsMCPWildcards(t *testing.T) {
	d, err := subagent.Parse("researcher", []byte("---\nname: researcher\ndescription: d\ntools: Read, mcp__context7__*, mcp__github\ndisallowedTools: mcp__github__delete_*\n---\nbody\n"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"Read": true, "Bash": false,
		"mcp__context7__resolve-library-id": true, "mcp__context7x__a": false,
		"mcp__github__create_issue": true, "mcp__github__delete_repo": false, "mcp__githubx__a": false,
	} {
		if got := d.Allows(name); got != want {
			t.Errorf("Allows(%s) = %v, want %v", name, got, want)
		}
	}
}
