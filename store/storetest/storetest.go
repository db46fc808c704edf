// Package storetest is the conformance suite for store.Store, in the manner
// of testing/fstest and testing/slogtest: every store (the memory one, the
// SQLite one, any later one) runs the same suite and so obeys the same
// contract.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return store.NewMemory() })
//	}
//
// Stores that persist also run RunDurable, which closes a store and opens
// it again at the same path.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/store"
)

// Run runs the conformance suite (observation rows too, for a store that
// keeps them: store.Observations). open must return a new, empty store each
// time it is called; Run closes every store it opens. Each property is a
// subtest, so `go test -run 'Conformance/Approvals'` runs one of them.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Provision", testProvision},
		{"UnknownSession", testUnknownSession},
		{"NotProvisioned", testNotProvisioned},
		{"AppendAssignsSeq", testAppendAssignsSeq},
		{"AppendAllOrNothing", testAppendAllOrNothing},
		{"RoundTrip", testRoundTrip},
		{"Media", testMedia},
		{"Attachments", testAttachments},
		{"AttachmentsRefused", testAttachmentsRefused},
		{"AttachmentsDeleted", testAttachmentsDeleted},
		{"Isolation", testIsolation},
		{"RecordsFilter", testRecordsFilter},
		{"LongTranscript", testLongTranscript},
		{"MarkCompacted", testMarkCompacted},
		{"Totals", testTotals},
		{"ConcurrentTotals", testConcurrentTotals},
		{"AppendStep", testAppendStep},
		{"FinishStep", testFinishStep},
		{"Leases", testLeases},
		{"RebindRuntime", testRebindRuntime},
		{"ParkedCalls", testParkedCalls},
		{"Budget", testBudget},
		{"FinishTurn", testFinishTurn},
		{"Approvals", testApprovals},
		{"Windows", testWindows},
		{"UsersStrings", testUsersStrings},
		{"Sessions", testSessions},
		{"DeleteSession", testDeleteSession},
		{"ConcurrentAppends", testConcurrentAppends},
		{"Context", testContext},
		{"CancelNeverLies", testCancelNeverLies},
		{"Observations", testObservations},
		{"Close", testClose},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, s)
		})
	}
}

// RunDurable runs the persistence suite: what was written before Close is
// all there after opening the store again at the same path. open opens the
// store at path, a file in a directory that may not exist yet; RunDurable
// closes every store it opens.
func RunDurable(t *testing.T, open func(t *testing.T, path string) store.Store) {
	t.Helper()
	t.Run("Reopen", func(t *testing.T) { testReopen(t, open) })
	t.Run("ReopenManyTimes", func(t *testing.T) { testReopenManyTimes(t, open) })
	t.Run("ReopenObservations", func(t *testing.T) { testReopenObservations(t, open) })
}

var ctx = context.Background()

// wantErr fails unless err wraps target and its message mentions every
// string in mention (the session, the operation).
func wantErr(t *testing.T, what string, err, target error, mention ...string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: err = %v, want %v", what, err, target)
		return
	}
	for _, m := range mention {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("%s: error %q does not mention %q", what, err, m)
		}
	}
}

func provision(t *testing.T, s store.Store, id, runtimeID string) store.Session {
	t.Helper()
	got, err := s.Provision(ctx, store.Session{ID: id, RuntimeID: runtimeID, Workspace: "/ws/" + runtimeID, Agent: "coder"})
	if err != nil {
		t.Fatalf("Provision(%q): %v", id, err)
	}
	return got
}

func session(t *testing.T, s store.Store, id string) store.Session {
	t.Helper()
	got, err := s.Session(ctx, id)
	if err != nil {
		t.Fatalf("Session(%q): %v", id, err)
	}
	return got
}

func text(role llm.Role, s string) store.Record {
	return store.Record{Kind: store.KindMessage, Message: llm.Message{Role: role, Content: []llm.Block{llm.TextBlock(s)}}}
}

func appendRecs(t *testing.T, s store.Store, id string, recs ...store.Record) []store.Record {
	t.Helper()
	got, err := s.Append(ctx, id, recs...)
	if err != nil {
		t.Fatalf("Append(%q, %d records): %v", id, len(recs), err)
	}
	if len(got) != len(recs) {
		t.Fatalf("Append(%q, %d records) returned %d records", id, len(recs), len(got))
	}
	return got
}

func records(t *testing.T, s store.Store, id string, f store.RecordFilter) []store.Record {
	t.Helper()
	got, err := s.Records(ctx, id, f)
	if err != nil {
		t.Fatalf("Records(%q, %+v): %v", id, f, err)
	}
	return got
}

func seqs(recs []store.Record) []int64 {
	out := make([]int64, len(recs))
	for i, r := range recs {
		out[i] = r.Seq
	}
	return out
}

func seqRange(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func wantSeqs(t *testing.T, what string, recs []store.Record, want []int64) {
	t.Helper()
	if got := seqs(recs); !slices.Equal(got, want) {
		t.Errorf("%s: Seqs %v, want %v", what, got, want)
	}
}

// diffMessage describes how got differs from want, or returns "". A nil
// and an empty Content (or Input) are the same; every byte of a tool use's
// input counts.
func diffMessage(got, want llm.Message) string {
	if got.Role != want.Role {
		return fmt.Sprintf("Role %q, want %q", got.Role, want.Role)
	}
	if len(got.Content) != len(want.Content) {
		return fmt.Sprintf("%d blocks, want %d", len(got.Content), len(want.Content))
	}
	for i, g := range got.Content {
		w := want.Content[i]
		if !bytes.Equal(g.Input, w.Input) {
			return fmt.Sprintf("content[%d].Input %q, want %q", i, g.Input, w.Input)
		}
		g.Input, w.Input = nil, nil
		if !reflect.DeepEqual(g, w) {
			return fmt.Sprintf("content[%d] = %+v, want %+v", i, g, w)
		}
	}
	return ""
}

// diffRecord describes how got differs from want, or returns "".
func diffRecord(got, want store.Record) string {
	if d := diffMessage(got.Message, want.Message); d != "" {
		return "message: " + d
	}
	if !got.Time.Equal(want.Time) {
		return fmt.Sprintf("Time %v, want %v", got.Time, want.Time)
	}
	got.Message, want.Message = llm.Message{}, llm.Message{}
	got.Time, want.Time = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("%+v, want %+v", got, want)
	}
	return ""
}

func wantRecords(t *testing.T, what string, got, want []store.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d records %v, want %d %v", what, len(got), seqs(got), len(want), seqs(want))
		return
	}
	for i := range got {
		if d := diffRecord(got[i], want[i]); d != "" {
			t.Errorf("%s: record %d (Seq %d): %s", what, i, got[i].Seq, d)
		}
	}
}

func wantSession(t *testing.T, what string, got, want store.Session) {
	t.Helper()
	if !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Errorf("%s: CreatedAt %v UpdatedAt %v, want %v %v", what, got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt)
	}
	got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if got != want {
		t.Errorf("%s: %+v, want %+v", what, got, want)
	}
}

func wantUTC(t *testing.T, what string, tm time.Time) {
	t.Helper()
	if tm.IsZero() {
		t.Errorf("%s is zero", what)
	} else if tm.Location() != time.UTC {
		t.Errorf("%s = %v is not in UTC", what, tm)
	}
}

