package workspace_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/workspace"
)

// Confine follows the links a path has inside the workspace and refuses
// one that leads out of it or nowhere, at any depth, the last part
// included.
func TestConfine(t *testing.T) {
	root := t.TempDir()
	elsewhere := t.TempDir()
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(dir string) {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := func(to, name string) {
		if err := os.Symlink(to, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	mk("state")
	mk("inner/deep")
	link("inner", "in")                                            // inside, relative
	link(filepath.Join(root, "inner"), "in-abs")                   // inside, absolute
	link(elsewhere, "out")                                         // out, absolute
	link("../"+filepath.Base(elsewhere), "up")                     // out, relative
	link("missing", "dangling")                                    // to be created inside
	link(filepath.Join(elsewhere, "db"), "state/db")               // the last part leads out
	link("../in/deep", "state/deeper")                             // a link in a folder, inside
	link("../in/../../"+filepath.Base(elsewhere), "state/via-out") // .. after a link is the link's target's parent
	link("../../"+filepath.Base(elsewhere)+"/gone", "state/gone")
	link("loop", "loop")
	link("out/../"+filepath.Base(root)+"/inner", "loop-in") // out and back in: where it ends counts

	for _, tc := range []struct{ rel, want string }{
		{".orca/orca.db", filepath.Join(real, ".orca", "orca.db")}, // nothing exists yet
		{"state/new/x", filepath.Join(real, "state", "new", "x")},
		{"in/deep/x", filepath.Join(real, "inner", "deep", "x")},
		{"in-abs/x", filepath.Join(real, "inner", "x")},
		{"state/deeper/x", filepath.Join(real, "inner", "deep", "x")},
		{"./state//x", filepath.Join(real, "state", "x")},
		{"dangling", filepath.Join(real, "missing")}, // created inside
		{"dangling/x", filepath.Join(real, "missing", "x")},
		{"loop-in/x", filepath.Join(real, "inner", "x")},
	} {
		got, err := workspace.Confine(root, tc.rel)
		if err != nil || got != tc.want {
			t.Errorf("Confine(%q) = %q, %v; want %q", tc.rel, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ rel, says string }{
		{"out/orca.db", `"out" leads out through a symlink, to ` + elsewhere},
		{"up/x/y", `"up" leads out through a symlink`},
		{"state/db", `"state/db" leads out through a symlink`},
		{"state/via-out/x", `"state/via-out" leads out through a symlink`},
		{"state/gone", `"state/gone" leads out through a symlink`}, // dangling, out
		{"../x", `"../x"`},
		{"/etc/passwd", `"/etc/passwd"`},
		{"", `""`},
	} {
		got, err := workspace.Confine(root, tc.rel)
		if !errors.Is(err, workspace.ErrOutside) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Confine(%q) = %q, %v; want ErrOutside saying %s", tc.rel, got, err, tc.says)
		}
	}
	if _, err := workspace.Confine(root, "loop/x"); err == nil || !strings.Contains(err.Error(), `"loop/x": too many links`) {
		t.Errorf("a link to itself: %v", err)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("Confine wrote outside: %v", entries)
	}
}
