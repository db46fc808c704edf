// Package policy decides whether a tool call may run: allow, deny, or ask
// someone first.
//
// A Policy combines a permission Mode with Rules. Precedence is deny > ask >
// allow, whoever says it: a deny rule applies in every mode, bypass
// included; an ask rule beats every allow rule and mode; a mode only allows
// what no rule denies or asks about. Below all of that, built-in protection
// (see Protected) denies the agent's own tools any change to the files
// through which extensions get their power, whatever rules and mode say.
//
// Bash commands are judged as parsed shell, one simple command at a time: a
// command is allowed only if every simple command in it is allowed, denied
// if any is denied. What the policy cannot see before the shell runs (eval,
// sh -c, source, a command name in a variable, process substitution) is
// never approved by a pattern rule.
//
// When the decision is ask, an Approver is consulted; Headless is the one
// for runs without a person, and it refuses with a message that says how to
// allow the call next time.
package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/orca-agent/orca/protect"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

// Decision is what the policy says about a call.
type Decision string

// The decisions, in order of precedence: Deny beats Ask beats Allow.
const (
	Allow Decision = "allow"
	Deny  Decision = "deny"
	Ask   Decision = "ask"
)

// Mode is a permission mode: what happens to calls no rule decides.
type Mode string

const (
	// ModeDefault allows read-only tools (those whose tool.Traits say so:
	// Read, Glob, Grep, TodoWrite among them) and asks about the rest —
	// read-only tools that reach the network (WebFetch) too, unless a rule
	// allows the call.
	ModeDefault Mode = "default"
	// ModeAcceptEdits also allows calls that write files inside the
	// workspace (Write, Edit); commands still ask.
	ModeAcceptEdits Mode = "accept-edits"
	// ModePlan allows only read-only tools (asking, as ModeDefault does,
	// about those that reach the network) and denies everything else.
	ModePlan Mode = "plan"
	// ModeBypass allows everything that no rule denies or asks about and
	// built-in protection does not deny.
	ModeBypass Mode = "bypass"
	// ModeDontAsk (Claude Code's dontAsk) allows what ModeDefault allows
	// and denies what it would ask about, an ask rule's calls included:
	// only read-only tools and what allow rules allow run, and no one is
	// asked, even at a terminal — for locked-down scripts and CI.
	ModeDontAsk Mode = "dont-ask"
)

// ParseMode parses a mode name. Claude Code's names acceptEdits,
// bypassPermissions and dontAsk are accepted too.
func ParseMode(s string) (Mode, error) {
	switch strings.TrimSpace(s) {
	case "default":
		return ModeDefault, nil
	case "accept-edits", "acceptEdits":
		return ModeAcceptEdits, nil
	case "plan":
		return ModePlan, nil
	case "bypass", "bypassPermissions":
		return ModeBypass, nil
	case "dont-ask", "dontAsk":
		return ModeDontAsk, nil
	}
	return "", fmt.Errorf("unknown permission mode %q (want default, accept-edits, plan, dont-ask or bypass)", s)
}

// Policy decides tool calls. It is immutable once built and safe for
// concurrent use; With and WithMode derive new policies.
type Policy struct {
	// Mode and Rules are what the policy was built from. Changing them has
	// no effect: build another policy with New, With or WithMode.
	Mode  Mode
	Rules Rules

	// mode and rules are private copies of Mode and Rules.
	mode             Mode
	rules            Rules
	opts             []Option
	allow, deny, ask []*compiled
	shell            analyzer
	// sandboxed, available and excluded are WithSandboxedCommands'.
	sandboxed bool
	available func() bool
	excluded  []string
	config    configGuard
}

// Option configures New.
type Option func(*options)

type options struct {
	configDir, claudeDir, home *string
	sandboxed                  bool
	available                  func() bool
	excluded                   []string
	targets                    []protect.Target
}

// WithUserConfigDir sets the folder that holds the user's configuration
// (orca's settings and trust store are in its orca subfolder): calls that
// write anything in that subfolder, and commands that name it, are denied.
// Without it (or with an empty dir) the policy guards no such folder; a
// runtime derives the policy it is given to guard the configuration folder
// it reads (agent.Collaborators.ConfigDir), so that both are always the
// same folder.
func WithUserConfigDir(dir string) Option {
	return func(o *options) { o.configDir = &dir }
}

// WithClaudeDir sets the user's Claude Code folder (~/.claude: its
// settings, hooks, skills and agents), which the agent may not change
// either: calls that write anything in it, and commands that name it, are
// denied. Empty: none is guarded.
func WithClaudeDir(dir string) Option {
	return func(o *options) { o.claudeDir = &dir }
}

// WithTargets protects more paths as built-in protection protects .orca:
// where links in protected state lead, the scripts that trusted commands
// run (see package protect). Calls that write one, or anything in one
// that is a folder, wherever they are written from, are denied. Given
// again, the lists add up.
func WithTargets(targets []protect.Target) Option {
	return func(o *options) { o.targets = append(o.targets, targets...) }
}

// WithHomeDir sets the home folder that ~ and $HOME stand for when Bash
// commands are checked for protected paths (default os.UserHomeDir).
func WithHomeDir(dir string) Option {
	return func(o *options) { o.home = &dir }
}

// WithSandboxedCommands approves, in every mode but plan, the shell
// commands that run in the OS sandbox — all but those every simple
// command of which the sandbox excludes (excluded: sandbox.Runner's
// Excluded) — as Claude Code's sandbox.autoAllowBashIfSandboxed does. Deny
// and ask rules, and built-in protection, still apply. Give it only when
// commands do run in the sandbox.
func WithSandboxedCommands(excluded []string) Option {
	return func(o *options) { o.sandboxed, o.excluded = true, slices.Clone(excluded) }
}

