package skill_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/skill"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

// fixture is one runtime's Skill tool in a registry, over a workspace and a
// user configuration folder filled before the tool was built.
type fixture struct {
	t      *testing.T
	root   string // workspace root, symlinks resolved
	config string
	reg    *tool.Registry
	tool   tool.Tool
	log    bytes.Buffer
}

// newFixture writes files (workspace-relative paths, or "~/" for the
// configuration folder) and builds the Skill tool with opts.
func newFixture(t *testing.T, files map[string]string, opts ...skill.Option) *fixture {
	t.Helper()
	f := &fixture{t: t, config: t.TempDir()}
	fsys := openWorkspace(t, t.TempDir())
	f.root = fsys.Root()
	for rel, content := range files {
		if user, ok := strings.CutPrefix(rel, "~/"); ok {
			write(t, f.config, user, content)
		} else {
			write(t, f.root, rel, content)
		}
	}
	env := tool.Env{RuntimeID: "rt", FS: fsys, Logger: slog.New(slog.NewTextHandler(&f.log, nil))}
	tools, err := skill.Provider(append([]skill.Option{skill.WithConfigDir(f.config)}, opts...)...).Tools(env)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 1 {
		t.Fatalf("provider gave %d tools, want 1", len(tools))
	}
	f.tool = tools[0]
	f.reg = tool.NewRegistry()
	if err := f.reg.Add(f.tool); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) call(input string) tool.Result {
	f.t.Helper()
	return f.reg.Call(f.t.Context(), &tool.Call{ID: "c1", Name: "Skill", Input: json.RawMessage(input), Scope: scope.Scope{SessionID: "s1"}})
}

func wantResult(t *testing.T, res tool.Result, isError bool, contains ...string) {
	t.Helper()
	if res.IsError != isError {
		t.Fatalf("IsError = %v, want %v: %s", res.IsError, isError, res.Content)
	}
	for _, s := range contains {
		if !strings.Contains(res.Content, s) {
			t.Errorf("result does not contain %q:\n%s", s, res.Content)
		}
	}
}

const pdfSkill = `---
name: pdf
description: Fills in PDF forms. Use when the user mentions a PDF form.
allowed-tools: Read, Bash(python:*)
---
# Filling PDF forms

Read forms.md in this folder, then fill in $ARGUMENTS.
`

func TestToolLoadsASkill(t *testing.T) {
	f := newFixture(t, map[string]string{
		".orca/skills/pdf/SKILL.md": pdfSkill,
		".orca/skills/pdf/forms.md": "how to fill forms",
	})
	res := f.call(`{"skill": "pdf", "args": "tax.pdf"}`)
	wantResult(t, res, false,
		`Loaded the project skill "pdf"`,
		"Base directory for this skill: .orca/skills/pdf\n",
		"Allowed tools: Read, Bash(python:*)\n",
		"Arguments: tax.pdf\n",
		"# Filling PDF forms\n\nRead forms.md in this folder, then fill in tax.pdf.")
	if strings.Contains(res.Content, "$ARGUMENTS") {
		t.Errorf("$ARGUMENTS not replaced:\n%s", res.Content)
	}

	// The slash-command spelling names the same skill; no args, no line.
	res = f.call(`{"skill": "/pdf"}`)
	wantResult(t, res, false, `"pdf"`, "then fill in .")
	if strings.Contains(res.Content, "Arguments:") {
		t.Errorf("a call without args reports arguments:\n%s", res.Content)
	}
}

// A call is shown as the user would type it: the skill, then its
// arguments; without a skill, as the tool's arguments are by default.
func TestToolDisplay(t *testing.T) {
	f := newFixture(t, map[string]string{".orca/skills/pdf/SKILL.md": pdfSkill})
	tl, ok := f.reg.Lookup("Skill")
	if !ok {
		t.Fatal("no Skill tool")
	}
	for in, want := range map[string]string{
		`{"skill": "pdf", "args": "tax.pdf"}`: "pdf tax.pdf",
		`{"skill": "pdf"}`:                    "pdf",
		`{"skill": "", "args": "x"}`:          "",
		`{"args": "x"}`:                       "",
		`{"skill": 3}`:                        "",
		`not json`:                            "",
	} {
		if got := tool.DisplayOf(tl, json.RawMessage(in)).Summary; got != want {
			t.Errorf("%s: shown as %q, want %q", in, got, want)
		}
	}
}

