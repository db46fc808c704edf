//go:build unix

package workspace_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orca-agent/orca/workspace"
)

// mkfile writes a file below root, with its folders.
func mkfile(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// bothWays runs test on a fresh workspace whose OpenDir uses openat2(2),
// where the system has it, and on one whose OpenDir goes through os.Root
// alone.
func bothWays(t *testing.T, test func(t *testing.T, l *workspace.Local, root string)) {
	t.Run("openat2", func(t *testing.T) {
		l, root := open(t)
		test(t, l, root)
	})
	t.Run("os.Root", func(t *testing.T) {
		l, root := open(t)
		workspace.NoOpenat2(l)
		test(t, l, root)
	})
}

func readAll(t *testing.T, d workspace.Dir, name string) (string, error) {
	t.Helper()
	f, err := d.OpenFile(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}

func TestDirOpensFilesOfTheFolder(t *testing.T) { bothWays(t, testDirOpensFilesOfTheFolder) }

func testDirOpensFilesOfTheFolder(t *testing.T, l *workspace.Local, root string) {
	big := strings.Repeat("0123456789abcdef", 70_000) + "tail" // over a MiB, not a multiple of a page
	mkfile(t, root, "a/b/c.txt", "deep\n")
	mkfile(t, root, "a/b/big.txt", big)
	mkfile(t, root, "a/b/empty.txt", "")
	mkfile(t, root, "top.txt", "top\n")

	d, err := l.OpenDir("a/b")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Path() != "a/b" {
		t.Errorf("Path() = %q, want a/b", d.Path())
	}
	for name, want := range map[string]string{"c.txt": "deep\n", "big.txt": big, "empty.txt": ""} {
		if got, err := readAll(t, d, name); err != nil || got != want {
			t.Errorf("OpenFile(%s) read %d bytes, %v; want %d", name, len(got), err, len(want))
		}
	}
	f, err := d.OpenFile("c.txt")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil || fi.Name() != "c.txt" || fi.Size() != 5 || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 || fi.ModTime().IsZero() {
		t.Errorf("Stat = %v, %v", fi, err)
	}
	// A file opened from the folder outlives it.
	d2, _ := l.OpenDir(filepath.Join(root, "a", "b"))
	g, err := d2.OpenFile("c.txt")
	if err != nil {
		t.Fatal(err)
	}
	d2.Close()
	if b, err := io.ReadAll(g); err != nil || string(b) != "deep\n" {
		t.Errorf("read after the Dir was closed = %q, %v", b, err)
	}
	g.Close()
	if _, err := d2.OpenFile("c.txt"); err == nil {
		t.Error("OpenFile on a closed Dir succeeded")
	}
	if err := f.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if _, err := f.Read(make([]byte, 1)); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Read after Close = %v, want fs.ErrClosed", err)
	}

	if _, err := d.OpenFile("missing.txt"); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "a/b/missing.txt") {
		t.Errorf("OpenFile(missing.txt) = %v, want fs.ErrNotExist naming a/b/missing.txt", err)
	}
	rd, err := l.OpenDir(".")
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if got, err := readAll(t, rd, "top.txt"); err != nil || got != "top\n" || rd.Path() != "." {
		t.Errorf("root Dir: %q, %v, path %q", got, err, rd.Path())
	}
	if _, err := l.OpenDir("top.txt"); err == nil {
		t.Error("OpenDir of a file succeeded")
	}
	if _, err := l.OpenDir("nowhere"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenDir(nowhere) = %v, want fs.ErrNotExist", err)
	}
}

// OpenFile takes one entry of the folder, nothing else: a path that would
// climb out of the folder or into another is refused before the system is
// asked, and so is every entry that is not a regular file, without
// blocking on a FIFO and without following a symlink, even to a file
// inside the workspace.
func TestDirRefusesWhatIsNotARegularEntry(t *testing.T) {
	bothWays(t, testDirRefusesWhatIsNotARegularEntry)
}