// conversation is a transcript whose every byte must come back: tool-use
// input with white space, malformed, or not even UTF-8; is_error results;
// text in many scripts; markup; NUL; empty and missing content.
func conversation() []store.Record {
	msg := func(role llm.Role, blocks ...llm.Block) store.Record {
		return store.Record{Kind: store.KindMessage, TurnID: "turn-1", Message: llm.Message{Role: role, Content: blocks}}
	}
	return []store.Record{
		msg(llm.RoleUser, llm.TextBlock("héllo, 세계 🦀 e\u0301 \u2028 <b>&amp;</b> tab\tnul\x00 end")),
		served("claude-opus-5-5", msg(llm.RoleAssistant,
			llm.Block{Type: llm.BlockThinking, Thinking: "The user wants a.go read first.", Signature: "c2lnbmF0dXJl+/="},
			llm.Block{Type: llm.BlockRedactedThinking, Signature: "ZW5jcnlwdGVk"},
			llm.TextBlock("Let me look."),
			llm.ToolUseBlock("toolu_01", "Read", json.RawMessage("{ \"path\" : \"a.go\",\n  \"limit\": 10 }")),
			llm.ToolUseBlock("toolu_02", "Bash", json.RawMessage(`{"command": "echo \"<&>\"`)),
			llm.ToolUseBlock("toolu_03", "Write", json.RawMessage(" {\"lead\":\"space\"}\n")),
			llm.ToolUseBlock("toolu_04", "Grep", json.RawMessage("{\"pattern\":\"\xff\xfe\"}")),
			llm.ToolUseBlock("toolu_05", "TodoWrite", json.RawMessage(`{"todos":[{"content":"ünïcödé ✓","status":"pending"}],"n":1.50,"e":1e3}`)),
		)),
		msg(llm.RoleUser,
			llm.ToolResultBlock("toolu_01", "package a\n\nfunc A() {}\n", false),
			llm.ToolResultBlock("toolu_02", "exit status 1: unexpected EOF", true),
			llm.ToolResultBlock("toolu_03", "", false),
			llm.ToolResultBlock("toolu_04", "no matches", false),
			llm.ToolResultBlock("toolu_05", "✓", false),
		),
		// A server names the model that answered: any bytes.
		served("gpt\x00-6.1 \xff☃", msg(llm.RoleAssistant)),
		msg(llm.RoleAssistant, []llm.Block{}...),
		{Kind: store.KindSummary, TurnID: "turn-2", Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Summary: read a.go; the build failed.")}}},
	}
}

// served is r, an answer, served by model.
func served(model string, r store.Record) store.Record {
	r.Model = model
	return r
}

func testProvision(t *testing.T, s store.Store) {
	in := store.Session{ID: "s1", RuntimeID: "r1", Workspace: "/home/me/proj", Agent: "coder", Turns: 7, LastPrompt: "ignored", UpdatedAt: time.Unix(1, 0)}
	got, err := s.Provision(ctx, in)
	if err != nil {
		t.Fatalf("Provision: %v", err)
	}
	if got.ID != "s1" || got.RuntimeID != "r1" || got.Workspace != "/home/me/proj" || got.Agent != "coder" {
		t.Errorf("Provision returned %+v, want the given ids, workspace and agent", got)
	}
	if got.Turns != 0 || got.LastPrompt != "" {
		t.Errorf("Provision returned Turns %d LastPrompt %q: the store keeps those, want 0 and empty", got.Turns, got.LastPrompt)
	}
	wantUTC(t, "CreatedAt", got.CreatedAt)
	if !got.UpdatedAt.Equal(got.CreatedAt) {
		t.Errorf("UpdatedAt %v, want CreatedAt %v", got.UpdatedAt, got.CreatedAt)
	}
	wantSession(t, "Session after Provision", session(t, s, "s1"), got)

	again, err := s.Provision(ctx, store.Session{ID: "s1", RuntimeID: "r1", Workspace: "/elsewhere", Agent: "other"})
	if err != nil {
		t.Fatalf("Provision again: %v", err)
	}
	wantSession(t, "Provision again (the first one wins)", again, got)

	_, err = s.Provision(ctx, store.Session{ID: "s1", RuntimeID: "r2"})
	wantErr(t, "Provision with another runtime", err, store.ErrWrongRuntime, "s1")
	wantSession(t, "Session after a refused Provision", session(t, s, "s1"), got)

	created := time.Date(2024, 2, 29, 23, 59, 59, 123456789, time.FixedZone("KST", 9*3600))
	old, err := s.Provision(ctx, store.Session{ID: "s2", RuntimeID: "r1", CreatedAt: created})
	if err != nil {
		t.Fatalf("Provision with CreatedAt: %v", err)
	}
	if !old.CreatedAt.Equal(created) || !old.UpdatedAt.Equal(created) {
		t.Errorf("Provision with CreatedAt %v returned CreatedAt %v UpdatedAt %v", created, old.CreatedAt, old.UpdatedAt)
	}
	wantUTC(t, "given CreatedAt", old.CreatedAt)
	wantSession(t, "Session with a given CreatedAt", session(t, s, "s2"), old)

	_, err = s.Provision(ctx, store.Session{RuntimeID: "r1"})
	wantErr(t, "Provision without ID", err, store.ErrInvalid)
	_, err = s.Provision(ctx, store.Session{ID: "s3"})
	wantErr(t, "Provision without RuntimeID", err, store.ErrInvalid, "s3")
	_, err = s.Session(ctx, "s3")
	wantErr(t, "Session after a refused Provision", err, store.ErrNotFound, "s3")
	if all, err := s.Sessions(ctx, store.Filter{}); err != nil || len(all) != 2 {
		t.Errorf("Sessions = %d sessions, %v; want the 2 provisioned", len(all), err)
	}
}

func testUnknownSession(t *testing.T, s store.Store) {
	provision(t, s, "known", "r1")
	_, err := s.Session(ctx, "nope")
	wantErr(t, "Session", err, store.ErrNotFound, `"nope"`)
	_, err = s.Records(ctx, "nope", store.RecordFilter{})
	wantErr(t, "Records", err, store.ErrNotFound, `"nope"`)
	_, err = s.Totals(ctx, "nope")
	wantErr(t, "Totals", err, store.ErrNotFound, `"nope"`)
	_, err = s.Budget(ctx, "nope")
	wantErr(t, "Budget", err, store.ErrNotFound, `"nope"`)
	_, err = s.Approvals(ctx, "r1", "nope")
	wantErr(t, "Approvals", err, store.ErrNotFound, `"nope"`)

	if recs := records(t, s, "known", store.RecordFilter{IncludeCompacted: true}); len(recs) != 0 {
		t.Errorf("Records of a new session = %v, want none", seqs(recs))
	}
	if b, err := s.Budget(ctx, "known"); err != nil || b != nil {
		t.Errorf("Budget of a new session = %v, %v; want nil, nil", b, err)
	}
}

func testNotProvisioned(t *testing.T, s store.Store) {
	provision(t, s, "known", "r1")
	const ghost = "ghost-session"
	_, err := s.Append(ctx, ghost, text(llm.RoleUser, "hello"))
	wantErr(t, "Append", err, store.ErrNotProvisioned, ghost)
	_, err = s.Append(ctx, ghost)
	wantErr(t, "Append of no records", err, store.ErrNotProvisioned, ghost)
	_, err = s.AddTotals(ctx, ghost, store.Totals{ToolCalls: 1})
	wantErr(t, "AddTotals", err, store.ErrNotProvisioned, ghost)
	err = s.SetBudget(ctx, ghost, &budget.Limits{Tokens: 1})
	wantErr(t, "SetBudget", err, store.ErrNotProvisioned, ghost)
	err = s.SetBudget(ctx, ghost, nil)
	wantErr(t, "SetBudget(nil)", err, store.ErrNotProvisioned, ghost)
	err = s.FinishTurn(ctx, ghost, "t1", "prompt")
	wantErr(t, "FinishTurn", err, store.ErrNotProvisioned, ghost)
	err = s.MarkCompacted(ctx, ghost, 0)
	wantErr(t, "MarkCompacted", err, store.ErrNotProvisioned, ghost)
	err = s.AddApproval(ctx, store.Approval{RuntimeID: "r1", SessionID: ghost, Rule: "Bash"})
	wantErr(t, "AddApproval with session reach", err, store.ErrNotProvisioned, ghost)

	// Nothing of it was kept, under any name.
	_, err = s.Session(ctx, ghost)
	wantErr(t, "Session after the refused writes", err, store.ErrNotFound, ghost)
	if all, err := s.Sessions(ctx, store.Filter{}); err != nil || len(all) != 1 || all[0].ID != "known" {
		t.Errorf("Sessions = %+v, %v; want only the provisioned one", all, err)
	}
	if got, err := s.Approvals(ctx, "r1", "known"); err != nil || len(got) != 0 {
		t.Errorf("Approvals after a refused session approval = %+v, %v; want none", got, err)
	}
	if got := session(t, s, "known"); got.Turns != 0 {
		t.Errorf("the provisioned session has Turns %d, want 0", got.Turns)
	}
}

func testAppendAssignsSeq(t *testing.T, s store.Store) {
	before := time.Now()
	created := provision(t, s, "s1", "r1")

	first := appendRecs(t, s, "s1", text(llm.RoleUser, "one"))
	wantSeqs(t, "first Append", first, []int64{1})
	afterFirst := session(t, s, "s1")
	if !afterFirst.UpdatedAt.After(created.UpdatedAt) {
		t.Errorf("UpdatedAt %v after Append, want later than %v", afterFirst.UpdatedAt, created.UpdatedAt)
	}

	given := time.Date(2025, 1, 2, 3, 4, 5, 6, time.FixedZone("X", -5*3600))
	batch := []store.Record{
		{Seq: 99, Kind: store.KindMessage, TurnID: "t1", Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("two")}}},
		{SessionID: "s1", Kind: store.KindMessage, TurnID: "t1", Time: given, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("three")}}},
		{Kind: store.KindSummary, TurnID: "t2", Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("four")}}},
	}
	got := appendRecs(t, s, "s1", batch...)
	wantSeqs(t, "second Append (a given Seq is ignored)", got, []int64{2, 3, 4})
	for i, r := range got {
		if r.SessionID != "s1" {
			t.Errorf("returned record %d has SessionID %q, want s1", i, r.SessionID)
		}
		wantUTC(t, fmt.Sprintf("returned record %d Time", i), r.Time)
		if r.Time.Before(before.Add(-time.Second)) && i != 1 {
			t.Errorf("record %d Time %v is before the Append", i, r.Time)
		}
		if r.Kind != batch[i].Kind || r.TurnID != batch[i].TurnID || r.Compacted {
			t.Errorf("returned record %d = %+v, want Kind %q TurnID %q, not compacted", i, r, batch[i].Kind, batch[i].TurnID)
		}
		if d := diffMessage(r.Message, batch[i].Message); d != "" {
			t.Errorf("returned record %d: %s", i, d)
		}
	}
	if !got[1].Time.Equal(given) {
		t.Errorf("a given Time %v came back as %v", given, got[1].Time)
	}
	if got[0].Time.Sub(before) > time.Minute {
		t.Errorf("an assigned Time %v is far from now %v", got[0].Time, before)
	}
	all := records(t, s, "s1", store.RecordFilter{})
	wantRecords(t, "Records", all, append(first, got...))

	afterBatch := session(t, s, "s1")
	if !afterBatch.UpdatedAt.After(afterFirst.UpdatedAt) {
		t.Errorf("UpdatedAt %v after the second Append, want later than %v", afterBatch.UpdatedAt, afterFirst.UpdatedAt)
	}
	none, err := s.Append(ctx, "s1")
	if err != nil || len(none) != 0 {
		t.Errorf("Append of no records = %v, %v; want none, nil", none, err)
	}
	wantSeqs(t, "Records after an empty Append", records(t, s, "s1", store.RecordFilter{}), seqRange(1, 4))

	// Seqs are per session.
	provision(t, s, "s2", "r1")
	wantSeqs(t, "first Append to another session", appendRecs(t, s, "s2", text(llm.RoleUser, "x"), text(llm.RoleAssistant, "y")), []int64{1, 2})
	wantSeqs(t, "next Append to the first session", appendRecs(t, s, "s1", text(llm.RoleUser, "five")), []int64{5})
}