func TestToolLoadsAUserSkill(t *testing.T) {
	f := newFixture(t, map[string]string{"~/orca/skills/commit/SKILL.md": skillMD("commit", "Writes commit messages.", "Write a good message.")})
	dir := filepath.Join(f.config, "orca", "skills", "commit")
	wantResult(t, f.call(`{"skill": "commit"}`), false,
		`Loaded the user skill "commit"`, "Base directory for this skill: "+dir+"\n", "outside the workspace", "Write a good message.")
}

func TestToolSchemaIsEnforced(t *testing.T) {
	f := newFixture(t, map[string]string{".orca/skills/pdf/SKILL.md": pdfSkill})
	for input, problem := range map[string]string{
		`{}`:                               "skill",
		`{"args": "x"}`:                    "skill",
		`{"skill": 3}`:                     "/skill",
		`{"skill": "pdf", "args": 1}`:      "/args",
		`{"skill": "pdf", "command": "x"}`: "command",
		`[1]`:                              "the input",
	} {
		res := f.call(input)
		wantResult(t, res, true, problem)
		if !strings.Contains(res.Content, tool.ErrInvalidInput.Error()) {
			t.Errorf("%s: not refused by the schema: %s", input, res.Content)
		}
	}
	var schema struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
		Required             []string `json:"required"`
		AdditionalProperties bool     `json:"additionalProperties"`
	}
	if err := json.Unmarshal(f.tool.Schema(), &schema); err != nil {
		t.Fatal(err)
	}
	if len(schema.Properties) != 2 || schema.Properties["skill"].Type != "string" || schema.Properties["args"].Type != "string" ||
		fmt.Sprint(schema.Required) != "[skill]" || schema.AdditionalProperties {
		t.Errorf("schema is not Claude Code's {skill, args}: %s", f.tool.Schema())
	}
}

func TestToolUnknownSkill(t *testing.T) {
	f := newFixture(t, map[string]string{
		".orca/skills/pdf/SKILL.md":     pdfSkill,
		"~/orca/skills/commit/SKILL.md": skillMD("commit", "Writes commits.", ""),
	})
	wantResult(t, f.call(`{"skill": "docx"}`), true, `Unknown skill "docx"`, "Available skills: commit, pdf.")
	wantResult(t, f.call(`{"skill": " "}`), true, "give the name", "Available skills: commit, pdf.")
	// Direct calls without a registry are refused the same way.
	res := f.tool.Execute(t.Context(), &tool.Call{Name: "Skill"})
	wantResult(t, res, true, "give the name")

	empty := newFixture(t, nil)
	wantResult(t, empty.call(`{"skill": "pdf"}`), true, `Unknown skill "pdf"`, "No skills are available.")
}

