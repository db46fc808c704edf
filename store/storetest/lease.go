package storetest

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
)

// A step's records and totals are written together, or not at all.
func testAppendStep(t *testing.T, s store.Store) {
	provision(t, s, "s1", "r1")
	d := store.Totals{Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}, CostUSD: 0.5, ToolCalls: 2}
	recs, sum, err := s.AppendStep(ctx, "s1", store.Step{Records: []store.Record{text(llm.RoleUser, "hi"), text(llm.RoleAssistant, "hello")}, Totals: d})
	if err != nil || len(recs) != 2 || recs[0].Seq != 1 || recs[1].Seq != 2 || sum != d {
		t.Fatalf("AppendStep = %v, %+v, %v", seqs(recs), sum, err)
	}
	// Totals alone, and records alone.
	if _, sum, err = s.AppendStep(ctx, "s1", store.Step{Totals: d}); err != nil || sum != d.Add(d) {
		t.Errorf("a step of totals only: %+v, %v", sum, err)
	}
	if recs, sum, err = s.AppendStep(ctx, "s1", store.Step{Records: []store.Record{text(llm.RoleUser, "again")}}); err != nil || recs[0].Seq != 3 || sum != d.Add(d) {
		t.Errorf("a step of records only: %v, %+v, %v", seqs(recs), sum, err)
	}
	// An invalid record stores nothing: no records, no totals.
	_, _, err = s.AppendStep(ctx, "s1", store.Step{Records: []store.Record{text(llm.RoleUser, "ok"), {Kind: "bogus"}}, Totals: d})
	wantErr(t, "AppendStep with an invalid record", err, store.ErrInvalid)
	if got, _ := s.Totals(ctx, "s1"); got != d.Add(d) {
		t.Errorf("totals after a refused step = %+v, want %+v", got, d.Add(d))
	}
	wantSeqs(t, "records after a refused step", records(t, s, "s1", store.RecordFilter{}), seqRange(1, 3))
	_, _, err = s.AppendStep(ctx, "nope", store.Step{Totals: d})
	wantErr(t, "AppendStep to an unknown session", err, store.ErrNotProvisioned)
}

// A step that finishes its turn (Step.Finish) does FinishTurn's work in
// the same transaction: the turn counts once, in the session and in the
// totals returned; a step refused finishes nothing.
func testFinishStep(t *testing.T, s store.Store) {
	created := provision(t, s, "s1", "r1")
	d := store.Totals{Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}, CostUSD: 0.5, ToolCalls: 2}
	recs, sum, err := s.AppendStep(ctx, "s1", store.Step{Records: []store.Record{text(llm.RoleAssistant, "done")}, Totals: d,
		Finish: &store.TurnEnd{TurnID: "t1", Prompt: "first"}})
	want := d
	want.Turns = 1
	if err != nil || len(recs) != 1 || recs[0].Seq != 1 || sum != want {
		t.Fatalf("AppendStep finishing t1 = %v, %+v, %v; want seq 1, %+v", seqs(recs), sum, err, want)
	}
	one := session(t, s, "s1")
	if one.Turns != 1 || one.LastPrompt != "first" || !one.UpdatedAt.After(created.UpdatedAt) {
		t.Errorf("after a finishing step: %+v, want Turns 1, LastPrompt first, UpdatedAt after %v", one, created.UpdatedAt)
	}
	// The same turn again (totals only) counts nothing; the totals read
	// afterwards count the turn once.
	if _, sum, err = s.AppendStep(ctx, "s1", store.Step{Totals: d, Finish: &store.TurnEnd{TurnID: "t1", Prompt: "first"}}); err != nil || sum != want.Add(d) {
		t.Errorf("t1 finished again: %+v, %v; want %+v", sum, err, want.Add(d))
	}
	if _, sum, err = s.AppendStep(ctx, "s1", store.Step{Totals: d}); err != nil || sum.Turns != 1 || sum.ToolCalls != 3*d.ToolCalls {
		t.Errorf("a step after the finished turn: %+v, %v", sum, err)
	}
	if got := session(t, s, "s1"); got.Turns != 1 {
		t.Errorf("the same turn finished twice: Turns %d", got.Turns)
	}
	// A step refused (an invalid record, another writer's lease, an
	// unknown session) finishes nothing.
	_, _, err = s.AppendStep(ctx, "s1", store.Step{Records: []store.Record{{Kind: "bogus"}}, Finish: &store.TurnEnd{TurnID: "t2", Prompt: "second"}})
	wantErr(t, "a finishing step with an invalid record", err, store.ErrInvalid)
	if _, err := s.AcquireLease(ctx, "s1", "writer A", time.Minute); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.AppendStep(ctx, "s1", store.Step{Owner: "writer B", Totals: d, Finish: &store.TurnEnd{TurnID: "t2", Prompt: "second"}})
	wantErr(t, "a finishing step of a writer without the lease", err, store.ErrLeased)
	tot, err := s.Totals(ctx, "s1")
	if got := session(t, s, "s1"); err != nil || got.Turns != 1 || got.LastPrompt != "first" || tot.Turns != 1 {
		t.Errorf("after refused steps: %+v, totals %+v, %v; want 1 turn, first", got, tot, err)
	}
	_, sum, err = s.AppendStep(ctx, "s1", store.Step{Owner: "writer A", Finish: &store.TurnEnd{TurnID: "t2", Prompt: "second"}})
	if got := session(t, s, "s1"); err != nil || sum.Turns != 2 || got.Turns != 2 || got.LastPrompt != "second" {
		t.Errorf("the lease holder's finishing step: %+v, %+v, %v", sum, got, err)
	}
	_, _, err = s.AppendStep(ctx, "nope", store.Step{Finish: &store.TurnEnd{TurnID: "t1"}})
	wantErr(t, "a finishing step to an unknown session", err, store.ErrNotProvisioned)
}