func testAppendAllOrNothing(t *testing.T, s store.Store) {
	provision(t, s, "s1", "r1")
	appendRecs(t, s, "s1", text(llm.RoleUser, "a"), text(llm.RoleAssistant, "b"))
	before := session(t, s, "s1")
	good := text(llm.RoleUser, "good")
	for _, tc := range []struct {
		name  string
		batch []store.Record
		bad   string
	}{
		{"empty Kind", []store.Record{good, {Message: llm.Message{Role: llm.RoleUser}}, good}, "recs[1]"},
		{"unknown Kind", []store.Record{{Kind: "note", Message: llm.Message{Role: llm.RoleUser}}}, "recs[0]"},
		{"empty Role", []store.Record{good, {Kind: store.KindMessage, Message: llm.Message{Content: []llm.Block{llm.TextBlock("who?")}}}}, "recs[1]"},
		{"another session", []store.Record{good, good, {SessionID: "s2", Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser}}}, "recs[2]"},
		{"already compacted", []store.Record{{Kind: store.KindMessage, Compacted: true, Message: llm.Message{Role: llm.RoleUser}}, good}, "recs[0]"},
	} {
		got, err := s.Append(ctx, "s1", tc.batch...)
		wantErr(t, "Append with "+tc.name, err, store.ErrInvalid, tc.bad, `"s1"`)
		if len(got) != 0 {
			t.Errorf("Append with %s returned %d records", tc.name, len(got))
		}
		wantSeqs(t, "Records after the Append with "+tc.name, records(t, s, "s1", store.RecordFilter{IncludeCompacted: true}), []int64{1, 2})
	}
	if after := session(t, s, "s1"); !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Errorf("refused Appends moved UpdatedAt from %v to %v", before.UpdatedAt, after.UpdatedAt)
	}
	wantSeqs(t, "the next good Append", appendRecs(t, s, "s1", good), []int64{3})
}

func testRoundTrip(t *testing.T, s store.Store) {
	provision(t, s, "s1", "r1")
	conv := conversation()
	got := appendRecs(t, s, "s1", conv...)
	for i := range conv {
		if d := diffMessage(got[i].Message, conv[i].Message); d != "" {
			t.Errorf("Append returned record %d: %s", i, d)
		}
	}
	wantRecords(t, "Records", records(t, s, "s1", store.RecordFilter{}), got)
	// One at a time too: a store may treat single appends differently.
	provision(t, s, "s2", "r1")
	for i, r := range conv {
		one := appendRecs(t, s, "s2", r)
		if d := diffMessage(one[0].Message, r.Message); d != "" {
			t.Errorf("single Append of record %d: %s", i, d)
		}
	}
	back := records(t, s, "s2", store.RecordFilter{})
	for i := range conv {
		if d := diffMessage(back[i].Message, conv[i].Message); d != "" {
			t.Errorf("record %d appended alone: %s", i, d)
		}
	}
}

func testIsolation(t *testing.T, s store.Store) {
	provision(t, s, "s1", "r1")
	input := []byte(`{"path":"a.go"}`)
	rec := store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
		llm.TextBlock("original"), llm.ToolUseBlock("t1", "Read", input),
	}}}
	batch := []store.Record{rec}
	got := appendRecs(t, s, "s1", batch...)

	// The caller changes everything it handed over or got back.
	copy(input, `{"path":"b.go"}`)
	rec.Message.Content[0].Text = "changed"
	batch[0].Kind = store.KindSummary
	got[0].Message.Content[0].Text = "changed too"
	if len(got[0].Message.Content[1].Input) > 0 {
		got[0].Message.Content[1].Input[0] = '['
	}

	read := records(t, s, "s1", store.RecordFilter{})
	read[0].Message.Content[0].Text = "and again"
	read = records(t, s, "s1", store.RecordFilter{})
	want := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
		llm.TextBlock("original"), llm.ToolUseBlock("t1", "Read", json.RawMessage(`{"path":"a.go"}`)),
	}}
	if d := diffMessage(read[0].Message, want); d != "" || read[0].Kind != store.KindMessage {
		t.Errorf("stored record changed through the caller's slices: %s (Kind %q)", d, read[0].Kind)
	}

	b := &budget.Limits{Tokens: 10}
	if err := s.SetBudget(ctx, "s1", b); err != nil {
		t.Fatal(err)
	}
	b.Tokens = 20
	gotB, err := s.Budget(ctx, "s1")
	if err != nil || gotB == nil || gotB.Tokens != 10 {
		t.Fatalf("Budget = %+v, %v; want Tokens 10", gotB, err)
	}
	gotB.Tokens = 30
	if again, _ := s.Budget(ctx, "s1"); again == nil || again.Tokens != 10 {
		t.Errorf("stored budget changed through a pointer: %+v", again)
	}
}

func testRecordsFilter(t *testing.T, s store.Store) {
	provision(t, s, "s1", "r1")
	for i := range 5 {
		appendRecs(t, s, "s1", text(llm.RoleUser, fmt.Sprint("m", i+1)))
	}
	if err := s.MarkCompacted(ctx, "s1", 2); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f         store.RecordFilter
		want      []int64
		compacted []bool
	}{
		{store.RecordFilter{}, []int64{3, 4, 5}, []bool{false, false, false}},
		{store.RecordFilter{IncludeCompacted: true}, []int64{1, 2, 3, 4, 5}, []bool{true, true, false, false, false}},
		{store.RecordFilter{AfterSeq: 3}, []int64{4, 5}, []bool{false, false}},
		{store.RecordFilter{AfterSeq: 1}, []int64{3, 4, 5}, []bool{false, false, false}},
		{store.RecordFilter{AfterSeq: 1, IncludeCompacted: true}, []int64{2, 3, 4, 5}, []bool{true, false, false, false}},
		{store.RecordFilter{AfterSeq: 5}, nil, nil},
		{store.RecordFilter{AfterSeq: 500, IncludeCompacted: true}, nil, nil},
	} {
		got := records(t, s, "s1", tc.f)
		wantSeqs(t, fmt.Sprintf("Records(%+v)", tc.f), got, tc.want)
		for i, r := range got {
			if i < len(tc.compacted) && r.Compacted != tc.compacted[i] {
				t.Errorf("Records(%+v): Seq %d Compacted = %v, want %v", tc.f, r.Seq, r.Compacted, tc.compacted[i])
			}
			if want := fmt.Sprint("m", r.Seq); r.Message.Text() != want {
				t.Errorf("Records(%+v): Seq %d has text %q, want %q", tc.f, r.Seq, r.Message.Text(), want)
			}
		}
	}
}

