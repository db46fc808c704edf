package policy

import (
	"path"
	"slices"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// A Bash command is judged as the shell will run it, not as text: it is
// parsed and every simple command in it (in lists, pipes, subshells, command
// substitutions, loop and function bodies, here-documents) is judged on its
// own. Allow rules are matched strictly, from the first word, so that a rule
// for "git status" never approves "FOO=x git status" or "sudo git status";
// a command run through wrappers that only change how it runs (timeout,
// nice, nohup, xargs, taskset …) is judged as the command it runs, and
// through others (sudo, env FOO=1) a rule must name the command run too.
// The commands find runs (-exec, -execdir, -ok) are commands of their own;
// env -S, flock -c and script -c run code that is parsed like sh -c. A line
// is allowed only if every file it writes through a redirection is a write
// the policy allows (an Edit rule; the workspace in accept-edits; /dev/null).
// Deny and ask rules are matched loosely: also after leading assignments,
// after wrappers such as sudo, env or xargs, and against the base name of a
// command path; a word whose value is only known at run time, or that is a
// glob or brace expansion, counts as a possible match, which asks. Programs
// known to run commands in ways the policy does not follow (unshare,
// parallel …) may match every deny rule and are approved by none.
// Allowing is a promise, denying a precaution.

// maxShellDepth bounds how deep "bash -c" and eval strings are parsed.
const maxShellDepth = 3

// word is one shell word as the policy sees it.
type word struct {
	val    string // the value after quote removal; meaningful when static
	pat    string // a doublestar pattern for the values it may take: unknown parts are *, quoted metacharacters escaped
	static bool   // no expansion whose value is unknown before the shell runs ($x, $(…), $((…)), <(…))
	lit    bool   // static and no glob, brace or tilde expansion either: the word is exactly val
	assign bool   // an assignment NAME=value before the command name
}

// same reports whether w is exactly the rule word r.
func (w word) same(r word) bool {
	return w.static && w.val == r.val && w.lit == r.lit && w.assign == r.assign
}

// simpleCmd is one simple command: the unit rules are matched against.
type simpleCmd struct {
	words []word
	text  string // its source text, for messages
	// starts are the indices where the command run may begin, for loose
	// matching: after assignments and after each wrapper.
	starts []int
	// ask is why no pattern rule may approve the command ("" if one may).
	ask string
	// opaque is set when the command runs code the policy cannot see (eval
	// of an unknown string, source, a command name known only at run time):
	// it may match every deny and ask rule.
	opaque bool
	// inner is the index of the command a chain of wrappers runs (sudo,
	// timeout, xargs …): 0 when there is no wrapper.
	inner int
	// through is set when every wrapper of the chain only changes how the
	// inner command runs (timeout, nice, xargs): allow rules judge the
	// inner command alone. Otherwise (sudo, env FOO=1) they judge the
	// whole command and must name the inner command too.
	through bool
	// templated: arguments are added when it runs (xargs, find -exec), so
	// no exact rule approves it.
	templated bool
	// runBy is the text of the command that runs this one for each file
	// (find -exec): an exact rule that approves that command, words and
	// all, approves this one too.
	runBy string
}

// redirect is a redirection that may write a file.
type redirect struct {
	w    word
	text string // the redirection's source text
	dup  bool   // >&word: a file descriptor when word is a number or -
}

// shellAnalysis is what the policy knows of one Bash command.
type shellAnalysis struct {
	cmds []simpleCmd
	// err is set when the command could not be parsed.
	err error
	// protected lists the words that name protected paths.
	protected []string
	// redirects are the redirections that write.
	redirects []redirect
	// chdir is set when a command changes the shell's folder (cd, pushd),
	// so that relative paths later in the line are not where they seem.
	chdir bool
}

// analyzer parses shell commands. home and configDir stand in for ~, $HOME
// and $XDG_CONFIG_HOME when words are checked for protected paths.
type analyzer struct {
	home      string
	configDir string
	mentions  func(pat string) bool // reports whether a word pattern names a protected path
}

var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

func parseShell(src string) (*syntax.File, error) {
	p := parsers.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader(src), "")
	parsers.Put(p)
	return f, err
}

