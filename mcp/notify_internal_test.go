package mcp

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// A server's log messages: a burst of logBurst, then logRate a second;
// the first told after some were dropped says how many.
func TestLogLimit(t *testing.T) {
	var l logLimit
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	told := 0
	for range 100 {
		if ok, _ := l.take(at); ok {
			told++
		}
	}
	if told != logBurst {
		t.Errorf("a burst: %d told, want %d", told, logBurst)
	}
	if ok, dropped := l.take(at.Add(time.Second / logRate)); !ok || dropped != 100-logBurst {
		t.Errorf("after 1/logRate s: told %v, dropped %d; want true, %d", ok, dropped, 100-logBurst)
	}
	if ok, _ := l.take(at.Add(time.Second / logRate)); ok {
		t.Error("two told in 1/logRate s")
	}
	if ok, dropped := l.take(at.Add(time.Hour)); !ok || dropped != 1 {
		t.Errorf("an hour later: %v, %d", ok, dropped)
	}
}

// A call's progress: one report each progressEvery, and its last always.
func TestProgressEvery(t *testing.T) {
	var p callProgress
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, c := range []struct {
		after time.Duration
		done  bool
		want  bool
	}{
		{0, false, true},
		{progressEvery / 2, false, false},
		{progressEvery, false, true},
		{progressEvery + 1, true, true},
		{progressEvery + 2, false, false},
	} {
		if got := p.take(at.Add(c.after), c.done); got != c.want {
			t.Errorf("report %d (after %v, done %v): told %v", i, c.after, c.done, got)
		}
	}
}

func TestClipText(t *testing.T) {
	long := strings.Repeat("é", 2000)
	got := clipText(long, 101)
	if len(got) > 101 || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("clipText: %d bytes, valid %v: %q", len(got), utf8.ValidString(got), got[len(got)-10:])
	}
	if got := clipText("bad \xff byte", 100); got != "bad  byte" {
		t.Errorf("invalid UTF-8: %q", got)
	}
}