// A transcript of hundreds of records, written in batches of every size
// with turns finished between them, reads back whole and in order from any
// point, before and after a compaction: what a store keeps in pieces
// (chunks, snapshots) must not show.
func testLongTranscript(t *testing.T, s store.Store) {
	const total = 700
	provision(t, s, "s1", "r1")
	var want []store.Record
	for n, size := 0, 1; n < total; size = size%97 + 13 {
		batch := make([]store.Record, min(size, total-n))
		for i := range batch {
			batch[i] = text(llm.RoleUser, fmt.Sprint("m", n+i+1))
			batch[i].TurnID = fmt.Sprint("turn-", (n+i)/10)
			if (n+i)%7 == 3 {
				batch[i] = served(fmt.Sprint("model-", (n+i)%3), batch[i])
			}
		}
		got := appendRecs(t, s, "s1", batch...)
		wantSeqs(t, fmt.Sprintf("Append of %d records after %d", len(batch), n), got, seqRange(int64(n+1), int64(n+len(batch))))
		want = append(want, got...)
		n += len(batch)
		if err := s.FinishTurn(ctx, "s1", fmt.Sprint("turn-", n), "go on"); err != nil {
			t.Fatalf("FinishTurn after %d records: %v", n, err)
		}
	}
	wantRecords(t, "Records of a long transcript", records(t, s, "s1", store.RecordFilter{}), want)
	for _, after := range []int64{1, 127, 128, 129, 255, 256, 257, 600, total - 1} {
		wantRecords(t, fmt.Sprintf("Records after Seq %d", after), records(t, s, "s1", store.RecordFilter{AfterSeq: after}), want[after:])
	}
	if err := s.MarkCompacted(ctx, "s1", 300); err != nil {
		t.Fatal(err)
	}
	wantRecords(t, "live records after compacting 300", records(t, s, "s1", store.RecordFilter{}), want[300:])
	more := appendRecs(t, s, "s1", text(llm.RoleAssistant, "after the compaction"))
	wantSeqs(t, "Append after the compaction", more, []int64{total + 1})
	if err := s.FinishTurn(ctx, "s1", "after", "go on"); err != nil {
		t.Fatal(err)
	}
	want = append(want, more...)
	wantRecords(t, "live records after another turn", records(t, s, "s1", store.RecordFilter{}), want[300:])
	all := records(t, s, "s1", store.RecordFilter{IncludeCompacted: true})
	wantSeqs(t, "every record", all, seqRange(1, total+1))
	for _, r := range all {
		if r.Compacted != (r.Seq <= 300) {
			t.Fatalf("Seq %d Compacted = %v", r.Seq, r.Compacted)
		}
	}
}

func testMarkCompacted(t *testing.T, s store.Store) {
	provision(t, s, "s1", "r1")
	summary := func(s string) store.Record {
		return store.Record{Kind: store.KindSummary, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(s)}}}
	}
	appendRecs(t, s, "s1", text(llm.RoleUser, "1"), text(llm.RoleAssistant, "2"), text(llm.RoleUser, "3"))
	appendRecs(t, s, "s1", summary("summary of 1-3"))
	if err := s.MarkCompacted(ctx, "s1", 3); err != nil {
		t.Fatalf("MarkCompacted(3): %v", err)
	}
	live := records(t, s, "s1", store.RecordFilter{})
	wantSeqs(t, "live records after the first compaction", live, []int64{4})
	if len(live) == 1 && live[0].Kind != store.KindSummary {
		t.Errorf("the live record is a %q, want the summary", live[0].Kind)
	}

	appendRecs(t, s, "s1", text(llm.RoleUser, "5"), text(llm.RoleAssistant, "6"))
	appendRecs(t, s, "s1", summary("summary of 4-6"))
	if err := s.MarkCompacted(ctx, "s1", 6); err != nil {
		t.Fatalf("MarkCompacted(6): %v", err)
	}
	wantSeqs(t, "live records after the second compaction (the old summary too)", records(t, s, "s1", store.RecordFilter{}), []int64{7})

	for _, through := range []int64{6, 2, 0} {
		if err := s.MarkCompacted(ctx, "s1", through); err != nil {
			t.Errorf("MarkCompacted(%d) again: %v", through, err)
		}
	}
	all := records(t, s, "s1", store.RecordFilter{IncludeCompacted: true})
	wantSeqs(t, "all records", all, seqRange(1, 7))
	for _, r := range all {
		if want := r.Seq <= 6; r.Compacted != want {
			t.Errorf("Seq %d (%s) Compacted = %v, want %v", r.Seq, r.Kind, r.Compacted, want)
		}
	}

	err := s.MarkCompacted(ctx, "s1", 8)
	wantErr(t, "MarkCompacted past the last record", err, store.ErrInvalid, `"s1"`)
	err = s.MarkCompacted(ctx, "s1", -1)
	wantErr(t, "MarkCompacted(-1)", err, store.ErrInvalid, `"s1"`)
	wantSeqs(t, "live records after refused marks", records(t, s, "s1", store.RecordFilter{}), []int64{7})

	// Marking in one session leaves the others alone.
	provision(t, s, "s2", "r1")
	appendRecs(t, s, "s2", text(llm.RoleUser, "other"))
	wantSeqs(t, "another session", records(t, s, "s2", store.RecordFilter{}), []int64{1})
}

func testTotals(t *testing.T, s store.Store) {
	provision(t, s, "s1", "r1")
	provision(t, s, "s2", "r1")
	if got, err := s.Totals(ctx, "s1"); err != nil || got != (store.Totals{}) {
		t.Fatalf("Totals of a new session = %+v, %v; want zero", got, err)
	}
	d1 := store.Totals{Usage: llm.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 300, CacheWriteTokens: 4}, CostUSD: 0.25, ToolCalls: 2, WallTime: 1500 * time.Millisecond, Turns: 1}
	d2 := store.Totals{Usage: llm.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4}, CostUSD: 0.125, ToolCalls: 3, WallTime: time.Nanosecond, Turns: 1}
	got, err := s.AddTotals(ctx, "s1", d1)
	if err != nil || got != d1 {
		t.Fatalf("AddTotals = %+v, %v; want %+v", got, err, d1)
	}
	want := d1.Add(d2)
	if got, err = s.AddTotals(ctx, "s1", d2); err != nil || got != want {
		t.Fatalf("AddTotals = %+v, %v; want %+v", got, err, want)
	}
	if got, err = s.Totals(ctx, "s1"); err != nil || got != want {
		t.Errorf("Totals = %+v, %v; want %+v", got, err, want)
	}
	if got, err = s.Totals(ctx, "s2"); err != nil || got != (store.Totals{}) {
		t.Errorf("Totals of another session = %+v, %v; want zero", got, err)
	}
}

func testConcurrentTotals(t *testing.T, s store.Store) {
	provision(t, s, "s1", "r1")
	const workers, each = 16, 10
	delta := store.Totals{Usage: llm.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4}, CostUSD: 0.5, ToolCalls: 1, WallTime: time.Millisecond, Turns: 1}
	seen := make(chan int64, workers*each)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				got, err := s.AddTotals(ctx, "s1", delta)
				if err != nil {
					t.Errorf("AddTotals: %v", err)
					return
				}
				seen <- got.ToolCalls
			}
		})
	}
	wg.Wait()
	close(seen)
	const n = workers * each
	want := store.Totals{Usage: llm.Usage{InputTokens: n, OutputTokens: 2 * n, CacheReadTokens: 3 * n, CacheWriteTokens: 4 * n}, CostUSD: 0.5 * n, ToolCalls: n, WallTime: n * time.Millisecond, Turns: n}
	if got, err := s.Totals(ctx, "s1"); err != nil || got != want {
		t.Errorf("Totals after %d concurrent adds = %+v, %v; want %+v", n, got, err, want)
	}
	// Each add saw its own result: the add and the read were one step.
	var results []int64
	for v := range seen {
		results = append(results, v)
	}
	slices.Sort(results)
	if !slices.Equal(results, seqRange(1, n)) {
		t.Errorf("the ToolCalls returned by %d concurrent AddTotals are not 1..%d: %v", n, n, results)
	}
}

