// Package workspacetest is the conformance kit of workspace.FileSystem,
// beside its contract (as testing/fstest is io/fs's, on which it builds):
// an implementation's tests run TestFileSystem to prove that it reads what
// it wrote, walks what it holds, and refuses every path that leads out of
// its root.
package workspacetest

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/orca-agent/orca/workspace"
)

// TestFileSystem runs the conformance suite on the file systems mk
// builds: each call returns a new, empty, writable file system, which the
// suite closes. Its checks:
//
//   - WriteFile creates missing folders, replaces contents, and ReadFile,
//     Stat and Open agree with it;
//   - the file system, seen as an fs.FS, passes testing/fstest.TestFS;
//   - Resolve cleans names and refuses, wrapping workspace.ErrOutside,
//     every name that leads out ("..", absolute paths outside the root);
//     so do ReadFile, WriteFile, Stat and Open;
//   - Walk reports every entry below a folder, folders before their
//     contents, honours fs.SkipDir and stops when its context is done;
//   - for a local folder (Root is not ""), a symlink that leads out of the
//     root is refused, and an absolute path inside the root is accepted;
//   - if the file system is a workspace.DirOpener, a Dir reads the files of
//     its folder, refuses names that are not one entry of it and entries
//     that are not regular files (symlinks included), and OpenDir refuses
//     what leads out as Open does.
func TestFileSystem(t *testing.T, mk func(t *testing.T) workspace.FileSystem) {
	open := func(t *testing.T) workspace.FileSystem {
		t.Helper()
		fsys := mk(t)
		t.Cleanup(func() {
			if err := fsys.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return fsys
	}
	files := map[string]string{
		"a.txt":           "alpha\n",
		"src/main.go":     "package main\n",
		"src/pkg/util.go": "package pkg\n",
		"docs/read me.md": "# spaces\n",
	}
	fill := func(t *testing.T, fsys workspace.FileSystem) {
		t.Helper()
		for name, content := range files {
			if err := fsys.WriteFile(name, []byte(content), 0o644); err != nil {
				t.Fatalf("WriteFile(%q): %v", name, err)
			}
		}
	}

	t.Run("WriteAndRead", func(t *testing.T) {
		fsys := open(t)
		fill(t, fsys)
		for name, content := range files {
			b, err := fsys.ReadFile(name)
			if err != nil || string(b) != content {
				t.Errorf("ReadFile(%q) = %q, %v; want %q", name, b, err, content)
			}
			fi, err := fsys.Stat(name)
			if err != nil || fi.Size() != int64(len(content)) || fi.IsDir() {
				t.Errorf("Stat(%q) = %v, %v", name, fi, err)
			}
		}
		if err := fsys.WriteFile("a.txt", []byte("replaced"), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, _ := fsys.ReadFile("a.txt"); string(b) != "replaced" {
			t.Errorf("after a second WriteFile, a.txt = %q", b)
		}
		if fi, err := fsys.Stat("src/pkg"); err != nil || !fi.IsDir() {
			t.Errorf("Stat of a folder WriteFile made: %v, %v", fi, err)
		}
		if _, err := fsys.ReadFile("missing.txt"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadFile of a missing file: %v, want fs.ErrNotExist", err)
		}
	})

	t.Run("FSTest", func(t *testing.T) {
		fsys := open(t)
		fill(t, fsys)
		want := slices.Sorted(func(yield func(string) bool) {
			for name := range files {
				if !yield(name) {
					return
				}
			}
		})
		if err := fstest.TestFS(ioFS{fsys}, want...); err != nil {
			t.Error(err)
		}
	})

	t.Run("Outside", func(t *testing.T) {
		fsys := open(t)
		fill(t, fsys)
		for name, want := range map[string]string{".": ".", "src/../a.txt": "a.txt", "./src//main.go": "src/main.go"} {
			if got, err := fsys.Resolve(name); err != nil || got != want {
				t.Errorf("Resolve(%q) = %q, %v; want %q", name, got, err, want)
			}
		}
		outside := []string{"..", "../x.txt", "src/../../x.txt"}
		if root := fsys.Root(); root != "" {
			outside = append(outside, filepath.Join(filepath.Dir(root), "x.txt"), "/")
			if got, err := fsys.Resolve(filepath.Join(root, "src", "main.go")); err != nil || got != "src/main.go" {
				t.Errorf("Resolve of an absolute path inside the root = %q, %v", got, err)
			}
		}
		for _, name := range outside {
			if _, err := fsys.Resolve(name); !errors.Is(err, workspace.ErrOutside) {
				t.Errorf("Resolve(%q): %v, want workspace.ErrOutside", name, err)
			}
			if _, err := fsys.ReadFile(name); err == nil {
				t.Errorf("ReadFile(%q) read outside the root", name)
			}
			if _, err := fsys.Open(name); err == nil {
				t.Errorf("Open(%q) opened outside the root", name)
			}
			if _, err := fsys.Stat(name); err == nil {
				t.Errorf("Stat(%q) reached outside the root", name)
			}
			target := name
			if !strings.HasSuffix(name, ".txt") { // a folder: write into it
				target = filepath.Join(name, "planted-by-workspacetest.txt")
			}
			if err := fsys.WriteFile(target, []byte("x"), 0o644); err == nil {
				os.Remove(target)
				t.Errorf("WriteFile(%q) wrote outside the root", target)
			}
		}
	})

	t.Run("Symlinks", func(t *testing.T) {
		fsys := open(t)
		root := fsys.Root()
		if root == "" {
			t.Skip("not a local folder")
		}
		secret := filepath.Join(t.TempDir(), "secret.txt")
		if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(secret, filepath.Join(root, "link.txt")); err != nil {
			t.Skipf("no symlinks here: %v", err)
		}
		if err := os.Symlink(filepath.Dir(secret), filepath.Join(root, "dir")); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"link.txt", "dir/secret.txt"} {
			if b, err := fsys.ReadFile(name); err == nil {
				t.Errorf("ReadFile(%q) followed a link out of the root: %q", name, b)
			}
		}
		if err := fsys.WriteFile("dir/planted.txt", []byte("x"), 0o644); err == nil {
			t.Error("WriteFile through a link wrote outside the root")
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(secret), "planted.txt")); err == nil {
			t.Error("the file was planted outside the root")
		}
	})

	t.Run("DirOpener", func(t *testing.T) {
		fsys := open(t)
		opener, ok := fsys.(workspace.DirOpener)
		if !ok {
			t.Skip("not a workspace.DirOpener")
		}
		fill(t, fsys)
		d, err := opener.OpenDir("src")
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if d.Path() != "src" {
			t.Errorf("Path() = %q, want src", d.Path())
		}
		f, err := d.OpenFile("main.go")
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil || string(b) != files["src/main.go"] {
			t.Errorf("OpenFile(main.go) read %q, %v", b, err)
		}
		if f, err := d.OpenFile("pkg"); !errors.Is(err, workspace.ErrNotRegular) {
			if err == nil {
				f.Close()
			}
			t.Errorf("OpenFile of a folder: %v, want workspace.ErrNotRegular", err)
		}
		for _, name := range []string{"", ".", "..", "../a.txt", "pkg/util.go"} {
			if f, err := d.OpenFile(name); err == nil {
				f.Close()
				t.Errorf("OpenFile(%q) opened something that is not an entry of the folder", name)
			}
		}
		for _, name := range []string{"..", "../x", "src/../.."} {
			if d, err := opener.OpenDir(name); !errors.Is(err, workspace.ErrOutside) {
				if err == nil {
					d.Close()
				}
				t.Errorf("OpenDir(%q): %v, want workspace.ErrOutside", name, err)
			}
		}
		root := fsys.Root()
		if root == "" {
			return
		}
		secret := filepath.Join(t.TempDir(), "secret.txt")
		if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(secret, filepath.Join(root, "src", "link.txt")); err != nil {
			t.Skipf("no symlinks here: %v", err)
		}
		if err := os.Symlink(filepath.Dir(secret), filepath.Join(root, "out")); err != nil {
			t.Fatal(err)
		}
		if f, err := d.OpenFile("link.txt"); err == nil {
			f.Close()
			t.Error("OpenFile followed a symlink out of the root")
		}
		if d, err := opener.OpenDir("out"); err == nil {
			d.Close()
			t.Error("OpenDir followed a symlink out of the root")
		}
	})

	t.Run("Walk", func(t *testing.T) {
		fsys := open(t)
		fill(t, fsys)
		var mu sync.Mutex
		var seen []string
		err := fsys.Walk(context.Background(), ".", func(path string, d fs.DirEntry) error {
			mu.Lock()
			defer mu.Unlock()
			if d.IsDir() {
				path += "/"
			}
			for _, s := range seen {
				if strings.HasPrefix(s, path) && s != path {
					t.Errorf("Walk reported %q before its folder %q", s, path)
				}
			}
			seen = append(seen, path)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(seen)
		want := []string{"a.txt", "docs/", "docs/read me.md", "src/", "src/main.go", "src/pkg/", "src/pkg/util.go"}
		if !slices.Equal(seen, want) {
			t.Errorf("Walk saw %q, want %q", seen, want)
		}
		seen = nil
		err = fsys.Walk(context.Background(), ".", func(path string, d fs.DirEntry) error {
			mu.Lock()
			defer mu.Unlock()
			if path == "src" {
				return fs.SkipDir
			}
			seen = append(seen, path)
			return nil
		})
		if err != nil || slices.ContainsFunc(seen, func(s string) bool { return strings.HasPrefix(s, "src/") }) {
			t.Errorf("SkipDir: %q, %v", seen, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := fsys.Walk(ctx, ".", func(string, fs.DirEntry) error { return nil }); !errors.Is(err, context.Canceled) {
			t.Errorf("Walk with a done context: %v, want context.Canceled", err)
		}
	})
}

// ioFS is a FileSystem seen as an fs.FS, for fstest.
type ioFS struct{ fsys workspace.FileSystem }

func (f ioFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	return f.fsys.Open(name)
}

func (f ioFS) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrInvalid}
	}
	return f.fsys.Stat(name)
}

func (f ioFS) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrInvalid}
	}
	return f.fsys.ReadFile(name)
}
