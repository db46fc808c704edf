package anthropic

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// The helper's key lives ttl: asked for again once it has, never while it
// has not; a ttl of 0 keeps it for good (until refused).
func TestKeyLivesItsTTL(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, ttl := range []time.Duration{5 * time.Minute, 0} {
		runs := 0
		k := &keySource{ttl: ttl, now: func() time.Time { return now }, fn: func(context.Context) (string, error) {
			runs++
			return fmt.Sprint("key-", runs), nil
		}}
		get := func() string {
			key, err := k.get(t.Context(), "")
			if err != nil {
				t.Fatal(err)
			}
			return key
		}
		start := now
		if first, second := get(), get(); first != "key-1" || second != "key-1" {
			t.Fatalf("ttl %v: the key changed within its life", ttl)
		}
		now = start.Add(5*time.Minute - time.Nanosecond)
		if get() != "key-1" {
			t.Errorf("ttl %v: asked again before its ttl", ttl)
		}
		now = start.Add(5 * time.Minute)
		want, wantRuns := "key-2", 3
		if ttl == 0 {
			want, wantRuns = "key-1", 2
		}
		if got := get(); got != want {
			t.Errorf("ttl %v: after 5 minutes the key is %q, want %q", ttl, got, want)
		}
		// Refused: asked again whatever its age, but not when another
		// request has replaced the refused key already.
		refused := k.key
		if key, _ := k.get(t.Context(), refused); key == refused {
			t.Errorf("ttl %v: a refused key was kept", ttl)
		}
		if key, _ := k.get(t.Context(), refused); key != k.key || runs != wantRuns {
			t.Errorf("ttl %v: the helper ran %d times, want %d", ttl, runs, wantRuns)
		}
	}
}