// analyze parses src and collects its simple commands.
func (an *analyzer) analyze(src string) *shellAnalysis {
	a := &shellAnalysis{}
	f, err := parseShell(src)
	if err != nil {
		a.err = err
		return a
	}
	an.collect(a, f, src, 0, false)
	return a
}

func (an *analyzer) collect(a *shellAnalysis, f *syntax.File, src string, depth int, templated bool) {
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			for _, r := range n.Redirs {
				if writes(r.Op) && r.Word != nil {
					w := an.word(r.Word)
					an.check(a, w)
					a.redirects = append(a.redirects, redirect{w: w, text: text(src, r), dup: r.Op == syntax.DplOut})
				}
			}
		case *syntax.CallExpr:
			an.call(a, n, src, depth, templated)
		case *syntax.DeclClause:
			c := simpleCmd{text: text(src, n)}
			c.words = append(c.words, lit(n.Variant.Value))
			for _, as := range n.Args {
				w := an.assign(as)
				w.assign = false // an argument of the declaration, not a prefix
				c.words = append(c.words, w)
				an.check(a, w)
			}
			c.starts = []int{0}
			a.cmds = append(a.cmds, c)
		case *syntax.LetClause:
			c := simpleCmd{text: text(src, n), words: []word{lit("let")}, starts: []int{0}}
			for _, x := range n.Exprs {
				c.words = append(c.words, word{val: text(src, x), pat: "*"})
			}
			a.cmds = append(a.cmds, c)
		case *syntax.ForClause:
			if wi, ok := n.Loop.(*syntax.WordIter); ok && envStyle(wi.Name.Value) {
				a.cmds = append(a.cmds, simpleCmd{
					text: "for " + wi.Name.Value + " in …",
					ask:  "the loop assigns " + wi.Name.Value + ", a variable that may change how other commands run",
				})
			}
		case *syntax.ProcSubst:
			a.cmds = append(a.cmds, simpleCmd{
				text: text(src, n),
				ask:  "process substitution runs a command whose output is read as a file",
			})
		}
		return true
	})
}

// writes reports whether a redirection may write to its target.
func writes(op syntax.RedirOperator) bool {
	switch op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrInOut, syntax.DplOut, syntax.RdrClob,
		syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
		return true
	}
	return false
}

// envStyle reports whether a loop variable looks like one that changes how
// other programs run (PATH, LD_PRELOAD, http_proxy): any upper-case letter,
// or a proxy setting.
func envStyle(name string) bool {
	return strings.ToLower(name) != name || strings.HasSuffix(name, "proxy")
}

func text(src string, n syntax.Node) string {
	start, end := n.Pos().Offset(), n.End().Offset()
	if start > end || end > uint(len(src)) {
		return ""
	}
	return src[start:end]
}

func lit(s string) word { return word{val: s, pat: escapeGlob(s), static: true, lit: true} }

func (an *analyzer) call(a *shellAnalysis, ce *syntax.CallExpr, src string, depth int, templated bool) {
	words := make([]word, 0, len(ce.Assigns)+len(ce.Args))
	for _, as := range ce.Assigns {
		words = append(words, an.assign(as))
	}
	for _, w := range ce.Args {
		words = append(words, an.word(w))
	}
	for _, w := range words {
		an.check(a, w)
	}
	if len(ce.Args) == 0 {
		a.cmds = append(a.cmds, simpleCmd{text: text(src, ce), words: words, starts: []int{0}})
		return
	}
	an.simple(a, words, text(src, ce), depth, templated)
}

