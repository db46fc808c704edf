package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/orcatest"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
)

// countingWrites is a store that counts the writes of a session's
// transcript and totals: each is a transaction, and a synced commit, of
// its own that the turn waits for.
type countingWrites struct {
	store.Store
	mu       sync.Mutex
	writes   []string
	finished []store.TurnEnd
	// totalsRead counts the reads of the totals.
	totalsRead int
}

func (c *countingWrites) Totals(ctx context.Context, sessionID string) (store.Totals, error) {
	c.mu.Lock()
	c.totalsRead++
	c.mu.Unlock()
	return c.Store.Totals(ctx, sessionID)
}

func (c *countingWrites) note(w string) {
	c.mu.Lock()
	c.writes = append(c.writes, w)
	c.mu.Unlock()
}

func (c *countingWrites) Append(ctx context.Context, sessionID string, recs ...store.Record) ([]store.Record, error) {
	c.note("Append")
	return c.Store.Append(ctx, sessionID, recs...)
}

func (c *countingWrites) AppendStep(ctx context.Context, sessionID string, step store.Step) ([]store.Record, store.Totals, error) {
	c.note("AppendStep")
	if step.Finish != nil {
		c.mu.Lock()
		c.finished = append(c.finished, *step.Finish)
		c.mu.Unlock()
	}
	return c.Store.AppendStep(ctx, sessionID, step)
}

func (c *countingWrites) AddTotals(ctx context.Context, sessionID string, d store.Totals) (store.Totals, error) {
	c.note("AddTotals")
	return c.Store.AddTotals(ctx, sessionID, d)
}

func (c *countingWrites) FinishTurn(ctx context.Context, sessionID, turnID, prompt string) error {
	c.note("FinishTurn")
	return c.Store.FinishTurn(ctx, sessionID, turnID, prompt)
}

// A turn's end — its answer, its last totals and its count — is one
// write, not three one after the other: a turn that answers at once
// writes its prompt, then its answer with its end (was 4 writes: the
// answer, the totals, then FinishTurn). One that calls a tool writes its
// prompt, the call, the result, then the answer with the end — the call
// with its result when a crash may run it again unasked (Glob: read-only
// and idempotent).
func TestTurnWrites(t *testing.T) {
	st := &countingWrites{Store: store.NewMemory()}
	n := orcatest.NewNode(t, orcatest.WithStore(st))
	n.Script("s", script.Text("first"),
		script.Call("Glob", map[string]string{"pattern": "*"}), script.Text("second"),
		script.Call("Write", map[string]string{"file_path": "a.txt", "content": "a"}), script.Text("third"))
	s, err := n.Router.Open(t.Context(), "s", session.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	for i, prompt := range []string{"hello", "again", "write"} {
		st.mu.Lock()
		st.writes = nil
		st.mu.Unlock()
		if _, err := s.Run(t.Context(), prompt); err != nil {
			t.Fatal(err)
		}
		st.mu.Lock()
		writes := st.writes
		st.mu.Unlock()
		if want := 2 + i; len(writes) != want {
			t.Errorf("turn %d: %d writes %v, want %d", i, len(writes), writes, want)
		}
	}
	if len(st.finished) != 3 || st.finished[2].Prompt != "write" {
		t.Errorf("turns finished with their totals: %+v", st.finished)
	}
	sess, err := st.Session(t.Context(), "s")
	if err != nil {
		t.Fatal(err)
	}
	tot, err := st.Totals(t.Context(), "s")
	if err != nil {
		t.Fatal(err)
	}
	if sess.Turns != 3 || tot.Turns != 3 || tot.ToolCalls != 2 || sess.LastPrompt != "write" {
		t.Errorf("session: %d turns (totals %d, %d calls), last prompt %q; want 3, 3, 2, write", sess.Turns, tot.Turns, tot.ToolCalls, sess.LastPrompt)
	}
	// Every message is in the store, in order, the answers with their
	// model.
	recs, err := st.Records(t.Context(), "s", store.RecordFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%d %s %s %q", r.Seq, r.Message.Role, r.Model, r.Message.Text()))
	}
	want := []string{`1 user  "hello"`, `2 assistant script "first"`, `3 user  "again"`, `4 assistant script ""`, `5 user  ""`, `6 assistant script "second"`,
		`7 user  "write"`, `8 assistant script ""`, `9 user  ""`, `10 assistant script "third"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A turn does not read its session's totals from the store: the session
// knows them from its last write. A write beside the turns (a call
// outside a turn, a background task's spending) makes it forget them:
// the next turn reads them, and its budget counts that spending.
func TestTotalsKnownBetweenTurns(t *testing.T) {
	st := &countingWrites{Store: store.NewMemory()}
	n := orcatest.NewNode(t, orcatest.WithStore(st))
	n.Script("s", script.Text("one"), script.Text("two"), script.Text("not asked"))
	s, err := n.Router.Open(t.Context(), "s", session.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	reads := func() int {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.totalsRead
	}
	for _, prompt := range []string{"a", "b"} {
		if _, err := s.Run(t.Context(), prompt); err != nil {
			t.Fatal(err)
		}
	}
	if n := reads(); n != 1 {
		t.Errorf("two turns read the totals %d times, want once", n)
	}
	if res, err := s.CallTool(t.Context(), "Glob", json.RawMessage(`{"pattern": "*"}`)); err != nil || res.IsError {
		t.Fatalf("Glob: %+v %v", res, err)
	}
	if err := s.SetBudget(t.Context(), &budget.Limits{ToolCalls: 1}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(t.Context(), "c")
	if err != nil || res.StopReason != agent.StopBudgetExhausted {
		t.Errorf("after a call outside the turns, with a budget of one call: %s, %v; want the budget exhausted", res.StopReason, err)
	}
	if n := reads(); n != 2 { // the third turn's
		t.Errorf("the totals were read %d times, want 2", n)
	}
}
