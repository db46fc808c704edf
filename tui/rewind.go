package tui

import (
	"fmt"
	"io"
	"strings"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/rewind"
	"github.com/orca-agent/orca/tool"
)

// WriteCheckpoints writes a session's checkpoints, oldest first: each
// turn with the paths it changed (+ made, - removed, ~ changed); how is
// "orca rewind N" or "/rewind N", the command that rewinds.
func WriteCheckpoints(w io.Writer, session string, cps []rewind.Checkpoint, how string) {
	if len(cps) == 0 {
		fmt.Fprintf(w, "Session %s has no turn that changed the workspace.\n", session)
		return
	}
	fmt.Fprintf(w, "Session %s: %s that changed the workspace, oldest first.\n", session, Plural(len(cps), "turn"))
	for i, cp := range cps {
		fmt.Fprintf(w, "\n%d. %s, %s: %s\n", i+1, cp.ID, cp.Taken.Local().Format("2006-01-02 15:04:05"), Plural(len(cp.Changes), "path"))
		for _, c := range cp.Changes {
			fmt.Fprintf(w, "   %s %s\n", ChangeMark(c), tool.OneLine(c.Path))
		}
		if cp.Note != "" {
			fmt.Fprintf(w, "   (%s)\n", cp.Note)
		}
	}
	fmt.Fprintf(w, "\n'%s' puts the workspace back as it was before turn N.\n", how)
}

// ChangeMark is how a change is listed: + made, - removed, ~ changed.
func ChangeMark(c rewind.Change) string {
	switch {
	case c.Before == nil:
		return "+"
	case c.After == nil:
		return "-"
	}
	return "~"
}

// RewindStopped says why a rewind put nothing back: the paths that
// changed since; force is how to put them back anyway ("--force").
func RewindStopped(r rewind.Restored, force string) string {
	var b strings.Builder
	for _, c := range r.Conflicts {
		fmt.Fprintf(&b, "\n  %s: %s", tool.OneLine(c.Path), c.Why)
	}
	n := len(r.Conflicts)
	return fmt.Sprintf("nothing was put back: %s changed since the turns changed %s:%s\nLook at %s, then rewind with %s to put %s back too",
		Plural(n, "path"), them(n), b.String(), them(n), force, them(n))
}

// WriteRewound writes what a rewind put back, before the first of the
// turns it undid.
func WriteRewound(w io.Writer, r rewind.Restored, first string) {
	fmt.Fprintf(w, "Put back %s as %s before turn %s:\n", Plural(len(r.Paths), "path"), were(len(r.Paths)), first)
	for _, p := range r.Paths {
		fmt.Fprintf(w, "  %s\n", tool.OneLine(p))
	}
	if len(r.Lost) > 0 {
		fmt.Fprintf(w, "Left as %s: what %s before is not kept (%s):\n", them(len(r.Lost)), were(len(r.Lost)), notKept)
		for _, p := range r.Lost {
			fmt.Fprintf(w, "  %s\n", tool.OneLine(p))
		}
	}
}

// notKept says why a file's content is not kept.
var notKept = fmt.Sprintf("larger than %s, or past the %s a snapshot reads", llm.ByteSize(rewind.DefaultMaxFile), llm.ByteSize(rewind.DefaultMaxRead))

func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

func were(n int) string {
	if n == 1 {
		return "it was"
	}
	return "they were"
}