// simple collects the simple command of words — and the commands it runs
// (find -exec) or whose code it runs (sh -c, eval, env -S) as commands of
// their own.
func (an *analyzer) simple(a *shellAnalysis, words []word, txt string, depth int, templated bool) {
	c := simpleCmd{text: txt, words: words}
	var dynamicName bool
	c.starts, dynamicName, c.through, templated = unwrap(c.words, templated)
	c.inner, c.templated = c.starts[len(c.starts)-1], templated
	if dynamicName {
		c.ask = "its command name is only known when the shell runs"
		c.opaque = true
	}
	for _, s := range c.starts {
		w := c.words[s]
		if !w.static {
			continue
		}
		args := c.words[s+1:]
		if wr, ok := wrappers[path.Base(w.val)]; ok && wr.opaque {
			c.ask = path.Base(w.val) + " runs another command, which the policy does not analyse"
			c.opaque = true
		}
		switch name := path.Base(w.val); name {
		case "cd", "pushd", "popd":
			a.chdir = true
		case "find":
			an.find(a, &c, args, depth)
		case "env":
		envArgs:
			for i := 0; i < len(args); i++ {
				if code, ok := splitString(args, i); ok {
					c.ask = "env -S runs a string split into a command"
					an.nested(a, &c, code, depth, templated)
					break
				}
				switch v := args[i].val; {
				case v == "-u" || v == "-C" || v == "--unset" || v == "--chdir":
					i++
				case v == "--" || !strings.HasPrefix(v, "-") && !strings.Contains(v, "="):
					break envArgs // the command
				}
			}
		case "script":
			if i, ok := optionValue(args, "-c", "--command"); ok {
				c.ask = "script -c runs a string as shell code"
				an.nested(a, &c, args[i:i+1], depth, templated)
			} else {
				c.ask = "script runs an interactive shell"
				c.opaque = true
			}
		case "flock":
			if i, ok := optionValue(args, "-c", "--command"); ok {
				c.ask = "flock -c runs a string as shell code"
				an.nested(a, &c, args[i:i+1], depth, templated)
			}
		case "eval":
			c.ask = "eval runs its arguments as shell code"
			an.nested(a, &c, args, depth, templated)
		case "source", ".":
			c.ask = name + " runs the commands in a file the policy cannot see"
			c.opaque = true
		case "exec":
			c.ask = "exec replaces the shell with another program"
		case "trap":
			if len(args) > 0 && !strings.HasPrefix(args[0].val, "-") {
				c.ask = "trap runs a string as shell code"
				an.nested(a, &c, args[:1], depth, templated)
			}
		case "watch":
			c.ask = "watch runs its arguments as shell code"
			i := 0
			for i < len(args) && strings.HasPrefix(args[i].val, "-") {
				if slices.Contains(wrappers["watch"].argOpts, args[i].val) {
					i++
				}
				i++
			}
			an.nested(a, &c, args[min(i, len(args)):], depth, templated)
		case "su", "runuser":
			for i, w := range args[:max(len(args)-1, 0)] {
				if w.val == "-c" || w.val == "--command" {
					c.ask = name + " -c runs a string as shell code"
					an.nested(a, &c, args[i+1:i+2], depth, templated)
				}
			}
		default:
			if shells[name] {
				if i, ok := dashC(args); ok {
					c.ask = name + " -c runs a string as shell code"
					an.nested(a, &c, args[i:i+1], depth, templated)
				}
			}
		}
	}
	a.cmds = append(a.cmds, c)
}

