package tui

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"unicode/utf8"

	udiff "github.com/aymanbagabas/go-udiff"

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

// notFile is how a change of a folder or a link is shown after its path:
// "/" for a folder, the link's targets (before → after) for a link.
func notFile(before, after *rewind.Entry) string {
	link := func(e *rewind.Entry) string {
		if e == nil || e.Mode&fs.ModeSymlink == 0 {
			return ""
		}
		return tool.OneLine(e.Link)
	}
	from, to := link(before), link(after)
	switch {
	case from == "" && to == "":
		return "/"
	case from == "":
		return " (a link to " + to + ")"
	case to == "":
		return " (a link to " + from + ")"
	}
	return " (a link: " + from + " → " + to + ")"
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

// WriteDiff writes what a checkpoint changed as unified diffs, a file at a
// time, content read with content (rewind.Store.Content): a binary file,
// or one whose content was not kept, is named, not shown.
func WriteDiff(w io.Writer, cp rewind.Checkpoint, content func(digest string) ([]byte, error)) {
	text := func(e *rewind.Entry) (string, string) {
		switch {
		case e == nil || !e.Mode.IsRegular():
			return "", ""
		case e.Digest == "":
			return "", "not kept: " + notKept
		}
		b, err := content(e.Digest)
		if err != nil {
			return "", err.Error()
		}
		if bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) {
			return "", "binary, " + llm.ByteSize(int64(len(b)))
		}
		return string(b), ""
	}
	for _, c := range cp.Changes {
		p := tool.OneLine(c.Path)
		if (c.Before == nil || !c.Before.Mode.IsRegular()) && (c.After == nil || !c.After.Mode.IsRegular()) {
			fmt.Fprintf(w, "%s %s%s\n", ChangeMark(c), p, notFile(c.Before, c.After))
			continue
		}
		before, whyB := text(c.Before)
		after, whyA := text(c.After)
		if whyB != "" || whyA != "" {
			fmt.Fprintf(w, "%s %s (%s)\n", ChangeMark(c), p, strings.Trim(whyB+"; "+whyA, "; "))
			continue
		}
		from, to := "a/"+p, "b/"+p
		if c.Before == nil {
			from = "/dev/null"
		}
		if c.After == nil {
			to = "/dev/null"
		}
		io.WriteString(w, udiff.Unified(from, to, before, after))
	}
}
