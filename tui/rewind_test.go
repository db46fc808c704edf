package tui_test

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/orca-agent/orca/rewind"
	"github.com/orca-agent/orca/tui"
)

// A checkpoint's diff: text as unified diffs, a binary file and one whose
// content was not kept named with why, a folder by its mark.
func TestWriteDiff(t *testing.T) {
	contents := map[string]string{"t1": "one\ntwo\n", "t2": "one\n2\n", "bin": "\x00\x01PNG"}
	file := func(d string) *rewind.Entry { return &rewind.Entry{Mode: 0o644, Digest: d} }
	cp := rewind.Checkpoint{Changes: []rewind.Change{
		{Path: "a.txt", Before: file("t1"), After: file("t2")},
		{Path: "img.png", After: file("bin")},
		{Path: "big.log", Before: &rewind.Entry{Mode: 0o644, Size: 1 << 30}, After: file("t1")},
		{Path: "lost.txt", Before: file("gone")},
		{Path: "out", After: &rewind.Entry{Mode: 0o755 | 1<<31}},
		{Path: "link", Before: &rewind.Entry{Mode: 0o777 | fs.ModeSymlink, Link: "a.txt"}, After: &rewind.Entry{Mode: 0o777 | fs.ModeSymlink, Link: "img.png"}},
		{Path: "new\nline.txt", After: file("t1")},
	}}
	var b strings.Builder
	tui.WriteDiff(&b, cp, func(d string) ([]byte, error) {
		if c, ok := contents[d]; ok {
			return []byte(c), nil
		}
		return nil, errors.New("not kept")
	})
	want := "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n" +
		"+ img.png (binary, 5 bytes)\n" +
		"~ big.log (not kept: larger than 16.0 MB, or past the 1024.0 MB a snapshot reads)\n" +
		"- lost.txt (not kept)\n" +
		"+ out/\n" +
		"~ link (a link: a.txt → img.png)\n" +
		"--- /dev/null\n+++ b/new\\nline.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

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