func testBudget(t *testing.T, s store.Store) {
	provision(t, s, "s1", "r1")
	provision(t, s, "s2", "r1")
	get := func() *budget.Limits {
		t.Helper()
		b, err := s.Budget(ctx, "s1")
		if err != nil {
			t.Fatalf("Budget: %v", err)
		}
		return b
	}
	if b := get(); b != nil {
		t.Fatalf("Budget of a new session = %+v, want nil", b)
	}
	for _, b := range []budget.Limits{
		{Tokens: 100_000, CostUSD: 2.5, ToolCalls: 30, WallTime: 90 * time.Second},
		{CostUSD: 0.01},
		{}, // an override that lifts every limit: not the same as none
	} {
		if err := s.SetBudget(ctx, "s1", &b); err != nil {
			t.Fatalf("SetBudget(%+v): %v", b, err)
		}
		if got := get(); got == nil || *got != b {
			t.Errorf("Budget after SetBudget(%+v) = %+v", b, got)
		}
	}
	err := s.SetBudget(ctx, "s1", &budget.Limits{Tokens: -1})
	wantErr(t, "SetBudget with a negative limit", err, store.ErrInvalid, `"s1"`)
	if got := get(); got == nil || *got != (budget.Limits{}) {
		t.Errorf("Budget after a refused SetBudget = %+v, want the previous one", got)
	}
	if err := s.SetBudget(ctx, "s1", nil); err != nil {
		t.Fatalf("SetBudget(nil): %v", err)
	}
	if got := get(); got != nil {
		t.Errorf("Budget after SetBudget(nil) = %+v, want nil", got)
	}
	if err := s.SetBudget(ctx, "s1", nil); err != nil {
		t.Errorf("SetBudget(nil) without a budget: %v", err)
	}
	if b, err := s.Budget(ctx, "s2"); err != nil || b != nil {
		t.Errorf("Budget of another session = %+v, %v; want nil", b, err)
	}
}

func testFinishTurn(t *testing.T, s store.Store) {
	created := provision(t, s, "s1", "r1")
	if err := s.FinishTurn(ctx, "s1", "t1", "first"); err != nil {
		t.Fatal(err)
	}
	one := session(t, s, "s1")
	if one.Turns != 1 || one.LastPrompt != "first" || !one.UpdatedAt.After(created.UpdatedAt) {
		t.Errorf("after one turn: %+v, want Turns 1, LastPrompt first, UpdatedAt after %v", one, created.UpdatedAt)
	}
	// The same turn ended again (an attempt after a parked call, a retry
	// after a crash) counts nothing; the totals count as the session does.
	if err := s.FinishTurn(ctx, "s1", "t1", "first"); err != nil {
		t.Fatal(err)
	}
	if again := session(t, s, "s1"); again.Turns != 1 {
		t.Errorf("the same turn finished twice: Turns %d", again.Turns)
	}
	prompt := "두 번째 — fix the 🐛 in\n`main.go`"
	if err := s.FinishTurn(ctx, "s1", "t2", prompt); err != nil {
		t.Fatal(err)
	}
	two := session(t, s, "s1")
	if two.Turns != 2 || two.LastPrompt != prompt || !two.UpdatedAt.After(one.UpdatedAt) {
		t.Errorf("after two turns: %+v, want Turns 2, LastPrompt %q, UpdatedAt after %v", two, prompt, one.UpdatedAt)
	}
	if !two.CreatedAt.Equal(created.CreatedAt) {
		t.Errorf("CreatedAt moved from %v to %v", created.CreatedAt, two.CreatedAt)
	}
	// A turn with no id always counts.
	for range 2 {
		if err := s.FinishTurn(ctx, "s1", "", "no id"); err != nil {
			t.Fatal(err)
		}
	}
	tot, err := s.Totals(ctx, "s1")
	if four := session(t, s, "s1"); err != nil || four.Turns != 4 || tot.Turns != 4 {
		t.Errorf("after four turns: session Turns %d, totals %+v, %v", four.Turns, tot, err)
	}
}

