package session

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tool"
)

// ErrAwaitingApproval is Run's error for a session whose last turn parked
// a call that no one has decided on yet.
var ErrAwaitingApproval = errors.New("session: a parked call waits for a decision")

// settle decides what becomes of the tool calls of the transcript's last
// assistant message that have no result (see unanswered): it records the
// results of those that will not run, and keeps those that will for the
// next turn (resume, approved). A call parked and still undecided leaves
// them as they are (parked is set). results answer calls left for the
// caller (agent.StopClientTools); nil (a session being opened) leaves
// those for the turn that answers them.
func (s *LiveSession) settle(ctx context.Context, results map[string]llm.Block) error {
	// The fields are read and set under mu (Parked and Transcript read
	// them from other goroutines); the store is asked outside it.
	s.mu.Lock()
	notStarted, msgs, lastTurn := s.notStarted, s.transcript, s.lastTurn
	s.resume, s.approved, s.parked, s.traceParent, s.notStarted = nil, nil, nil, "", false
	s.mu.Unlock()
	if !endsUnanswered(msgs) {
		return nil
	}
	if notStarted {
		resume := unansweredUses(msgs)
		s.mu.Lock()
		s.resume = resume
		s.mu.Unlock()
		return nil
	}
	parked, err := s.r.store.ParkedCalls(ctx, store.ParkFilter{SessionID: s.id})
	if err != nil {
		return fmt.Errorf("session %s: parked calls: %w", s.id, err)
	}
	byUse := map[string]store.ParkedCall{}
	for _, p := range parked {
		byUse[p.ToolUseID] = p
	}
	fix, resume, approved, waiting, left := s.unanswered(msgs, byUse, results)
	if left {
		return nil
	}
	if waiting != nil {
		s.mu.Lock()
		s.parked = waiting
		s.mu.Unlock()
		return nil
	}
	var traceParent string
	var runs map[string]bool
	for _, p := range approved {
		if p.TraceParent != "" {
			traceParent = p.TraceParent
		}
		// Started before it runs: a crash while it runs leaves it in
		// doubt, never run twice.
		if _, err := s.r.store.SetParkStatus(ctx, p.ID, store.ParkStarted, "", ""); err != nil {
			return fmt.Errorf("session %s: parked call %s: %w", s.id, p.ID, err)
		}
		if runs == nil {
			runs = map[string]bool{}
		}
		runs[p.ToolUseID] = true
	}
	if len(fix) > 0 {
		// They answer the calls of the last turn: they are that turn's. A
		// call in doubt ran, as far as anyone knows: the session's budget
		// counts it (its result, which would have, never came).
		var ran store.Totals
		for _, b := range fix {
			if b.Content == inDoubt {
				ran.ToolCalls++
			}
		}
		recs, err := s.appendStep(ctx, store.Step{Owner: s.owner, Totals: ran,
			Records: []store.Record{{TurnID: lastTurn, Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser, Content: fix}}}})
		if err != nil {
			return fmt.Errorf("session %s: complete unanswered tool calls: %w", s.id, err)
		}
		msgs = slices.Clone(msgs)
		if last := len(msgs) - 1; resultsOnly(msgs[last]) {
			joined := msgs[last]
			joined.Content = append(append([]llm.Block(nil), joined.Content...), fix...)
			msgs[last] = joined
		} else {
			msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: fix})
		}
		s.mu.Lock()
		s.lastSeq, s.transcript = recs[len(recs)-1].Seq, msgs
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.resume, s.approved, s.traceParent = resume, runs, traceParent
	s.mu.Unlock()
	return nil
}

// endsUnanswered reports whether the last assistant message of msgs has
// tool calls without a result.
func endsUnanswered(msgs []llm.Message) bool {
	at := len(msgs) - 1
	if at >= 0 && resultsOnly(msgs[at]) {
		at--
	}
	if at < 0 || msgs[at].Role != llm.RoleAssistant {
		return false
	}
	answered := 0
	if at < len(msgs)-1 {
		answered = len(msgs[at+1].Content)
	}
	return len(msgs[at].ToolUses()) > answered
}

// inputOf is the input of a turn whose first record is m: its first text
// block, the prompt as the turn took it (the blocks after it are what
// hooks added).
func inputOf(m llm.Message) string {
	if len(m.Content) == 0 || m.Content[0].Type != llm.BlockText {
		return ""
	}
	return m.Content[0].Text
}

