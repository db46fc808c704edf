package workspace_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/workspace"
)

var errGuarded = errors.New("protected")

// guarded opens a workspace whose writes may not reach .orca.
func guarded(t *testing.T) (*workspace.Local, string) {
	t.Helper()
	dir := t.TempDir()
	l, err := workspace.OpenLocal(dir, workspace.WriteGuard(func(rel string) error {
		if rel == ".orca" || strings.HasPrefix(rel, ".orca/") {
			return errGuarded
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := os.MkdirAll(filepath.Join(l.Root(), ".orca", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	return l, l.Root()
}

// The guard is asked about where a write really lands: through links,
// dangling ones included.
func TestWriteGuardFollowsLinks(t *testing.T) {
	l, root := guarded(t)
	for link, to := range map[string]string{
		"notes.json": ".orca/settings.local.json", // dangling
		"docs":       ".orca/hooks",
		"abs":        filepath.Join(root, ".orca"),
		"chain":      "docs",
	} {
		if err := os.Symlink(to, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"notes.json", "docs/pre-tool-use", "chain/x", ".orca/settings.json", "sub/../.orca/x"} {
		if err := l.WriteFile(name, []byte("x"), 0o644); !errors.Is(err, errGuarded) {
			t.Errorf("WriteFile(%s) = %v, want the guard's error", name, err)
		}
	}
	// os.Root refuses an absolute link in the middle of a path outright.
	if err := l.WriteFile("abs/settings.json", []byte("x"), 0o644); err == nil {
		t.Error("WriteFile(abs/settings.json) wrote through an absolute link into .orca")
	}
	entries, _ := os.ReadDir(filepath.Join(root, ".orca"))
	hooks, _ := os.ReadDir(filepath.Join(root, ".orca", "hooks"))
	if len(entries) != 1 || len(hooks) != 0 {
		t.Errorf(".orca holds %v, .orca/hooks %v", entries, hooks)
	}
	if err := l.WriteFile("docs-real/x.md", []byte("ok"), 0o644); err != nil {
		t.Errorf("an ordinary write: %v", err)
	}
}

// A link swapped in while writes run cannot lead one into .orca: the
// check and the write are one operation.
func TestWriteGuardRace(t *testing.T) {
	l, root := guarded(t)
	if err := os.Mkdir(filepath.Join(root, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(root, "d")
	os.Symlink("real", d)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		// d leads to real, then to .orca, then back, each swap atomic.
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			to := "real"
			if i%2 == 1 {
				to = ".orca"
			}
			tmp := filepath.Join(root, "d.new")
			os.Symlink(to, tmp)
			os.Rename(tmp, d)
		}
	})
	written := 0
	for range 2000 {
		if l.WriteFile("d/settings.json", []byte("x"), 0o644) == nil {
			written++
		}
	}
	close(stop)
	wg.Wait()
	if _, err := os.Stat(filepath.Join(root, ".orca", "settings.json")); err == nil {
		t.Error("a write reached .orca/settings.json through the swapped link")
	}
	if written == 0 {
		t.Error("no write got through to real/: the swap never let one")
	}
}