// WithSandboxedCommandsIf is WithSandboxedCommands when available says,
// at the call, that commands do run in the sandbox: a runtime asks only
// when a command is to be decided (sandbox.Runner.Available), not while
// it starts.
func WithSandboxedCommandsIf(available func() bool, excluded []string) Option {
	return func(o *options) { o.sandboxed, o.available, o.excluded = true, available, slices.Clone(excluded) }
}

// New builds a policy. The zero Mode is ModeDefault. Rules are compiled
// once; an invalid one is an error naming it.
func New(mode Mode, rules Rules, opts ...Option) (*Policy, error) {
	if mode == "" {
		mode = ModeDefault
	}
	if _, err := ParseMode(string(mode)); err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	configDir, claudeDir, home := "", "", ""
	if o.configDir != nil {
		configDir = *o.configDir
	}
	if o.claudeDir != nil {
		claudeDir = *o.claudeDir
	}
	if o.home != nil {
		home = *o.home
	} else if d, err := os.UserHomeDir(); err == nil {
		home = d
	}
	rules = Rules{Allow: slices.Clone(rules.Allow), Deny: slices.Clone(rules.Deny), Ask: slices.Clone(rules.Ask)}
	p := &Policy{
		Mode:      mode,
		Rules:     Rules{Allow: slices.Clone(rules.Allow), Deny: slices.Clone(rules.Deny), Ask: slices.Clone(rules.Ask)},
		mode:      mode,
		rules:     rules,
		opts:      slices.Clone(opts),
		config:    newConfigGuard(configDir, claudeDir, o.targets),
		sandboxed: o.sandboxed,
		available: o.available,
		excluded:  o.excluded,
	}
	p.shell = analyzer{home: home, configDir: configDir, mentions: func(pat string) bool {
		return mentionsProtected(pat) || p.config.matches(pat)
	}}
	for _, l := range []struct {
		in  []Rule
		out *[]*compiled
	}{{rules.Allow, &p.allow}, {rules.Deny, &p.deny}, {rules.Ask, &p.ask}} {
		for _, r := range l.in {
			c, err := compile(r)
			if err != nil {
				return nil, err
			}
			if c.home && home != "" {
				c.home, c.abs, c.glob = false, true, path.Join(slash(home), c.glob)
				c.globOK = doublestar.ValidatePattern(c.glob)
			}
			*l.out = append(*l.out, c)
		}
	}
	return p, nil
}

// With returns a policy with extra rules added to p's, as when the user
// approves a call "always" for this session or agent.
func (p *Policy) With(extra Rules) (*Policy, error) {
	return New(p.mode, Rules{
		Allow: slices.Concat(p.rules.Allow, extra.Allow),
		Deny:  slices.Concat(p.rules.Deny, extra.Deny),
		Ask:   slices.Concat(p.rules.Ask, extra.Ask),
	}, p.opts...)
}

// WithOptions returns a policy with p's mode and rules and p's options
// followed by opts (a later option wins).
func (p *Policy) WithOptions(opts ...Option) (*Policy, error) {
	return New(p.mode, p.rules, slices.Concat(p.opts, opts)...)
}

// WithMode returns a policy with p's rules in another mode.
func (p *Policy) WithMode(mode Mode) (*Policy, error) {
	return New(mode, p.rules, p.opts...)
}

// Request is one tool call to decide.
type Request struct {
	ToolName string
	// Input is the call's validated input.
	Input json.RawMessage
	// FS resolves the call's paths to workspace-relative paths. When nil,
	// paths are compared as given (cleaned; relative paths are taken to be
	// inside the workspace).
	FS workspace.FileSystem
	// Traits and Access are what the tool declares about itself and about
	// this call (RequestFor fills them in): the policy decides from them,
	// never from the tool's name. A call that writes paths goes through
	// built-in protection, Edit rules and accept-edits mode; one that
	// reads paths through Read rules; one that runs a command is judged as
	// parsed shell; a read-only tool runs in the modes that ask before
	// changes, unless it writes a path or runs a command all the same.
	Traits tool.Traits
	Access tool.Access
}

// RequestFor returns the request for a call of t with input, over the
// workspace fsys (nil: paths as given).
func RequestFor(t tool.Tool, input json.RawMessage, fsys workspace.FileSystem) Request {
	return Request{ToolName: t.Name(), Input: input, FS: fsys, Traits: tool.TraitsOf(t), Access: tool.AccessOf(t, input)}
}

// Verdict is the policy's answer to a Request.
type Verdict struct {
	Decision Decision
	// Reason is a sentence for the model (and the user): what was decided
	// about which call, by which rule or mode, and what to do about it.
	Reason string
	// Rule is what decided: a rule as written, several joined by ", ", or
	// "mode:NAME", "protected" or "config-dir".
	Rule string
	// Suggest is an allow rule that would allow the call, for an ask that
	// no rule caused, such as `Bash(go test:*)` or `Edit(src/**)`; empty
	// when no rule can help. It is Suggestions[0].
	Suggest string
	// Suggestions are all the rules needed, one per unapproved simple
	// command of a compound Bash command.
	Suggestions []string
}

type class uint8

const (
	classOther class = iota
	classPath        // it reads or writes paths
	classBash        // it runs a command
)

// call is a Request decoded for deciding.
type call struct {
	tool     string
	aliases  []string // the tool's other names (tool.Traits.Aliases)
	class    class
	readOnly bool
	network  bool      // it reaches out of the machine (tool.Traits.Network)
	edit     bool      // it writes a path
	paths    []pathArg // what it reads and writes
	command  string
	shell    *shellAnalysis
	arg      string // classOther: the argument for exact rules (WebFetch: the URL)
	raw      json.RawMessage
	input    map[string]json.RawMessage // raw's fields, read when a rule names one (Tool(param:value))
	inputOK  bool                       // input has been read
	fs       workspace.FileSystem
}

