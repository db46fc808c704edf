package skill_test

import (
	"cmp"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/orca-agent/orca/skill"
	"github.com/orca-agent/orca/subagent"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/tool/tooltest"
)

// forker forks no model: a fork answers at once, or, when its task says
// "Wait for the end", when its context ends.
type forker struct{ m *subagent.Manager }

func (f forker) Fork(_ context.Context, agent, prompt string, _ bool) (*subagent.Fork, error) {
	return &subagent.Fork{Agent: cmp.Or(agent, subagent.GeneralPurpose.Name), Run: func(ctx context.Context) (string, error) {
		if strings.Contains(prompt, "Wait for the end") {
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "audited", nil
	}}, nil
}

func (f forker) Tasks() *subagent.Manager { return f.m }

// granter grants every rule.
type granter struct{}

func (granter) Grant([]string) error { return nil }

// The Skill tool keeps the tool contract (tooltest): inline skills, skills
// that run as forks, with what the runtime hands a tool that forks.
func TestConformance(t *testing.T) {
	root := t.TempDir()
	write(t, root, ".orca/skills/pdf/SKILL.md", pdfSkill)
	write(t, root, ".orca/skills/audit/SKILL.md", "---\nname: audit\ndescription: Audits the dependencies.\ncontext: fork\n---\nList the dependencies of $ARGUMENTS and report risky ones.\n")
	write(t, root, ".orca/skills/wait/SKILL.md", "---\nname: wait\ndescription: Waits.\ncontext: fork\n---\nWait for the end.\n")
	write(t, root, ".orca/skills/hidden/SKILL.md", "---\nname: hidden\ndescription: For the user only.\ndisable-model-invocation: true\n---\nHidden.\n")
	fsys := openWorkspace(t, root)
	tools, err := skill.Provider(skill.WithConfigDir("")).Tools(tool.Env{RuntimeID: "rt", FS: fsys, Logger: slog.New(slog.DiscardHandler)})
	if err != nil || len(tools) != 1 {
		t.Fatal(tools, err)
	}
	m := subagent.NewManager()
	t.Cleanup(func() { m.Close() })

	summary := func(s string) *tool.Display { return &tool.Display{Summary: s} }
	tooltest.Run(t, tools[0], tooltest.Case{
		Inputs: []tooltest.Input{
			{JSON: `{"skill": "pdf", "args": "tax.pdf"}`, Display: summary("pdf tax.pdf")},
			{JSON: `{"skill": "/pdf"}`, Display: summary("/pdf")},
			{JSON: `{"skill": "audit", "args": "go.mod"}`},
			{JSON: `{"skill": "hidden"}`},
			{JSON: `{"skill": "nope"}`},
		},
		Invalid:  []string{`{}`, `{"skill": 1}`, `{"skill": "pdf", "args": ["tax.pdf"]}`, `{"skill": "pdf", "model": "opus"}`},
		Blocking: `{"skill": "wait"}`,
		Context: func(ctx context.Context) context.Context {
			return tool.WithGranter(subagent.WithForker(ctx, forker{m}), granter{})
		},
	})
}