func testDirRefusesWhatIsNotARegularEntry(t *testing.T, l *workspace.Local, root string) {
	outside := t.TempDir()
	mkfile(t, outside, "secret", "secret\n")
	mkfile(t, root, "sub/in.txt", "inside\n")
	mkfile(t, root, "sub/deeper/x.txt", "x\n")
	mkfile(t, root, "sibling.txt", "sibling\n")
	for link, to := range map[string]string{
		"sub/out":     filepath.Join(outside, "secret"),
		"sub/rel-out": "../../" + filepath.Base(outside) + "/secret",
		"sub/in-link": "in.txt",
		"sub/up-link": "../sibling.txt",
		"sub/dirlink": outside,
	} {
		if err := os.Symlink(to, filepath.Join(root, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(root, "sub", "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := l.OpenDir("sub")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	for _, name := range []string{"out", "rel-out", "in-link", "up-link", "dirlink", "fifo", "deeper"} {
		done := make(chan error, 1)
		go func() {
			f, err := d.OpenFile(name)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, workspace.ErrNotRegular) || !strings.Contains(err.Error(), "sub/"+name) {
				t.Errorf("OpenFile(%s) = %v, want ErrNotRegular naming sub/%s", name, err, name)
			}
		case <-time.After(5 * time.Second):
			// Unblock the open so the test can end: a writer frees it.
			if w, err := os.OpenFile(filepath.Join(root, "sub", "fifo"), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
			<-done
			t.Fatalf("OpenFile(%s) blocked", name)
		}
	}
	for _, name := range []string{"", ".", "..", "../sibling.txt", "deeper/x.txt", "/etc/passwd", "in.txt\x00"} {
		if f, err := d.OpenFile(name); !errors.Is(err, fs.ErrInvalid) {
			if err == nil {
				f.Close()
			}
			t.Errorf("OpenFile(%q) = %v, want fs.ErrInvalid", name, err)
		}
	}
	if got, err := readAll(t, d, "in.txt"); err != nil || got != "inside\n" {
		t.Errorf("OpenFile(in.txt) = %q, %v", got, err)
	}
}

func TestOpenDirRefusesFoldersOutside(t *testing.T) { bothWays(t, testOpenDirRefusesFoldersOutside) }

func testOpenDirRefusesFoldersOutside(t *testing.T, l *workspace.Local, root string) {
	outside := t.TempDir()
	mkfile(t, outside, "secret", "secret\n")
	mkfile(t, root, "in/x.txt", "x\n")
	os.Symlink(outside, filepath.Join(root, "out"))
	os.Symlink("in", filepath.Join(root, "in-link"))
	for _, name := range []string{"out", "out/.", "..", "../" + filepath.Base(outside), outside, "/"} {
		d, err := l.OpenDir(name)
		if err == nil {
			_, rerr := readAll(t, d, "secret")
			d.Close()
			t.Errorf("OpenDir(%q) opened a folder outside the root (reading its secret: %v)", name, rerr)
			continue
		}
		if !errors.Is(err, workspace.ErrOutside) {
			t.Errorf("OpenDir(%q) = %v, want ErrOutside", name, err)
		}
	}
	// Where a link leads inside, OpenDir decides as Open (os.Root) does,
	// whatever openat2 would (it refuses absolute links, which os.Root
	// may not: os.Root's answer counts).
	os.Symlink(filepath.Join(root, "in"), filepath.Join(root, "abs-in"))
	os.Symlink("in-link", filepath.Join(root, "chain"))
	os.MkdirAll(filepath.Join(root, "sub"), 0o755)
	os.Symlink("../in", filepath.Join(root, "sub", "up"))
	for _, name := range []string{"in-link", "abs-in", "chain", "sub/up", "sub/../in", "abs-in/../in", "chain/../in"} {
		f, rerr := l.Open(name)
		if rerr == nil {
			f.Close()
		}
		d, err := l.OpenDir(name)
		if err == nil {
			if got, rerr := readAll(t, d, "x.txt"); rerr != nil || got != "x\n" {
				t.Errorf("OpenDir(%s) then x.txt: %q, %v", name, got, rerr)
			}
			d.Close()
		}
		if (err == nil) != (rerr == nil) {
			t.Errorf("OpenDir(%s) = %v; Open = %v", name, err, rerr)
		}
	}
	// A link that stays inside is followed, as by Open.
	d, err := l.OpenDir("in-link")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got, err := readAll(t, d, "x.txt"); err != nil || got != "x\n" {
		t.Errorf("through in-link: %q, %v", got, err)
	}
}

// The attack a search over a listing invites: the walk lists sub/f.txt,
// then sub is renamed away and a symlink to a folder outside, holding a
// file of the same name, is put in its place. A Dir opened before the swap
// keeps reading the folder it opened; one opened after is refused.
// Concurrent readers and swappers check the same under the race detector.
func TestDirSurvivesAFolderSwappedForALink(t *testing.T) {
	bothWays(t, testDirSurvivesAFolderSwappedForALink)
}

func testDirSurvivesAFolderSwappedForALink(t *testing.T, l *workspace.Local, root string) {
	outside := t.TempDir()
	mkfile(t, outside, "f.txt", "secret\n")
	mkfile(t, root, "sub/f.txt", "inside\n")
	sub := filepath.Join(root, "sub")

	d, err := l.OpenDir("sub")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := os.Rename(sub, sub+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, sub); err != nil {
		t.Fatal(err)
	}
	if got, err := readAll(t, d, "f.txt"); err != nil || got != "inside\n" {
		t.Errorf("after the swap, the open Dir read %q, %v; want the folder it opened", got, err)
	}
	if d2, err := l.OpenDir("sub"); !errors.Is(err, workspace.ErrOutside) {
		if err == nil {
			d2.Close()
		}
		t.Errorf("OpenDir after the swap = %v, want ErrOutside", err)
	}

	// Swap back and forth while others open and read.
	os.Remove(sub)
	os.Rename(sub+".moved", sub)
	var readers, swapper sync.WaitGroup
	stop := make(chan struct{})
	swapper.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%2 == 0 {
				os.Rename(sub, sub+".moved")
				os.Symlink(outside, sub)
			} else {
				os.Remove(sub)
				os.Rename(sub+".moved", sub)
			}
		}
	})
	for range 2 {
		readers.Go(func() {
			for range 300 {
				d, err := l.OpenDir("sub")
				if err != nil {
					continue // refused, or missing mid-swap
				}
				if got, err := readAll(t, d, "f.txt"); err == nil && got != "inside\n" {
					t.Errorf("read %q through a swapped folder", got)
				}
				d.Close()
			}
		})
	}
	readers.Wait()
	close(stop)
	swapper.Wait()
}
