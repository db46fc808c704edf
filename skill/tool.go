package skill

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orca-agent/orca/subagent"
	"github.com/orca-agent/orca/tool"
)

// Option configures Provider.
type Option func(*config)

type config struct {
	configDir    string
	configDirSet bool
	policy       InvocationPolicy
}

// WithConfigDir makes dir the user's configuration folder, whose
// orca/skills subfolder holds the user's skills, instead of the runtime's
// (tool.Env.ConfigDir). An empty dir leaves those out (the user's Claude
// Code skills, tool.Env.ClaudeDir, are still read).
func WithConfigDir(dir string) Option {
	return func(c *config) { c.configDir, c.configDirSet = dir, true }
}

// WithPolicy makes p decide which skills may be loaded, instead of
// AlwaysAllow. A policy with a Validate() error method is validated when a
// runtime is built, and an error fails the build.
func WithPolicy(p InvocationPolicy) Option {
	return func(c *config) { c.policy = p }
}

// Provider returns the provider of the Skill tool, and of the custom slash
// commands (DiscoverCommands; a skill wins over a command of its name).
// Each runtime built with it discovers its skills once, when it is built: the tool's description
// lists them and later changes to the files are seen by the next runtime
// only (so that a model cannot rewrite a skill it is about to load). Every
// discovery problem is logged as a warning on the runtime's logger and the
// tool is registered even when no skill is found, so that the tool set does
// not depend on the files.
func Provider(opts ...Option) tool.Provider {
	cfg := config{policy: AlwaysAllow{}}
	for _, o := range opts {
		o(&cfg)
	}
	return tool.NewProvider("skill", func(env tool.Env) ([]tool.Tool, error) {
		if cfg.policy == nil {
			return nil, fmt.Errorf("skill: nil invocation policy")
		}
		if v, ok := cfg.policy.(interface{ Validate() error }); ok {
			if err := v.Validate(); err != nil {
				return nil, err
			}
		}
		in := env.Folders
		if cfg.configDirSet {
			in.ConfigDir = cfg.configDir
		}
		skills, problems := Discover(env.FS, in)
		for _, p := range problems {
			env.Logger.Warn("skill: " + p.Error())
		}
		// The custom slash commands come with the skills: the same
		// folders' neighbours, and the same kind of text.
		cmds, problems := DiscoverCommands(env.FS, in)
		for _, p := range problems {
			env.Logger.Warn("command: " + p.Error())
		}
		if len(cmds) > 0 && env.OnExpander != nil {
			env.OnExpander(commands{list: cmds, fsys: env.FS, hidden: env.Hidden})
		}
		return []tool.Tool{newTool(skills, cfg.policy)}, nil
	})
}

// Skills returns the skills that the Skill tool t offers, sorted by name.
// It reports false if t is not a Skill tool of this package.
func Skills(t tool.Tool) ([]Skill, bool) {
	st, ok := t.(*skillTool)
	if !ok {
		return nil, false
	}
	out := make([]Skill, len(st.skills))
	for i, s := range st.skills {
		out[i] = s.clone()
	}
	return out, true
}

type skillTool struct {
	skills      []Skill // sorted by name; read only
	policy      InvocationPolicy
	description string
}

func newTool(skills []Skill, policy InvocationPolicy) *skillTool {
	return &skillTool{skills: skills, policy: policy, description: describe(modelInvocable(skills))}
}

// modelInvocable returns the skills the model may be told of.
func modelInvocable(skills []Skill) []Skill {
	var out []Skill
	for _, s := range skills {
		if !s.DisableModelInvocation {
			out = append(out, s)
		}
	}
	return out
}

func (*skillTool) Name() string { return "Skill" }

func (t *skillTool) Description() string { return t.description }

// listingBudget bounds the skill descriptions in the tool's description;
// skills past it are listed by name only, so that every one stays
// invocable.
const listingBudget = 16 << 10