// pathArg is one path a call reads or writes.
type pathArg struct {
	given string // as the call gave it
	t     target
	write bool
}

// target is a path argument, resolved.
type target struct {
	rel    string // workspace-relative, slash-separated, when inside
	inside bool
	abs    string // absolute OS path, when known
	// link is where the path really leads once its symbolic links are
	// followed — dangling ones too, as a write would follow them — when
	// that is somewhere else; nil if nowhere else (or not known). Rules
	// and protection judge both: a deny rule matches if either does, an
	// allow rule only if both do.
	link *target
}

// in reports whether the path, and where it really leads, are inside the
// workspace.
func (t target) in() bool { return t.inside && (t.link == nil || t.link.inside) }

func slash(p string) string { return filepath.ToSlash(p) }

// Decide decides one call. It never fails: input it cannot read is decided
// as if its arguments were empty, which no pattern rule allows.
//
// In ModeDontAsk a call that would be asked about is denied instead, its
// reason saying why it would have been asked about and what would allow
// it (Verdict.Suggestions are kept).
func (p *Policy) Decide(req Request) Verdict {
	return p.Asking(p.decide(req))
}

// Asking returns what becomes of a verdict that would put a call to a
// person — the policy's own, or one a runtime makes because a hook asked
// (v.Decision Ask): v, or in ModeDontAsk, which asks no one, v made a
// denial whose reason says why it would have been asked about and what
// would allow it. Other verdicts are returned as they are.
func (p *Policy) Asking(v Verdict) Verdict {
	if p.mode != ModeDontAsk || v.Decision != Ask {
		return v
	}
	v.Decision = Deny
	var b strings.Builder
	reason := strings.Replace(v.Reason, " needs the user's approval", " would need the user's approval", 1)
	b.WriteString(strings.TrimSuffix(reason, "."))
	if strings.Contains(reason, p.modeAsks()) { // the mode's own verdict: one mode in the sentence
		b.WriteString(", and it asks no one, so the call is denied; do not retry it.")
	} else {
		b.WriteString(". Permission mode dont-ask asks no one, so the call is denied; do not retry it.")
	}
	if len(v.Suggestions) > 0 {
		fmt.Fprintf(&b, " The user can allow it with the rule %s (--allow, or the settings key permissions.allow).", strings.Join(v.Suggestions, " or "))
	}
	v.Reason = b.String()
	return v
}

func (p *Policy) decide(req Request) Verdict {
	c := p.decode(req)
	if v, ok := p.protect(&c, req.FS); ok {
		return v
	}
	// A rule that may match only once the shell runs asks, unless the call
	// would be asked about anyway with a more specific reason.
	var maybeV *Verdict
	for _, r := range p.deny {
		sel, ok := c.covers(r.rule.Tool)
		if !ok {
			if m, what := p.matchRedirects(r, &c); m == yes {
				return Verdict{Decision: Deny, Rule: r.raw,
					Reason: fmt.Sprintf("%s is denied: it writes %s, which the permission rule %s denies; do not retry it, choose another way or ask the user.", describe(&c, nil), what, r.raw)}
			} else if m == maybe && maybeV == nil {
				maybeV = &Verdict{Decision: Ask, Rule: r.raw,
					Reason: fmt.Sprintf("%s needs the user's approval: where it writes (%s) is only known when the shell runs, so the policy cannot rule out the deny rule %s.", describe(&c, nil), what, r.raw)}
			}
			continue
		}
		switch m, part, why := p.match(r, &c, sel); m {
		case yes:
			return Verdict{Decision: Deny, Rule: r.raw,
				Reason: fmt.Sprintf("%s is denied by the permission rule %s; do not retry it, choose another way or ask the user.", describe(&c, part), r.raw)}
		case maybe:
			if maybeV == nil {
				maybeV = &Verdict{Decision: Ask, Rule: r.raw,
					Reason: fmt.Sprintf("%s needs the user's approval: %s, so the policy cannot rule out the deny rule %s.", describe(&c, nil), why, r.raw)}
			}
		}
	}
	if p.mode == ModePlan && !c.readOnly {
		return Verdict{Decision: Deny, Rule: "mode:plan",
			Reason: fmt.Sprintf("%s is denied: permission mode plan is read-only, so only tools that read and search run; finish the plan and present it instead of changing anything.", describe(&c, nil))}
	}
	for _, r := range p.ask {
		sel, ok := c.covers(r.rule.Tool)
		if !ok {
			if m, what := p.matchRedirects(r, &c); m != no && maybeV == nil {
				maybeV = &Verdict{Decision: Ask, Rule: r.raw,
					Reason: fmt.Sprintf("%s needs the user's approval: it may write %s, which matches the ask rule %s.", describe(&c, nil), what, r.raw)}
			}
			continue
		}
		switch m, part, why := p.match(r, &c, sel); m {
		case yes:
			return Verdict{Decision: Ask, Rule: r.raw,
				Reason: fmt.Sprintf("%s needs the user's approval: it matches the ask rule %s.", describe(&c, part), r.raw)}
		case maybe:
			if maybeV == nil {
				maybeV = &Verdict{Decision: Ask, Rule: r.raw,
					Reason: fmt.Sprintf("%s needs the user's approval: %s, so it may match the ask rule %s.", describe(&c, nil), why, r.raw)}
			}
		}
	}
	v := p.allowed(&c)
	if maybeV != nil && (v.Decision == Allow || len(v.Suggestions) > 0) {
		return *maybeV // a suggested allow rule would not help either
	}
	return v
}

