package policy

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Rule is one permission rule: a tool name and an optional pattern over the
// call's argument, written as "Tool" or "Tool(pattern)".
//
// The pattern means, by tool:
//
//   - none or "*": every call of the tool.
//   - Read, Write, Edit, Glob, Grep: a doublestar glob over the
//     workspace-relative path ("src/**", "docs/*.md"); a pattern starting
//     with "/" is matched against the absolute path instead. Edit rules also
//     apply to Write, and Read rules to Glob and Grep, so that one rule
//     covers every tool that changes (or reads) files.
//   - Bash: "prefix:*" matches a simple command whose first words are the
//     prefix's words ("git status:*" matches "git status -s", not
//     "git statusx"); anything else matches exactly that simple command.
//     Both are parsed as shell words, so quoting and spacing do not matter.
//   - WebFetch: "domain:example.com" matches URLs on that host;
//     "domain:*.example.com" also its subdomains.
//   - any other form or tool: the pattern must equal the call's argument
//     (its command, file_path, path, url, skill, query or pattern field).
//
// A tool name of the form mcp__server matches every tool of that MCP server.
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

type ruleKind uint8

const (
	kindAll      ruleKind = iota // every call of the tool
	kindPath                     // a glob over the file path
	kindPrefix                   // Bash prefix:*
	kindCommand                  // Bash exact simple command
	kindVerbatim                 // Bash pattern that is not one simple command: the normalised text
	kindDomain                   // WebFetch domain:
	kindExact                    // the argument, verbatim
)

// compiled is a rule ready for matching.
type compiled struct {
	rule    Rule
	raw     string
	kind    ruleKind
	abs     bool   // kindPath: match the absolute path
	pattern string // kindPath glob, kindDomain host, kindExact and kindVerbatim text
	words   []word // kindPrefix, kindCommand
}

func compile(r Rule) (*compiled, error) {
	if r.Tool == "" || strings.ContainsAny(r.Tool, "() \t\n") {
		return nil, fmt.Errorf("%w %q: %q is not a tool name", ErrRule, r.String(), r.Tool)
	}
	c := &compiled{rule: r, raw: r.String(), pattern: r.Pattern}
	p := r.Pattern
	if p == "" || p == "*" {
		return c, nil
	}
	switch {
	case pathTool(r.Tool):
		c.kind = kindPath
		c.abs = strings.HasPrefix(p, "/")
		if !c.abs {
			c.pattern = strings.TrimPrefix(p, "./")
		}
		if !doublestar.ValidatePattern(c.pattern) {
			return nil, fmt.Errorf("%w %q: %q is not a valid glob", ErrRule, c.raw, p)
		}
	case r.Tool == "Bash":
		prefix, isPrefix := strings.CutSuffix(p, ":*")
		if isPrefix && strings.TrimSpace(prefix) == "" {
			return c, nil // Bash(:*)
		}
		src := p
		if isPrefix {
			src = prefix
		}
		if ws, ok := shellWords(src); ok {
			c.words = ws
			c.kind = kindCommand
			if isPrefix {
				c.kind = kindPrefix
			}
		} else {
			c.kind = kindVerbatim
			c.pattern = normalize(p)
		}
	case r.Tool == "WebFetch" && strings.HasPrefix(p, "domain:"):
		c.kind = kindDomain
		c.pattern = strings.ToLower(strings.TrimPrefix(p, "domain:"))
		if c.pattern == "" {
			return nil, fmt.Errorf("%w %q: empty domain", ErrRule, c.raw)
		}
	default:
		c.kind = kindExact
	}
	return c, nil
}

func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// pathTool reports whether the tool's argument is a file path.
func pathTool(tool string) bool {
	switch tool {
	case "Read", "Write", "Edit", "Glob", "Grep":
		return true
	}
	return false
}

// applies reports whether a rule written for ruleTool covers a call of tool.
func applies(ruleTool, tool string) bool {
	if ruleTool == tool {
		return true
	}
	switch ruleTool {
	case "Edit":
		return tool == "Write"
	case "Read":
		return tool == "Glob" || tool == "Grep"
	}
	if server, ok := strings.CutPrefix(ruleTool, "mcp__"); ok && server != "" && !strings.Contains(server, "__") {
		return strings.HasPrefix(tool, ruleTool+"__")
	}
	return false
}

// match is the answer of a rule to a call.
type match uint8

const (
	no    match = iota
	maybe       // the call may match once the shell expands it
	yes
)

// matchPath matches a path rule against a call's target.
func (c *compiled) matchPath(t target) bool {
	if c.abs {
		if t.abs == "" {
			return false
		}
		ok, _ := doublestar.Match(c.pattern, slash(t.abs))
		return ok
	}
	if !t.inside {
		return false
	}
	ok, _ := doublestar.Match(c.pattern, t.rel)
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

// matchDomain matches a WebFetch domain rule against a URL.
func (c *compiled) matchDomain(raw string) bool {
	host := hostOf(raw)
	if host == "" {
		return false
	}
	if sub, ok := strings.CutPrefix(c.pattern, "*."); ok {
		return host == sub || strings.HasSuffix(host, "."+sub)
	}
	return host == c.pattern
}

// strict reports whether a Bash rule approves the simple command: its words,
// from the first, are the rule's words.
func (c *compiled) strict(cmd *simpleCmd) bool {
	if cmd.ask != "" {
		return false
	}
	ws := cmd.words
	switch c.kind {
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

// loose reports whether a Bash deny or ask rule may catch the simple
// command, wherever the command really begins.
func (c *compiled) loose(cmd *simpleCmd) match {
	if c.kind != kindPrefix && c.kind != kindCommand {
		return no
	}
	best := no
	for _, s := range cmd.starts {
		if m := c.looseAt(cmd.words[s:]); m > best {
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
	if c.kind == kindPrefix || j == len(ws) {
		return yes
	}
	for _, w := range ws[j:] {
		if !w.lit {
			return maybe
		}
	}
	return no
}

// argument is the string an exact rule is compared with for a tool the
// policy does not know.
var argumentFields = []string{"command", "file_path", "path", "notebook_path", "url", "skill", "query", "pattern"}
