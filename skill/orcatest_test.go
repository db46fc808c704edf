package skill_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/orcatest"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/skill"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/tool/builtin"
)

// isolateUserConfig points os.UserConfigDir at a fresh folder, so that the
// default providers see this test's user skills and not the machine's, and
// returns that folder.
func isolateUserConfig(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("AppData", filepath.Join(home, "AppData"))
	dir, err := os.UserConfigDir()
	if err != nil || !strings.HasPrefix(dir, home) {
		t.Skipf("cannot isolate the user configuration folder: %q, %v", dir, err)
	}
	return dir
}

// turn runs one turn of session in which the model calls Skill with input
// and then answers, and returns the observation of the call as the model
// received it in its next prompt, with the tools it was offered.
func turn(t *testing.T, n *orcatest.Node, session, input string) (llm.Block, []llm.ToolDefinition) {
	t.Helper()
	n.Script(session, script.Response{ToolCalls: []script.ToolCall{{ID: "t1", Name: "Skill", Input: json.RawMessage(input)}}}, script.Text("done"))
	res := n.Run(t.Context(), session, "please")
	if res.StopReason != agent.StopAnswered || res.Answer != "done" {
		t.Fatalf("turn ended %s (%v), want answered", res.StopReason, res.Err)
	}
	calls := n.LLM.CallsTo(session)
	if len(calls) != 2 {
		t.Fatalf("model calls = %d, want 2", len(calls))
	}
	obs := calls[1].Observations()
	if len(obs) != 1 || obs[0].ToolUseID != "t1" {
		t.Fatalf("next prompt carries %+v, want the observation of t1", obs)
	}
	return obs[0], calls[0].Tools
}

func TestNodeLoadsSkills(t *testing.T) {
	config := isolateUserConfig(t)
	root := t.TempDir()
	write(t, root, ".orca/skills/release/SKILL.md", "---\nname: release\ndescription: Cuts a release. Use when asked to release.\nallowed-tools: [Bash, Read]\n---\nTag version $ARGUMENTS, then read checklist.md.\n")
	write(t, root, ".orca/skills/release/checklist.md", "1. run the tests\n")
	write(t, root, ".orca/skills/broken/SKILL.md", "no front matter\n")
	write(t, config, "orca/skills/standup/SKILL.md", skillMD("standup", "Writes the standup note.", "List yesterday's commits."))
	n := orcatest.NewNode(t, orcatest.WithRoot(root), orcatest.WithConfigDir(config))

	obs, offered := turn(t, n, "s1", `{"skill": "release", "args": "v1.2.0"}`)
	if obs.IsError {
		t.Fatalf("observation is an error: %s", obs.Content)
	}
	for _, want := range []string{"Base directory for this skill: .orca/skills/release", "Allowed tools: Bash, Read", "Tag version v1.2.0, then read checklist.md."} {
		if !strings.Contains(obs.Content, want) {
			t.Errorf("observation lacks %q:\n%s", want, obs.Content)
		}
	}
	var desc string
	for _, d := range offered {
		if d.Name == "Skill" {
			desc = d.Description
		}
	}
	for _, want := range []string{"<name>\nrelease\n</name>", "Cuts a release.", "<name>\nstandup\n</name>", "<location>\nuser\n</location>"} {
		if !strings.Contains(desc, want) {
			t.Errorf("the Skill tool offered to the model does not list %q:\n%s", want, desc)
		}
	}
	if strings.Contains(desc, "broken") {
		t.Errorf("a malformed skill is offered:\n%s", desc)
	}

	// The folder the observation names is one the file tools can read.
	n.Script("s2", script.Response{ToolCalls: []script.ToolCall{{ID: "r1", Name: "Read", Input: json.RawMessage(`{"file_path": ".orca/skills/release/checklist.md"}`)}}}, script.Text("done"))
	n.Run(t.Context(), "s2", "read it")
	if o := n.Observation("s2", "r1"); o.IsError || !strings.Contains(o.Content, "run the tests") {
		t.Errorf("reading the skill's resource: %+v", o)
	}

	obs, _ = turn(t, n, "s3", `{"skill": "deploy"}`)
	if !obs.IsError || !strings.Contains(obs.Content, `Unknown skill "deploy"`) || !strings.Contains(obs.Content, "Available skills: release, standup.") {
		t.Errorf("unknown skill observation: %+v", obs)
	}
}

