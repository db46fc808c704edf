package mcp

import (
	"fmt"
	"io"
	"strconv"
)

// WriteStatus writes the servers' status for a person: each server
// up with its tools, prompts (the commands "/mcp__<server>__<prompt>")
// and whether it serves resources; each other with why it is not.
func WriteStatus(w io.Writer, servers []Status) {
	for _, s := range servers {
		if s.State == StateNeedsLogin {
			fmt.Fprintf(w, "! %s (%s): needs login: %s\n", s.Name, s.Type, s.Error)
			continue
		}
		if s.State != StateUp {
			fmt.Fprintf(w, "✗ %s (%s): %s: %s\n", s.Name, s.Type, s.State, s.Error)
			continue
		}
		what := s.Type
		if s.Server != "" {
			what += ", " + s.Server
		}
		extra := ""
		if len(s.Prompts) > 0 {
			extra += ", " + plural(len(s.Prompts), "prompt")
		}
		if s.Resources {
			extra += ", resources"
		}
		fmt.Fprintf(w, "✓ %s (%s): %s%s\n", s.Name, what, plural(len(s.Tools), "tool"), extra)
		for _, t := range s.Tools {
			fmt.Fprintf(w, "    %s\n", t)
		}
		for _, p := range s.Prompts {
			fmt.Fprintf(w, "    /%s\n", p)
		}
	}
}

// plural writes n what, the plural with an s.
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