// find collects the commands find runs for each file it finds (-exec,
// -execdir, -ok, -okdir … ; or +) as commands of their own, and makes
// find's own writing actions (-delete, -fprint …) need approval.
func (an *analyzer) find(a *shellAnalysis, c *simpleCmd, args []word, depth int) {
	for j := 0; j < len(args); j++ {
		switch args[j].val {
		case "-delete":
			c.ask = "find -delete removes the files it finds"
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			c.ask = "find " + args[j].val + " writes a file"
		case "-exec", "-execdir", "-ok", "-okdir":
			end := j + 1
			for end < len(args) && !(args[end].static && (args[end].val == ";" || args[end].val == "+")) {
				end++
			}
			run := args[j+1 : end]
			if len(run) == 0 || !run[0].static {
				c.ask = "find " + args[j].val + " runs a command that is only known when the shell runs"
				c.opaque = true
			} else {
				texts := make([]string, len(run))
				for i, w := range run {
					texts[i] = quoteWord(w)
				}
				n := len(a.cmds)
				an.simple(a, slices.Clone(run), strings.Join(texts, " "), depth, true)
				for k := n; k < len(a.cmds); k++ {
					a.cmds[k].runBy = c.text
				}
			}
			j = end
		}
	}
}

// optionValue returns the index of the value of the option named by one
// of names (-c CODE, --command CODE, --command=CODE is not split).
func optionValue(args []word, names ...string) (int, bool) {
	for i, w := range args[:max(len(args)-1, 0)] {
		if slices.Contains(names, w.val) {
			return i + 1, true
		}
	}
	return 0, false
}

// splitString returns, when args[i] is env's -S (--split-string), the
// words that make the command it runs: the string, then the rest.
func splitString(args []word, i int) ([]word, bool) {
	w := args[i]
	switch {
	case !w.static:
		return nil, false
	case (w.val == "-S" || w.val == "--split-string") && i+1 < len(args):
		return args[i+1:], true
	case strings.HasPrefix(w.val, "--split-string="):
		return append([]word{lit(strings.TrimPrefix(w.val, "--split-string="))}, args[i+1:]...), true
	case strings.HasPrefix(w.val, "-S") && len(w.val) > 2:
		return append([]word{lit(w.val[2:])}, args[i+1:]...), true
	}
	return nil, false
}

// nested parses the code an eval or "sh -c" runs, so that its commands are
// judged too; code that is not static is opaque.
func (an *analyzer) nested(a *shellAnalysis, c *simpleCmd, args []word, depth int, templated bool) {
	code := make([]string, 0, len(args))
	for _, w := range args {
		if !w.static {
			c.opaque = true
			return
		}
		code = append(code, w.val)
	}
	if templated || depth >= maxShellDepth {
		// xargs and find -exec fill in arguments at run time.
		c.opaque = true
		return
	}
	src := strings.Join(code, " ")
	f, err := parseShell(src)
	if err != nil {
		c.opaque = true
		return
	}
	an.collect(a, f, src, depth+1, false)
}

// shells are the programs whose -c option runs a string as shell code.
var shells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true,
	"ash": true, "fish": true, "csh": true, "tcsh": true, "rbash": true,
}

// dashC returns the index of the code string in the arguments of a shell
// started with -c.
func dashC(args []word) (int, bool) {
	c := false
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.static {
			return 0, false
		}
		switch {
		case w.val == "--":
			if c && i+1 < len(args) {
				return i + 1, true
			}
			return 0, false
		case w.val == "-o" || w.val == "+o" || w.val == "-O" || w.val == "+O":
			i++
		case strings.HasPrefix(w.val, "--"):
		case strings.HasPrefix(w.val, "-") || strings.HasPrefix(w.val, "+"):
			if w.val[0] == '-' && strings.IndexByte(w.val, 'c') > 0 {
				c = true
			}
		default:
			return i, c
		}
	}
	return 0, false
}

// wrapper describes a program that runs another program given in its
// arguments.
type wrapper struct {
	argOpts    []string // options that take the next word as their value
	positional int      // leading operands before the command (timeout's duration)
	assigns    bool     // NAME=value words before the command (env)
	templated  bool     // the command's arguments are filled in at run time
	// through: it only changes how the command runs (its time, priority,
	// buffering), so allow rules judge the command it runs.
	through bool
	// opaque: it runs a command in a way the policy does not analyse.
	opaque bool
}