func TestToolDescriptionListsSkills(t *testing.T) {
	f := newFixture(t, map[string]string{
		".orca/skills/pdf/SKILL.md":     pdfSkill,
		".orca/skills/broken/SKILL.md":  "no front matter",
		"~/orca/skills/commit/SKILL.md": skillMD("commit", "Writes commit messages.", ""),
		"~/orca/skills/pdf/SKILL.md":    skillMD("pdf", "The user's PDF skill.", ""),
	})
	d := f.reg.Definitions()[0].Description
	for _, want := range []string{
		"<available_skills>\n<skill>\n<name>\ncommit\n</name>\n<description>\nWrites commit messages.\n</description>\n<location>\nuser\n</location>\n</skill>\n",
		"<skill>\n<name>\npdf\n</name>\n<description>\nFills in PDF forms. Use when the user mentions a PDF form.\n</description>\n<location>\nproject\n</location>\n</skill>\n</available_skills>",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("description lacks %q:\n%s", want, d)
		}
	}
	for _, unwanted := range []string{"broken", "The user's PDF skill."} {
		if strings.Contains(d, unwanted) {
			t.Errorf("description mentions %q:\n%s", unwanted, d)
		}
	}
	// Problems are logged on the runtime's logger, not shown to the model.
	log := f.log.String()
	if !strings.Contains(log, "level=WARN") || !strings.Contains(log, ".orca/skills/broken/SKILL.md") || !strings.Contains(log, "skill shadowed") {
		t.Errorf("log does not warn of the broken and the shadowed skill:\n%s", log)
	}
	got, ok := skill.Skills(f.tool)
	if !ok || len(got) != 2 || got[0].Name != "commit" || got[1].Name != "pdf" || got[1].Source != skill.Project {
		t.Errorf("Skills = %+v, %v", got, ok)
	}
	if _, ok := skill.Skills(nil); ok {
		t.Error("Skills accepted a tool that is not Skill")
	}
}

func TestToolWithoutSkillsSaysSo(t *testing.T) {
	f := newFixture(t, nil)
	if f.tool.Name() != "Skill" {
		t.Fatalf("name = %q", f.tool.Name())
	}
	if d := f.tool.Description(); !strings.Contains(d, "No skills are available") {
		t.Errorf("description does not say there are no skills:\n%s", d)
	}
}

func TestToolDescriptionStaysWithinBudget(t *testing.T) {
	files := map[string]string{}
	for i := range 40 {
		name := fmt.Sprintf("s%02d", i)
		files[".orca/skills/"+name+"/SKILL.md"] = skillMD(name, strings.Repeat("x", 1000), "")
	}
	f := newFixture(t, files)
	d := f.tool.Description()
	if len(d) > 20<<10 {
		t.Errorf("description is %d bytes long", len(d))
	}
	if !strings.Contains(d, "<name>\ns00\n</name>") || !strings.Contains(d, "listed by name only") || !strings.Contains(d, "s39.") {
		t.Errorf("description does not list every skill, the last ones by name:\n%s", d[len(d)-300:])
	}
	wantResult(t, f.call(`{"skill": "s39"}`), false, `"s39"`)
}

// The skills are read once, when the runtime is built: a model that
// rewrites a SKILL.md does not change what it loads in this runtime.
func TestToolKeepsWhatItDiscovered(t *testing.T) {
	f := newFixture(t, map[string]string{".orca/skills/pdf/SKILL.md": pdfSkill})
	write(t, f.root, ".orca/skills/pdf/SKILL.md", skillMD("pdf", "Rewritten.", "new instructions"))
	write(t, f.root, ".orca/skills/late/SKILL.md", skillMD("late", "Added later.", ""))
	wantResult(t, f.call(`{"skill": "pdf"}`), false, "# Filling PDF forms")
	wantResult(t, f.call(`{"skill": "late"}`), true, "Unknown skill")
}

// recorder is a policy that records its requests and answers with a rule
// policy.
type recorder struct {
	mu   sync.Mutex
	reqs []skill.Request
	skill.RuleBased
}

func (r *recorder) Decide(ctx context.Context, req skill.Request) (skill.Decision, string) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.RuleBased.Decide(ctx, req)
}

