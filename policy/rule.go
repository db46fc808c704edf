package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// Rule is one permission rule: a tool name and an optional pattern over the
// call's argument, written as "Tool" or "Tool(pattern)".
//
// A rule applies to the calls of the tool it names. Two names also stand
// for a kind of access, whatever tool makes it (tool.Access): Read applies
// to every path a call reads, lists or searches (the Read, Glob and Grep
// tools', a custom tool's), Edit to every path a call writes (Write's and
// Edit's among them). A name of the form mcp__server applies to every tool
// of that MCP server.
//
// What the pattern matches depends on what the call touches, as its tool
// declares it:
//
//   - none or "*": every call the rule applies to.
//   - a call that reads or writes paths: a doublestar glob over the
//     workspace-relative path ("src/**", "./docs/*.md"), with Claude
//     Code's other three forms: "//etc/**" is from the root of the
//     filesystem, "~/.aws/**" from the home folder, and "/src/**" from
//     the project root (the workspace) — and, as orca read it before, the
//     absolute path /src/** too. A deny or ask rule matches if any of the
//     call's paths does, an allow rule only if all of them do.
//   - a call that runs a command (Bash): "prefix *" (Claude Code's
//     current form) or "prefix:*" (its legacy one) matches a simple
//     command whose first words are the prefix's words ("git status *"
//     matches "git status" and "git status -s", not "git statusx"); a
//     pattern with * elsewhere is Claude Code's wildcard over the
//     command's words joined by single spaces, * matching any run of
//     characters ("npm*" matches npmrc, "git * main" git checkout main,
//     "* --version"; \* is a star); anything else matches exactly that
//     simple command. Words are the shell's, so quoting and spacing do
//     not matter, and a word known only when the shell runs ($x) may
//     match a deny or ask rule (the call is asked about).
//   - "param:value" (Claude Code's Tool(param:value), such as
//     Agent(model:opus) or Bash(run_in_background:true)), for a call whose
//     input has the field param: the field's string value, or the JSON of
//     a number or boolean, matched against value, * a wildcard (an object
//     or array never matches). For a call without the field, and for a
//     command's "prefix:*", the pattern means what the other forms say. A
//     deny or ask rule of this form applies to every call; an allow rule
//     approves only calls that run no command and touch no path (Task's,
//     an MCP tool's): commands and paths are judged by the forms above.
//   - any other call: "domain:example.com" matches a URL argument on that
//     host ("domain:*.example.com" also its subdomains: WebFetch's url);
//     any other pattern must equal the call's argument (its command,
//     file_path, path, url, skill, query or pattern field).
type Rule struct {
	Tool    string
	Pattern string
	// Raw is the rule as written; ParseRule sets it and New fills it in
	// when it is empty.
	Raw string
}

// String returns the rule as written.
func (r Rule) String() string {
	if r.Raw != "" {
		return r.Raw
	}
	if r.Pattern == "" {
		return r.Tool
	}
	return r.Tool + "(" + r.Pattern + ")"
}

// ErrRule is wrapped by every error about a malformed rule.
var ErrRule = errors.New("invalid permission rule")

// ParseRule parses "Tool" or "Tool(pattern)", such as "Bash(go test:*)",
// "Edit(src/**)" or "WebFetch(domain:example.com)".
func ParseRule(s string) (Rule, error) {
	raw := strings.TrimSpace(s)
	r := Rule{Raw: raw, Tool: raw}
	if i := strings.IndexByte(raw, '('); i >= 0 {
		if !strings.HasSuffix(raw, ")") {
			return Rule{}, fmt.Errorf("%w %q: the pattern must end with ')'", ErrRule, s)
		}
		r.Tool = strings.TrimSpace(raw[:i])
		r.Pattern = strings.TrimSpace(raw[i+1 : len(raw)-1])
		if r.Pattern == "" {
			return Rule{}, fmt.Errorf("%w %q: empty pattern (write %q for every call)", ErrRule, s, r.Tool)
		}
	}
	if _, err := compile(r); err != nil {
		return Rule{}, err
	}
	return r, nil
}