// allowed decides a call that no rule denies or asks about.
func (p *Policy) allowed(c *call) Verdict {
	if c.class == classBash {
		return p.allowBash(c)
	}
	if c.class == classPath {
		if used, ok := p.allowPaths(c); ok {
			rules := strings.Join(used, ", ")
			return Verdict{Decision: Allow, Rule: rules, Reason: because(c, " is allowed by the permission rule ", rules, ".")}
		}
	} else {
		for _, r := range p.allow {
			if sel, ok := c.covers(r.rule.Tool); ok {
				if m, _, _ := p.match(r, c, sel); m == yes {
					return Verdict{Decision: Allow, Rule: r.raw, Reason: because(c, " is allowed by the permission rule ", r.raw, ".")}
				}
			}
		}
	}
	switch {
	case c.readOnly && !c.network:
		return p.modeAllow(c, "the tool only reads")
	case p.mode == ModeBypass:
		return p.modeAllow(c, "nothing denies it")
	case p.mode == ModeAcceptEdits && c.edit && c.inside():
		return p.modeAllow(c, "it edits a file inside the workspace")
	}
	v := Verdict{Decision: Ask, Rule: p.modeRule()}
	if ss := suggestFor(c); len(ss) > 0 {
		v.Suggest, v.Suggestions = ss[0], ss
	}
	v.Reason = fmt.Sprintf("%s needs the user's approval: no allow rule matches it and %s before %s.", describe(c, nil), p.modeAsks(), activity(c))
	return v
}

// modeAsks says, for a reason, that the mode in force asks: "permission
// mode default asks"; in ModeDontAsk, which asks no one (Asking makes the
// verdict a denial), "permission mode dont-ask would ask".
func (p *Policy) modeAsks() string {
	if p.mode == ModeDontAsk {
		return "permission mode " + string(ModeDontAsk) + " would ask"
	}
	return "permission mode " + string(p.mode) + " asks"
}

// modeRule is the Rule of a verdict the mode gave.
func (p *Policy) modeRule() string {
	switch p.mode {
	case ModeDefault:
		return "mode:default"
	case ModeAcceptEdits:
		return "mode:accept-edits"
	case ModePlan:
		return "mode:plan"
	case ModeBypass:
		return "mode:bypass"
	case ModeDontAsk:
		return "mode:dont-ask"
	}
	return "mode:" + string(p.mode)
}

func (p *Policy) modeAllow(c *call, why string) Verdict {
	return Verdict{Decision: Allow, Rule: p.modeRule(),
		Reason: because(c, " is allowed by permission mode ", string(p.mode), ": ", why, ".")}
}

// decode reads what the policy needs from what the call's tool declares.
func (p *Policy) decode(req Request) call {
	a := req.Access
	c := call{tool: req.ToolName, aliases: req.Traits.Aliases, edit: len(a.Writes) > 0, fs: req.FS}
	c.readOnly = req.Traits.ReadOnly && !c.edit && a.Command == ""
	c.network = req.Traits.Network
	c.raw = req.Input
	for _, w := range a.Writes {
		c.paths = append(c.paths, pathArg{given: w, t: resolve(req.FS, w), write: true})
	}
	for _, r := range a.Reads {
		c.paths = append(c.paths, pathArg{given: r, t: resolve(req.FS, r)})
	}
	switch {
	case a.Command != "":
		c.class = classBash
		c.command = a.Command
		c.shell = p.shell.analyze(a.Command)
	case len(c.paths) > 0:
		c.class = classPath
	default:
		var in map[string]json.RawMessage
		if namesArgument(req.Input) && json.Unmarshal(req.Input, &in) == nil {
			for _, k := range argumentFields {
				raw := in[k]
				if len(raw) < 3 || raw[0] != '"' {
					continue // absent, or not a non-empty string
				}
				var s string
				if json.Unmarshal(raw, &s) == nil && s != "" {
					c.arg = s
					break
				}
			}
		}
	}
	return c
}

// argumentKeys are argumentFields as they appear in JSON, quoted.
var argumentKeys = func() [][]byte {
	out := make([][]byte, len(argumentFields))
	for i, f := range argumentFields {
		out[i] = []byte(`"` + f + `"`)
	}
	return out
}()

// namesArgument reports whether input may have one of argumentFields: it
// has the name, quoted, somewhere (a key written with escapes is decoded
// whatever this says, so it is a cheap first look, not a decision).
func namesArgument(input []byte) bool {
	if bytes.IndexByte(input, '\\') >= 0 {
		return true
	}
	for _, k := range argumentKeys {
		if bytes.Contains(input, k) {
			return true
		}
	}
	return false
}

// inside reports whether every path of c, and where it really leads, is
// inside the workspace.
func (c *call) inside() bool {
	for _, pa := range c.paths {
		if !pa.t.in() {
			return false
		}
	}
	return len(c.paths) > 0
}

// resolve turns a path argument into a target.
func resolve(fsys workspace.FileSystem, given string) target {
	var t target
	if fsys == nil {
		p := path.Clean(slash(given))
		switch {
		case given == "":
		case filepath.IsAbs(given):
			t.abs = filepath.Clean(given)
		case p == ".." || strings.HasPrefix(p, "../"):
		default:
			t.rel, t.inside = p, true
		}
		return t
	}
	root := fsys.Root()
	if rel, err := fsys.Resolve(given); err == nil {
		t.rel, t.inside = rel, true
		if root != "" {
			t.abs = filepath.Join(root, filepath.FromSlash(rel))
		}
	}
	switch {
	case given != "" && filepath.IsAbs(given):
		t.abs = filepath.Clean(given)
	case t.abs == "" && root != "" && given != "":
		t.abs = filepath.Join(root, given)
	}
	if root != "" && t.abs != "" {
		known := ""
		if t.inside {
			known = root // the root's own links are resolved already
		}
		if real, ok := followLinks(known, t.abs); !ok {
			t.link = &target{} // a loop: nowhere a rule can approve
		} else if real != t.abs {
			l := target{abs: real}
			if rel, ok := within(root, real); ok {
				l.rel, l.inside = slash(rel), true
			}
			t.link = &l
		}
	}
	return t
}