func TestNodeWithoutSkills(t *testing.T) {
	isolateUserConfig(t)
	n := orcatest.NewNode(t)
	skillTool, ok := n.Runtime.Tools().Lookup("Skill")
	if !ok {
		t.Fatal("the default tool set has no Skill tool")
	}
	if !strings.Contains(skillTool.Description(), "No skills are available") {
		t.Errorf("description:\n%s", skillTool.Description())
	}
	obs, _ := turn(t, n, "s1", `{"skill": "anything"}`)
	if !obs.IsError || !strings.Contains(obs.Content, "No skills are available.") {
		t.Errorf("observation: %+v", obs)
	}
}

// A denial is an observation the model can act on, and the turn goes on.
func TestNodeSkillDenied(t *testing.T) {
	root := t.TempDir()
	write(t, root, ".orca/skills/deploy/SKILL.md", "---\ndescription: Deploys to production.\nsafe: true\n---\nRun make deploy.\n")
	providers := []tool.Provider{
		builtin.FilesProvider(),
		skill.Provider(skill.WithConfigDir(""), skill.WithPolicy(skill.RuleBased{SafeByDefault: false, Default: skill.Deny})),
	}
	n := orcatest.NewNode(t, orcatest.WithRoot(root), orcatest.WithDefinition(agent.Definition{Name: "strict", ToolProviders: providers}))
	obs, _ := turn(t, n, "s1", `{"skill": "deploy"}`)
	if !obs.IsError || !strings.Contains(obs.Content, `Skill "deploy" was not loaded`) || !strings.Contains(obs.Content, "default is to deny") {
		t.Errorf("denial observation: %+v", obs)
	}
	if strings.Contains(obs.Content, "make deploy") {
		t.Errorf("the denied skill's instructions reached the model: %s", obs.Content)
	}
}

// A skill with "context: fork" runs as a subagent fork: the instructions
// are the fork's task, its answer the tool's result.
func TestSkillRunsAsFork(t *testing.T) {
	root := t.TempDir()
	write(t, root, ".orca/skills/audit/SKILL.md", "---\nname: audit\ndescription: Audits the deps.\ncontext: fork\n---\nList the dependencies of $ARGUMENTS and report risky ones.\n")
	n := orcatest.NewNode(t, orcatest.WithRoot(root))
	n.Script("s", script.Response{ToolCalls: []script.ToolCall{{ID: "k", Name: "Skill", Input: json.RawMessage(`{"skill": "audit", "args": "go.mod"}`)}}}, script.Text("done"))
	n.Script(script.ForkRoute("s", "general-purpose"), script.Text("no risky dependencies"))
	n.Run(t.Context(), "s", "audit please")
	forkCalls := n.LLM.CallsTo(script.ForkRoute("s", "general-purpose"))
	if len(forkCalls) != 1 || !strings.Contains(forkCalls[0].Messages[0].Text(), "List the dependencies of go.mod") {
		t.Fatalf("fork calls %+v", forkCalls)
	}
	if o := n.Observation("s", "k"); o.IsError || !strings.Contains(o.Content, "no risky dependencies") {
		t.Errorf("observation %+v", o)
	}
}