var wrappers = map[string]wrapper{
	"sudo":     {argOpts: []string{"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group", "--chdir", "--host", "--prompt", "--role", "--type", "--other-user", "--command-timeout", "--close-from"}},
	"doas":     {argOpts: []string{"-u", "-C"}},
	"env":      {argOpts: []string{"-u", "-C", "-S", "--unset", "--chdir", "--split-string"}, assigns: true, through: true},
	"command":  {through: true},
	"builtin":  {through: true},
	"exec":     {argOpts: []string{"-a"}},
	"nohup":    {through: true},
	"setsid":   {through: true},
	"time":     {argOpts: []string{"-f", "-o", "--format", "--output"}, through: true},
	"nice":     {argOpts: []string{"-n", "--adjustment"}, through: true},
	"ionice":   {argOpts: []string{"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"}, through: true},
	"timeout":  {argOpts: []string{"-s", "-k", "--signal", "--kill-after"}, positional: 1, through: true},
	"stdbuf":   {argOpts: []string{"-i", "-o", "-e", "--input", "--output", "--error"}, through: true},
	"chroot":   {argOpts: []string{"--userspec", "--groups"}, positional: 1},
	"xargs":    {argOpts: []string{"-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a", "--max-args", "--max-procs", "--delimiter", "--arg-file", "--max-lines", "--max-chars"}, templated: true, through: true},
	"busybox":  {through: true},
	"unbuffer": {through: true},
	"strace":   {argOpts: []string{"-e", "-o", "-p", "-s", "-u", "-E"}},
	"ltrace":   {argOpts: []string{"-e", "-o", "-p", "-s", "-u"}},
	"watch":    {argOpts: []string{"-n", "-d", "--interval"}},
	"flock":    {argOpts: []string{"-w", "--wait", "--timeout", "-E", "--conflict-exit-code"}, positional: 1, through: true},
	"taskset":  {positional: 1, through: true},
	"chrt":     {argOpts: []string{"-T", "-P", "-D", "--sched-runtime", "--sched-period", "--sched-deadline"}, positional: 1, through: true},
	"prlimit":  {argOpts: []string{"-p", "--pid", "-o", "--output"}, through: true},
	"setpriv": {argOpts: []string{"--reuid", "--regid", "--ruid", "--euid", "--rgid", "--egid", "--groups", "--inh-caps", "--ambient-caps",
		"--bounding-set", "--securebits", "--pdeathsig", "--selinux-label", "--apparmor-profile", "--landlock-access", "--landlock-rule"}},
	// Programs that run a command the policy does not follow: never
	// approved by a pattern rule, and caught by every deny rule.
	"unshare": {opaque: true}, "nsenter": {opaque: true}, "systemd-run": {opaque: true}, "firejail": {opaque: true},
	"bwrap": {opaque: true}, "proot": {opaque: true}, "fakeroot": {opaque: true}, "parallel": {opaque: true},
	"sg": {opaque: true}, "newgrp": {opaque: true}, "dbus-run-session": {opaque: true}, "xvfb-run": {opaque: true},
	"valgrind": {opaque: true}, "gdb": {opaque: true}, "perf": {opaque: true}, "nix-shell": {opaque: true},
	"catchsegv": {opaque: true}, "faketime": {opaque: true}, "ssh-agent": {opaque: true}, "expect": {opaque: true},
}

