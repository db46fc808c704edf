package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/extension"
)

// reportExtensions says on w, once per run, which extensions of workspace
// ws do not run and the command that would run them, and what trusted
// ones were granted but do not get.
func reportExtensions(w io.Writer, exts []*extension.Extension, ws string) {
	dir := ""
	if real, err := config.Canonical(ws); err == nil {
		if cwd, err := config.Canonical("."); err != nil || cwd != real {
			dir = " " + shellQuote(real)
		}
	}
	for _, x := range exts {
		if !x.Trusted {
			fmt.Fprintf(w, "orca: extension %s (%s) %s; to run it: orca trust %s%s\n", x.Manifest.Name, x.File, x.Reason, x.Grant(), dir)
			continue
		}
		for _, n := range x.Notes {
			fmt.Fprintf(w, "orca: warning: extension %s: %s\n", x.Manifest.Name, n)
		}
	}
}

// describeExtension says what extension x asks for, for people: its
// handler, the events and hooks it receives, its ports and resources.
func describeExtension(x *extension.Extension) string {
	m := &x.Manifest
	var b strings.Builder
	fmt.Fprintf(&b, "extension %s (%s)\n", m.Name, x.File)
	fmt.Fprintf(&b, "  handler       %s\n", m.Handler)
	if evs := m.RuntimeEvents(); len(evs) > 0 {
		s := make([]string, len(evs))
		for i, e := range evs {
			s[i] = string(e)
		}
		fmt.Fprintf(&b, "  events        %s (observes them)\n", strings.Join(s, ", "))
	}
	if hs := m.Hooks(); len(hs) > 0 {
		s := make([]string, len(hs))
		for i, h := range hs {
			s[i] = string(h)
		}
		fmt.Fprintf(&b, "  hooks         %s (answers them: it may block or change calls)\n", strings.Join(s, ", "))
	}
	caps := make([]string, len(m.Capabilities))
	for i, c := range m.Capabilities {
		caps[i] = string(c)
	}
	fmt.Fprintf(&b, "  capabilities  %s\n", strings.Join(caps, ", "))
	if len(m.ResourceKeys) > 0 {
		fmt.Fprintf(&b, "  resources     %s\n", strings.Join(m.ResourceKeys, ", "))
	}
	fmt.Fprintf(&b, "  timeout       %s per request\n", m.Timeout)
	return b.String()
}