// One writer per session: the lease is taken, renewed, refused to others
// (naming the holder), taken over once expired, released; a step of a
// writer that does not hold it writes nothing.
func testLeases(t *testing.T, s store.Store) {
	provision(t, s, "s1", "r1")
	provision(t, s, "s2", "r1")
	until, err := s.AcquireLease(ctx, "s1", "writer A", time.Minute)
	if err != nil || time.Until(until) < 50*time.Second {
		t.Fatalf("AcquireLease = %v, %v", until, err)
	}
	if _, err := s.AcquireLease(ctx, "s1", "writer A", time.Minute); err != nil {
		t.Errorf("renewing: %v", err)
	}
	_, err = s.AcquireLease(ctx, "s1", "writer B", time.Minute)
	var le *store.LeaseError
	if !errors.Is(err, store.ErrLeased) || !errors.As(err, &le) || le.Owner != "writer A" || le.SessionID != "s1" {
		t.Fatalf("a second writer: %v, want a *LeaseError naming writer A", err)
	}
	if _, err := s.AcquireLease(ctx, "s2", "writer B", time.Minute); err != nil {
		t.Errorf("another session's lease: %v", err)
	}
	rec := text(llm.RoleUser, "hi")
	if _, _, err := s.AppendStep(ctx, "s1", store.Step{Owner: "writer A", Records: []store.Record{rec}}); err != nil {
		t.Errorf("the holder's step: %v", err)
	}
	_, _, err = s.AppendStep(ctx, "s1", store.Step{Owner: "writer B", Records: []store.Record{rec}, Totals: store.Totals{ToolCalls: 1}})
	wantErr(t, "a step of a writer without the lease", err, store.ErrLeased)
	if got, _ := s.Totals(ctx, "s1"); got.ToolCalls != 0 {
		t.Errorf("the refused step added totals: %+v", got)
	}
	wantSeqs(t, "records", records(t, s, "s1", store.RecordFilter{}), seqRange(1, 1))

	// Released: another writer may take it; the old one's steps fail.
	if err := s.ReleaseLease(ctx, "s1", "writer B"); err != nil {
		t.Errorf("releasing a lease one does not hold: %v", err)
	}
	if _, err := s.AcquireLease(ctx, "s1", "writer B", time.Minute); !errors.Is(err, store.ErrLeased) {
		t.Errorf("a release by a non-holder freed the lease: %v", err)
	}
	if err := s.ReleaseLease(ctx, "s1", "writer A"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireLease(ctx, "s1", "writer B", time.Nanosecond); err != nil {
		t.Fatalf("after the release: %v", err)
	}
	// Expired (a lease of a nanosecond): it can be taken over, and its
	// holder's steps fail.
	if _, err := s.AcquireLease(ctx, "s1", "writer C", time.Minute); err != nil {
		t.Errorf("taking over an expired lease: %v", err)
	}
	_, _, err = s.AppendStep(ctx, "s1", store.Step{Owner: "writer B", Records: []store.Record{rec}})
	wantErr(t, "a step after the lease was taken over", err, store.ErrLeased)

	_, err = s.AcquireLease(ctx, "s1", "", time.Minute)
	wantErr(t, "a lease without an owner", err, store.ErrInvalid)
	_, err = s.AcquireLease(ctx, "s1", "w", 0)
	wantErr(t, "a lease of no time", err, store.ErrInvalid)
	_, err = s.AcquireLease(ctx, "nope", "w", time.Minute)
	wantErr(t, "the lease of an unknown session", err, store.ErrNotProvisioned)

	// Many writers at once: exactly one wins.
	provision(t, s, "s3", "r1")
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range 16 {
		wg.Go(func() {
			if _, err := s.AcquireLease(ctx, "s3", string(rune('a'+i)), time.Minute); err == nil {
				mu.Lock()
				won++
				mu.Unlock()
			} else if !errors.Is(err, store.ErrLeased) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if won != 1 {
		t.Errorf("%d writers got the lease at once", won)
	}
}

// A runtime whose id changed takes its sessions and approvals along;
// other runtimes' stay.
func testRebindRuntime(t *testing.T, s store.Store) {
	provision(t, s, "s1", "old")
	provision(t, s, "s2", "old")
	provision(t, s, "s3", "other")
	for _, a := range []store.Approval{{RuntimeID: "old", Rule: "Bash(go test:*)"}, {RuntimeID: "new", Rule: "Bash(go test:*)"}, {RuntimeID: "old", SessionID: "s1", Rule: "Edit"}} {
		if err := s.AddApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.RebindRuntime(ctx, "old", "new")
	if err != nil || n != 2 {
		t.Fatalf("RebindRuntime = %d, %v; want 2", n, err)
	}
	for id, want := range map[string]string{"s1": "new", "s2": "new", "s3": "other"} {
		if got := session(t, s, id).RuntimeID; got != want {
			t.Errorf("%s belongs to %q, want %q", id, got, want)
		}
	}
	as, err := s.Approvals(ctx, "new", "s1")
	if err != nil || len(as) != 2 {
		t.Errorf("approvals of new/s1: %+v, %v; want the agent rule once and the session's", as, err)
	}
	if as, _ := s.Approvals(ctx, "old", ""); len(as) != 0 {
		t.Errorf("old still has approvals: %+v", as)
	}
	if _, err := s.RebindRuntime(ctx, "", "x"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("an empty runtime id: %v", err)
	}
}

// A parked call waits for a decision, takes one decision only, and an
// approved one is started once.
func testParkedCalls(t *testing.T, s store.Store) {
	provision(t, s, "s1", "r1")
	provision(t, s, "s2", "r1")
	in := json.RawMessage(`{"command":  "rm -rf build"}`) // kept byte for byte
	const traceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	p := store.ParkedCall{ID: "park_1", SessionID: "s1", RuntimeID: "r1", TurnID: "t1", ToolUseID: "toolu_1", ToolName: "Bash", Input: in, Reason: "asks", Rules: []string{"Bash(rm:*)"}, TraceParent: traceParent}
	if err := s.Park(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := s.Park(ctx, store.ParkedCall{ID: "park_2", SessionID: "s2", ToolUseID: "toolu_2", ToolName: "Edit", Input: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "parking an id twice", s.Park(ctx, p), store.ErrInvalid)
	wantErr(t, "parking in an unknown session", s.Park(ctx, store.ParkedCall{ID: "park_3", SessionID: "nope", ToolUseID: "x", ToolName: "Bash"}), store.ErrNotProvisioned)
	wantErr(t, "parking without an id", s.Park(ctx, store.ParkedCall{SessionID: "s1", ToolUseID: "x", ToolName: "Bash"}), store.ErrInvalid)

	got, err := s.ParkedCalls(ctx, store.ParkFilter{SessionID: "s1"})
	if err != nil || len(got) != 1 || got[0].Status != store.ParkPending || string(got[0].Input) != string(in) || got[0].Rules[0] != "Bash(rm:*)" || got[0].TurnID != "t1" || got[0].CreatedAt.IsZero() || got[0].TraceParent != traceParent {
		t.Fatalf("ParkedCalls(s1) = %+v, %v", got, err)
	}
	if all, _ := s.ParkedCalls(ctx, store.ParkFilter{Status: store.ParkPending}); len(all) != 2 {
		t.Errorf("pending: %d, want 2", len(all))
	}
	// Started before it is approved: refused.
	_, err = s.SetParkStatus(ctx, "park_1", store.ParkStarted, "", "")
	wantErr(t, "starting a pending call", err, store.ErrInvalid)
	d, err := s.SetParkStatus(ctx, "park_1", store.ParkApproved, "ana", "fine")
	if err != nil || d.Status != store.ParkApproved || d.DecidedBy != "ana" || d.Note != "fine" || d.DecidedAt.IsZero() {
		t.Fatalf("approve: %+v, %v", d, err)
	}
	_, err = s.SetParkStatus(ctx, "park_1", store.ParkDenied, "bo", "")
	wantErr(t, "a second decision", err, store.ErrInvalid)
	if _, err := s.SetParkStatus(ctx, "park_1", store.ParkStarted, "", ""); err != nil {
		t.Errorf("starting the approved call: %v", err)
	}
	_, err = s.SetParkStatus(ctx, "park_1", store.ParkStarted, "", "")
	wantErr(t, "starting it twice", err, store.ErrInvalid)
	_, err = s.SetParkStatus(ctx, "park_9", store.ParkApproved, "", "")
	wantErr(t, "an unknown parked call", err, store.ErrNotFound)
	if got, _ := s.ParkedCalls(ctx, store.ParkFilter{SessionID: "s1"}); got[0].Status != store.ParkStarted || got[0].DecidedBy != "ana" || got[0].TraceParent != traceParent {
		t.Errorf("after start: %+v", got[0])
	}
}
