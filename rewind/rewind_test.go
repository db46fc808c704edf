package rewind_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/rewind"
)

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tree returns every file under root (but .orca) with its content, and
// every folder.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel := filepath.ToSlash(p[len(root)+1:])
		if rel == ".orca" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		b, _ := os.ReadFile(p)
		out[rel] = string(b)
		return nil
	})
	return out
}

func sh(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("bash", "-euc", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

// turn snapshots root, runs script as a turn's command would, and keeps
// the turn's checkpoint.
func turn(t *testing.T, s *rewind.Store, root, id, script string) rewind.Checkpoint {
	t.Helper()
	before, err := s.Take(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	sh(t, root, script)
	after, err := s.Take(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cp := rewind.Checkpoint{Session: "s1", ID: id, Taken: before.Taken, Changes: rewind.Diff(before, after)}
	if err := s.Save(cp); err != nil {
		t.Fatal(err)
	}
	return cp
}

// The check: a turn whose commands run sed -i, rm, mv and create
// files and folders, then a rewind to before it: every file back byte for
// byte, what was created gone, nothing else moved — the files the turn
// did not change keep their modification time.
func TestRewindWhatBashChanged(t *testing.T) {
	root := t.TempDir()
	write(t, root, "main.go", "package main\n\nfunc main() { println(\"hello\") }\n")
	write(t, root, "docs/guide.md", "# Guide\n\nold text\n")
	write(t, root, "notes.txt", "keep me\n")
	write(t, root, "gone/deep/file.txt", "deleted with its folders\n")
	write(t, root, "untouched/a.txt", "not touched\n")
	os.Chmod(filepath.Join(root, "main.go"), 0o755)
	old := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, p := range []string{"main.go", "docs/guide.md", "notes.txt", "untouched/a.txt"} {
		os.Chtimes(filepath.Join(root, p), old, old)
	}
	want := tree(t, root)

	s, err := rewind.Open(root, filepath.Join(root, ".orca", "rewind"), rewind.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cp := turn(t, s, root, "t1", `
		sed -i 's/hello/goodbye/' main.go
		rm -r gone
		mv notes.txt docs/notes.txt
		mkdir -p build/out && echo artefact > build/out/bin
		printf 'new\n' > docs/new.md
		echo more >> docs/guide.md`)
	var changed []string
	for _, c := range cp.Changes {
		changed = append(changed, c.Path)
	}
	for _, p := range []string{"main.go", "gone", "gone/deep/file.txt", "notes.txt", "docs/notes.txt", "build", "build/out/bin", "docs/new.md", "docs/guide.md"} {
		if !slices.Contains(changed, p) {
			t.Errorf("%s changed, and the checkpoint does not say so: %v", p, changed)
		}
	}
	if slices.Contains(changed, "untouched/a.txt") || slices.Contains(changed, "docs") {
		t.Errorf("the checkpoint names what did not change: %v", changed)
	}

	r, err := s.Restore([]rewind.Checkpoint{cp}, false)
	if err != nil || len(r.Conflicts) > 0 || len(r.Lost) > 0 {
		t.Fatalf("%+v, %v", r, err)
	}
	got := tree(t, root)
	for p, c := range want {
		if got[p] != c {
			t.Errorf("%s: %q, want %q", p, got[p], c)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s is still there", p)
		}
	}
	for _, p := range []string{"main.go", "untouched/a.txt", "notes.txt"} {
		if info, err := os.Stat(filepath.Join(root, p)); err != nil || !info.ModTime().Equal(old) {
			t.Errorf("%s: modified at %v, want %v", p, info.ModTime(), old)
		}
	}
	if info, _ := os.Stat(filepath.Join(root, "main.go")); info.Mode().Perm() != 0o755 {
		t.Errorf("main.go's mode %v", info.Mode())
	}
}

// A file the user changed after the turn is not touched without being
// forced: nothing at all is restored while there is a conflict. A file
// the turn created that holds the user's words now is not removed either.
func TestRewindConflicts(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a.txt", "one\n")
	write(t, root, "b.txt", "two\n")
	s, err := rewind.Open(root, filepath.Join(t.TempDir(), "rewind"), rewind.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cp := turn(t, s, root, "t1", `echo ONE > a.txt; echo TWO > b.txt; echo made > c.txt`)
	write(t, root, "a.txt", "the user's edit\n")
	write(t, root, "c.txt", "the user kept working in it\n")
	r, err := s.Restore([]rewind.Checkpoint{cp}, false)
	if err != nil || len(r.Paths) != 0 || len(r.Conflicts) != 2 || r.Conflicts[0].Path != "a.txt" || r.Conflicts[1].Path != "c.txt" || r.Conflicts[0].Why != "it changed since" {
		t.Fatalf("%+v, %v", r, err)
	}
	if got := tree(t, root); got["a.txt"] != "the user's edit\n" || got["b.txt"] != "TWO\n" || got["c.txt"] != "the user kept working in it\n" {
		t.Errorf("touched without asking: %v", got)
	}
	r, err = s.Restore([]rewind.Checkpoint{cp}, true)
	if err != nil || len(r.Paths) != 3 {
		t.Fatalf("forced: %+v, %v", r, err)
	}
	if got := tree(t, root); got["a.txt"] != "one\n" || got["b.txt"] != "two\n" || len(got) != 2 {
		t.Errorf("forced: %v", got)
	}
}

// Two turns rewound at once: each path back as it was before the first
// that changed it; a rewind to the second keeps the first's work. Content
// is kept once, whoever has it, and Forget leaves only what the last
// snapshot needs.
func TestRewindTurns(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a.txt", "v0\n")
	dir := filepath.Join(t.TempDir(), "rewind")
	s, err := rewind.Open(root, dir, rewind.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t1 := turn(t, s, root, "t1", `echo v1 > a.txt; echo x > x.txt`)
	t2 := turn(t, s, root, "t2", `echo v2 > a.txt; rm x.txt; cp a.txt copy.txt`)
	cps, err := s.Checkpoints("s1")
	if err != nil || len(cps) != 2 || cps[0].ID != "t1" || cps[1].ID != "t2" {
		t.Fatalf("%+v %v", cps, err)
	}
	if r, err := s.Restore([]rewind.Checkpoint{t2}, false); err != nil || len(r.Conflicts) > 0 {
		t.Fatalf("%+v %v", r, err)
	}
	if got := tree(t, root); got["a.txt"] != "v1\n" || got["x.txt"] != "x\n" || len(got) != 2 {
		t.Errorf("to before t2: %v", got)
	}
	// A second Open (another process) knows the same checkpoints.
	s2, err := rewind.Open(root, dir, rewind.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// t2 was rewound already: what it changed is not what it left, so
	// rewinding both again is three conflicts, and touches nothing.
	if r, err := s2.Restore([]rewind.Checkpoint{t1, t2}, false); err != nil || len(r.Conflicts) != 3 || len(r.Paths) != 0 {
		t.Fatalf("%+v %v", r, err)
	}
	if r, err := s2.Restore([]rewind.Checkpoint{t1}, false); err != nil || len(r.Conflicts) > 0 {
		t.Fatalf("to before t1: %+v %v", r, err)
	}
	if got := tree(t, root); got["a.txt"] != "v0\n" || len(got) != 1 {
		t.Errorf("to before t1: %v", got)
	}
	if _, err := s2.Take(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s2.Forget("s1"); err != nil {
		t.Fatal(err)
	}
	var objects []string
	filepath.WalkDir(filepath.Join(dir, "objects"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			objects = append(objects, p)
		}
		return nil
	})
	if len(objects) != 1 {
		t.Errorf("after Forget, %d contents kept, want the one a.txt is now", len(objects))
	}
	if cps, _ := s2.Checkpoints("s1"); len(cps) != 0 {
		t.Errorf("checkpoints left: %v", cps)
	}
}

// A file larger than MaxFile is followed by its size and time: its change
// is known, but it is not put back, and the rewind says so.
func TestRewindLargeFile(t *testing.T) {
	root := t.TempDir()
	write(t, root, "big.bin", strings.Repeat("a", 100))
	write(t, root, "small.txt", "s\n")
	s, err := rewind.Open(root, filepath.Join(t.TempDir(), "rewind"), rewind.Options{MaxFile: 10})
	if err != nil {
		t.Fatal(err)
	}
	cp := turn(t, s, root, "t1", `printf 'b%.0s' {1..100} > big.bin; echo S > small.txt`)
	if len(cp.Changes) != 2 || cp.Changes[0].Kept() || !cp.Changes[1].Kept() {
		t.Fatalf("%+v", cp.Changes)
	}
	r, err := s.Restore([]rewind.Checkpoint{cp}, false)
	if err != nil || len(r.Lost) != 1 || r.Lost[0] != "big.bin" || len(r.Paths) != 1 {
		t.Fatalf("%+v %v", r, err)
	}
	if got := tree(t, root); got["small.txt"] != "s\n" || got["big.bin"] != strings.Repeat("b", 100) {
		t.Errorf("%v", got)
	}
}

// Names of checkpoints and sessions cannot lead out of the store.
func TestRewindNames(t *testing.T) {
	s, err := rewind.Open(t.TempDir(), filepath.Join(t.TempDir(), "rewind"), rewind.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cp := range []rewind.Checkpoint{{Session: "../x", ID: "a"}, {Session: "s", ID: "../../a"}, {Session: "", ID: "a"}, {Session: "..", ID: "a"}} {
		if err := s.Save(cp); err == nil {
			t.Errorf("%+v saved", cp)
		}
	}
	if err := s.Forget("../.."); err == nil {
		t.Error("Forget(../..)")
	}
	for _, d := range []string{"../../etc/passwd", strings.Repeat("a", 63) + "/", strings.Repeat("A", 64), ""} {
		if _, err := s.Content(d); err == nil || !strings.Contains(err.Error(), "is no content's digest") {
			t.Errorf("Content(%q): %v", d, err)
		}
	}
}

// A folder the turn wrote in, replaced since by a link out of the
// workspace: the rewind writes nothing through it, forced or not.
func TestRewindNeverWritesThroughALinkOut(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	write(t, root, "docs/guide.md", "guide\n")
	s, err := rewind.Open(root, filepath.Join(t.TempDir(), "rewind"), rewind.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cp := turn(t, s, root, "t1", `echo changed > docs/guide.md; echo new > docs/new.md`)
	os.RemoveAll(filepath.Join(root, "docs"))
	if err := os.Symlink(outside, filepath.Join(root, "docs")); err != nil {
		t.Fatal(err)
	}
	write(t, outside, "new.md", "someone else's\n")
	r, err := s.Restore([]rewind.Checkpoint{cp}, false)
	if err != nil || len(r.Conflicts) != 2 || len(r.Paths) != 0 {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err = s.Restore([]rewind.Checkpoint{cp}, true); err == nil {
		t.Error("forced through a link out: no error")
	}
	if got := tree(t, outside); len(got) != 1 || got["new.md"] != "someone else's\n" {
		t.Errorf("outside the workspace: %v", got)
	}
}

// A snapshot reads at most MaxRead of content: past it, files are followed
// by size and time only (a first snapshot of a large folder copies no
// more), and the next snapshot reads what the last did not.
func TestRewindMaxRead(t *testing.T) {
	root := t.TempDir()
	for i := range 10 {
		write(t, root, fmt.Sprintf("f%d.txt", i), strings.Repeat("x", 100))
	}
	s, err := rewind.Open(root, filepath.Join(t.TempDir(), "rewind"), rewind.Options{MaxRead: 450})
	if err != nil {
		t.Fatal(err)
	}
	count := func(snap *rewind.Snapshot) (kept int) {
		for _, e := range snap.Paths {
			if e.Digest != "" {
				kept++
			}
		}
		return kept
	}
	first, err := s.Take(t.Context())
	if err != nil || count(first) != 4 || len(first.Paths) != 10 {
		t.Fatalf("first: %d kept of %d, %v", count(first), len(first.Paths), err)
	}
	second, err := s.Take(t.Context())
	if err != nil || count(second) != 8 {
		t.Fatalf("second: %d kept, %v", count(second), err)
	}
}
