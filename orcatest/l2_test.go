package orcatest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/orcatest"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tool"
)

// L2: session state across turns, handles and compactions, witnessed by
// the record store.

func records(t *testing.T, n *orcatest.Node, id string, all bool) []store.Record {
	t.Helper()
	recs, err := n.Store.Records(context.Background(), id, store.RecordFilter{IncludeCompacted: all})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestL2_TranscriptAcrossTurnsIsRecordedAsItGoes(t *testing.T) {
	var n *orcatest.Node
	var seenMidTurn int
	peek := tool.New("Peek", "Counts the session's records.", func(ctx context.Context, in struct{}) (string, error) {
		recs, err := n.Store.Records(ctx, tool.CallFrom(ctx).SessionID, store.RecordFilter{})
		seenMidTurn = len(recs)
		return "ok", err
	})
	n = orcatest.NewNode(t, orcatest.WithDefinition(agent.Definition{Name: "l2", ToolProviders: []tool.Provider{tool.Static("p", peek)}}))
	n.Script("s", script.Call("Peek", nil), script.Text("first answer"), script.Text("second answer"))
	s := n.Open("s")
	if res, err := s.Run(t.Context(), "first"); err != nil || res.Answer != "first answer" {
		t.Fatalf("turn 1: %+v, %v", res, err)
	}
	// The input and the assistant's tool call were in the store while the
	// tool ran: the transcript is written as the turn goes.
	if seenMidTurn != 2 {
		t.Errorf("records during the tool call = %d, want 2", seenMidTurn)
	}
	if _, err := s.Run(t.Context(), "second"); err != nil {
		t.Fatal(err)
	}
	sent := n.LLM.CallsTo("s")[2].Messages
	if len(sent) != 5 || sent[0].Text() != "first" || sent[3].Text() != "first answer" || sent[4].Text() != "second" {
		t.Errorf("second turn's prompt = %+v", sent)
	}
	recs := records(t, n, "s", false)
	if len(recs) != 6 || recs[5].Message.Text() != "second answer" || recs[0].Seq != 1 || recs[5].Seq != 6 {
		t.Errorf("store has %d records: %+v", len(recs), recs)
	}
	info, _ := n.Store.Session(t.Context(), "s")
	if info.Turns != 2 || info.LastPrompt != "second" || info.RuntimeID != n.Runtime.ID() {
		t.Errorf("session info %+v", info)
	}
}

// Totals and a budget override outlive the handle that wrote them; a
// reopened session resumes with its whole transcript.
func TestL2_TotalsAndBudgetOutliveTheHandle(t *testing.T) {
	n := orcatest.NewNode(t)
	u := llm.Usage{InputTokens: 100, OutputTokens: 20}
	first := script.Text("hello")
	first.Usage = &u
	n.Script("s", first, script.Text("again"))
	s := n.Open("s")
	if err := s.SetBudget(t.Context(), &budget.Limits{Tokens: 10_000, ToolCalls: 7}); err != nil {
		t.Fatal(err)
	}
	s.Run(t.Context(), "hi")
	s.Close(t.Context())

	// A new router over the same store: as a new process would.
	again, err := session.NewRouter(n.Runtime, n.Store, nil).Open(t.Context(), "s", session.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close(t.Context())
	if again.Source() != "resumed" || len(again.Transcript()) != 2 {
		t.Errorf("resumed %q with %d messages", again.Source(), len(again.Transcript()))
	}
	tot, _ := again.Totals(t.Context())
	if tot.Usage != u || tot.Turns != 1 {
		t.Errorf("totals %+v", tot)
	}
	if b, _ := again.Budget(t.Context()); b.Tokens != 10_000 || b.ToolCalls != 7 {
		t.Errorf("budget %+v", b)
	}
	again.Run(t.Context(), "hi again")
	if msgs := n.LLM.CallsTo("s")[1].Messages; len(msgs) != 3 || msgs[1].Text() != "hello" {
		t.Errorf("resumed turn's prompt %+v", msgs)
	}
}

// A session that stopped while a tool ran resumes without running the
// tool again: the call gets a result saying so.
func TestL2_ResumeNeverRerunsAToolCall(t *testing.T) {
	n := orcatest.NewNode(t)
	ctx := t.Context()
	n.Store.Provision(ctx, store.Session{ID: "s", RuntimeID: n.Runtime.ID()})
	n.Store.Append(ctx, "s",
		store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("make marker")}}},
		store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.ToolUseBlock("b1", "Bash", json.RawMessage(`{"command":"echo ran >> marker"}`)),
		}}})
	n.Script("s", script.Text("checked"))
	s := n.Open("s")
	s.Run(ctx, "did it work?")
	sent := n.LLM.CallsTo("s")[0].Messages
	obs := sent[2]
	if obs.Role != llm.RoleUser || obs.Content[0].ToolUseID != "b1" || !strings.Contains(obs.Content[0].Content, "may or may not have taken effect") {
		t.Errorf("resumed prompt %+v", sent)
	}
	if got := n.ReadFileOr("marker", ""); got != "" {
		t.Errorf("the tool ran again: marker = %q", got)
	}
}