// A skill in .claude/skills, as Claude Code keeps them: loading it grants
// its allowed-tools for the rest of the turn, so its script runs without
// an ask (in default mode, where a headless run refuses asks); without
// the skill the same command is refused. A disable-model-invocation skill
// is not offered to the model and cannot be loaded by it. The skill's
// folder is protected from writes, and its scripts run.
func TestClaudeSkillGrantsItsAllowedTools(t *testing.T) {
	config := isolateUserConfig(t)
	root := t.TempDir()
	write(t, root, ".claude/skills/greet/SKILL.md", "---\nname: greet\ndescription: Greets. Use when asked to greet.\nallowed-tools: Bash(sh .claude/skills/greet/scripts/hello.sh:*)\n---\nRun `sh .claude/skills/greet/scripts/hello.sh NAME`.\n")
	write(t, root, ".claude/skills/greet/scripts/hello.sh", "echo \"hello, $1\" > greeted.txt; echo done-greeting\n")
	write(t, root, ".claude/skills/deploy/SKILL.md", "---\nname: deploy\ndescription: Deploys to production.\ndisable-model-invocation: true\n---\nDeploy.\n")
	rules, err := policy.ParseRules([]string{"Skill"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.ModeDefault, rules)
	if err != nil {
		t.Fatal(err)
	}
	n := orcatest.NewNode(t, orcatest.WithRoot(root), orcatest.WithConfigDir(config), orcatest.WithPolicy(pol, nil))
	script1 := json.RawMessage(`{"command": "sh .claude/skills/greet/scripts/hello.sh ada"}`)

	// Without the skill: refused, nothing on disk.
	n.Script("s0", script.Response{ToolCalls: []script.ToolCall{{ID: "b0", Name: "Bash", Input: script1}}}, script.Text("done"))
	n.Run(t.Context(), "s0", "greet ada")
	if o := n.Observation("s0", "b0"); !o.IsError {
		t.Fatalf("the script ran without the skill: %+v", o)
	}
	if _, err := os.Stat(filepath.Join(root, "greeted.txt")); err == nil {
		t.Fatal("greeted.txt exists without the skill")
	}

	// With the skill loaded first: the script runs unasked.
	n.Script("s1",
		script.Response{ToolCalls: []script.ToolCall{{ID: "k1", Name: "Skill", Input: json.RawMessage(`{"skill": "greet"}`)}}},
		script.Response{ToolCalls: []script.ToolCall{{ID: "b1", Name: "Bash", Input: script1}}},
		script.Response{ToolCalls: []script.ToolCall{{ID: "w1", Name: "Write", Input: json.RawMessage(`{"file_path": ".claude/skills/greet/scripts/hello.sh", "content": "rm -rf ~"}`)}}},
		script.Text("done"))
	n.Run(t.Context(), "s1", "greet ada")
	if o := n.Observation("s1", "k1"); o.IsError {
		t.Fatalf("loading the skill: %+v", o)
	}
	if o := n.Observation("s1", "b1"); o.IsError || !strings.Contains(o.Content, "done-greeting") {
		t.Fatalf("the skill's script: %+v", o)
	}
	if data, _ := os.ReadFile(filepath.Join(root, "greeted.txt")); string(data) != "hello, ada\n" {
		t.Errorf("greeted.txt = %q", data)
	}
	if o := n.Observation("s1", "w1"); !o.IsError {
		t.Errorf("writing into the skill's folder was allowed: %+v", o)
	}
	if data, _ := os.ReadFile(filepath.Join(root, ".claude/skills/greet/scripts/hello.sh")); strings.Contains(string(data), "rm -rf") {
		t.Error("the skill's script was overwritten")
	}

	// The grant lasts the turn: the next turn asks again.
	n.Script("s1", script.Response{ToolCalls: []script.ToolCall{{ID: "b2", Name: "Bash", Input: script1}}}, script.Text("done"))
	n.Run(t.Context(), "s1", "again")
	if o := n.Observation("s1", "b2"); !o.IsError {
		t.Errorf("the grant outlived its turn: %+v", o)
	}

	// disable-model-invocation: not offered, not loadable by the model.
	obs, offered := turn(t, n, "s2", `{"skill": "deploy"}`)
	if !obs.IsError {
		t.Errorf("the model loaded a skill only the user may invoke: %+v", obs)
	}
	for _, d := range offered {
		if d.Name == "Skill" && strings.Contains(d.Description, "deploy") {
			t.Errorf("the Skill tool offers deploy:\n%s", d.Description)
		}
	}
	// The user invokes it: its instructions are the turn's input.
	n.Script("s3", script.Text("deployed"))
	n.Run(t.Context(), "s3", "/deploy now")
	calls := n.LLM.CallsTo("s3")
	if len(calls) != 1 || !strings.Contains(lastText(calls[0]), "The user invoked the deploy skill") || !strings.Contains(lastText(calls[0]), "Deploy.") {
		t.Errorf("/deploy did not expand into the skill: %+v", calls)
	}
}

// lastText is the text of the last message a model call carried.
func lastText(r script.Recorded) string {
	if len(r.Messages) == 0 {
		return ""
	}
	return r.Messages[len(r.Messages)-1].Text()
}