func describe(skills []Skill) string {
	var b strings.Builder
	b.WriteString(`Loads a skill into the conversation: a folder of instructions, and files they mention, for a specialised task.

When the user's request matches one of the available skills below, invoke it with this tool before doing anything else for that task, then follow the instructions it returns. When the user refers to a "slash command" or "/<something>" (e.g. "/commit", "/review-pr"), they mean the skill of that name.

How to invoke:
- Give the skill's name and, optionally, arguments as one string. Examples:
  - skill: "pdf" loads the pdf skill
  - skill: "commit", args: "-m 'Fix bug'" loads the commit skill with arguments
  - skill: "review-pr", args: "123" loads the review-pr skill with arguments

Important:
- Only invoke skills listed in <available_skills> below.
- Never merely mention a skill in your answer: call this tool to load it.
- Do not invoke a skill that is already loaded in this conversation; follow the instructions you already have.
- The result gives the skill's folder; paths in its instructions are relative to that folder.

`)
	if len(skills) == 0 {
		b.WriteString("<available_skills>\n</available_skills>\n\nNo skills are available: there is none in " + ProjectDir + " or " + ClaudeProjectDir + " of the workspace nor in the user's skills folders, so do not call this tool.")
		return b.String()
	}
	b.WriteString("<available_skills>\n")
	var rest []string
	used := 0
	for _, s := range skills {
		entry := fmt.Sprintf("<skill>\n<name>\n%s\n</name>\n<description>\n%s\n</description>\n<location>\n%s\n</location>\n</skill>\n", s.Name, s.Description, s.Source)
		if used+len(entry) > listingBudget {
			rest = append(rest, s.Name)
			continue
		}
		used += len(entry)
		b.WriteString(entry)
	}
	b.WriteString("</available_skills>")
	if len(rest) > 0 {
		fmt.Fprintf(&b, "\n\nMore skills, listed by name only for want of space (load one to learn what it does): %s.", strings.Join(rest, ", "))
	}
	return b.String()
}

