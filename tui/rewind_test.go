package tui_test

import (
	"strings"
	"testing"

	"github.com/orca-agent/orca/rewind"
	"github.com/orca-agent/orca/tui"
)

// A path with a line break in it stays on its line in every listing.
func TestRewindListsKeepPathsOnOneLine(t *testing.T) {
	cp := rewind.Checkpoint{ID: "t", Changes: []rewind.Change{{Path: "new\nline.txt", After: &rewind.Entry{Mode: 0o644}}}}
	var b strings.Builder
	tui.WriteCheckpoints(&b, "s", []rewind.Checkpoint{cp}, "orca rewind N")
	tui.WriteRewound(&b, rewind.Restored{Paths: []string{"new\nline.txt"}, Lost: []string{"a\rb"}}, "t")
	b.WriteString(tui.RewindStopped(rewind.Restored{Conflicts: []rewind.Conflict{{Path: "x\ny", Why: "it changed since"}}}, "--force"))
	for _, want := range []string{"   + new\\nline.txt\n", "  new\\nline.txt\n", "  a\\rb\n", "  x\\ny: it changed since"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
}