func testApprovals(t *testing.T, s store.Store) {
	provision(t, s, "s1", "r1")
	provision(t, s, "s2", "r1")
	provision(t, s, "t1", "r2")
	add := func(a store.Approval) {
		t.Helper()
		if err := s.AddApproval(ctx, a); err != nil {
			t.Fatalf("AddApproval(%+v): %v", a, err)
		}
	}
	given := time.Date(2025, 6, 1, 12, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	add(store.Approval{RuntimeID: "r1", Rule: "Bash(go test:*)"})
	add(store.Approval{RuntimeID: "r1", SessionID: "s1", Rule: "Write(a.go)", CreatedAt: given})
	add(store.Approval{RuntimeID: "r2", Rule: "Read"})
	add(store.Approval{RuntimeID: "r2", SessionID: "t1", Rule: "Edit"})
	add(store.Approval{RuntimeID: "r1", SessionID: "s2", Rule: "Bash(ls)"})
	add(store.Approval{RuntimeID: "r1", Rule: "Grep"})
	// Adding one again changes nothing.
	add(store.Approval{RuntimeID: "r1", Rule: "Bash(go test:*)"})
	add(store.Approval{RuntimeID: "r1", SessionID: "s1", Rule: "Write(a.go)"})

	rules := func(runtimeID, sessionID string) []string {
		t.Helper()
		got, err := s.Approvals(ctx, runtimeID, sessionID)
		if err != nil {
			t.Fatalf("Approvals(%q, %q): %v", runtimeID, sessionID, err)
		}
		var out []string
		for _, a := range got {
			if a.RuntimeID != runtimeID || (a.SessionID != "" && a.SessionID != sessionID) {
				t.Errorf("Approvals(%q, %q) returned %+v", runtimeID, sessionID, a)
			}
			wantUTC(t, "approval CreatedAt", a.CreatedAt)
			if a.Rule == "Write(a.go)" && !a.CreatedAt.Equal(given) {
				t.Errorf("approval CreatedAt %v, want the given %v", a.CreatedAt, given)
			}
			out = append(out, a.Rule)
		}
		return out
	}
	for _, tc := range []struct {
		runtimeID, sessionID string
		want                 []string
	}{
		{"r1", "s1", []string{"Bash(go test:*)", "Write(a.go)", "Grep"}},
		{"r1", "s2", []string{"Bash(go test:*)", "Bash(ls)", "Grep"}},
		{"r1", "", []string{"Bash(go test:*)", "Grep"}},
		{"r2", "t1", []string{"Read", "Edit"}},
		{"r2", "", []string{"Read"}},
		{"r3", "", nil},
	} {
		if got := rules(tc.runtimeID, tc.sessionID); !slices.Equal(got, tc.want) {
			t.Errorf("Approvals(%q, %q) = %q, want %q", tc.runtimeID, tc.sessionID, got, tc.want)
		}
	}

	// Never across runtimes.
	_, err := s.Approvals(ctx, "r1", "t1")
	wantErr(t, "Approvals of another runtime's session", err, store.ErrWrongRuntime, `"t1"`)
	err = s.AddApproval(ctx, store.Approval{RuntimeID: "r1", SessionID: "t1", Rule: "Bash"})
	wantErr(t, "AddApproval to another runtime's session", err, store.ErrWrongRuntime, `"t1"`)
	if got := rules("r2", "t1"); !slices.Equal(got, []string{"Read", "Edit"}) {
		t.Errorf("a refused approval reached t1: %q", got)
	}

	err = s.AddApproval(ctx, store.Approval{RuntimeID: "r1"})
	wantErr(t, "AddApproval without Rule", err, store.ErrInvalid)
	err = s.AddApproval(ctx, store.Approval{Rule: "Bash"})
	wantErr(t, "AddApproval without RuntimeID", err, store.ErrInvalid)
	_, err = s.Approvals(ctx, "", "")
	wantErr(t, "Approvals without runtime", err, store.ErrInvalid)
}

func testSessions(t *testing.T, s store.Store) {
	if all, err := s.Sessions(ctx, store.Filter{}); err != nil || len(all) != 0 {
		t.Fatalf("Sessions of an empty store = %+v, %v", all, err)
	}
	mk := func(id, runtimeID, workspace string) {
		t.Helper()
		if _, err := s.Provision(ctx, store.Session{ID: id, RuntimeID: runtimeID, Workspace: workspace}); err != nil {
			t.Fatal(err)
		}
	}
	mk("a", "r1", "/w1")
	mk("b", "r1", "/w2")
	mk("c", "r2", "/w1")
	mk("d", "r1", "/w1")
	// Later writes come first, whatever the clock's resolution.
	appendRecs(t, s, "a", text(llm.RoleUser, "hi"))
	if err := s.FinishTurn(ctx, "b", "t1", "hello"); err != nil {
		t.Fatal(err)
	}
	ids := func(f store.Filter) []string {
		t.Helper()
		got, err := s.Sessions(ctx, f)
		if err != nil {
			t.Fatalf("Sessions(%+v): %v", f, err)
		}
		var out []string
		for i, ss := range got {
			out = append(out, ss.ID)
			if i > 0 && ss.UpdatedAt.After(got[i-1].UpdatedAt) {
				t.Errorf("Sessions(%+v): %s (UpdatedAt %v) after %s (%v)", f, ss.ID, ss.UpdatedAt, got[i-1].ID, got[i-1].UpdatedAt)
			}
		}
		return out
	}
	for _, tc := range []struct {
		f    store.Filter
		want []string
	}{
		{store.Filter{}, []string{"b", "a", "d", "c"}},
		{store.Filter{RuntimeID: "r1"}, []string{"b", "a", "d"}},
		{store.Filter{Workspace: "/w1"}, []string{"a", "d", "c"}},
		{store.Filter{RuntimeID: "r1", Workspace: "/w1"}, []string{"a", "d"}},
		{store.Filter{RuntimeID: "r2", Workspace: "/w2"}, nil},
		{store.Filter{Limit: 2}, []string{"b", "a"}},
		{store.Filter{RuntimeID: "r1", Limit: 10}, []string{"b", "a", "d"}},
	} {
		if got := ids(tc.f); !slices.Equal(got, tc.want) {
			t.Errorf("Sessions(%+v) = %q, want %q", tc.f, got, tc.want)
		}
	}
	got, err := s.Sessions(ctx, store.Filter{RuntimeID: "r1", Limit: 1})
	if err != nil || len(got) != 1 {
		t.Fatalf("Sessions(limit 1) = %+v, %v", got, err)
	}
	wantSession(t, "listed session", got[0], session(t, s, "b"))
	if got[0].Turns != 1 || got[0].LastPrompt != "hello" {
		t.Errorf("listed session %+v, want Turns 1 and LastPrompt hello", got[0])
	}
	_, err = s.Sessions(ctx, store.Filter{Limit: -1})
	wantErr(t, "Sessions with a negative Limit", err, store.ErrInvalid)
}

func testConcurrentAppends(t *testing.T, s store.Store) {
	const sessions, writers, appends = 8, 4, 15
	for i := range sessions {
		provision(t, s, fmt.Sprint("s", i), "r1")
	}
	var wg sync.WaitGroup
	for i := range sessions {
		for w := range writers {
			wg.Go(func() {
				id := fmt.Sprint("s", i)
				for n := range appends {
					// A batch of two: they must land next to each other.
					got, err := s.Append(ctx, id,
						text(llm.RoleUser, fmt.Sprintf("w%d-%d-q", w, n)),
						text(llm.RoleAssistant, fmt.Sprintf("w%d-%d-a", w, n)))
					if err != nil {
						t.Errorf("Append(%s): %v", id, err)
						return
					}
					if len(got) != 2 || got[1].Seq != got[0].Seq+1 {
						t.Errorf("Append(%s) returned Seqs %v, want two adjacent", id, seqs(got))
					}
				}
			})
		}
	}
	// Readers at the same time see a prefix with no gaps.
	for i := range sessions {
		wg.Go(func() {
			id := fmt.Sprint("s", i)
			for range 5 {
				got, err := s.Records(ctx, id, store.RecordFilter{})
				if err != nil {
					t.Errorf("Records(%s): %v", id, err)
					return
				}
				if want := seqRange(1, int64(len(got))); !slices.Equal(seqs(got), want) || len(got)%2 != 0 {
					t.Errorf("Records(%s) during appends: Seqs %v, want 1..n with whole batches", id, seqs(got))
				}
			}
		})
	}
	wg.Wait()
	for i := range sessions {
		id := fmt.Sprint("s", i)
		got := records(t, s, id, store.RecordFilter{})
		wantSeqs(t, "Records of "+id, got, seqRange(1, writers*appends*2))
		last := map[string]int{}
		for j, r := range got {
			var w, n int
			var part string
			if _, err := fmt.Sscanf(strings.ReplaceAll(r.Message.Text(), "-", " "), "w%d %d %s", &w, &n, &part); err != nil {
				t.Fatalf("%s Seq %d: text %q: %v", id, r.Seq, r.Message.Text(), err)
			}
			if part == "a" && (j == 0 || got[j-1].Message.Text() != fmt.Sprintf("w%d-%d-q", w, n)) {
				t.Errorf("%s Seq %d: %q does not follow its question", id, r.Seq, r.Message.Text())
			}
			if part == "q" {
				key := fmt.Sprint(w)
				if prev, ok := last[key]; ok && n != prev+1 {
					t.Errorf("%s Seq %d: writer %d's append %d follows its append %d", id, r.Seq, w, n, prev)
				}
				last[key] = n
			}
		}
	}
}

func testContext(t *testing.T, s store.Store) {
	provision(t, s, "s1", "r1")
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, err := s.Append(canceled, "s1", text(llm.RoleUser, "late"))
	wantErr(t, "Append with a canceled context", err, context.Canceled)
	_, err = s.Provision(canceled, store.Session{ID: "s2", RuntimeID: "r1"})
	wantErr(t, "Provision with a canceled context", err, context.Canceled)
	_, err = s.Session(canceled, "s1")
	wantErr(t, "Session with a canceled context", err, context.Canceled)
	_, err = s.Records(canceled, "s1", store.RecordFilter{})
	wantErr(t, "Records with a canceled context", err, context.Canceled)
	_, err = s.AddTotals(canceled, "s1", store.Totals{ToolCalls: 1})
	wantErr(t, "AddTotals with a canceled context", err, context.Canceled)
	img := image("late", 1, 1)
	err = s.PutAttachments(canceled, "s1", []*llm.Media{img})
	wantErr(t, "PutAttachments with a canceled context", err, context.Canceled)
	_, err = s.Attachment(canceled, "s1", img.Digest)
	wantErr(t, "Attachment with a canceled context", err, context.Canceled)
	wantNoAttachment(t, s, "after a canceled PutAttachments", "s1", img.Digest)

	if recs := records(t, s, "s1", store.RecordFilter{}); len(recs) != 0 {
		t.Errorf("a canceled Append stored %v", seqs(recs))
	}
	_, err = s.Session(ctx, "s2")
	wantErr(t, "Session after a canceled Provision", err, store.ErrNotFound)
	if got, _ := s.Totals(ctx, "s1"); got != (store.Totals{}) {
		t.Errorf("a canceled AddTotals added %+v", got)
	}
}

// Appends whose contexts end at every moment, many at once: each one that
// returned nil is in the transcript, each one that failed is not, and the
// failures are the contexts' own.
func testCancelNeverLies(t *testing.T, s store.Store) {
	const writers, each = 16, 30
	ids := []string{"s1", "s2", "s3"}
	for _, id := range ids {
		provision(t, s, id, "r1")
	}
	var mu sync.Mutex
	acked := map[string]bool{}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			id := ids[w%len(ids)]
			for i := range each {
				msg := fmt.Sprintf("w%d-%d", w, i)
				ctx, cancel := context.WithTimeout(ctx, time.Duration((w*each+i)%7)*200*time.Microsecond)
				_, err := s.Append(ctx, id, text(llm.RoleUser, msg))
				cancel()
				switch {
				case err == nil:
					mu.Lock()
					acked[id+" "+msg] = true
					mu.Unlock()
				case !errors.Is(err, context.DeadlineExceeded):
					t.Errorf("Append %s to %s: %v, want nil or the context's error", msg, id, err)
				}
			}
		})
	}
	wg.Wait()
	stored := map[string]bool{}
	for _, id := range ids {
		recs := records(t, s, id, store.RecordFilter{})
		wantSeqs(t, "Records of "+id, recs, seqRange(1, int64(len(recs))))
		for _, r := range recs {
			stored[id+" "+r.Message.Text()] = true
		}
	}
	for k := range acked {
		if !stored[k] {
			t.Errorf("acknowledged append %s is not stored", k)
		}
	}
	for k := range stored {
		if !acked[k] {
			t.Errorf("%s is stored, but its Append reported a failure", k)
		}
	}
}

