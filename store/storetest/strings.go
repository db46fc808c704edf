package storetest

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/orca-agent/orca/store"
)

// testUsersStrings: the strings people and models write — a workspace's
// path, an agent's name, a turn's prompt, an approval's rule, a parked
// call's reason, rules, decider and note — are kept byte for byte, NUL and
// bytes that are not UTF-8 (a prompt typed in Latin-1, a folder named so)
// included: a store that refused them would fail a turn after it ran.
// (Rules are kept as JSON, which has no bytes that are not UTF-8: NUL
// only there.)
func testUsersStrings(t *testing.T, s store.Store) {
	const odd = "nul\x00, caf\xe9 in Latin-1, \xff\xfe, ☃"
	ws, agent := "/home/me/"+odd, "coder "+odd
	if _, err := s.Provision(ctx, store.Session{ID: "s1", RuntimeID: "r1", Workspace: ws, Agent: agent}); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	prompt := "fix this: " + odd
	if err := s.FinishTurn(ctx, "s1", "t1", prompt); err != nil {
		t.Fatalf("FinishTurn: %v", err)
	}
	got := session(t, s, "s1")
	if got.Workspace != ws || got.Agent != agent || got.LastPrompt != prompt || got.Turns != 1 {
		t.Errorf("session: workspace %q, agent %q, last prompt %q, %d turns", got.Workspace, got.Agent, got.LastPrompt, got.Turns)
	}
	listed, err := s.Sessions(ctx, store.Filter{Workspace: ws})
	if err != nil || len(listed) != 1 || listed[0].LastPrompt != prompt {
		t.Errorf("Sessions of the workspace: %+v, %v", listed, err)
	}

	rule := "Bash(echo " + odd + ")"
	for _, a := range []store.Approval{{RuntimeID: "r1", Rule: rule}, {RuntimeID: "r1", SessionID: "s1", Rule: rule}, {RuntimeID: "r1", Rule: rule}} {
		if err := s.AddApproval(ctx, a); err != nil {
			t.Fatalf("AddApproval(%q): %v", a.Rule, err)
		}
	}
	as, err := s.Approvals(ctx, "r1", "s1")
	if err != nil || len(as) != 2 || as[0].Rule != rule || as[1].Rule != rule {
		t.Errorf("Approvals: %+v, %v", as, err)
	}

	p := store.ParkedCall{ID: "park_1", SessionID: "s1", RuntimeID: "r1", TurnID: "t1", ToolUseID: "toolu_1", ToolName: "Bash",
		Input: json.RawMessage(`{"command":"echo \u0000"}`), Reason: "Bash of " + odd + " asks", Rules: []string{"Bash(echo \x00:*)"}}
	if err := s.Park(ctx, p); err != nil {
		t.Fatalf("Park: %v", err)
	}
	by, note := "ana "+odd, "no: "+odd
	if _, err := s.SetParkStatus(ctx, "park_1", store.ParkDenied, by, note); err != nil {
		t.Fatalf("SetParkStatus: %v", err)
	}
	parked, err := s.ParkedCalls(ctx, store.ParkFilter{SessionID: "s1"})
	if err != nil || len(parked) != 1 {
		t.Fatalf("ParkedCalls: %+v, %v", parked, err)
	}
	q := parked[0]
	if q.Reason != p.Reason || !slices.Equal(q.Rules, p.Rules) || q.DecidedBy != by || q.Note != note || string(q.Input) != string(p.Input) {
		t.Errorf("parked call: reason %q, rules %q, decided by %q, note %q, input %s", q.Reason, q.Rules, q.DecidedBy, q.Note, q.Input)
	}
}