// Inert says why r, as a rule over commands, can match no command — its
// pattern is the legacy "prefix:*" or a wildcard over a pipe, a
// redirection or a list ("Bash(> /dev:*)", "Bash(base64*|:*)"), while
// rules match each simple command of a line on its own — or "" if it can.
// Settings files warn about such rules: a deny rule that cannot match
// protects nothing.
func (r Rule) Inert() string {
	c, err := compile(r)
	if err != nil || c.kind == kindAll || r.Tool == ReadRule || r.Tool == EditRule {
		return "" // Read and Edit rules are over paths only
	}
	_, isPrefix := strings.CutSuffix(c.pattern, ":*")
	switch {
	case c.cmd == kindVerbatim && isPrefix,
		c.cmd == kindWildcard && strings.ContainsAny(strings.ReplaceAll(c.pattern, ":*", ""), "|;&<>"):
		return fmt.Sprintf("%q is not the start of one simple command (it has a pipe, a redirection or a list), so as a command rule it matches no command: rules match each simple command of a line on its own", strings.TrimSuffix(c.pattern, ":*"))
	}
	return ""
}

// Rules are the permission rules of a policy. A call is denied if any deny
// rule matches it, asked about if any ask rule does, and allowed if an allow
// rule does — in that order of precedence.
type Rules struct {
	Allow, Deny, Ask []Rule
}

// ParseRules parses the three lists, as they come from flags or the
// permissions.allow, permissions.deny and permissions.ask settings.
func ParseRules(allow, deny, ask []string) (Rules, error) {
	var rs Rules
	var errs []error
	for _, l := range []struct {
		in  []string
		out *[]Rule
	}{{allow, &rs.Allow}, {deny, &rs.Deny}, {ask, &rs.Ask}} {
		for _, s := range l.in {
			r, err := ParseRule(s)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			*l.out = append(*l.out, r)
		}
	}
	return rs, errors.Join(errs...)
}

// The rule language's names for a kind of file access: a Read rule
// applies to every path any call reads, an Edit rule to every path any call
// writes. (They are the names of the built-in tools that do just that, as
// in Claude Code's rules.)
const (
	ReadRule = "Read"
	EditRule = "Edit"
)

type ruleKind uint8

const (
	kindAll      ruleKind = iota // every call the rule applies to
	kindPattern                  // a pattern, read as a glob, a command or an argument
	kindPrefix                   // command: prefix:*
	kindCommand                  // command: one exact simple command
	kindVerbatim                 // command: not one simple command; the normalised text
	kindWildcard                 // command: a pattern with * wildcards over its words
)

// compiled is a rule ready for matching: its pattern in each of the forms
// a call may need (the call's access decides which one is used).
type compiled struct {
	rule    Rule
	raw     string
	kind    ruleKind // kindAll or kindPattern
	pattern string   // the argument, verbatim

	// As a path glob.
	abs    bool // match the absolute path
	glob   string
	globOK bool
	// rooted: "/p", Claude Code's path from the project root: glob[1:]
	// over the workspace path, and (orca's older reading) glob over the
	// absolute path.
	rooted bool
	// home: "~/p", from the home folder: New makes it absolute (with no
	// home folder it matches nothing).
	home bool

	// As a command.
	cmd      ruleKind       // kindPrefix, kindCommand or kindVerbatim
	words    []word         // kindPrefix, kindCommand
	verbatim string         // kindVerbatim
	wild     *regexp.Regexp // kindWildcard: over the words, joined by single spaces
	// pieces are a kindWildcard pattern's literal text between its *s,
	// spaces squeezed: a command whose words are known only in part may
	// still be told apart by the first and the last.
	pieces []string

	// As a domain ("domain:…"), lower case; empty if not one.
	domain string

	// As Claude Code's Tool(param:value): the input field param (a direct
	// one) and the value it must have, * a wildcard; empty if the pattern
	// is not of that form. A call whose input has no such field is judged
	// by the pattern's other forms.
	param string
	value *regexp.Regexp
	// colonStar: the pattern is also the legacy "prefix:*", which it
	// stays for a call that runs a command (Bash(timeout:*) is the
	// timeout command, not Bash's timeout field).
	colonStar bool
}