// unansweredUses returns the tool calls of the last assistant message of
// msgs that have no result, in order.
func unansweredUses(msgs []llm.Message) []llm.Block {
	at := len(msgs) - 1
	answered := map[string]bool{}
	if at >= 0 && resultsOnly(msgs[at]) {
		for _, b := range msgs[at].Content {
			answered[b.ToolUseID] = true
		}
		at--
	}
	if at < 0 || msgs[at].Role != llm.RoleAssistant {
		return nil
	}
	var uses []llm.Block
	for _, u := range msgs[at].ToolUses() {
		if !answered[u.ID] {
			uses = append(uses, u)
		}
	}
	return uses
}

// resultsOnly reports whether m is a user message of tool results only.
func resultsOnly(m llm.Message) bool {
	if m.Role != llm.RoleUser || len(m.Content) == 0 {
		return false
	}
	for _, b := range m.Content {
		if b.Type != llm.BlockToolResult {
			return false
		}
	}
	return true
}

// unanswered looks at the tool calls of the transcript's last assistant
// message that have no result. Results are recorded in the calls' order,
// each once it and those before it ended, so the first without a result
// is where the turn stopped:
//
//   - parked (the approver left it for a person): undecided, everything
//     waits (waiting); approved, it runs at the next turn with the calls
//     after it (resume, approved); denied, it is answered so and the calls
//     after it run;
//   - otherwise the process died while it ran: it may or may not have
//     taken effect — it runs again at the next turn only if its tool is
//     idempotent. The calls after it never started, unless they are
//     read-only calls that ran at once with it: those of an idempotent
//     tool run at the next turn; any other read-only one may have run
//     (its result, like the first's, is in doubt); the rest are answered
//     that they did not run.
//
// A call of a tool the runtime does not have was left for the caller
// (agent.StopClientTools): results answers it, or it is answered that no
// result came; the calls after it go on. With results nil, such a first
// call leaves everything as it is (left).
//
// fix answers the calls that will not run.
func (s *LiveSession) unanswered(msgs []llm.Message, parked map[string]store.ParkedCall, results map[string]llm.Block) (fix, resume []llm.Block, approved []store.ParkedCall, waiting *store.ParkedCall, left bool) {
	first, goOn := true, false
	for _, u := range unansweredUses(msgs) {
		p, isParked := parked[u.ID]
		r, answered := results[u.ID]
		_, known := s.r.rt.Tools().Lookup(u.Name)
		switch {
		case answered:
			r.ToolUseID = u.ID
			fix, goOn = append(fix, r), true
		case first && !known && !isParked && results == nil:
			return nil, nil, nil, nil, true
		case !known && !isParked && (first || goOn):
			fix, goOn = append(fix, llm.ToolResultBlock(u.ID, fmt.Sprintf("No result came for this call: %s is not a tool of this agent, and the client that runs it gave none.", u.Name), true)), true
		case !first && goOn:
			resume = append(resume, u) // after a decided parked call: the turn goes on
		case !first && s.traits(u.Name).Idempotent:
			resume = append(resume, u)
		case !first && s.traits(u.Name).ReadOnly:
			fix = append(fix, llm.ToolResultBlock(u.ID, inDoubt, true))
		case !first:
			fix = append(fix, llm.ToolResultBlock(u.ID, "Not run: the session stopped before this call started.", true))
		case isParked && p.Status == store.ParkPending:
			return nil, nil, nil, &p, false
		case isParked && p.Status == store.ParkApproved:
			resume, approved, goOn = append(resume, u), append(approved, p), true
		case isParked && p.Status == store.ParkDenied:
			why := fmt.Sprintf("The user denied %s.", u.Name)
			if p.Note != "" {
				why = fmt.Sprintf("The user denied %s: %s", u.Name, p.Note)
			}
			fix, goOn = append(fix, llm.ToolResultBlock(u.ID, why+" Do not retry it; ask the user what to do instead.", true)), true
		case s.traits(u.Name).Idempotent:
			resume = append(resume, u)
		default:
			fix = append(fix, llm.ToolResultBlock(u.ID, inDoubt, true))
		}
		first = false
	}
	return fix, resume, approved, nil, false
}

// inDoubt answers a call that was running when the session stopped.
const inDoubt = "No result was recorded for this call: the session stopped while it ran. It may or may not have taken effect; check before running it again."

// traits are the traits the runtime's tool name declares (none for a
// tool it no longer has): Idempotent, running a call again does no harm;
// ReadOnly, its calls may have run at once with others.
func (s *LiveSession) traits(name string) tool.Traits {
	t, ok := s.r.rt.Tools().Lookup(name)
	if !ok {
		return tool.Traits{}
	}
	return tool.TraitsOf(t)
}