// Compaction fires past the threshold, is counted on its route, keeps the
// old records (marked), and the session goes on after it.
func TestL2_CompactionAndTheSessionAfterIt(t *testing.T) {
	n := orcatest.NewNode(t, orcatest.WithDefinition(agent.Definition{Name: "c", ContextWindow: 1000, CompactAt: 0.5, KeepTurns: 1}))
	big := script.Text("long answer")
	big.Usage = &llm.Usage{InputTokens: 700}
	n.Script("s", big, script.Text("answer two"), script.Text("answer three"))
	n.Script(script.CompactionRoute("s"), script.Text("SUMMARY: the user said one."))
	s := n.Open("s")
	s.Run(t.Context(), "one")
	res, _ := s.Run(t.Context(), "two")
	if !res.Compacted || len(n.LLM.CallsTo(script.CompactionRoute("s"))) != 1 {
		t.Fatalf("compaction did not fire: %+v", res)
	}
	s.Run(t.Context(), "three")
	sent := n.LLM.CallsTo("s")[2].Messages
	if !strings.Contains(sent[0].Content[0].Text, "SUMMARY: the user said one.") || sent[len(sent)-1].Text() != "three" {
		t.Errorf("turn after compaction sent %+v", sent)
	}
	all, live := records(t, n, "s", true), records(t, n, "s", false)
	compacted := 0
	for _, r := range all {
		if r.Compacted {
			compacted++
		}
	}
	if compacted == 0 || len(live) >= len(all) || live[0].Kind != store.KindSummary {
		t.Errorf("records: %d in all, %d live, %d compacted, first live %+v", len(all), len(live), compacted, live[0])
	}
	if n.LLM.Unrouted() != 0 {
		t.Errorf("unrouted calls %d", n.LLM.Unrouted())
	}
}

func TestL2_CompactCommand(t *testing.T) {
	n := orcatest.NewNode(t, orcatest.WithDefinition(agent.Definition{Name: "c", KeepTurns: 1}))
	n.Script("s", script.Text("a1"), script.Text("a2"), script.Text("a3"))
	n.Script(script.CompactionRoute("s"), script.Text("short summary"))
	s := n.Open("s")
	s.Run(t.Context(), "q1")
	s.Run(t.Context(), "q2")
	res, err := s.Run(t.Context(), "/compact keep the file names")
	if err != nil || res.StopReason != agent.StopCompacted || !res.Compacted {
		t.Fatalf("/compact: %+v, %v", res, err)
	}
	if p := n.LLM.CallsTo(script.CompactionRoute("s"))[0].Messages[0].Text(); !strings.Contains(p, "keep the file names") {
		t.Errorf("instructions not passed: %s", p)
	}
	s.Run(t.Context(), "q3")
	if sent := n.LLM.CallsTo("s")[2].Messages; !strings.Contains(sent[0].Content[0].Text, "short summary") {
		t.Errorf("after /compact: %+v", sent)
	}
}

