package lsp

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestDiagnosticsOnce: a change's diagnostics are reported once — not
// again while they stand, again once fixed and made anew — errors first,
// with the line and the character counted as the model counts them.
func TestDiagnosticsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{delay: 100 * time.Millisecond}
		s, fsys := fakeSet(t, f, 0)
		defer s.Close()
		ctx := context.Background()
		put := func(text string) {
			t.Helper()
			if err := fsys.WriteFile("a.txt", []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		put("fine\nàé bad\n")
		rep := s.Changed(ctx, []string{"a.txt", "ignored.md"})
		if len(rep.Diagnostics) != 1 || rep.Diagnostics[0].String() != "a.txt:2:4: error: bad here [fake]" || len(rep.Notes) != 0 {
			t.Fatalf("first: %+v", rep)
		}
		if !strings.Contains(rep.String(), "<diagnostics>\nThe language servers found new problems in the files changed:\na.txt:2:4: error: bad here [fake]\n</diagnostics>") {
			t.Errorf("as the model reads it: %q", rep.String())
		}
		// A line added above moves it, and it is the same problem.
		put("new line\nfine\nàé bad\n")
		if rep := s.Changed(ctx, []string{"a.txt"}); !rep.Empty() {
			t.Errorf("moved: %+v", rep)
		}
		put("fine\n")
		if rep := s.Changed(ctx, []string{"a.txt"}); !rep.Empty() {
			t.Errorf("fixed: %+v", rep)
		}
		put("fine\nàé bad\n")
		if rep := s.Changed(ctx, []string{"a.txt"}); len(rep.Diagnostics) != 1 {
			t.Errorf("made anew: %+v", rep)
		}
		if f.count() != 1 {
			t.Errorf("%d launches", f.count())
		}
	})
}

// TestDiagnosticsNeverHoldTheTurn: a server that is slow to check a
// change holds a call for Wait at most (its first, StartupTimeout), and
// what it finds later comes with the next change's report.
func TestDiagnosticsNeverHoldTheTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{delay: time.Minute}
		s, fsys := fakeSet(t, f, 0)
		defer s.Close()
		ctx := context.Background()
		fsys.WriteFile("a.txt", []byte("bad\n"), 0o644)
		start := time.Now()
		rep := s.Changed(ctx, []string{"a.txt"})
		if took := time.Since(start); took != DefaultStartupTimeout {
			t.Errorf("first change held for %s, want %s", took, DefaultStartupTimeout)
		}
		if len(rep.Diagnostics) != 0 || len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "a.txt: fake has not finished checking it") {
			t.Fatalf("slow: %+v", rep)
		}
		time.Sleep(time.Minute) // it publishes
		fsys.WriteFile("b.txt", []byte("ok\n"), 0o644)
		f.set(func(f *fake) { f.delay = time.Second })
		start = time.Now()
		rep = s.Changed(ctx, []string{"b.txt"})
		if took := time.Since(start); took != time.Second {
			t.Errorf("second change held for %s", took)
		}
		if len(rep.Diagnostics) != 1 || rep.Diagnostics[0].Path != "a.txt" || len(rep.Notes) != 0 {
			t.Errorf("late diagnostics: %+v", rep)
		}
		// A server that never publishes: Wait, not more.
		f.set(func(f *fake) { f.delay = -1 })
		fsys.WriteFile("b.txt", []byte("bad\n"), 0o644)
		start = time.Now()
		s.Changed(ctx, []string{"b.txt"})
		if took := time.Since(start); took != DefaultWait {
			t.Errorf("never published: held for %s, want %s", took, DefaultWait)
		}
	})
}

// TestCrashedServerRestartsWithBackoff: a server that exits is a note of
// the report, not an error; it is started again after 1 s, 2 s, 4 s …,
// and not after MaxRestarts failures in a row.
func TestCrashedServerRestartsWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{delay: 0, crash: true}
		s, fsys := fakeSet(t, f, 2)
		defer s.Close()
		ctx := context.Background()
		fsys.WriteFile("a.txt", []byte("bad\n"), 0o644)
		note := func(want string) {
			t.Helper()
			rep := s.Changed(ctx, []string{"a.txt"})
			if len(rep.Diagnostics) != 0 || len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], want) {
				t.Errorf("want a note with %q: %+v", want, rep)
			}
		}
		note("Not checked (a.txt): language server fake exited: exit status 2")
		// The backoff counts from the crash, seen by the change it broke.
		time.Sleep(time.Second)
		note("exited: exit status 2") // started, and crashed again
		if f.count() != 2 {
			t.Fatalf("%d launches 1 s after the crash", f.count())
		}
		note("language server fake exited: exit status 2; it is restarted in 2s")
		time.Sleep(2 * time.Second)
		note("exited: exit status 2")
		time.Sleep(time.Hour)
		note("language server fake failed 3 times in a row and is not restarted")
		if f.count() != 3 {
			t.Errorf("%d launches, want 3 (MaxRestarts 2)", f.count())
		}
	})
}

// TestRecoveredServerForgetsItsFailures: once a restarted server answers,
// its next crash waits 1 s again.
func TestRecoveredServerForgetsItsFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{delay: 0, crash: true}
		s, fsys := fakeSet(t, f, 0)
		defer s.Close()
		ctx := context.Background()
		fsys.WriteFile("a.txt", []byte("bad\n"), 0o644)
		s.Changed(ctx, []string{"a.txt"})
		time.Sleep(time.Second)
		s.Changed(ctx, []string{"a.txt"})
		time.Sleep(2 * time.Second)
		f.set(func(f *fake) { f.crash = false })
		if rep := s.Changed(ctx, []string{"a.txt"}); len(rep.Diagnostics) != 1 {
			t.Fatalf("recovered: %+v", rep)
		}
		f.set(func(f *fake) { f.crash = true })
		fsys.WriteFile("a.txt", []byte("bad\nbad again\n"), 0o644)
		s.Changed(ctx, []string{"a.txt"})
		rep := s.Changed(ctx, []string{"a.txt"})
		if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "restarted in 1s") {
			t.Errorf("after recovering: %+v", rep)
		}
	})
}