func TestToolPolicy(t *testing.T) {
	files := map[string]string{
		".orca/skills/pdf/SKILL.md":    pdfSkill,
		".orca/skills/deploy/SKILL.md": skillMD("deploy", "Deploys.", "ship it"),
		".orca/skills/fmt/SKILL.md":    "---\ndescription: Formats.\nsafe: true\n---\nformat it",
	}
	rec := &recorder{RuleBased: skill.RuleBased{Allow: []string{"p*"}, Deny: []string{"dep*"}, SafeByDefault: true}}
	f := newFixture(t, files, skill.WithPolicy(rec))
	wantResult(t, f.call(`{"skill": "pdf", "args": "a.pdf"}`), false, "# Filling PDF forms")
	wantResult(t, f.call(`{"skill": "fmt"}`), false, "format it")
	res := f.call(`{"skill": "deploy"}`)
	wantResult(t, res, true, `Skill "deploy" was not loaded`, `the deny rule "dep*" names skill "deploy"`)
	if strings.Contains(res.Content, "ship it") {
		t.Errorf("a denied skill's instructions reached the model:\n%s", res.Content)
	}
	if len(rec.reqs) != 3 || rec.reqs[0].SessionID != "s1" || rec.reqs[0].Skill.Name != "pdf" || rec.reqs[0].Args != "a.pdf" || !rec.reqs[1].Skill.Safe {
		t.Errorf("policy saw %+v", rec.reqs)
	}

	// Safe-by-default off and default deny: nothing unnamed is loaded.
	strict := newFixture(t, files, skill.WithPolicy(skill.RuleBased{SafeByDefault: false, Default: skill.Deny, Allow: []string{"pdf"}}))
	wantResult(t, strict.call(`{"skill": "pdf"}`), false, "# Filling PDF forms")
	wantResult(t, strict.call(`{"skill": "fmt"}`), true, `Skill "fmt" was not loaded`, "default is to deny")

	// A policy that gives no reason, or an unknown decision, denies.
	odd := newFixture(t, files, skill.WithPolicy(skill.PolicyFunc(func(context.Context, skill.Request) (skill.Decision, string) {
		return skill.Decision(7), ""
	})))
	wantResult(t, odd.call(`{"skill": "pdf"}`), true, "no reason given")
}

func TestProviderRefusesBadPolicies(t *testing.T) {
	fsys := openWorkspace(t, t.TempDir())
	env := tool.Env{RuntimeID: "rt", FS: fsys, Logger: slog.New(slog.DiscardHandler)}
	if _, err := skill.Provider(skill.WithPolicy(nil)).Tools(env); err == nil {
		t.Error("a nil policy was accepted")
	}
	_, err := skill.Provider(skill.WithPolicy(skill.RuleBased{Deny: []string{"[a-"}})).Tools(env)
	if err == nil || !strings.Contains(err.Error(), `"[a-"`) {
		t.Errorf("Tools = %v, want the bad rule named", err)
	}
}

func TestProviderWithoutWorkspaceOrUser(t *testing.T) {
	env := tool.Env{RuntimeID: "rt", Logger: slog.New(slog.DiscardHandler)}
	tools, err := skill.Provider(skill.WithConfigDir("")).Tools(env)
	if err != nil || len(tools) != 1 {
		t.Fatalf("Tools = %v, %v", tools, err)
	}
	if got, _ := skill.Skills(tools[0]); len(got) != 0 {
		t.Errorf("skills = %v, want none", got)
	}
}

// Each runtime discovers for itself: two runtimes over different
// workspaces see different skills.
func TestProviderIsPerRuntime(t *testing.T) {
	p := skill.Provider(skill.WithConfigDir(""))
	a, b := t.TempDir(), t.TempDir()
	write(t, a, ".orca/skills/only-a/SKILL.md", skillMD("only-a", "A.", ""))
	ta, err := p.Tools(tool.Env{FS: openWorkspace(t, a), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := p.Tools(tool.Env{FS: openWorkspace(t, b), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ta[0].Description(), "only-a") || strings.Contains(tb[0].Description(), "only-a") {
		t.Error("runtimes share their skills")
	}
}

func TestErrorUnwraps(t *testing.T) {
	e := &skill.Error{Path: "p", Err: fmt.Errorf("x: %w", workspace.ErrOutside)}
	if !errors.Is(e, workspace.ErrOutside) || e.Error() != "p: x: "+workspace.ErrOutside.Error() {
		t.Errorf("Error = %q", e)
	}
}