// The schema is Claude Code's.
func (*skillTool) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "skill": {
      "type": "string",
      "description": "The skill name. E.g., \"commit\", \"review-pr\", or \"pdf\""
    },
    "args": {
      "type": "string",
      "description": "Optional arguments for the skill"
    }
  },
  "required": ["skill"],
  "additionalProperties": false
}`)
}

type input struct {
	Skill string `json:"skill"`
	Args  string `json:"args"`
}

func (t *skillTool) Execute(ctx context.Context, call *tool.Call) tool.Result {
	var in input
	raw := call.Input
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return tool.Errorf("%v for Skill: %v", tool.ErrInvalidInput, err)
	}
	// Models sometimes send the slash-command spelling.
	name := strings.TrimPrefix(strings.TrimSpace(in.Skill), "/")
	if name == "" {
		return tool.Errorf("Skill: give the name of the skill to load. %s", t.available())
	}
	i, found := slices.BinarySearchFunc(t.skills, name, func(s Skill, name string) int { return strings.Compare(s.Name, name) })
	if !found {
		return tool.Errorf("Unknown skill %q. %s", name, t.available())
	}
	s := t.skills[i]
	if s.DisableModelInvocation {
		return tool.Errorf("Skill %q may be invoked only by the user (its disable-model-invocation is true): do without it, or tell the user to run /%s.", s.Name, s.Name)
	}
	decision, reason := t.policy.Decide(ctx, Request{SessionID: call.SessionID, Skill: s.clone(), Args: in.Args})
	if decision != Allow {
		if reason == "" {
			reason = "no reason given"
		}
		return tool.Errorf("Skill %q was not loaded: the skill invocation policy denied it (%s). Do without it, or ask the user.", s.Name, reason)
	}
	if s.Fork {
		f := subagent.ForkerFrom(ctx)
		if f == nil {
			return tool.Errorf("Skill %q runs as a fork, and this runtime cannot start forks here", s.Name)
		}
		if g := s.grants(); len(g) > 0 {
			ctx = tool.WithGrants(ctx, g)
		}
		fork, err := f.Fork(ctx, s.Agent, render(s, in.Args), false)
		if err != nil {
			return tool.Errorf("Skill %q (run as a fork) was not started: %v", s.Name, err)
		}
		answer, err := fork.Run(ctx)
		if err != nil {
			return tool.Errorf("Skill %q (run as a fork) did not finish: %v", s.Name, err)
		}
		return tool.Text(fmt.Sprintf("The %s skill ran as a subagent fork. Its answer:\n\n%s", s.Name, answer))
	}
	text := render(s, in.Args)
	if s.Ungranted {
		text += "\n\n(Its allowed tools are not granted: the skill is the workspace's and the workspace is not trusted, so calls of them are decided as any other.)"
	} else if len(s.AllowedTools) > 0 {
		g := tool.GranterFrom(ctx)
		if g == nil {
			text += "\n\n(Its allowed tools are not granted here: this runtime grants none, so calls of them are decided as any other.)"
		} else if err := g.Grant(s.AllowedTools); err != nil {
			return tool.Errorf("Skill %q was not loaded: its allowed-tools: %v", s.Name, err)
		}
	}
	return tool.Text(text)
}

// Expand implements tool.Expander: a turn's input "/name arguments" that
// names one of the skills — those hidden from the model included — is the
// user invoking it, and becomes the skill's instructions (inline, even for
// a skill that would run as a fork) and the grant of its allowed-tools.
func (t *skillTool) Expand(_ context.Context, input string) (*tool.Expansion, error) {
	name, args, ok := tool.SplitCommand(input)
	if !ok {
		return nil, nil
	}
	i, found := slices.BinarySearchFunc(t.skills, name, func(s Skill, name string) int { return strings.Compare(s.Name, name) })
	if !found {
		return nil, nil
	}
	s := t.skills[i]
	text := fmt.Sprintf("The user invoked the %s skill (/%s).\n\n%s", s.Name, s.Name, render(s, strings.TrimSpace(args)))
	if s.Fork {
		text = fmt.Sprintf("The user invoked the %s skill (/%s); it runs inline here, not as a fork.\n\n%s", s.Name, s.Name, render(s, strings.TrimSpace(args)))
	}
	return &tool.Expansion{Text: text, Grants: slices.Clone(s.grants())}, nil
}

// Commands implements tool.Expander: every skill, those hidden from the
// model included, is a command.
func (t *skillTool) Commands() []tool.Command {
	out := make([]tool.Command, len(t.skills))
	for i, s := range t.skills {
		out[i] = tool.Command{Name: s.Name, Description: s.Description}
	}
	return out
}

// Traits: a skill with "context: fork" runs as a subagent fork.
func (t *skillTool) Traits() tool.Traits { return tool.Traits{Forks: true} }

// Display shows the skill's name and its arguments, as the user would
// have typed them (/name args), on one line (tool.OneLine).
func (t *skillTool) Display(raw json.RawMessage) tool.Display {
	var in input
	if json.Unmarshal(raw, &in) != nil || in.Skill == "" {
		return tool.Display{}
	}
	return tool.Display{Summary: tool.OneLine(strings.TrimSpace(in.Skill + " " + in.Args))}
}

func (t *skillTool) available() string {
	var names []string
	for _, s := range modelInvocable(t.skills) {
		names = append(names, s.Name)
	}
	if len(names) == 0 {
		return "No skills are available."
	}
	return "Available skills: " + strings.Join(names, ", ") + "."
}

// render is the observation of a loaded skill: where it lives, what it
// expects, then its instructions. As in Claude Code, $ARGUMENTS in the
// instructions is replaced by the arguments.
func render(s Skill, args string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Loaded the %s skill %q. Follow its instructions below.\n", s.Source, s.Name)
	fmt.Fprintf(&b, "Base directory for this skill: %s\n", s.Dir)
	if filepath.IsAbs(s.Dir) {
		b.WriteString("(It lies outside the workspace, where the file tools cannot reach; read its files with Bash.)\n")
	} else {
		b.WriteString("(This path is relative to the workspace root; paths in the instructions are relative to this folder.)\n")
	}
	if len(s.AllowedTools) > 0 {
		fmt.Fprintf(&b, "Allowed tools: %s\n", strings.Join(s.AllowedTools, ", "))
	}
	if args != "" {
		fmt.Fprintf(&b, "Arguments: %s\n", args)
	}
	b.WriteString("\n")
	body := strings.ReplaceAll(s.Instructions, "$ARGUMENTS", args)
	if body == "" {
		body = "(The skill has no instructions beyond its description.)"
	}
	b.WriteString(body)
	return b.String()
}
