package policy

import (
	"fmt"
	"strings"
	"testing"
)

// describeReference is how reasons named a call when they were written
// with fmt: describe and because must write the same text.
func describeReference(c *call, part *simpleCmd) string {
	switch c.class {
	case classBash:
		if part != nil && strings.TrimSpace(part.text) != strings.TrimSpace(c.command) {
			return fmt.Sprintf("%s command %q (in %q)", c.tool, clip(part.text), clip(c.command))
		}
		return fmt.Sprintf("%s command %q", c.tool, clip(c.command))
	case classPath:
		names := make([]string, len(c.paths))
		for i, pa := range c.paths {
			name := pa.given
			if pa.t.inside && pa.t.rel != name {
				name = pa.t.rel
			}
			names[i] = fmt.Sprintf("%q", name)
		}
		return fmt.Sprintf("%s of %s", c.tool, strings.Join(names, " and "))
	}
	if c.arg != "" {
		return fmt.Sprintf("%s call on %q", c.tool, clip(c.arg))
	}
	return c.tool + " call"
}

func TestDescribeWritesWhatFmtWrote(t *testing.T) {
	odd := []string{"", "ls -la", "echo \"hi\" > a.txt", "tab\there\nnewline", "héllo ☃", "bad \xff", strings.Repeat("long ", 80), "a\\b"}
	var calls []call
	for _, s := range odd {
		calls = append(calls,
			call{tool: "Bash", class: classBash, command: s},
			call{tool: "Deploy", arg: s},
			call{tool: "Read", class: classPath, paths: []pathArg{{given: s}}},
			call{tool: "Edit", class: classPath, paths: []pathArg{{given: "/w/" + s, t: target{inside: true, rel: s}}, {given: s + "2"}}},
		)
	}
	for _, c := range calls {
		for _, part := range []*simpleCmd{nil, {text: "ls"}, {text: " " + c.command + " "}} {
			if got, want := describe(&c, part), describeReference(&c, part); got != want {
				t.Errorf("describe = %q, want %q", got, want)
			}
		}
		if got, want := because(&c, " is allowed by ", "mode", "."), describeReference(&c, nil)+" is allowed by mode."; got != want {
			t.Errorf("because = %q, want %q", got, want)
		}
	}
}
