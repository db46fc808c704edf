package main

import (
	"fmt"
	"io"

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