// TestHungServerIsKilled: a request a server does not answer fails after
// Timeout; a second in a row kills it, and it is restarted on next use.
func TestHungServerIsKilled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{hang: true}
		s, fsys := fakeSet(t, f, 0)
		defer s.Close()
		ctx := context.Background()
		fsys.WriteFile("a.txt", []byte("word\n"), 0o644)
		for i := range 2 {
			start := time.Now()
			_, err := s.Hover(ctx, "a.txt", 1, 1)
			if err == nil || !strings.Contains(err.Error(), "fake did not answer textDocument/hover within 15s") || time.Since(start) != DefaultTimeout {
				t.Fatalf("hover %d: %v after %s", i, err, time.Since(start))
			}
		}
		synctest.Wait()
		if _, err := s.Hover(ctx, "a.txt", 1, 1); err == nil || !strings.Contains(err.Error(), "language server fake stopped answering and was killed; it is restarted in 1s") {
			t.Fatalf("after the kill: %v", err)
		}
		f.set(func(f *fake) { f.hang = false })
		time.Sleep(time.Second)
		if h, err := s.Hover(ctx, "a.txt", 1, 1); err != nil || h != "a fake hover" || f.count() != 2 {
			t.Errorf("restarted: %q, %v, %d launches", h, err, f.count())
		}
	})
}

// TestServerWithoutVersions: a server that does not say which version
// its diagnostics are of is taken at its first publish after the change.
func TestServerWithoutVersions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{delay: 10 * time.Millisecond, noVer: true}
		s, fsys := fakeSet(t, f, 0)
		defer s.Close()
		fsys.WriteFile("a.txt", []byte("ok\nbad\n"), 0o644)
		if rep := s.Changed(context.Background(), []string{"a.txt"}); len(rep.Diagnostics) != 1 || rep.Diagnostics[0].Line != 2 {
			t.Errorf("%+v", rep)
		}
	})
}

// TestDiagnosticsInParts: a server that names no versions and publishes
// a document's diagnostics in parts (typescript-language-server: the
// syntax's, then the types') is waited for until it is quiet; a part
// that comes later still is reported with the next change.
func TestDiagnosticsInParts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{delay: 10 * time.Millisecond, noVer: true, parts: 500 * time.Millisecond}
		s, fsys := fakeSet(t, f, 0)
		defer s.Close()
		ctx := context.Background()
		fsys.WriteFile("a.txt", []byte("ok\nbad\n"), 0o644)
		if rep := s.Changed(ctx, []string{"a.txt"}); len(rep.Diagnostics) != 1 || rep.Diagnostics[0].Line != 2 {
			t.Errorf("in two parts: %+v", rep)
		}
		f.set(func(f *fake) { f.parts = 3 * time.Second })
		fsys.WriteFile("a.txt", []byte("ok\nbad\nbad too\n"), 0o644)
		start := time.Now()
		if rep := s.Changed(ctx, []string{"a.txt"}); !rep.Empty() || time.Since(start) != 10*time.Millisecond+unversionedQuiet {
			t.Errorf("the second part late: %+v after %s", rep, time.Since(start))
		}
		time.Sleep(5 * time.Second)
		fsys.WriteFile("b.txt", []byte("ok\n"), 0o644)
		rep := s.Changed(ctx, []string{"b.txt"})
		if len(rep.Diagnostics) != 1 || rep.Diagnostics[0].String() != "a.txt:3:1: error: bad here [fake]" {
			t.Errorf("with the next change: %+v", rep)
		}
		if rep := s.Changed(ctx, []string{"b.txt"}); !rep.Empty() {
			t.Errorf("reported twice: %+v", rep)
		}
	})
}

func TestPositions(t *testing.T) {
	line := "a😀é b"
	for _, c := range []struct{ col, units int }{{1, 0}, {2, 1}, {3, 3}, {4, 4}, {5, 5}, {6, 6}, {60, 6}} {
		if got := utf16Offset(line, c.col); got != c.units {
			t.Errorf("utf16Offset(%d) = %d, want %d", c.col, got, c.units)
		}
		if c.col <= 6 {
			if got := runeColumn(line, c.units); got != c.col {
				t.Errorf("runeColumn(%d) = %d, want %d", c.units, got, c.col)
			}
		}
	}
	if w := WordAt("x := greet(name)\n", 1, 8); w != "greet" {
		t.Errorf("WordAt: %q", w)
	}
	if w := WordAt("a + b", 1, 2); w != "" {
		t.Errorf("WordAt on a space: %q", w)
	}
}

// TestURIsByPath: a server that escapes a path's URI its own way is
// understood.
func TestURIsByPath(t *testing.T) {
	for _, p := range []string{"/tmp/a b/ü@x.go", "/w/c#d.ts"} {
		if got := uriPath(strings.ReplaceAll(fileURI(p), "@", "%40")); got != p {
			t.Errorf("%s: %s", p, got)
		}
		if fileURI(uriPath(strings.ReplaceAll(fileURI(p), "@", "%40"))) != fileURI(p) {
			t.Errorf("%s: not the same URI again", p)
		}
	}
}