// protect applies built-in protection, which no rule or mode overrides.
func (p *Policy) protect(c *call, fsys workspace.FileSystem) (Verdict, bool) {
	const why = "the agent's tools may not change orca's own state (.orca: hooks, settings, skills, subagents, trust, the session store) or git's configuration and hooks, through which permissions are granted and code is run; ask the user to make this change"
	for _, pa := range c.paths {
		f, in := p.config.secret(pa.t.abs)
		if !in && pa.t.link != nil {
			f, in = p.config.secret(pa.t.link.abs)
		}
		if in {
			return Verdict{Decision: Deny, Rule: "secret",
				Reason: fmt.Sprintf("%s of %q is denied: it is inside %s (%s), secrets no tool of the agent reads or writes.", c.tool, pa.given, f.what, f.shown)}, true
		}
	}
	for _, pa := range c.paths {
		if !pa.write {
			continue
		}
		hit := ""
		switch l := pa.t.link; {
		case pa.t.inside && Protected(pa.t.rel):
			hit = pa.t.rel
		case l != nil && l.inside && Protected(l.rel):
			hit = l.rel
		case !pa.t.inside && mentionsPath(escapeGlob(slash(pa.given))):
			hit = pa.given
		}
		if hit != "" {
			what := fmt.Sprintf("%s of %q", c.tool, pa.given)
			if hit != pa.given {
				what += fmt.Sprintf(" (%s)", hit)
			}
			return Verdict{Decision: Deny, Rule: "protected",
				Reason: fmt.Sprintf("%s is denied: the path is protected — %s.", what, why)}, true
		}
		f, in := p.config.contains(pa.t.abs)
		if !in && pa.t.link != nil {
			f, in = p.config.contains(pa.t.link.abs)
		}
		switch {
		case in && f.target:
			return Verdict{Decision: Deny, Rule: "protected",
				Reason: fmt.Sprintf("%s of %q is denied: %s is protected state, which the agent's tools may not change — %s leads to it, so it decides what runs; ask the user to make this change.", c.tool, pa.given, f.shown, f.what)}, true
		case in:
			return Verdict{Decision: Deny, Rule: "config-dir",
				Reason: fmt.Sprintf("%s of %q is denied: it is inside %s %s, which the agent's tools may not change; ask the user to make this change.", c.tool, pa.given, f.what, f.shown)}, true
		}
	}
	if c.class == classBash && len(c.shell.protected) > 0 {
		return Verdict{Decision: Deny, Rule: "protected",
			Reason: fmt.Sprintf("%s is denied: it names %q, a protected path (orca's or Claude Code's hooks, settings, agents, trust files or configuration folders) — %s. To read such a file, use Read.", describe(c, nil), c.shell.protected[0], why)}, true
	}
	return Verdict{}, false
}

// match answers whether rule r covers the call: for a call with paths,
// whether it matches any of those sel selects (allow rules, which must
// cover every path, use allowPaths). For a command, part is the simple
// command that matched, and why says why a maybe is only a maybe.
func (p *Policy) match(r *compiled, c *call, sel pathSel) (m match, part *simpleCmd, why string) {
	if r.kind == kindAll {
		return yes, nil, ""
	}
	if r.param != "" && !(r.colonStar && c.class == classBash) {
		if !c.inputOK {
			c.inputOK = true
			// A local of its own: &c.input would put every call on the heap.
			var in map[string]json.RawMessage
			json.Unmarshal(c.raw, &in) // not an object: no field matches
			c.input = in
		}
		if m, ok := r.matchParam(c.input); ok {
			return m, nil, ""
		}
	}
	switch c.class {
	case classPath:
		if !r.globOK {
			return maybe, nil, fmt.Sprintf("the pattern of %s is not a valid path glob", r.raw)
		}
		for i := range c.paths {
			if pa := &c.paths[i]; pa.selected(sel) && r.matchAny(pa.t) {
				return yes, nil, ""
			}
		}
		return no, nil, ""
	case classBash:
		if r.cmd == kindVerbatim {
			if normalize(c.command) == r.verbatim {
				return yes, nil, ""
			}
			return no, nil, ""
		}
		if c.shell.err != nil {
			return maybe, nil, "it could not be parsed as shell (" + c.shell.err.Error() + ")"
		}
		for i := range c.shell.cmds {
			cmd := &c.shell.cmds[i]
			switch r.loose(cmd) {
			case yes:
				return yes, cmd, ""
			case maybe:
				if m == no {
					m, part = maybe, cmd
					why = fmt.Sprintf("the words of %q are only known when the shell runs", cmd.text)
					if cmd.ask != "" {
						why = fmt.Sprintf("%q cannot be checked (%s)", cmd.text, cmd.ask)
					}
				}
			}
		}
		return m, part, why
	}
	switch {
	case r.domain != "":
		if r.matchDomain(c.arg) {
			return yes, nil, ""
		}
	case c.arg != "" && c.arg == r.pattern:
		return yes, nil, ""
	}
	return no, nil, ""
}

// allowPaths reports whether allow rules cover every path of c (a path is
// covered by a rule that applies to it and matches it), and which rules
// did.
func (p *Policy) allowPaths(c *call) (used []string, ok bool) {
	for i := range c.paths {
		pa := &c.paths[i]
		covered := false
		for _, r := range p.allow {
			sel, applies := c.covers(r.rule.Tool)
			if !applies || !pa.selected(sel) || !(r.kind == kindAll || r.globOK && r.matchAll(pa.t)) {
				continue
			}
			if !slices.Contains(used, r.raw) {
				used = append(used, r.raw)
			}
			covered = true
			break
		}
		if !covered {
			return nil, false
		}
	}
	return used, len(c.paths) > 0
}

