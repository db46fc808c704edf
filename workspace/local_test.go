package workspace_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/workspace"
	"github.com/orca-agent/orca/workspace/workspacetest"
)

func open(t *testing.T) (*workspace.Local, string) {
	t.Helper()
	dir := t.TempDir()
	l, err := workspace.OpenLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, l.Root()
}

func TestResolve(t *testing.T) {
	l, root := open(t)
	for in, want := range map[string]string{
		"a.go":                              "a.go",
		"./sub/../a.go":                     "a.go",
		"sub/b.go":                          "sub/b.go",
		".":                                 ".",
		root:                                ".",
		filepath.Join(root, "sub", "c"):     "sub/c",
		filepath.Join(root, "x", "..", "y"): "y",
	} {
		got, err := l.Resolve(in)
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"..", "../x", "sub/../../x", "/etc/passwd", filepath.Dir(root), root + "-sibling/x"} {
		_, err := l.Resolve(in)
		if !errors.Is(err, workspace.ErrOutside) || !strings.Contains(err.Error(), in) {
			t.Errorf("Resolve(%q) = %v, want ErrOutside naming the path", in, err)
		}
	}
	if _, err := l.Resolve(""); err == nil {
		t.Error("empty path accepted")
	}
	if _, err := l.Resolve("a\x00b"); err == nil {
		t.Error("NUL byte accepted")
	}
}

func TestSymlinksThatLeadOutAreRefused(t *testing.T) {
	l, root := open(t)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644)
	os.Symlink(outside, filepath.Join(root, "out"))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "secret-link"))
	os.WriteFile(filepath.Join(root, "in.txt"), []byte("inside"), 0o644)
	os.Symlink("in.txt", filepath.Join(root, "in-link"))

	for _, name := range []string{"out/secret", "secret-link"} {
		if _, err := l.ReadFile(name); !errors.Is(err, workspace.ErrOutside) || !strings.Contains(err.Error(), name) {
			t.Errorf("ReadFile(%q) = %v, want ErrOutside naming it", name, err)
		}
		if err := l.WriteFile(name, []byte("pwned"), 0o644); !errors.Is(err, workspace.ErrOutside) {
			t.Errorf("WriteFile(%q) = %v, want ErrOutside", name, err)
		}
	}
	if err := l.Walk(context.Background(), "out", func(string, fs.DirEntry) error { return nil }); !errors.Is(err, workspace.ErrOutside) {
		t.Errorf("Walk(out) = %v, want ErrOutside", err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "s" {
		t.Errorf("outside file changed to %q", b)
	}
	// A symlink that stays inside works.
	if b, err := l.ReadFile("in-link"); err != nil || string(b) != "inside" {
		t.Errorf("ReadFile(in-link) = %q, %v", b, err)
	}
	// Writing through it writes its target and keeps the link.
	if err := l.WriteFile("in-link", []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "in.txt")); string(b) != "changed" {
		t.Errorf("target = %q after writing through the link", b)
	}
	if fi, _ := os.Lstat(filepath.Join(root, "in-link")); fi.Mode()&fs.ModeSymlink == 0 {
		t.Error("writing through the link replaced it")
	}
}

func TestWriteFile(t *testing.T) {
	l, root := open(t)
	if err := l.WriteFile("a/b/c.txt", []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a/b/c.txt")); string(b) != "one" {
		t.Errorf("content = %q", b)
	}
	os.Chmod(filepath.Join(root, "a/b/c.txt"), 0o640)
	if err := l.WriteFile("a/b/c.txt", []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(root, "a/b/c.txt"))
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("overwrite changed mode to %v", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Join(root, "a/b"))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	if err := l.WriteFile("a", []byte("x"), 0o644); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("writing over a folder: %v", err)
	}
	if err := l.WriteFile(".", []byte("x"), 0o644); err == nil {
		t.Error("writing the root succeeded")
	}
}

func TestWalk(t *testing.T) {
	l, root := open(t)
	want := []string{"a.txt", "d", "d/b.txt", "d/e", "d/e/c.txt"}
	for _, p := range []string{"a.txt", "d/b.txt", "d/e/c.txt"} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		os.WriteFile(filepath.Join(root, p), nil, 0o644)
	}
	var mu sync.Mutex
	var got []string
	err := l.Walk(context.Background(), ".", func(p string, d fs.DirEntry) error {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("walk = %v, want %v", got, want)
	}

	got = nil
	l.Walk(context.Background(), "d", func(p string, d fs.DirEntry) error {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
		if d.IsDir() {
			return fs.SkipDir
		}
		return nil
	})
	slices.Sort(got)
	if !slices.Equal(got, []string{"d/b.txt", "d/e"}) {
		t.Errorf("walk d with SkipDir = %v", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Walk(ctx, ".", func(string, fs.DirEntry) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled walk = %v", err)
	}
	if err := l.Walk(context.Background(), "a.txt", func(string, fs.DirEntry) error { return nil }); err == nil {
		t.Error("walking a file succeeded")
	}
}

func TestClose(t *testing.T) {
	l, _ := open(t)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !l.Closed() {
		t.Error("Closed() = false after Close")
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := l.ReadFile("x"); err == nil {
		t.Error("read after close succeeded")
	}
}

// Local passes the FileSystem conformance kit.
func TestLocalConformance(t *testing.T) {
	workspacetest.TestFileSystem(t, func(t *testing.T) workspace.FileSystem {
		l, err := workspace.OpenLocal(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return l
	})
}

// Errors name what the caller did and the name it gave, not os.Root's
// calls ("statat") or the path inside the root.
func TestErrorsSayWhatTheCallerDid(t *testing.T) {
	l, root := open(t)
	if err := os.Symlink("loop2", filepath.Join(root, "loop1")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop1", filepath.Join(root, "loop2")); err != nil {
		t.Fatal(err)
	}
	_, err := l.Stat("loop1")
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "stat" || pe.Path != "loop1" || strings.Contains(err.Error(), "statat") {
		t.Errorf("Stat of a symlink loop: %v", err)
	}
	_, err = l.ReadFile("loop1")
	if err == nil || strings.Contains(err.Error(), "at loop1") {
		t.Errorf("ReadFile of a symlink loop: %v", err)
	}
}

// A name that ends in a slash names a folder: WriteFile refuses it, as the
// system's open does, instead of writing a file of the name without it.
func TestWriteFileRefusesANameEndingInASlash(t *testing.T) {
	l, root := open(t)
	for _, name := range []string{"dir/", "sub/dir/", "a.txt/"} {
		err := l.WriteFile(name, []byte("x"), 0o644)
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Path != name || !strings.Contains(err.Error(), "names a folder") {
			t.Errorf("WriteFile(%q) = %v", name, err)
		}
	}
	if entries, err := os.ReadDir(root); err != nil || len(entries) != 0 {
		t.Errorf("the workspace holds %v (%v)", entries, err)
	}
}

// A WalkFunc that panics on one of the walk's goroutines ends the walk
// and panics on the caller's, where a tool's panic becomes an error: it
// does not end the process.
func TestWalkPanicReachesTheCaller(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a", "b", "c/d"} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, nil, 0o644)
	}
	l, err := workspace.OpenLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	defer func() {
		if v := recover(); v != "boom" {
			t.Errorf("recovered %v, want boom", v)
		}
	}()
	l.Walk(t.Context(), ".", func(p string, d fs.DirEntry) error {
		if p == "c/d" {
			panic("boom")
		}
		return nil
	})
	t.Error("Walk returned")
}