// unwrap returns where the command may begin: after its assignments, and
// after each wrapper program (sudo env FOO=1 rm → the indices of sudo, env
// and rm). dynamicName is set when a command name is not static; through
// when the command has wrappers, all of which only change how it runs (no
// assignments either); templated when a wrapper fills in arguments at run
// time.
func unwrap(ws []word, templated bool) (starts []int, dynamicName, through, tmpl bool) {
	i := 0
	for i < len(ws) && ws[i].assign {
		i++
	}
	if i > 0 {
		starts = append(starts, 0) // for rules that name the assignments
	}
	through = i == 0
	for i < len(ws) {
		starts = append(starts, i)
		w := ws[i]
		if !w.static {
			return starts, true, false, templated
		}
		wr, ok := wrappers[path.Base(w.val)]
		if !ok || wr.opaque {
			return starts, false, through && len(starts) > 1, templated
		}
		through = through && wr.through
		templated = templated || wr.templated
		j, pos := i+1, wr.positional
	args:
		for j < len(ws) {
			a := ws[j]
			switch {
			case !a.static:
				return starts, true, false, templated
			case a.val == "--":
				j++
				break args
			case len(a.val) > 1 && a.val[0] == '-':
				if wr.assigns {
					through = false // env -i, -u, -C: another environment or folder
				}
				j++
				for _, o := range wr.argOpts {
					if a.val == o {
						j++
						break
					}
				}
			case wr.assigns && strings.IndexByte(a.val, '=') > 0:
				through = false
				j++
			case pos > 0:
				pos--
				j++
			default:
				break args
			}
		}
		i = j
	}
	// The line ends in a wrapper with no command (nohup alone).
	return starts, false, false, templated
}

// assign turns an assignment into a word NAME=value.
func (an *analyzer) assign(as *syntax.Assign) word {
	switch {
	case as.Name == nil && as.Value != nil:
		return an.word(as.Value) // declare's options and expansions
	case as.Name == nil:
		return word{pat: "*"}
	case as.Naked:
		return lit(as.Name.Value)
	}
	op := "="
	if as.Append {
		op = "+="
	}
	w := word{static: true, lit: true}
	if as.Value != nil {
		w = an.word(as.Value)
	}
	if as.Index != nil || as.Array != nil {
		w = word{pat: "*"}
	}
	w.val = as.Name.Value + op + w.val
	w.pat = escapeGlob(as.Name.Value+op) + w.pat
	w.assign = true
	return w
}

// word resolves what it can of a shell word.
func (an *analyzer) word(w *syntax.Word) word {
	if len(w.Parts) == 1 {
		if l, ok := w.Parts[0].(*syntax.Lit); ok && plainLit(l.Value) {
			return word{val: l.Value, pat: l.Value, static: true, lit: true}
		}
	}
	var val, pat strings.Builder
	out := word{static: true, lit: true}
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			s := p.Value
			if i == 0 && strings.HasPrefix(s, "~") {
				out.lit = false
				end := strings.IndexByte(s, '/')
				if end < 0 {
					end = len(s)
				}
				if end == 1 && an.home != "" {
					pat.WriteString(escapeGlob(an.home))
				} else {
					pat.WriteString("*")
				}
				val.WriteString(s[:end])
				s = s[end:]
			}
			if an.unquoted(s, &val, &pat) {
				out.lit = false
			}
		case *syntax.SglQuoted:
			if p.Dollar && strings.IndexByte(p.Value, '\\') >= 0 {
				out.static = false // $'\x72m' escapes are not decoded
				pat.WriteString("*")
				continue
			}
			val.WriteString(p.Value)
			pat.WriteString(escapeGlob(p.Value))
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
					s := unescapeDouble(q.Value)
					val.WriteString(s)
					pat.WriteString(escapeGlob(s))
				case *syntax.ParamExp:
					out.static = false
					pat.WriteString(an.param(q))
				default:
					out.static = false
					pat.WriteString("*")
				}
			}
		case *syntax.ParamExp:
			out.static = false
			pat.WriteString(an.param(p))
		case *syntax.ExtGlob:
			out.lit = false
			val.WriteString(p.Op.String() + p.Pattern.Value + ")")
			pat.WriteString("*")
		default: // command, arithmetic and process substitution
			out.static = false
			pat.WriteString("*")
		}
	}
	if !out.static {
		out.lit = false
		out.val = ""
	} else {
		out.val = val.String()
	}
	out.pat = pat.String()
	return out
}