// "Always allow" approvals reach this session or every session of the
// runtime, never another runtime; they are stored.
func TestL2_ApprovalReach(t *testing.T) {
	scope := policy.ScopeSession
	var asked []string
	approver := policy.ApproverFunc(func(ctx context.Context, r policy.ApprovalRequest) (policy.Approval, error) {
		asked = append(asked, r.SessionID)
		return policy.Approval{Allow: true, Scope: scope}, nil
	})
	pol, _ := policy.New(policy.ModeDefault, policy.Rules{})
	shared := store.NewMemory()
	defer shared.Close()
	a := orcatest.NewNode(t, orcatest.WithPolicy(pol, approver), orcatest.WithStore(shared), orcatest.WithDefinition(agent.Definition{Name: "a"}))
	b := orcatest.NewNode(t, orcatest.WithPolicy(pol, approver), orcatest.WithStore(shared), orcatest.WithDefinition(agent.Definition{Name: "b"}))
	w := func(p string) script.Response {
		return script.Call("Write", map[string]string{"file_path": "x/" + p, "content": p})
	}
	a.Script("a1", w("1"), script.Text("ok"))
	a.Script("a2", w("2"), script.Text("ok"))
	a.Open("a1").Run(t.Context(), "go")
	a.Open("a2").Run(t.Context(), "go")
	if strings.Join(asked, ",") != "a1,a2" {
		t.Fatalf("session reach: asked %v", asked)
	}
	asked, scope = nil, policy.ScopeAgent
	a.Script("a3", w("3"), script.Text("ok"))
	a.Script("a4", w("4"), script.Text("ok"))
	b.Script("b1", w("5"), script.Text("ok"))
	a.Open("a3").Run(t.Context(), "go")
	a.Open("a4").Run(t.Context(), "go")
	b.Open("b1").Run(t.Context(), "go")
	if strings.Join(asked, ",") != "a3,b1" {
		t.Errorf("agent reach: asked %v (a4 must not ask; b1 is another runtime and must)", asked)
	}
	stored, _ := shared.Approvals(t.Context(), a.Runtime.ID(), "")
	if len(stored) != 1 || stored[0].Rule == "" {
		t.Errorf("stored agent approvals %+v", stored)
	}
}

// Each tool result is recorded as its call ends, so a crash in the middle
// of an assistant message's calls loses none that ended. On resume: the
// finished calls keep their results; the one that was running may or may
// not have taken effect — and runs again only if its tool is idempotent —
// and those after it never started.
func TestL2_ResumeInTheMiddleOfTheCalls(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		name    string
		running llm.Block // the call that was running when the session stopped
		rerun   bool
	}{
		{"not idempotent", llm.ToolUseBlock("b2", "Bash", json.RawMessage(`{"command":"echo again >> ran-b2"}`)), false},
		{"idempotent", llm.ToolUseBlock("b2", "Write", json.RawMessage(`{"file_path":"written","content":"w\n"}`)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := orcatest.NewNode(t)
			n.Store.Provision(ctx, store.Session{ID: "s", RuntimeID: n.Runtime.ID()})
			n.Store.Append(ctx, "s",
				store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("three steps")}}},
				store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
					llm.ToolUseBlock("b1", "Bash", json.RawMessage(`{"command":"echo once >> ran-b1"}`)),
					tc.running,
					llm.ToolUseBlock("b3", "Bash", json.RawMessage(`{"command":"echo never >> ran-b3"}`)),
				}}},
				// b1 ended, and its result was recorded.
				store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock("b1", "(no output)", false)}}})
			n.Script("s", script.Text("checked"))
			s := n.Open("s")
			if _, err := s.Run(ctx, "go on"); err != nil {
				t.Fatal(err)
			}
			sent := n.LLM.CallsTo("s")[0].Messages
			results := map[string]llm.Block{}
			for _, b := range sent[2].Content {
				results[b.ToolUseID] = b
			}
			if len(sent) != 4 || sent[2].Role != llm.RoleUser || len(results) != 3 || sent[3].Text() != "go on" {
				t.Fatalf("resumed prompt: %+v", sent)
			}
			if results["b1"].Content != "(no output)" || !strings.Contains(results["b3"].Content, "stopped before this call started") {
				t.Errorf("b1 %q, b3 %q", results["b1"].Content, results["b3"].Content)
			}
			if tc.rerun {
				if results["b2"].IsError || n.ReadFileOr("written", "") != "w\n" {
					t.Errorf("the idempotent call did not run again: %+v, file %q", results["b2"], n.ReadFileOr("written", ""))
				}
			} else if !strings.Contains(results["b2"].Content, "may or may not have taken effect") || n.ReadFileOr("ran-b2", "") != "" {
				t.Errorf("the running call: %+v, ran-b2 %q", results["b2"], n.ReadFileOr("ran-b2", ""))
			}
			if n.ReadFileOr("ran-b1", "") != "" || n.ReadFileOr("ran-b3", "") != "" {
				t.Error("a call that ended, or never started, ran")
			}
			// The store, read again, gives the same conversation.
			s.Close(ctx)
			again := n.Open("s")
			if got := again.Transcript(); len(got) != 5 || len(got[2].Content) != 3 || got[4].Text() != "checked" {
				t.Errorf("reloaded: %d messages, %d results", len(got), len(got[2].Content))
			}
		})
	}
}

