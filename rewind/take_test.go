package rewind

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// Callers of Take that come while a walk runs share the next one: each
// gets a snapshot begun after it called, and there is one walk for them
// all.
func TestTakeSharesAWalk(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	var walks atomic.Int64
	s, err := Open(root, filepath.Join(root, ".orca", "rewind"), Options{Walk: func(ctx context.Context, fn func(string, fs.DirEntry) error) error {
		walks.Add(1)
		return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == root {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			return fn(filepath.ToSlash(rel), d)
		})
	}})
	if err != nil {
		t.Fatal(err)
	}
	const callers = 5
	s.mu.Lock() // a walk runs
	var wg sync.WaitGroup
	snaps := make([]*Snapshot, callers)
	for i := range callers {
		wg.Go(func() {
			var err error
			if snaps[i], err = s.Take(t.Context()); err != nil {
				t.Error(err)
			}
		})
	}
	for joined := 0; joined < callers; runtime.Gosched() {
		s.pmu.Lock()
		if s.pending != nil {
			joined = s.pending.joined
		}
		s.pmu.Unlock()
	}
	s.mu.Unlock()
	wg.Wait()
	if n := walks.Load(); n != 1 {
		t.Fatalf("%d walks for %d callers who came during one: want 1", n, callers)
	}
	for _, snap := range snaps {
		if snap != snaps[0] || snap.Paths["a.txt"] == nil {
			t.Fatalf("the callers' snapshots differ, or miss a.txt: %v", snaps)
		}
	}
	// The next caller walks again.
	if _, err := s.Take(t.Context()); err != nil || walks.Load() != 2 {
		t.Fatalf("Take after them: %v, %d walks; want 2", err, walks.Load())
	}
}

// A snapshot that finds what the last one found writes no index: a turn
// that only read costs no write.
func TestTakeKeepsAnUnchangedIndex(t *testing.T) {
	root := t.TempDir()
	a := filepath.Join(root, "a.txt")
	if err := os.WriteFile(a, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, ".orca", "rewind")
	s, err := Open(root, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	index := func() os.FileInfo {
		t.Helper()
		if _, err := s.Take(t.Context()); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(dir, "index.json"))
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	first := index()
	if again := index(); !os.SameFile(first, again) {
		t.Fatal("an unchanged workspace's snapshot wrote its index again")
	}
	if err := os.WriteFile(a, []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if changed := index(); os.SameFile(first, changed) {
		t.Fatal("a changed workspace's snapshot kept the old index")
	}
	// A store opened again knows the content from the index.
	s2, err := Open(root, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s2.last == nil || s2.last.Paths["a.txt"] == nil || s2.last.Paths["a.txt"].Size != int64(len("changed")) {
		t.Fatalf("the index read again: %+v", s2.last)
	}
}
