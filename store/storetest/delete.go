package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/store"
)

// DeleteSession removes the session and what is kept for it, not another
// session's, not the agent-reach approvals, not the observation rows; an
// absent session is ErrNotFound; a held lease refuses it; the id can be
// provisioned afresh.
func testDeleteSession(t *testing.T, s store.Store) {
	provision(t, s, "s1", "r1")
	provision(t, s, "s2", "r1")
	for _, id := range []string{"s1", "s2"} {
		if _, err := s.Append(ctx, id, text(llm.RoleUser, "hi "+id)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddTotals(ctx, id, store.Totals{ToolCalls: 3}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetBudget(ctx, id, &budget.Limits{ToolCalls: 9}); err != nil {
			t.Fatal(err)
		}
		if err := s.AddApproval(ctx, store.Approval{RuntimeID: "r1", SessionID: id, Rule: "Bash(ls:*)", CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if err := s.Park(ctx, store.ParkedCall{ID: "park_" + id, SessionID: id, RuntimeID: "r1", ToolUseID: "t_" + id, ToolName: "Bash", Input: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddApproval(ctx, store.Approval{RuntimeID: "r1", Rule: "Read", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	obs, isObs := s.(store.Observations)
	if isObs {
		if err := obs.AppendObservations(ctx, []store.Observation{{Time: time.Now(), Name: "turn_started", Scope: scope.Scope{SessionID: "s1"}, Data: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.AcquireLease(ctx, "s1", "writer A", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(ctx, "s1"); !errors.Is(err, store.ErrLeased) {
		t.Fatalf("deleting a leased session: %v, want ErrLeased", err)
	}
	if err := s.ReleaseLease(ctx, "s1", "writer A"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(ctx, "s1"); err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	if _, err := s.Session(ctx, "s1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the deleted session reads: %v", err)
	}
	if err := s.DeleteSession(ctx, "s1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleting it again: %v, want ErrNotFound", err)
	}
	if p, err := s.ParkedCalls(ctx, store.ParkFilter{}); err != nil || len(p) != 1 || p[0].SessionID != "s2" {
		t.Errorf("parked calls left: %+v, %v", p, err)
	}
	if a, err := s.Approvals(ctx, "r1", "s2"); err != nil || len(a) != 2 {
		t.Errorf("approvals of s2 (its own and the agent's): %+v, %v", a, err)
	}
	if recs, err := s.Records(ctx, "s2", store.RecordFilter{}); err != nil || len(recs) != 1 {
		t.Errorf("s2's records: %d, %v", len(recs), err)
	}
	if isObs {
		if rows, err := obs.Observations(ctx, store.ObservationFilter{SessionID: "s1"}); err != nil || len(rows) != 1 {
			t.Errorf("the observation rows of s1: %d, %v", len(rows), err)
		}
	}
	provision(t, s, "s1", "r1")
	if a, err := s.Approvals(ctx, "r1", "s1"); err != nil || len(a) != 1 || a[0].SessionID != "" {
		t.Errorf("approvals of the session provisioned again under the id: %+v, %v", a, err)
	}
	if recs, err := s.Records(ctx, "s1", store.RecordFilter{}); err != nil || len(recs) != 0 {
		t.Errorf("a session provisioned again under the id has %d records, %v", len(recs), err)
	}
	if tot, err := s.Totals(ctx, "s1"); err != nil || tot.ToolCalls != 0 {
		t.Errorf("its totals %+v, %v", tot, err)
	}
	if b, err := s.Budget(ctx, "s1"); err != nil || b != nil {
		t.Errorf("its budget %+v, %v", b, err)
	}
	// Its transcript starts again: Seq 1, 2, 3…, whatever the old one
	// reached.
	for want := int64(1); want <= 2; want++ {
		recs, err := s.Append(ctx, "s1", text(llm.RoleUser, "again"))
		if err != nil || len(recs) != 1 || recs[0].Seq != want {
			t.Errorf("append %d to the session provisioned again: %+v, %v; want Seq %d", want, recs, err, want)
		}
	}
	if _, _, err := s.AppendStep(ctx, "s2", store.Step{Records: []store.Record{{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("s2 goes on")}}}}}); err != nil {
		t.Fatal(err)
	}
	if recs, err := s.Records(ctx, "s2", store.RecordFilter{}); err != nil || len(recs) != 2 || recs[1].Seq != 2 {
		t.Errorf("s2 after the other's deletion: %+v, %v", recs, err)
	}
}