// allowBash allows a command when every simple command in it is allowed.
// Deny and ask rules have been applied already.
func (p *Policy) allowBash(c *call) Verdict {
	for _, r := range p.allow {
		if _, ok := c.covers(r.rule.Tool); ok && (r.kind == kindAll || r.cmd == kindVerbatim && normalize(c.command) == r.verbatim) {
			return Verdict{Decision: Allow, Rule: r.raw, Reason: because(c, " is allowed by the permission rule ", r.raw, ".")}
		}
	}
	if p.mode == ModeBypass {
		return p.modeAllow(c, "nothing denies it")
	}
	if p.sandboxed && p.mode != ModePlan && !p.unsandboxed(c) && (p.available == nil || p.available()) {
		return Verdict{Decision: Allow, Rule: "sandbox",
			Reason: because(c, " is allowed: it runs in the OS sandbox, and the settings' sandbox.autoAllowBashIfSandboxed approves what runs there.")}
	}
	a := c.shell
	if a.err != nil {
		return Verdict{Decision: Ask, Rule: p.modeRule(),
			Reason: fmt.Sprintf("%s needs the user's approval: it could not be parsed as shell (%v), so no rule can approve it.", describe(c, nil), a.err)}
	}
	if len(a.cmds) == 0 {
		return Verdict{Decision: Ask, Rule: p.modeRule(),
			Reason: fmt.Sprintf("%s needs the user's approval: it runs no simple command a rule could approve, and %s before running shell commands.", describe(c, nil), p.modeAsks())}
	}
	var used, unapproved, suggestions []string
	var opaque []string
	// Commands an exact rule approves, words and all: what they run for
	// each file (find -exec) is approved with them.
	exact := map[string]string{}
	for i := range a.cmds {
		for _, r := range p.allow {
			if _, ok := c.covers(r.rule.Tool); ok && r.cmd == kindCommand && r.strict(&a.cmds[i]) {
				exact[a.cmds[i].text] = r.raw
			}
		}
	}
cmds:
	for i := range a.cmds {
		cmd := &a.cmds[i]
		if raw, ok := exact[cmd.runBy]; ok && cmd.runBy != "" {
			if !slices.Contains(used, raw) {
				used = append(used, raw)
			}
			continue
		}
		if cmd.ask != "" {
			opaque = append(opaque, fmt.Sprintf("%q (%s)", cmd.text, cmd.ask))
			continue
		}
		for _, r := range p.allow {
			if _, ok := c.covers(r.rule.Tool); ok && r.strict(cmd) {
				if !slices.Contains(used, r.raw) {
					used = append(used, r.raw)
				}
				continue cmds
			}
		}
		unapproved = append(unapproved, fmt.Sprintf("%q", cmd.text))
		if s := suggestCommand(c.tool, cmd); s != "" && !slices.Contains(suggestions, s) {
			suggestions = append(suggestions, s)
		}
	}
	// What it writes through redirections must be writes the policy
	// allows: Bash(echo:*) approves echo, not "echo … >> ~/.bashrc".
	var writes []string
	for _, r := range a.redirects {
		if why, rule := p.redirectRefused(c, r); why != "" {
			writes = append(writes, why)
			if rule == "" {
				opaque = append(opaque, fmt.Sprintf("%q (%s)", r.text, why))
			} else if !slices.Contains(suggestions, rule) {
				suggestions = append(suggestions, rule)
			}
		}
	}
	if len(unapproved) == 0 && len(opaque) == 0 && len(writes) > 0 {
		return Verdict{Decision: Ask, Rule: p.modeRule(), Suggest: suggestions[0], Suggestions: suggestions,
			Reason: fmt.Sprintf("%s needs the user's approval: %s; the allow rules approve its commands, not the files it writes (an Edit rule, or permission mode accept-edits for files in the workspace, allows those).",
				describe(c, nil), strings.Join(writes, ", and "))}
	}
	if len(unapproved) == 0 && len(opaque) == 0 {
		rules := strings.Join(used, ", ")
		return Verdict{Decision: Allow, Rule: rules, Reason: because(c, " is allowed: every command in it matches an allow rule (", rules, ").")}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s needs the user's approval: ", describe(c, nil))
	if len(opaque) > 0 {
		fmt.Fprintf(&b, "no rule can approve %s", strings.Join(opaque, " and "))
		if len(unapproved) > 0 {
			b.WriteString(", and ")
		}
	}
	if len(unapproved) > 0 {
		fmt.Fprintf(&b, "no allow rule matches %s", strings.Join(unapproved, " and "))
	}
	fmt.Fprintf(&b, "; %s before running shell commands.", p.modeAsks())
	v := Verdict{Decision: Ask, Rule: p.modeRule(), Reason: b.String()}
	if len(opaque) == 0 && len(suggestions) > 0 {
		v.Suggest, v.Suggestions = suggestions[0], suggestions
	}
	return v
}

// redirectRefused says why a redirection of an otherwise approved command
// is not a write the policy allows; "" if it is one: a file descriptor,
// /dev/null and its kind, or a file an Edit allow rule covers (or, in
// permission mode accept-edits, any file in the workspace) that is not
// protected.
//
// The rule returned is the Edit rule that would allow the write, when one
// would.
func (p *Policy) redirectRefused(c *call, r redirect) (why, rule string) {
	w := r.w
	if !w.lit {
		return fmt.Sprintf("it writes through %q to a file only known when the shell runs", r.text), ""
	}
	if r.dup && (w.val == "-" || strings.Trim(w.val, "0123456789") == "") {
		return "", ""
	}
	switch w.val {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty":
		return "", ""
	}
	if strings.HasPrefix(w.val, "/dev/fd/") {
		return "", ""
	}
	if !filepath.IsAbs(w.val) && c.shell.chdir {
		return fmt.Sprintf("it writes %q (%s) after changing folder, so where is only known when the shell runs", w.val, r.text), ""
	}
	pa := pathArg{given: w.val, t: resolve(c.fs, w.val), write: true}
	l := pa.t.link
	if pa.t.inside && Protected(pa.t.rel) || l != nil && l.inside && Protected(l.rel) || p.config.has(pa.t.abs) || l != nil && p.config.has(l.abs) {
		return fmt.Sprintf("it writes %q (%s), a protected path", w.val, r.text), ""
	}
	if p.mode == ModeAcceptEdits && pa.t.in() {
		return "", ""
	}
	for _, rule := range p.allow {
		if rule.rule.Tool == EditRule && (rule.kind == kindAll && pa.t.in() || rule.globOK && rule.matchAll(pa.t)) {
			return "", ""
		}
	}
	if !pa.t.in() {
		return fmt.Sprintf("it writes %q (%s), outside the workspace", w.val, r.text), ""
	}
	return fmt.Sprintf("it writes %q (%s)", w.val, r.text), EditRule + "(" + escapeGlob(pa.t.rel) + ")"
}

// matchRedirects matches an Edit rule against the files a command writes
// through redirections; what names the one that matched.
func (p *Policy) matchRedirects(r *compiled, c *call) (m match, what string) {
	if c.class != classBash || r.rule.Tool != EditRule || c.shell.err != nil {
		return no, ""
	}
	for _, rd := range c.shell.redirects {
		w := rd.w
		if rd.dup && w.lit && (w.val == "-" || strings.Trim(w.val, "0123456789") == "") {
			continue
		}
		if r.kind == kindAll {
			return yes, fmt.Sprintf("%q", rd.text)
		}
		if !w.lit {
			m, what = maybe, fmt.Sprintf("%q", rd.text)
			continue
		}
		if !r.globOK {
			continue
		}
		t := resolve(c.fs, w.val)
		if !filepath.IsAbs(w.val) && c.shell.chdir {
			m, what = maybe, fmt.Sprintf("%q", rd.text)
			continue
		}
		if r.matchAny(t) {
			return yes, fmt.Sprintf("%q (%s)", w.val, rd.text)
		}
	}
	return m, what
}

// describe names the call (and the part of a compound command) in messages.
func describe(c *call, part *simpleCmd) string {
	var b strings.Builder
	writeDescribe(&b, c, part)
	return b.String()
}

// because is describe(c, nil) followed by parts, in one allocation: an
// allowed call's reason is written for every call.
func because(c *call, parts ...string) string {
	n := len(c.tool) + len(` command ""`) + min(len(c.command), clipBytes) + min(len(c.arg), clipBytes)
	for _, pa := range c.paths {
		n += len(pa.given) + len(`"" and `)
	}
	for _, s := range parts {
		n += len(s)
	}
	var b strings.Builder
	b.Grow(n)
	writeDescribe(&b, c, nil)
	for _, s := range parts {
		b.WriteString(s)
	}
	return b.String()
}

// writeDescribe writes what describe returns.
func writeDescribe(b *strings.Builder, c *call, part *simpleCmd) {
	var q [96]byte // quoting space that stays on the stack
	quote := func(s string) { b.Write(strconv.AppendQuote(q[:0], s)) }
	switch c.class {
	case classBash:
		b.WriteString(c.tool)
		b.WriteString(" command ")
		if part != nil && strings.TrimSpace(part.text) != strings.TrimSpace(c.command) {
			quote(clip(part.text))
			b.WriteString(" (in ")
			quote(clip(c.command))
			b.WriteString(")")
			return
		}
		quote(clip(c.command))
		return
	case classPath:
		b.WriteString(c.tool)
		b.WriteString(" of ")
		for i, pa := range c.paths {
			name := pa.given
			if pa.t.inside && pa.t.rel != name {
				name = pa.t.rel
			}
			if i > 0 {
				b.WriteString(" and ")
			}
			quote(name)
		}
		return
	}
	b.WriteString(c.tool)
	if c.arg != "" {
		b.WriteString(" call on ")
		quote(clip(c.arg))
		return
	}
	b.WriteString(" call")
}

// clipBytes is the most bytes clip returns.
const clipBytes = 200 + len("…")

func clip(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

// activity says what the mode asks before, for messages.
func activity(c *call) string {
	switch {
	case c.edit:
		return "changing files"
	case c.class == classBash:
		return "running shell commands"
	case c.class == classPath:
		return "reading files"
	case c.network:
		return "reaching the network"
	}
	return "using tools that are not read-only"
}

// suggestFor returns the allow rules that would allow the call: for
// paths, a Read or Edit rule per folder; for another call, its tool (a
// URL argument: its domain). Commands have theirs from allowBash.
func suggestFor(c *call) []string {
	switch c.class {
	case classPath:
		var out []string
		for _, pa := range c.paths {
			if !pa.t.inside {
				return nil // only an absolute pattern would do: leave that to the user
			}
			name := ReadRule
			if pa.write {
				name = EditRule
			}
			dir, s := path.Dir(pa.t.rel), ""
			if dir == "." {
				s = name + "(" + escapeGlob(pa.t.rel) + ")"
			} else {
				s = name + "(" + escapeGlob(dir) + "/**)"
			}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		return out
	case classBash:
		return nil
	}
	if u, err := url.Parse(c.arg); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Hostname() != "" {
		return []string{c.tool + "(domain:" + strings.ToLower(u.Hostname()) + ")"}
	}
	return []string{c.tool}
}

// suggestCommand returns tool(<first words>:*) for a simple command: its
// assignments, its name and, for a command of subcommands (git, npm, go …),
// a second word that looks like one.
func suggestCommand(tool string, cmd *simpleCmd) string {
	var ws []string
	i := 0
	for ; i < len(cmd.words) && cmd.words[i].assign; i++ {
		if !cmd.words[i].static {
			return ""
		}
		ws = append(ws, quoteWord(cmd.words[i]))
	}
	if i >= len(cmd.words) || !cmd.words[i].lit {
		return ""
	}
	ws = append(ws, quoteWord(cmd.words[i]))
	if i+1 < len(cmd.words) && subcommands[path.Base(cmd.words[i].val)] && subcommand(cmd.words[i+1]) {
		ws = append(ws, cmd.words[i+1].val)
	}
	return tool + "(" + strings.Join(ws, " ") + ":*)"
}

// subcommands are the commands whose second word is a subcommand (git
// status, npm test, go build), which a suggested rule keeps: Bash(git
// status:*) rather than all of git. For the rest the second word is an
// argument (sleep 30, echo made), and the rule is the command's:
// Bash(sleep:*). Commands that run another (sudo, npx) keep the next word
// too.
var subcommands = map[string]bool{
	"git": true, "gh": true, "npm": true, "pnpm": true, "yarn": true, "bun": true, "deno": true, "go": true, "cargo": true, "rustup": true,
	"docker": true, "podman": true, "kubectl": true, "helm": true, "terraform": true, "make": true, "just": true, "mvn": true, "gradle": true,
	"dotnet": true, "pip": true, "pip3": true, "poetry": true, "uv": true, "pipenv": true, "conda": true, "brew": true, "apt": true, "apt-get": true,
	"systemctl": true, "nix": true, "swift": true, "flutter": true, "dart": true, "mix": true, "rails": true, "bundle": true, "rake": true,
	"composer": true, "nx": true, "turbo": true, "aws": true, "gcloud": true, "az": true, "hg": true, "svn": true, "jj": true,
	// Commands that run the command named next: all of sudo is no rule
	// to suggest.
	"sudo": true, "doas": true, "npx": true, "pnpx": true, "bunx": true, "uvx": true, "xargs": true, "nohup": true, "nice": true,
}

// subcommand reports whether w looks like "status" in "git status" rather
// than an option, a path or a file name.
func subcommand(w word) bool {
	if !w.lit || w.val == "" || w.val[0] == '-' {
		return false
	}
	for _, r := range w.val {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// unsandboxed reports whether the command of c runs without the sandbox:
// every simple command of it is one the sandbox excludes
// (WithSandboxedCommands), as the shell tool decides it.
func (p *Policy) unsandboxed(c *call) bool {
	a := c.shell
	if a.err != nil || len(a.cmds) == 0 || len(p.excluded) == 0 {
		return false
	}
	for i := range a.cmds {
		ws := a.cmds[i].words
		if len(ws) == 0 || !ws[0].lit || !slices.Contains(p.excluded, ws[0].val) {
			return false
		}
	}
	return true
}

// DeniesTool reports whether a deny rule names the tool outright — by its
// name, an alias or its MCP server, with no pattern ("Bash", "Agent",
// "mcp__github", "mcp__github__*"): as Claude Code does, the runtime then
// does not offer the tool to the model at all.
func (p *Policy) DeniesTool(name string, aliases []string) bool {
	c := call{tool: name, aliases: aliases}
	for _, r := range p.deny {
		if r.kind != kindAll {
			continue
		}
		if _, ok := c.covers(r.rule.Tool); ok {
			return true
		}
	}
	return false
}

// DeniesReads reports whether a deny rule is a rule on reading
// (Read(…)): only then do ReadDenied and ReadDeniedPaths say anything.
func (p *Policy) DeniesReads() bool {
	for _, r := range p.deny {
		if r.rule.Tool == ReadRule {
			return true
		}
	}
	return false
}

// ReadDenied reports whether a deny rule on reading covers the workspace
// path rel (slash-separated), or where it really leads. The tools that
// list and search leave such paths out (tool.Env.Hidden), so that
// Read(secret/**) also keeps "Grep path=." and "Glob secret/**" from
// showing what is there.
func (p *Policy) ReadDenied(fsys workspace.FileSystem, rel string) bool {
	var t target
	resolved := false
	for _, r := range p.deny {
		if r.rule.Tool != ReadRule {
			continue
		}
		if r.kind == kindAll {
			return true
		}
		if !resolved {
			t, resolved = resolve(fsys, rel), true
		}
		if r.globOK && r.matchAny(t) {
			return true
		}
	}
	return false
}

// ReadDeniedPaths returns the files and folders that the deny rules on
// reading name outright — Read(secret/**) the folder root/secret,
// Read(/etc/shadow) that file — for the OS sandbox to hide from commands
// (sandbox.Policy.Hidden). A pattern with a glob before its end
// (Read(**/.env), Read(src/*.key)) names no one path: commands can still
// read what it covers, and the result says so in unenforced.
func (p *Policy) ReadDeniedPaths(root string) (paths, unenforced []string) {
	for _, r := range p.deny {
		if r.rule.Tool != ReadRule || r.kind == kindAll || !r.globOK {
			continue
		}
		lit := strings.TrimSuffix(r.glob, "/**")
		if lit == "" || strings.ContainsAny(lit, `*?[{\`) {
			unenforced = append(unenforced, r.raw)
			continue
		}
		if r.rooted && root != "" {
			paths = append(paths, filepath.Join(root, filepath.FromSlash(lit[1:])))
		}
		if r.home {
			continue
		}
		if r.abs {
			paths = append(paths, filepath.Clean(filepath.FromSlash(lit)))
		} else if root != "" {
			paths = append(paths, filepath.Join(root, filepath.FromSlash(lit)))
		}
	}
	return paths, unenforced
}
