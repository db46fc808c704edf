package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/store"
)

// The memory store keeps its rows in chunks and slabs of bytes: rows
// across chunk and slab boundaries, a row larger than a slab, an empty
// one and one with every scope field read back as written, whole and
// filtered, from any Seq on.
func TestMemoryObservationsAcrossChunks(t *testing.T) {
	m := store.NewMemory()
	defer m.Close()
	ctx := context.Background()
	base := time.Date(2026, 12, 3, 7, 0, 0, 123456789, time.UTC)
	var want []store.Observation
	for i := range 3000 {
		r := store.Observation{
			Time: base.Add(time.Duration(i) * time.Millisecond), Name: fmt.Sprint("event_", i%7),
			// Scopes that recur, each row's unlike the one before.
			Scope: scope.Scope{RuntimeID: "r1", SessionID: fmt.Sprint("s", i%3), TurnID: fmt.Sprint("t", i%5), ExecutionID: fmt.Sprint("e", i%4)},
			Data:  json.RawMessage(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("x", i%200))),
		}
		switch {
		case i >= 2000 && i < 2500: // runs of one execution's rows
			r.Scope = scope.Scope{RuntimeID: "r1", SessionID: "s1", TurnID: "t2", ExecutionID: fmt.Sprint("run", i/100)}
		case i >= 2500 && i < 2600: // a fork's rows between its parent's
			r.Scope = scope.Scope{RuntimeID: "r1", SessionID: "s2", TurnID: "t4", ExecutionID: "parent"}
			if i%3 == 0 {
				r.Scope = scope.Scope{RuntimeID: "r1/explorer", RootRuntimeID: "r1", SessionID: "s2", TurnID: "t4", ExecutionID: "fork", ParentExecutionID: "parent", Depth: 1}
			}
		}
		switch i {
		case 1500:
			r.Data = json.RawMessage(`{"big":"` + strings.Repeat("y", 100<<10) + `"}`) // more than a slab
		case 1501:
			r.Data = nil
		case 1502:
			r.Scope = scope.Scope{RuntimeID: "r2/explorer", RootRuntimeID: "r1", SessionID: "s0", TurnID: "t0", ExecutionID: "f1", ParentExecutionID: "e1", Depth: 2}
			r.Time = time.Time{}
		}
		want = append(want, r)
	}
	// In batches of uneven sizes, as the writer sends them.
	for i := 0; i < len(want); {
		n := min(1+i%300, len(want)-i)
		if err := m.AppendObservations(ctx, want[i:i+n]); err != nil {
			t.Fatal(err)
		}
		i += n
	}
	same := func(what string, got, want []store.Observation, firstSeq []int64) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
		}
		for i := range got {
			g, w := got[i], want[i]
			if !g.Time.Equal(w.Time) || g.Name != w.Name || g.Scope != w.Scope || !bytes.Equal(g.Data, w.Data) || (len(w.Data) == 0) != (g.Data == nil) || g.Seq != firstSeq[i] {
				t.Fatalf("%s: row %d is %+v (Seq %d), want %+v (Seq %d)", what, i, g, g.Seq, w, firstSeq[i])
			}
		}
	}
	seqs := func(idx []int) []int64 {
		out := make([]int64, len(idx))
		for i, x := range idx {
			out[i] = int64(x + 1)
		}
		return out
	}
	all := make([]int, len(want))
	for i := range all {
		all[i] = i
	}
	got, err := m.Observations(ctx, store.ObservationFilter{})
	if err != nil {
		t.Fatal(err)
	}
	same("all", got, want, seqs(all))

	for _, f := range []store.ObservationFilter{
		{AfterSeq: 1023}, {AfterSeq: 1024, Limit: 3}, {SessionID: "s0", AfterSeq: 1499}, {SessionID: "s1", TurnID: "t2", AfterSeq: 10},
		{TurnID: "t0", Limit: 50}, {SessionID: "s2", TurnID: "t4", AfterSeq: 2400}, {AfterSeq: 3000}, {AfterSeq: -5, Limit: 2}, {SessionID: "nope"},
	} {
		var idx []int
		var rows []store.Observation
		for i, w := range want {
			if int64(i+1) > f.AfterSeq && (f.SessionID == "" || w.SessionID == f.SessionID) && (f.TurnID == "" || w.TurnID == f.TurnID) {
				if f.Limit > 0 && len(idx) == f.Limit {
					break
				}
				idx, rows = append(idx, i), append(rows, w)
			}
		}
		got, err := m.Observations(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		same(fmt.Sprintf("%+v", f), got, rows, seqs(idx))
	}
}

// The runtime writes observation rows from the event bus's goroutine while
// the turn appends its records: neither waits for the other's lock, and
// closing the store is seen by both.
func TestMemoryObservationsAndRecordsLockApart(t *testing.T) {
	ctx := context.Background()
	m := store.NewMemory()
	if _, err := m.Provision(ctx, store.Session{ID: "s1", RuntimeID: "r1"}); err != nil {
		t.Fatal(err)
	}
	within := func(what string, f func() error) {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- f() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		case <-time.After(10 * time.Second): // a deadlock, not a slow call
			t.Fatalf("%s waited for a lock it does not need", what)
		}
	}
	release := store.HoldObservations(m)
	within("AppendStep while the rows are locked", func() error {
		_, _, err := m.AppendStep(ctx, "s1", store.Step{Records: []store.Record{{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("hi")}}}}})
		return err
	})
	release()
	release = store.HoldRecords(m)
	within("AppendObservations while the records are locked", func() error {
		return m.AppendObservations(ctx, []store.Observation{{Name: "turn_started", Time: time.Unix(1, 0), Data: json.RawMessage(`{}`)}})
	})
	within("Observations while the records are locked", func() error {
		rows, err := m.Observations(ctx, store.ObservationFilter{})
		if err == nil && len(rows) != 1 {
			err = fmt.Errorf("%d rows, want 1", len(rows))
		}
		return err
	})
	release()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.AppendObservations(ctx, []store.Observation{{Name: "turn_started", Time: time.Unix(2, 0)}}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("AppendObservations after Close: %v, want ErrClosed", err)
	}
	if _, err := m.Append(ctx, "s1", store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("late")}}}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Append after Close: %v, want ErrClosed", err)
	}
}