func testClose(t *testing.T, s store.Store) {
	provision(t, s, "s1", "r1")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	_, err := s.Session(ctx, "s1")
	wantErr(t, "Session after Close", err, store.ErrClosed)
	_, err = s.Append(ctx, "s1", text(llm.RoleUser, "late"))
	wantErr(t, "Append after Close", err, store.ErrClosed)
	_, err = s.Provision(ctx, store.Session{ID: "s2", RuntimeID: "r1"})
	wantErr(t, "Provision after Close", err, store.ErrClosed)
	img := image("late", 1, 1)
	wantErr(t, "PutAttachments after Close", s.PutAttachments(ctx, "s1", []*llm.Media{img}), store.ErrClosed)
	_, err = s.Attachment(ctx, "s1", img.Digest)
	wantErr(t, "Attachment after Close", err, store.ErrClosed)
}

// snapshot is everything a store holds about the sessions it lists.
type snapshot struct {
	sessions  []store.Session
	records   map[string][]store.Record
	totals    map[string]store.Totals
	budgets   map[string]*budget.Limits
	approvals map[string][]store.Approval
}

func take(t *testing.T, s store.Store, runtimeID string) snapshot {
	t.Helper()
	all, err := s.Sessions(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	snap := snapshot{sessions: all, records: map[string][]store.Record{}, totals: map[string]store.Totals{}, budgets: map[string]*budget.Limits{}, approvals: map[string][]store.Approval{}}
	for _, ss := range all {
		snap.records[ss.ID] = records(t, s, ss.ID, store.RecordFilter{IncludeCompacted: true})
		if snap.totals[ss.ID], err = s.Totals(ctx, ss.ID); err != nil {
			t.Fatal(err)
		}
		if snap.budgets[ss.ID], err = s.Budget(ctx, ss.ID); err != nil {
			t.Fatal(err)
		}
		if snap.approvals[ss.ID], err = s.Approvals(ctx, ss.RuntimeID, ss.ID); err != nil {
			t.Fatal(err)
		}
	}
	if snap.approvals[""], err = s.Approvals(ctx, runtimeID, ""); err != nil {
		t.Fatal(err)
	}
	return snap
}

func wantSnapshot(t *testing.T, what string, got, want snapshot) {
	t.Helper()
	if len(got.sessions) != len(want.sessions) {
		t.Fatalf("%s: %d sessions, want %d", what, len(got.sessions), len(want.sessions))
	}
	for i := range got.sessions {
		wantSession(t, what+": session", got.sessions[i], want.sessions[i])
	}
	for id, recs := range want.records {
		wantRecords(t, what+": records of "+id, got.records[id], recs)
		if got.totals[id] != want.totals[id] {
			t.Errorf("%s: totals of %s = %+v, want %+v", what, id, got.totals[id], want.totals[id])
		}
		if g, w := got.budgets[id], want.budgets[id]; (g == nil) != (w == nil) || (g != nil && *g != *w) {
			t.Errorf("%s: budget of %s = %+v, want %+v", what, id, g, w)
		}
	}
	for id, as := range want.approvals {
		g := got.approvals[id]
		if len(g) != len(as) {
			t.Errorf("%s: approvals of %q = %+v, want %+v", what, id, g, as)
			continue
		}
		for i := range as {
			if g[i].RuntimeID != as[i].RuntimeID || g[i].SessionID != as[i].SessionID || g[i].Rule != as[i].Rule || !g[i].CreatedAt.Equal(as[i].CreatedAt) {
				t.Errorf("%s: approval %d of %q = %+v, want %+v", what, i, id, g[i], as[i])
			}
		}
	}
}

func reopen(t *testing.T, open func(t *testing.T, path string) store.Store, path string) store.Store {
	t.Helper()
	s := open(t, path)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func testReopen(t *testing.T, open func(t *testing.T, path string) store.Store) {
	path := filepath.Join(t.TempDir(), "not", "yet", "orca.db")
	s := reopen(t, open, path)
	provision(t, s, "s1", "r1")
	provision(t, s, "s2", "r1")
	provision(t, s, "t1", "r2")
	conv := conversation()
	appendRecs(t, s, "s1", conv...)
	appendRecs(t, s, "s1", text(llm.RoleUser, "after the summary"))
	if err := s.MarkCompacted(ctx, "s1", int64(len(conv)-1)); err != nil {
		t.Fatal(err)
	}
	appendRecs(t, s, "s2", text(llm.RoleUser, "hello"))
	if _, err := s.AddTotals(ctx, "s1", store.Totals{Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}, CostUSD: 0.001, ToolCalls: 5, WallTime: 3 * time.Second, Turns: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetBudget(ctx, "s1", &budget.Limits{Tokens: 5000, CostUSD: 1.25, ToolCalls: 40, WallTime: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetBudget(ctx, "t1", &budget.Limits{}); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishTurn(ctx, "s1", "t1", "read a.go"); err != nil {
		t.Fatal(err)
	}
	for _, a := range []store.Approval{
		{RuntimeID: "r1", Rule: "Bash(go test:*)"},
		{RuntimeID: "r1", SessionID: "s1", Rule: "Write(a.go)"},
		{RuntimeID: "r2", SessionID: "t1", Rule: "Edit"},
	} {
		if err := s.AddApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.LearnWindow(ctx, store.LearntWindow{RuntimeID: "r1", Model: "proxy-model", Tokens: 23040}); err != nil {
		t.Fatal(err)
	}
	before := take(t, s, "r1")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = reopen(t, open, path)
	wantSnapshot(t, "after reopening", take(t, s, "r1"), before)
	if ws, err := s.LearntWindows(ctx, "r1"); err != nil || len(ws) != 1 || ws[0].Model != "proxy-model" || ws[0].Tokens != 23040 {
		t.Errorf("learnt windows after reopening: %+v, %v", ws, err)
	}

	// The store goes on where it stopped.
	last := before.records["s1"][len(before.records["s1"])-1].Seq
	wantSeqs(t, "Append after reopening", appendRecs(t, s, "t1", text(llm.RoleUser, "back")), []int64{1})
	wantSeqs(t, "Append after reopening", appendRecs(t, s, "s1", text(llm.RoleUser, "more")), []int64{last + 1})
	list, err := s.Sessions(ctx, store.Filter{})
	if err != nil || len(list) != 3 || list[0].ID != "s1" || list[1].ID != "t1" {
		t.Errorf("Sessions after writing in the reopened store = %+v, %v; want s1, t1 first", list, err)
	}
	if _, err := s.Provision(ctx, store.Session{ID: "s1", RuntimeID: "r2"}); !errors.Is(err, store.ErrWrongRuntime) {
		t.Errorf("Provision of a reopened session under another runtime: err = %v, want ErrWrongRuntime", err)
	}
	after := take(t, s, "r1")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = reopen(t, open, path)
	wantSnapshot(t, "after reopening again", take(t, s, "r1"), after)
}

func testReopenManyTimes(t *testing.T, open func(t *testing.T, path string) store.Store) {
	path := filepath.Join(t.TempDir(), "orca.db")
	for i := range 5 {
		s := reopen(t, open, path)
		if i == 0 {
			provision(t, s, "s1", "r1")
		}
		appendRecs(t, s, "s1", text(llm.RoleUser, fmt.Sprint("open ", i)))
		if _, err := s.AddTotals(ctx, "s1", store.Totals{ToolCalls: 1}); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close %d: %v", i, err)
		}
	}
	s := reopen(t, open, path)
	got := records(t, s, "s1", store.RecordFilter{})
	wantSeqs(t, "records written across five openings", got, seqRange(1, 5))
	for i, r := range got {
		if want := fmt.Sprint("open ", i); r.Message.Text() != want {
			t.Errorf("Seq %d: %q, want %q", r.Seq, r.Message.Text(), want)
		}
	}
	if tot, err := s.Totals(ctx, "s1"); err != nil || tot.ToolCalls != 5 {
		t.Errorf("Totals = %+v, %v; want ToolCalls 5", tot, err)
	}
}

// observationRows are rows of two sessions (and one of no session), their
// scopes whole, their data as events encode it.
func observationRows() []store.Observation {
	at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	top := scope.Scope{RuntimeID: "r1", SessionID: "s1", TurnID: "t1", ExecutionID: "e1"}
	fork := top.Child("r1/explorer", "e2")
	row := func(i int, name string, sc scope.Scope, data string) store.Observation {
		return store.Observation{Time: at.Add(time.Duration(i) * time.Millisecond), Name: name, Scope: sc, Data: json.RawMessage(data)}
	}
	return []store.Observation{
		row(0, "session_started", scope.Scope{RuntimeID: "r1", SessionID: "s1"}, `{"name":"session_started","source":"new"}`),
		row(1, "turn_started", top, `{"name":"turn_started","input":"ünïcödé <&>"}`),
		row(2, "subagent_started", fork, `{"name":"subagent_started","agent":"explorer"}`),
		row(3, "turn_started", scope.Scope{RuntimeID: "r1", SessionID: "s2", TurnID: "t9", ExecutionID: "e9"}, `{"name":"turn_started","input":"other"}`),
		row(4, "hook_failed", scope.Scope{RuntimeID: "r1"}, `{"name":"hook_failed", "spacing" :  "kept"}`),
		row(5, "turn_completed", top, `{"name":"turn_completed","stop_reason":"answered"}`),
	}
}

func testObservations(t *testing.T, s store.Store) {
	o, ok := s.(store.Observations)
	if !ok {
		t.Skip("the store keeps no observation rows")
	}
	ctx := context.Background()
	want := observationRows()
	// Rows need no provisioned session; two writes keep one order, and
	// tell each row's Seq.
	written := slices.Clone(want)
	if err := o.AppendObservations(ctx, written[:2]); err != nil {
		t.Fatal(err)
	}
	if err := o.AppendObservations(ctx, written[2:]); err != nil {
		t.Fatal(err)
	}
	for i, r := range written {
		if r.Seq != int64(i+1) {
			t.Errorf("row %d was written with Seq %d, want %d", i, r.Seq, i+1)
		}
	}
	if err := o.AppendObservations(ctx, nil); err != nil {
		t.Errorf("an empty write: %v", err)
	}
	got, err := o.Observations(ctx, store.ObservationFilter{})
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, "all rows", got, want)
	for i, r := range got {
		if r.Seq != int64(i+1) {
			t.Errorf("row %d has Seq %d, want %d", i, r.Seq, i+1)
		}
	}
	for _, tc := range []struct {
		name string
		f    store.ObservationFilter
		want []store.Observation
	}{
		{"session s1", store.ObservationFilter{SessionID: "s1"}, []store.Observation{want[0], want[1], want[2], want[5]}},
		{"turn t1", store.ObservationFilter{TurnID: "t1"}, []store.Observation{want[1], want[2], want[5]}},
		{"after seq 3", store.ObservationFilter{AfterSeq: 3}, want[3:]},
		{"session s1, after 2, limit 1", store.ObservationFilter{SessionID: "s1", AfterSeq: 2, Limit: 1}, []store.Observation{want[2]}},
		{"unknown session", store.ObservationFilter{SessionID: "nope"}, nil},
	} {
		got, err := o.Observations(ctx, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		wantRows(t, tc.name, got, tc.want)
	}
	// A follower's poll: which sessions have rows after a point.
	if h, ok := s.(store.ObservationHeads); ok {
		heads := func(after int64, wantLast int64, want map[string]int64) {
			t.Helper()
			last, sessions, err := h.ObservationHeads(ctx, after)
			if err != nil || last != wantLast || len(sessions) != len(want) {
				t.Errorf("ObservationHeads(%d) = %d, %v, %v; want %d, %v", after, last, sessions, err, wantLast, want)
				return
			}
			for id, seq := range want {
				if sessions[id] != seq {
					t.Errorf("ObservationHeads(%d) = %d, %v; want %d, %v", after, last, sessions, wantLast, want)
				}
			}
		}
		n := int64(len(want))
		heads(-1, n, nil)
		heads(n, n, nil)
		sessions := map[string]int64{}
		for i, r := range want {
			if r.SessionID != "" {
				sessions[r.SessionID] = int64(i + 1)
			}
		}
		heads(0, n, sessions)
		after5 := map[string]int64{}
		for i, r := range want {
			if i >= 5 && r.SessionID != "" {
				after5[r.SessionID] = int64(i + 1)
			}
		}
		heads(5, n, after5)
	}
	// What a caller does with the rows it got does not reach the store.
	got[1].Data[2] = 'X'
	again, _ := o.Observations(ctx, store.ObservationFilter{SessionID: "s1"})
	wantRows(t, "after changing a returned row", again, []store.Observation{want[0], want[1], want[2], want[5]})
}

// wantRows compares rows by everything but Seq: time, name, the whole
// scope, the data byte for byte.
func wantRows(t *testing.T, what string, got, want []store.Observation) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, want %d: %+v", what, len(got), len(want), got)
		return
	}
	for i := range got {
		g, w := got[i], want[i]
		if !g.Time.Equal(w.Time) || g.Name != w.Name || g.Scope != w.Scope || !bytes.Equal(g.Data, w.Data) {
			t.Errorf("%s: row %d is\n%+v %s\nwant\n%+v %s", what, i, g, g.Data, w, w.Data)
		}
	}
}

func testReopenObservations(t *testing.T, open func(t *testing.T, path string) store.Store) {
	path := filepath.Join(t.TempDir(), "rows", "orca.db")
	s := reopen(t, open, path)
	o, ok := s.(store.Observations)
	if !ok {
		t.Skip("the store keeps no observation rows")
	}
	want := observationRows()
	if err := o.AppendObservations(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, open, path)
	got, err := s.(store.Observations).Observations(context.Background(), store.ObservationFilter{})
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, "after reopening", got, want)
}

// The context windows a runtime learnt are kept per runtime and model,
// the last one learnt winning; they outlive the sessions; what breaks
// the contract is refused, naming what.
func testWindows(t *testing.T, s store.Store) {
	if ws, err := s.LearntWindows(ctx, "r1"); err != nil || len(ws) != 0 {
		t.Fatalf("a new store: %+v, %v", ws, err)
	}
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	odd := "gpt\x00-6.1 \xff☃"
	for _, w := range []store.LearntWindow{
		{RuntimeID: "r1", Model: "proxy-model", Tokens: 30000, LearntAt: at},
		{RuntimeID: "r1", Model: odd, Tokens: 8000},
		{RuntimeID: "r2", Model: "proxy-model", Tokens: 100000},
		{RuntimeID: "r1", Model: "proxy-model", Tokens: 23040, LearntAt: at.Add(time.Hour)},
	} {
		if err := s.LearnWindow(ctx, w); err != nil {
			t.Fatalf("LearnWindow(%+v): %v", w, err)
		}
	}
	ws, err := s.LearntWindows(ctx, "r1")
	if err != nil || len(ws) != 2 {
		t.Fatalf("r1's windows: %+v, %v", ws, err)
	}
	byModel := map[string]store.LearntWindow{}
	for _, w := range ws {
		byModel[w.Model] = w
		wantUTC(t, "LearntAt of "+w.Model, w.LearntAt)
		if w.RuntimeID != "r1" {
			t.Errorf("r1's window of %s has runtime %q", w.Model, w.RuntimeID)
		}
	}
	if w := byModel["proxy-model"]; w.Tokens != 23040 || !w.LearntAt.Equal(at.Add(time.Hour)) {
		t.Errorf("the window learnt last does not win: %+v", w)
	}
	if w := byModel[odd]; w.Tokens != 8000 {
		t.Errorf("a model named with odd bytes: %+v", ws)
	}
	if ws, err := s.LearntWindows(ctx, "r2"); err != nil || len(ws) != 1 || ws[0].Tokens != 100000 {
		t.Errorf("r2's windows: %+v, %v", ws, err)
	}
	// They outlive the sessions.
	provision(t, s, "s1", "r1")
	if err := s.DeleteSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if ws, err := s.LearntWindows(ctx, "r1"); err != nil || len(ws) != 2 {
		t.Errorf("after deleting a session: %+v, %v", ws, err)
	}
	for _, c := range []struct {
		w       store.LearntWindow
		mention string
	}{
		{store.LearntWindow{Model: "m", Tokens: 1}, "RuntimeID"},
		{store.LearntWindow{RuntimeID: "r1", Tokens: 1}, "Model"},
		{store.LearntWindow{RuntimeID: "r1", Model: "m"}, "0 tokens"},
		{store.LearntWindow{RuntimeID: "r1", Model: "m", Tokens: -5}, "-5 tokens"},
	} {
		wantErr(t, fmt.Sprintf("LearnWindow(%+v)", c.w), s.LearnWindow(ctx, c.w), store.ErrInvalid, c.mention)
	}
	if ws, _ := s.LearntWindows(ctx, "r1"); len(ws) != 2 {
		t.Errorf("refused windows were kept: %+v", ws)
	}
}