// A headless run can park a call the policy asks about instead of refusing
// it: the turn stops (awaiting_approval) with nothing run; a person
// decides later; the next turn runs the approved call exactly once, with
// its arguments, and goes on where the turn stopped.
func TestL2_ParkedApproval(t *testing.T) {
	ctx := t.Context()
	pol, err := policy.New(policy.ModeDefault, policy.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	n := orcatest.NewNode(t, orcatest.WithPolicy(pol, policy.Parking{}))
	n.Script("s", script.Response{ToolCalls: []script.ToolCall{
		{ID: "a", Name: "Bash", Input: json.RawMessage(`{"command":"echo a >> ran"}`)},
		{ID: "b", Name: "Bash", Input: json.RawMessage(`{"command":"echo b >> ran"}`)},
	}}, script.Text("both ran"))
	s := n.Open("s")
	res, err := s.Run(ctx, "run a and b")
	if err != nil || res.StopReason != agent.StopAwaitingApproval || res.Parked == nil || res.Parked.ToolUseID != "a" {
		t.Fatalf("first turn: %+v, %v", res, err)
	}
	if got := n.ReadFileOr("ran", ""); got != "" {
		t.Fatalf("something ran before approval: %q", got)
	}
	parked := s.Parked()
	if parked == nil || parked.Status != store.ParkPending || string(parked.Input) != `{"command":"echo a >> ran"}` {
		t.Fatalf("parked: %+v", parked)
	}
	if _, err := s.Run(ctx, "go on"); !errors.Is(err, session.ErrAwaitingApproval) {
		t.Fatalf("a turn before the decision: %v", err)
	}
	// Approved from elsewhere (another handle, as orca approve does).
	if _, err := n.Router.Decide(ctx, parked.ID, true, "ana", ""); err != nil {
		t.Fatal(err)
	}
	// a runs; b is asked about again, and parks.
	res, err = s.Run(ctx, "go on")
	if err != nil || res.StopReason != agent.StopAwaitingApproval || res.Parked.ToolUseID != "b" || n.ReadFileOr("ran", "") != "a\n" {
		t.Fatalf("after approving a: %+v, %v, ran %q", res, err, n.ReadFileOr("ran", ""))
	}
	if _, err := n.Router.Decide(ctx, s.Parked().ID, false, "ana", "not b"); err != nil {
		t.Fatal(err)
	}
	res, err = s.Run(ctx, "and now?")
	if err != nil || res.Answer != "both ran" || n.ReadFileOr("ran", "") != "a\n" {
		t.Fatalf("after denying b: %+v, %v, ran %q", res, err, n.ReadFileOr("ran", ""))
	}
	// The model saw a's real result and b's denial, both answering its
	// one message.
	last := n.LLM.CallsTo("s")[1].Messages
	results := map[string]string{}
	for _, m := range last {
		for _, b := range m.Content {
			if b.Type == llm.BlockToolResult {
				results[b.ToolUseID] = b.Content
			}
		}
	}
	if results["a"] != "(no output)" || !strings.Contains(results["b"], "The user denied Bash: not b") {
		t.Errorf("results: %q", results)
	}
	if calls, _ := n.Store.ParkedCalls(ctx, store.ParkFilter{SessionID: "s"}); len(calls) != 2 || calls[0].Status != store.ParkStarted || calls[1].Status != store.ParkDenied {
		t.Errorf("parked calls: %+v", calls)
	}
}

// A parked turn retried under its id once its call is decided (what orca
// serve and the Temporal engine do) is the same turn going on: the
// approved call runs, the model answers, and the session counts one turn
// whose prompt is the first attempt's; no input is added.
func TestL2_DecidedTurnGoesOn(t *testing.T) {
	ctx := t.Context()
	pol, err := policy.New(policy.ModeDefault, policy.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	n := orcatest.NewNode(t, orcatest.WithPolicy(pol, policy.Parking{}))
	n.Script("s", script.Call("Bash", map[string]string{"command": "echo a >> ran"}), script.Text("it ran"))
	s := n.Open("s")
	res, err := s.Run(ctx, "run a", session.WithTurnID("t1"))
	if err != nil || res.StopReason != agent.StopAwaitingApproval {
		t.Fatalf("first attempt: %+v, %v", res, err)
	}
	if _, err := n.Router.Decide(ctx, s.Parked().ID, true, "ana", ""); err != nil {
		t.Fatal(err)
	}
	res, err = s.Run(ctx, "run a", session.WithTurnID("t1"), session.Retry())
	if err != nil || res.StopReason != agent.StopAnswered || res.Answer != "it ran" || n.ReadFileOr("ran", "") != "a\n" {
		t.Fatalf("the turn going on: %+v, %v, ran %q", res, err, n.ReadFileOr("ran", ""))
	}
	info, err := n.Store.Session(ctx, "s")
	if err != nil || info.Turns != 1 || info.LastPrompt != "run a" {
		t.Errorf("the session: %+v, %v", info, err)
	}
	if tot, _ := n.Store.Totals(ctx, "s"); tot.Turns != 1 || tot.ToolCalls != 1 {
		t.Errorf("totals: %+v", tot)
	}
	inputs := 0
	for _, r := range records(t, n, "s", false) {
		if r.TurnID != "t1" {
			t.Errorf("a record of turn %q", r.TurnID)
		}
		if r.Message.Role == llm.RoleUser && r.Message.Text() == "run a" {
			inputs++
		}
	}
	if inputs != 1 {
		t.Errorf("the input was recorded %d times", inputs)
	}
}

// A turn that ended, retried under its id (a durable engine's worker died
// after the turn ended and before it reported so), is the same turn: its
// recorded answer is the answer, the model is not asked again, and the
// session still counts one turn.
func TestL2_EndedTurnRetriedCountsOnce(t *testing.T) {
	ctx := t.Context()
	n := orcatest.NewNode(t)
	n.Script("s", script.Text("the answer"))
	s := n.Open("s")
	if res, err := s.Run(ctx, "ask", session.WithTurnID("t1"), session.Retry()); err != nil || res.Answer != "the answer" {
		t.Fatalf("the turn: %+v, %v", res, err)
	}
	res, err := s.Run(ctx, "ask", session.WithTurnID("t1"), session.Retry())
	if err != nil || res.Answer != "the answer" || len(n.LLM.CallsTo("s")) != 1 {
		t.Fatalf("the turn again: %+v, %v, %d model calls", res, err, len(n.LLM.CallsTo("s")))
	}
	info, _ := n.Store.Session(ctx, "s")
	tot, _ := n.Store.Totals(ctx, "s")
	if info.Turns != 1 || tot.Turns != 1 {
		t.Errorf("counted %d turns (totals %d)", info.Turns, tot.Turns)
	}
	// A retry with no input of a turn that has no records cannot start.
	if _, err := s.Run(ctx, "", session.WithTurnID("t2"), session.Retry()); err == nil || !strings.Contains(err.Error(), "turn t2 has no records") {
		t.Errorf("an empty retry of an unknown turn: %v", err)
	}
}

// A turn run step by step (session.Step, what the Temporal engine does:
// one activity a step) makes one effect a step — a model call, a tool
// call, a group of read-only calls at once — and ends as the same turn run
// at once would: the same transcript, each call run once, one turn_started
// and one turn_completed, one turn counted. Between steps the session may
// be closed and opened again (another worker), told that the calls left
// without a result never started.
func TestL2_TurnStepByStep(t *testing.T) {
	ctx := t.Context()
	responses := []script.Response{
		{ToolCalls: []script.ToolCall{
			{ID: "a", Name: "Bash", Input: json.RawMessage(`{"command":"echo a >> ran"}`)},
			{ID: "b", Name: "Bash", Input: json.RawMessage(`{"command":"echo b >> ran"}`)},
		}},
		{ToolCalls: []script.ToolCall{
			{ID: "r1", Name: "Read", Input: json.RawMessage(`{"file_path":"ran"}`)},
			{ID: "r2", Name: "Read", Input: json.RawMessage(`{"file_path":"ran"}`)},
		}},
		script.Text("done"),
	}
	local := orcatest.NewNode(t)
	local.Script("s", responses...)
	want, err := local.Open("s").Run(ctx, "go", session.WithTurnID("t1"))
	if err != nil || want.Answer != "done" {
		t.Fatalf("the turn at once: %+v, %v", want, err)
	}

	n := orcatest.NewNode(t)
	n.Script("s", responses...)
	var events []string
	open := func(notStarted bool) *session.LiveSession {
		ls, err := n.Router.Open(ctx, "s", session.OpenOptions{CallsNotStarted: notStarted, OnEvent: func(e event.Event) {
			if e.Name == event.TurnStarted || e.Name == event.TurnCompleted || e.Name == event.IterationStarted {
				events = append(events, string(e.Name))
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		return ls
	}
	ls := open(false)
	var p agent.Progress
	var stops []string
	var res *agent.Result
	for step := 1; ; step++ {
		if step > 10 {
			t.Fatalf("no end after 10 steps: %v", stops)
		}
		input := "go"
		if step > 1 {
			input = "" // a later step goes on with the turn's own input
		}
		res, err = ls.Run(ctx, input, session.WithTurnID("t1"), session.Retry(), session.Step(p))
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		stops = append(stops, fmt.Sprintf("%s%s%s", res.StopReason, map[bool]string{true: "+pending"}[res.Progress.CallsPending],
			map[bool]string{true: "+reads"}[res.Progress.ReadsNext]))
		if res.StopReason != agent.StopPaused {
			break
		}
		p = res.Progress
		if step%2 == 0 {
			// Another worker takes the next step.
			ls.Close(ctx)
			ls = open(p.CallsPending)
		}
	}
	defer func() { ls.Close(ctx) }()
	// The model's second answer leaves a group of Reads next (ReadsNext:
	// an engine may run it in place); its first, a Bash call.
	if got := strings.Join(stops, " "); got != "paused+pending paused+pending paused paused+pending+reads paused answered" {
		t.Errorf("the steps ended %s", got)
	}
	if res.Answer != "done" || res.Iterations != 3 || res.Progress.Iterations != 3 {
		t.Errorf("the last step: %+v", res)
	}
	if got := n.ReadFileOr("ran", ""); got != "a\nb\n" {
		t.Errorf("the calls ran: %q", got)
	}
	if got := strings.Join(events, " "); got != "turn_started iteration_started iteration_started iteration_started turn_completed" {
		t.Errorf("events %s", got)
	}
	var got, wantMsgs []llm.Message
	for _, r := range records(t, n, "s", false) {
		got = append(got, r.Message)
	}
	for _, r := range records(t, local, "s", false) {
		wantMsgs = append(wantMsgs, r.Message)
	}
	if g, w := fmt.Sprint(got), fmt.Sprint(wantMsgs); g != w {
		t.Errorf("the transcript step by step:\n%s\nat once:\n%s", g, w)
	}
	info, _ := n.Store.Session(ctx, "s")
	tot, _ := n.Store.Totals(ctx, "s")
	if info.Turns != 1 || info.LastPrompt != "go" || tot.Turns != 1 || tot.ToolCalls != 4 {
		t.Errorf("counted: %+v, totals %+v", info, tot)
	}

	// Interrupted between two steps, the turn ends at the next one: the
	// calls that had not started are answered as not run.
	n.Script("s", responses[0])
	ls.Close(ctx)
	ls = open(false)
	res, err = ls.Run(ctx, "again", session.WithTurnID("t2"), session.Retry(), session.Step(agent.Progress{}))
	if err != nil || res.StopReason != agent.StopPaused || !res.Progress.CallsPending {
		t.Fatalf("t2's first step: %+v, %v", res, err)
	}
	res, err = ls.Run(ctx, "", session.WithTurnID("t2"), session.Retry(), session.Step(res.Progress), session.Interrupted())
	if err != nil || res.StopReason != agent.StopInterrupted {
		t.Fatalf("t2 interrupted: %+v, %v", res, err)
	}
	if got := n.ReadFileOr("ran", ""); got != "a\nb\n" {
		t.Errorf("an interrupted turn's calls ran: %q", got)
	}
	answers := map[string]string{}
	for _, r := range records(t, n, "s", false) {
		for _, b := range r.Message.Content {
			if r.TurnID == "t2" && b.Type == llm.BlockToolResult {
				answers[b.ToolUseID] = b.Content
			}
		}
	}
	// t1's calls had these ids already: t2's are a_2 and b_2, as the
	// conversation's calls have ids of their own.
	if len(answers) != 2 || !strings.Contains(answers["a_2"], "interrupted") || !strings.Contains(answers["b_2"], "interrupted") {
		t.Errorf("the unstarted calls were answered %q", answers)
	}
}

// A retried turn (session.Retry: a durable engine's worker died during
// it) goes on from what its earlier attempt recorded: its input is not
// added again, the call that was running is settled as after any crash,
// an answer already recorded is the turn's; a turn with no records yet
// starts as any turn does.
func TestL2_RetryGoesOnWithTheTurn(t *testing.T) {
	ctx := t.Context()
	user := func(turn, text string) store.Record {
		return store.Record{TurnID: turn, Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(text)}}}
	}
	said := func(turn string, b ...llm.Block) store.Record {
		return store.Record{TurnID: turn, Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleAssistant, Content: b}}
	}
	results := func(turn string, b ...llm.Block) store.Record {
		return store.Record{TurnID: turn, Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser, Content: b}}
	}
	for _, tc := range []struct {
		name    string
		records []store.Record
		asked   bool   // the model is asked
		prompt  int    // messages of its prompt
		answer  string // the turn's
	}{
		{"during the model call", []store.Record{user("t1", "step")}, true, 1, "done"},
		{"during a tool call", []store.Record{user("t1", "step"),
			said("t1", llm.ToolUseBlock("b1", "Bash", json.RawMessage(`{"command":"echo once >> ran-b1"}`)),
				llm.ToolUseBlock("b2", "Bash", json.RawMessage(`{"command":"echo twice >> ran-b2"}`))),
			results("t1", llm.ToolResultBlock("b1", "(no output)", false))}, true, 3, "done"},
		{"after the answer", []store.Record{user("t1", "step"), said("t1", llm.TextBlock("recorded answer"))}, false, 0, "recorded answer"},
		{"before the first record", []store.Record{user("t0", "before"), said("t0", llm.TextBlock("earlier"))}, true, 3, "done"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := orcatest.NewNode(t)
			n.Store.Provision(ctx, store.Session{ID: "s", RuntimeID: n.Runtime.ID()})
			if _, err := n.Store.Append(ctx, "s", tc.records...); err != nil {
				t.Fatal(err)
			}
			n.Script("s", script.Text("done"))
			res, err := n.Open("s").Run(ctx, "step", session.WithTurnID("t1"), session.Retry())
			if err != nil || res.StopReason != agent.StopAnswered || res.Answer != tc.answer {
				t.Fatalf("retried turn: %+v, %v", res, err)
			}
			calls := n.LLM.CallsTo("s")
			if !tc.asked {
				if len(calls) != 0 {
					t.Fatalf("the model was asked again: %d calls", len(calls))
				}
				return
			}
			if len(calls) != 1 || len(calls[0].Messages) != tc.prompt {
				t.Fatalf("prompts: %+v", calls)
			}
			inputs := 0
			for _, m := range calls[0].Messages {
				if m.Role == llm.RoleUser && m.Text() == "step" {
					inputs++
				}
			}
			if inputs != 1 {
				t.Errorf("the input is in the prompt %d times: %+v", inputs, calls[0].Messages)
			}
			if tc.prompt == 3 && tc.records[0].TurnID == "t1" {
				b2 := calls[0].Messages[2].Content[1]
				if b2.ToolUseID != "b2" || !strings.Contains(b2.Content, "may or may not have taken effect") || n.ReadFileOr("ran-b2", "") != "" || n.ReadFileOr("ran-b1", "") != "" {
					t.Errorf("the running call: %+v", b2)
				}
				// The call in doubt ran as far as anyone knows: the budget
				// counts it.
				if tot, _ := n.Store.Totals(ctx, "s"); tot.ToolCalls != 1 {
					t.Errorf("tool calls counted: %d, want the one in doubt", tot.ToolCalls)
				}
			}
			recs := records(t, n, "s", false)
			if last := recs[len(recs)-1]; last.TurnID != "t1" || last.Message.Text() != "done" {
				t.Errorf("last record %+v", last)
			}
		})
	}
}

// Read-only calls of one response run at once, so a crash may stop them
// all mid-way: the idempotent ones (Read) run again at the next turn,
// not only the first; a call that changes things after them never
// started.
func TestL2_ResumeAGroupOfReads(t *testing.T) {
	ctx := t.Context()
	n := orcatest.NewNode(t)
	n.WriteFile("a.txt", "alpha\n")
	n.WriteFile("b.txt", "beta\n")
	n.Store.Provision(ctx, store.Session{ID: "s", RuntimeID: n.Runtime.ID()})
	n.Store.Append(ctx, "s",
		store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("read both")}}},
		store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.ToolUseBlock("r1", "Read", json.RawMessage(`{"file_path":"a.txt"}`)),
			llm.ToolUseBlock("r2", "Read", json.RawMessage(`{"file_path":"b.txt"}`)),
			llm.ToolUseBlock("w1", "Bash", json.RawMessage(`{"command":"echo no >> ran-w1"}`)),
		}}})
	n.Script("s", script.Text("read"))
	if _, err := n.Open("s").Run(ctx, "go on"); err != nil {
		t.Fatal(err)
	}
	results := map[string]llm.Block{}
	for _, b := range n.LLM.CallsTo("s")[0].Messages[2].Content {
		results[b.ToolUseID] = b
	}
	if !strings.Contains(results["r1"].Content, "alpha") || !strings.Contains(results["r2"].Content, "beta") {
		t.Errorf("the reads did not run again: %+v", results)
	}
	if !strings.Contains(results["w1"].Content, "stopped before this call started") || n.ReadFileOr("ran-w1", "") != "" {
		t.Errorf("the call after them: %+v", results["w1"])
	}
}