// paramForm is the shape of a Tool(param:value) pattern.
var paramForm = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*):(.+)$`)

// wholeValue compiles the value of a param rule: * matches any run of
// characters, \* a star; anything else is literal.
func wholeValue(v string) *regexp.Regexp {
	pieces := stars(v)
	for i, p := range pieces {
		pieces[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(pieces, "(?s:.*)") + "$")
}

// matchParam matches a param rule against the call's input fields: yes or
// no when the input has the field (a string's value, or the JSON of a
// number, true, false or null; an object or array never matches), and
// false for decided when it has not.
func (c *compiled) matchParam(in map[string]json.RawMessage) (m match, decided bool) {
	raw, ok := in[c.param]
	if !ok {
		return no, false
	}
	var s string
	switch {
	case len(raw) > 0 && raw[0] == '"':
		if json.Unmarshal(raw, &s) != nil {
			return no, true
		}
	case len(raw) > 0 && (raw[0] == '{' || raw[0] == '['):
		return no, true
	default:
		s = string(raw)
	}
	if c.value.MatchString(s) {
		return yes, true
	}
	return no, true
}

func compile(r Rule) (*compiled, error) {
	if !utf8.ValidString(r.Tool) || !utf8.ValidString(r.Pattern) {
		// A stray byte of another encoding (a settings file saved as
		// Latin-1): no command or path can match it as written.
		return nil, fmt.Errorf("%w %q: not valid UTF-8", ErrRule, r.String())
	}
	if r.Tool == "" || strings.ContainsAny(r.Tool, "() \t\n") {
		return nil, fmt.Errorf("%w %q: %q is not a tool name", ErrRule, r.String(), r.Tool)
	}
	c := &compiled{rule: r, raw: r.String(), pattern: r.Pattern}
	p := r.Pattern
	prefix, isPrefix := strings.CutSuffix(p, ":*")
	if p == "" || p == "*" || isPrefix && strings.TrimSpace(prefix) == "" {
		return c, nil // Tool, Tool(*), Bash(:*)
	}
	c.kind = kindPattern

	// Claude Code's four kinds of path pattern: //abs (from the root of
	// the filesystem), ~/p (from the home folder, made absolute by New),
	// /p (from the project root — orca's rules, before, meant the
	// absolute path, which it still matches too), p or ./p (from the
	// workspace).
	switch {
	case strings.HasPrefix(p, "//"):
		c.abs, c.glob = true, p[1:]
	case strings.HasPrefix(p, "~/"):
		c.home, c.glob = true, p[2:]
	case strings.HasPrefix(p, "/"):
		c.abs, c.glob, c.rooted = true, p, true
	default:
		c.glob = strings.TrimPrefix(p, "./")
	}
	c.globOK = doublestar.ValidatePattern(c.glob)
	if !c.globOK && (r.Tool == ReadRule || r.Tool == EditRule) {
		return nil, fmt.Errorf("%w %q: %q is not a valid glob", ErrRule, c.raw, p)
	}

	src := p
	if isPrefix && len(stars(prefix)) > 1 {
		// The legacy form over a wildcard ("python*-c:*", as published
		// configurations write it): the wildcard, then anything or nothing.
		c.cmd = kindWildcard
		c.wild, c.pieces, _ = wildcard(prefix + " *")
		src = ""
	} else if isPrefix {
		src = prefix
	} else if rest, ok := strings.CutSuffix(p, " *"); ok && strings.TrimSpace(rest) != "" && !strings.Contains(rest, "*") {
		// Claude Code's "git push *": those words, then anything or
		// nothing — the legacy "git push:*".
		isPrefix, src = true, rest
	} else if re, pieces, ok := wildcard(p); ok {
		// Claude Code's wildcards elsewhere: "npm*", "* --version",
		// "git * main".
		c.cmd, c.wild, c.pieces = kindWildcard, re, pieces
		src = ""
	}
	if c.cmd != kindWildcard {
		switch ws, ok := shellWords(src); {
		case ok && isPrefix:
			c.cmd, c.words = kindPrefix, ws
		case ok:
			c.cmd, c.words = kindCommand, ws
		default:
			c.cmd, c.verbatim = kindVerbatim, normalize(p)
		}
	}

	if d, ok := strings.CutPrefix(p, "domain:"); ok {
		c.domain = strings.ToLower(d)
		if c.domain == "" {
			return nil, fmt.Errorf("%w %q: empty domain", ErrRule, c.raw)
		}
	} else if m := paramForm.FindStringSubmatch(p); m != nil {
		c.param, c.value, c.colonStar = m[1], wholeValue(m[2]), isPrefix
	}
	return c, nil
}

func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// pathSel selects the paths of a call that a rule applies to.
type pathSel uint8

const (
	allPaths pathSel = iota
	readPaths
	writePaths
)

// covers reports whether a rule naming ruleTool applies to c, and to which
// of its paths: a rule naming the call's tool (by its name or an alias, or
// its MCP server) applies to the whole call; Read and Edit apply to the
// paths any call reads or writes.
func (c *call) covers(ruleTool string) (pathSel, bool) {
	if ruleTool == c.tool || slices.Contains(c.aliases, ruleTool) {
		return allPaths, true
	}
	if server, ok := strings.CutPrefix(ruleTool, "mcp__"); ok && server != "" {
		name, tools, ok := strings.Cut(server, "__")
		switch {
		case !ok:
			return allPaths, strings.HasPrefix(c.tool, ruleTool+"__")
		case name != "" && strings.Contains(tools, "*"):
			// Claude Code's mcp__server__* (every tool of the server) and
			// mcp__server__get_* (those whose names start so).
			m, _ := path.Match(tools, strings.TrimPrefix(c.tool, "mcp__"+name+"__"))
			return allPaths, m && strings.HasPrefix(c.tool, "mcp__"+name+"__")
		}
	}
	var sel pathSel
	switch ruleTool {
	case ReadRule:
		sel = readPaths
	case EditRule:
		sel = writePaths
	default:
		return 0, false
	}
	for _, pa := range c.paths {
		if pa.selected(sel) {
			return sel, true
		}
	}
	return 0, false
}

func (pa *pathArg) selected(sel pathSel) bool {
	return sel == allPaths || (sel == writePaths) == pa.write
}

// match is the answer of a rule to a call.
type match uint8

const (
	no    match = iota
	maybe       // the call may match once the shell expands it
	yes
)

// matchAny matches a deny or ask rule: the path as given, or where it
// really leads.
func (c *compiled) matchAny(t target) bool {
	return c.matchPath(t) || t.link != nil && c.matchPath(*t.link)
}

// matchAll matches an allow rule: the path as given and where it really
// leads.
func (c *compiled) matchAll(t target) bool {
	return c.matchPath(t) && (t.link == nil || c.matchPath(*t.link))
}

// matchPath matches a path rule against a call's target.
func (c *compiled) matchPath(t target) bool {
	if c.home {
		return false // no home folder
	}
	if c.rooted && t.inside {
		if ok, _ := doublestar.Match(c.glob[1:], t.rel); ok {
			return true
		}
	}
	if c.abs {
		if t.abs == "" {
			return false
		}
		ok, _ := doublestar.Match(c.glob, slash(t.abs))
		return ok
	}
	if !t.inside {
		return false
	}
	ok, _ := doublestar.Match(c.glob, t.rel)
	return ok
}

// hostOf returns the lower-case host of a URL, or "".
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// matchDomain matches a domain rule against a URL.
func (c *compiled) matchDomain(raw string) bool {
	host := hostOf(raw)
	if host == "" {
		return false
	}
	if sub, ok := strings.CutPrefix(c.domain, "*."); ok {
		return host == sub || strings.HasSuffix(host, "."+sub)
	}
	return host == c.domain
}

// stars splits a pattern at its wildcards — * not escaped as \* — into
// the literal text before, between and after them: one piece for a
// pattern without any, n+1 for n.
func stars(p string) []string {
	var pieces []string
	var lit strings.Builder
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == '\\' && i+1 < len(p) && p[i+1] == '*':
			lit.WriteByte('*')
			i++
		case p[i] == '*':
			pieces = append(pieces, lit.String())
			lit.Reset()
		default:
			lit.WriteByte(p[i])
		}
	}
	return append(pieces, lit.String())
}

// squeeze makes each run of spaces in s one space, keeping one at either
// end: a space next to a * is a word boundary ("git * main").
func squeeze(s string) string {
	f := strings.Join(strings.Fields(s), " ")
	switch {
	case s == "":
		return ""
	case f == "":
		return " "
	}
	if s[0] == ' ' {
		f = " " + f
	}
	if s[len(s)-1] == ' ' {
		f += " "
	}
	return f
}

// wildcard compiles a command pattern with * wildcards (Claude Code's: *
// matches any run of characters, spaces included; \* is a star) into a
// regular expression over a command's words joined by single spaces, and
// returns its pieces (stars, squeezed). A trailing " *" may match nothing
// ("git * *" matches git push). It reports false for a pattern with no
// wildcard.
func wildcard(p string) (*regexp.Regexp, []string, bool) {
	pieces := stars(p)
	if len(pieces) == 1 {
		return nil, nil, false
	}
	quoted := make([]string, len(pieces))
	for i := range pieces {
		pieces[i] = squeeze(pieces[i])
		quoted[i] = regexp.QuoteMeta(pieces[i])
	}
	re := "^" + strings.Join(quoted, ".*") + "$"
	if n := len(pieces); pieces[n-1] == "" && strings.HasSuffix(pieces[n-2], " ") {
		re = strings.TrimSuffix(re, " .*$") + "(?: .*)?$"
	}
	return regexp.MustCompile(re), pieces, true
}

// wildAt reports whether the words match a kindWildcard rule: yes if they
// are all literal and, joined, match; maybe if a word is known only when
// the shell runs (it may expand to what matches) and the words known do
// not already rule the pattern out by its lead or tail; no otherwise.
// loose also tries the command name as a path's base (/bin/rm is rm).
func (c *compiled) wildAt(ws []word, loose bool) match {
	if len(ws) == 0 {
		return no
	}
	vals := make([]string, len(ws))
	for i, w := range ws {
		if !w.lit || w.assign {
			if !loose {
				return no
			}
			return c.wildMaybe(ws)
		}
		vals[i] = w.val
	}
	if c.wild.MatchString(strings.Join(vals, " ")) {
		return yes
	}
	if loose && path.Base(vals[0]) != vals[0] {
		vals[0] = path.Base(vals[0])
		if c.wild.MatchString(strings.Join(vals, " ")) {
			return yes
		}
	}
	return no
}

// wildMaybe answers for words some of which are known only when the shell
// runs: no if the literal words before the first unknown one contradict
// the pattern's lead, or those after the last unknown one its tail;
// maybe otherwise.
func (c *compiled) wildMaybe(ws []word) match {
	// known joins the literal words from the first, up to an unknown one.
	known := func(ws []word) string {
		var b strings.Builder
		for i, w := range ws {
			if !w.lit || w.assign {
				break
			}
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(w.val)
		}
		return b.String()
	}
	lead, tail := c.pieces[0], c.pieces[len(c.pieces)-1]
	if head := known(ws); head != "" || lead != "" {
		// The words before the first unknown one, then a space: the
		// unknown word begins a new word.
		if head != "" {
			head += " "
		}
		if n := min(len(head), len(lead)); head[:n] != lead[:n] {
			return no
		}
		if len(c.pieces) == 2 && tail == "" && strings.HasPrefix(head, lead) {
			return yes // "npm*" and npm run $X: npm run …, whatever $X is
		}
	}
	last := len(ws)
	for last > 0 && ws[last-1].lit && !ws[last-1].assign {
		last--
	}
	if end := known(ws[last:]); end != "" && tail != "" {
		end = " " + end
		if n := min(len(end), len(tail)); end[len(end)-n:] != tail[len(tail)-n:] {
			return no
		}
	}
	return maybe
}

// strict reports whether a command rule approves the simple command: its
// words, from the first, are the rule's words. A command run through
// wrappers that only change how it runs (timeout, nice, xargs) is judged
// as the command it runs; through other wrappers (sudo, env FOO=1), the
// rule must name the command run too: Bash(sudo:*) approves no command.
// A command whose arguments are added when it runs (xargs, find -exec)
// is approved by prefix rules only.
func (c *compiled) strict(cmd *simpleCmd) bool {
	if cmd.ask != "" || cmd.templated && c.cmd != kindPrefix {
		return false
	}
	if c.cmd == kindWildcard {
		// Through wrappers that only change how it runs, the command run;
		// through others (sudo), none: a wildcard could cover the wrapper.
		switch {
		case cmd.inner == 0:
			return c.wildAt(cmd.words, false) == yes
		case cmd.through:
			return c.wildAt(cmd.words[cmd.inner:], false) == yes
		}
		return false
	}
	if cmd.inner > 0 && cmd.through && c.strictAt(cmd.words[cmd.inner:]) {
		return true
	}
	return c.strictAt(cmd.words) && (cmd.inner == 0 || c.cmd == kindCommand || len(c.words) > cmd.inner)
}

// strictAt reports whether the words, from the first, are the rule's.
func (c *compiled) strictAt(ws []word) bool {
	switch c.cmd {
	case kindPrefix:
		if len(ws) < len(c.words) {
			return false
		}
	case kindCommand:
		if len(ws) != len(c.words) {
			return false
		}
	default:
		return false
	}
	for i, r := range c.words {
		if !ws[i].same(r) {
			return false
		}
	}
	return true
}

// loose reports whether a command deny or ask rule may catch the simple
// command, wherever the command really begins.
func (c *compiled) loose(cmd *simpleCmd) match {
	if c.cmd != kindPrefix && c.cmd != kindCommand && c.cmd != kindWildcard {
		return no
	}
	best := no
	for _, s := range cmd.starts {
		at := c.looseAt
		if c.cmd == kindWildcard {
			at = func(ws []word) match { return c.wildAt(ws, true) }
		}
		if m := at(cmd.words[s:]); m > best {
			best = m
		}
	}
	if best < maybe && cmd.opaque {
		best = maybe
	}
	return best
}

func (c *compiled) looseAt(ws []word) match {
	j := 0
	for i, r := range c.words {
		if j >= len(ws) {
			return no
		}
		w := ws[j]
		switch {
		case !w.static:
			return maybe // it may expand to anything, even to several words
		case w.same(r):
		case !w.lit:
			return maybe // a glob or brace expansion: {rm,-rf,x} runs rm
		case i == 0 && !r.assign && !w.assign && path.Base(w.val) == r.val:
			// the command name as a path: /bin/rm is rm.
		default:
			return no
		}
		j++
	}
	if c.cmd == kindPrefix || j == len(ws) {
		return yes
	}
	for _, w := range ws[j:] {
		if !w.lit {
			return maybe
		}
	}
	return no
}

// argumentFields hold the string an exact rule is compared with for a
// call that touches no path and runs no command: the first present of
// them (Skill(name), WebFetch(url), Task(Explore) — Claude Code's
// Agent(Explore) — by its subagent_type).
var argumentFields = []string{"command", "file_path", "path", "notebook_path", "url", "skill", "query", "pattern", "subagent_type"}