// plainLit reports whether an unquoted literal stands for itself.
func plainLit(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\', '*', '?', '[', ']', '{', '}', '~':
			return false
		}
	}
	return true
}

// unquoted appends an unquoted literal to val and pat and reports whether it
// contains glob or brace syntax.
func (an *analyzer) unquoted(s string, val, pat *strings.Builder) (special bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			if i+1 < len(s) {
				i++
				val.WriteByte(s[i])
				pat.WriteString(escapeGlob(s[i : i+1]))
				continue
			}
		case '*', '?':
			special = true
		case '[':
			// a bracket expression needs its ]; "[ -f x ]" is the test command
			special = special || strings.IndexByte(s[i+1:], ']') >= 0
		case '{':
			special = special || braces(s[i:])
		}
		val.WriteByte(c)
		pat.WriteByte(c)
	}
	return special
}

// braces reports whether s, starting with '{', begins a brace expansion:
// {a,b} or {1..3}, but not {} or {x}.
func braces(s string) bool {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return false
			}
		case ',':
			if depth == 1 {
				return true
			}
		case '.':
			if depth == 1 && strings.HasPrefix(s[i:], "..") {
				return true
			}
		}
	}
	return false
}

// unescapeDouble removes the backslashes that are quotes inside "…".
func unescapeDouble(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				i++
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// param returns the pattern for a parameter expansion: $HOME and
// $XDG_CONFIG_HOME are known, anything else may be anything.
func (an *analyzer) param(p *syntax.ParamExp) string {
	if p.Param == nil || p.Exp != nil || p.Repl != nil || p.Slice != nil || p.Index != nil ||
		p.Excl || p.Length || p.Width || len(p.Modifiers) > 0 {
		return "*"
	}
	switch p.Param.Value {
	case "HOME":
		if an.home != "" {
			return escapeGlob(an.home)
		}
	case "XDG_CONFIG_HOME":
		if an.configDir != "" {
			return escapeGlob(an.configDir)
		}
	}
	return "*"
}

func escapeGlob(s string) string {
	if !strings.ContainsAny(s, `*?[]{}\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '{', '}', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// check records w if it names a protected path.
func (an *analyzer) check(a *shellAnalysis, w word) {
	if an.mentions != nil && an.mentions(w.pat) {
		name := w.val
		if !w.static {
			name = w.pat
		}
		a.protected = append(a.protected, name)
	}
}

// shellWords parses a rule's command pattern into words. ok is false unless
// it is one simple command of static words.
func shellWords(s string) ([]word, bool) {
	f, err := parseShell(s)
	if err != nil || len(f.Stmts) != 1 {
		return nil, false
	}
	st := f.Stmts[0]
	ce, isCall := st.Cmd.(*syntax.CallExpr)
	if !isCall || len(st.Redirs) > 0 || st.Negated || st.Background || st.Coprocess || len(ce.Args) == 0 {
		return nil, false
	}
	var an analyzer
	ws := make([]word, 0, len(ce.Assigns)+len(ce.Args))
	for _, as := range ce.Assigns {
		ws = append(ws, an.assign(as))
	}
	for _, w := range ce.Args {
		ws = append(ws, an.word(w))
	}
	for _, w := range ws {
		if !w.static {
			return nil, false
		}
	}
	return ws, true
}

// quoteWord renders w so that the shell reads it back as the same word.
func quoteWord(w word) string {
	if w.assign {
		if i := strings.IndexByte(w.val, '='); i > 0 {
			name, val := w.val[:i+1], w.val[i+1:]
			if val == "" {
				return name
			}
			q, err := syntax.Quote(val, syntax.LangBash)
			if err != nil {
				return w.val
			}
			return name + q
		}
	}
	if !w.lit {
		return w.val // a glob stays a glob
	}
	q, err := syntax.Quote(w.val, syntax.LangBash)
	if err != nil {
		return w.val
	}
	return q
}
