package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/sandbox"
	"github.com/orca-agent/orca/store"
)

// CurrentTurn returns the id of the running turn, or "".
func (s *LiveSession) CurrentTurn() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return ""
	}
	return s.turnID
}

// Interrupt interrupts turn turnID if it is the running turn: it ends as
// interrupted at its next safe point, its running tool cancelled. An
// interrupt for a finished or unknown turn changes nothing and returns
// false.
func (s *LiveSession) Interrupt(turnID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running || turnID == "" || s.turnID != turnID {
		return false
	}
	s.cancel(agent.ErrInterrupted)
	return true
}

// RunOption changes how Run runs its turns.
type RunOption func(*runConfig)

type runConfig struct {
	media       []*llm.Media
	output      *agent.Output
	turnID      string
	retry       bool
	step        *agent.Progress
	interrupted bool
	clientTools []agent.ClientTool
	results     []llm.Block
}

// WithTurnID names the first turn Run runs (the id is made up
// otherwise), so that a caller can tell it before the turn starts (orca
// serve answers a message with it). It must be unique in the store.
func WithTurnID(id string) RunOption {
	return func(c *runConfig) { c.turnID = id }
}

// Retry makes the turn WithTurnID names a retry of that turn: an earlier
// attempt of it may have begun (its process died, a call it parked was
// decided since). If the transcript's last records are that turn's, the
// turn goes on from them (agent.Request.Continue: its input is not added
// again, the calls the attempt left unanswered are settled as after any
// crash); otherwise it starts as any turn does. A durable engine's worker
// runs each attempt of a turn so.
func Retry() RunOption {
	return func(c *runConfig) { c.retry = true }
}

// Step makes Run run one step of the turn WithTurnID names
// (agent.Request.Step): its next model call, or its next tool call (or
// group of read-only calls at once), with the hooks, policy and middleware
// around it. A step that leaves the turn unfinished ends as
// agent.StopPaused, with the Progress to give the next step; the next one
// is a Retry of the turn with that Progress. p is the zero Progress for
// the first step. A durable engine runs a turn so, one activity a step.
func Step(p agent.Progress) RunOption {
	return func(c *runConfig) { c.step = &p }
}

// Interrupted makes the turn start interrupted: a turn run step by step
// that was interrupted between two steps ends so, its calls that had not
// started answered as not run.
func Interrupted() RunOption {
	return func(c *runConfig) { c.interrupted = true }
}

// WithOutput asks the turns for their answer as a JSON value of o's schema
// (agent.Request.Output; Result.Decode decodes it).
func WithOutput(o *agent.Output) RunOption {
	return func(c *runConfig) { c.output = o }
}

// WithClientTools offers the model tools the caller runs, for the first
// turn Run runs (agent.Request.ClientTools): a call of one ends the turn
// as agent.StopClientTools, its calls in Result.ClientCalls.
func WithClientTools(tools ...agent.ClientTool) RunOption {
	return func(c *runConfig) { c.clientTools = append(c.clientTools, tools...) }
}

// WithResults answers the calls the session's last turn left for its
// caller (ClientCalls) with these tool results (llm.ToolResultBlock, by
// the calls' ids), before the turn runs: with Retry and that turn's id
// (WithTurnID), the turn goes on from them. A call left without a result
// is answered that none came; a result for no such call is an error.
func WithResults(results ...llm.Block) RunOption {
	return func(c *runConfig) { c.results = append(c.results, results...) }
}

// WithMedia shows the model images and documents with the input (a file
// attached: orca run --attach; media.Prepare makes them). They cannot
// join a running turn's queue: Run refuses them then.
func WithMedia(m ...*llm.Media) RunOption {
	return func(c *runConfig) { c.media = append(c.media, m...) }
}

// Run runs one turn with input and waits for it. Input "/compact [instructions]"
// compacts the conversation instead (StopCompacted). If a turn is already
// running, input is queued into it and Run returns ErrQueued at once.
// Messages still queued when a turn ends start the next turn before Run
// returns (its result is the last turn's).
func (s *LiveSession) Run(ctx context.Context, input string, opts ...RunOption) (*agent.Result, error) {
	var rc runConfig
	for _, o := range opts {
		o(&rc)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if s.lost.Load() {
		s.mu.Unlock()
		return nil, ErrLeaseLost
	}
	if s.running {
		s.mu.Unlock()
		if len(rc.media) > 0 {
			return nil, fmt.Errorf("session %s: a turn is running, and attachments cannot join its queue: send them when it ends", s.id)
		}
		if q := s.r.rt.Queues(); q != nil {
			q.Enqueue(s.id, input)
			return nil, ErrQueued
		}
		return nil, errors.New("session: a turn is running and the runtime has no message queue")
	}
	s.running = true
	s.mu.Unlock()
	s.turnMu.Lock()
	defer func() {
		s.mu.Lock()
		s.running, s.turnID, s.cancel = false, "", nil
		s.mu.Unlock()
		s.turnMu.Unlock()
	}()

	if rest, ok := strings.CutPrefix(strings.TrimSpace(input), "/compact"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\n') {
		return s.compact(ctx, strings.TrimSpace(rest))
	}
	for {
		res, err := s.turn(ctx, input, rc)
		rc.turnID, rc.retry, rc.step, rc.interrupted, rc.media = "", false, nil, false, nil // the queued messages' turns get their own
		rc.clientTools, rc.results = nil, nil
		if err != nil || res.StopReason != agent.StopAnswered {
			return res, err
		}
		q := s.r.rt.Queues()
		if q == nil {
			return res, nil
		}
		queued := q.Drain(s.id)
		if len(queued) == 0 {
			return res, nil
		}
		input = strings.Join(queued, "\n\n")
	}
}

// turn runs one turn: state from the store in, records and totals out.
func (s *LiveSession) turn(ctx context.Context, input string, rc runConfig) (*agent.Result, error) {
	// A parked call may have been decided since (orca approve, another
	// process): settle again.
	s.mu.Lock()
	unsettled := s.parked != nil || endsUnanswered(s.transcript) && s.resume == nil
	var waiting map[string]bool
	if len(rc.results) > 0 {
		waiting = map[string]bool{}
		for _, u := range unansweredUses(s.transcript) {
			waiting[u.ID] = true
		}
	}
	s.mu.Unlock()
	results := map[string]llm.Block{}
	for _, r := range rc.results {
		if r.Type != llm.BlockToolResult || !waiting[r.ToolUseID] {
			return nil, fmt.Errorf("session %s: a result for call %q: no call of the last turn waits for one", s.id, r.ToolUseID)
		}
		results[r.ToolUseID] = r
	}
	if unsettled {
		if err := s.settle(ctx, results); err != nil {
			return nil, err
		}
	}
	if p := s.Parked(); p != nil {
		return nil, fmt.Errorf("session %s: %w: %s of %s (%s); approve or deny it first", s.id, ErrAwaitingApproval, p.ID, p.ToolName, p.Reason)
	}
	totals, err := s.spentBefore(ctx)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", s.id, err)
	}
	limits, err := s.Budget(ctx)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", s.id, err)
	}
	// The session's commands know it, as Claude Code's do.
	turnCtx, cancel := context.WithCancelCause(sandbox.WithEnv(ctx, append(slices.Clone(s.env), "CLAUDE_CODE_SESSION_ID="+s.id)))
	defer cancel(nil)
	if rc.interrupted {
		cancel(agent.ErrInterrupted)
	}
	turnID := cmp.Or(rc.turnID, "turn_"+randomID())

	s.mu.Lock()
	again := rc.retry && rc.turnID != "" && s.lastTurn == rc.turnID
	switch {
	case again && input == "":
		input = s.lastInput // a later step need not carry the input again
	case input == "" && rc.retry:
		s.mu.Unlock()
		return nil, fmt.Errorf("session %s: turn %s has no records to go on from, and no input to start with", s.id, rc.turnID)
	}
	s.turnID, s.cancel = turnID, cancel
	history := s.transcript
	resume, approved, traceParent := s.resume, s.approved, s.traceParent
	s.resume, s.approved, s.traceParent = nil, nil, ""
	pending := s.pendingContext
	s.pendingContext = nil
	promptTokens := s.promptTokens
	model := s.model
	s.mu.Unlock()

	var recordErr, endErr error
	var recorded store.Totals // what the turn's records have added to the totals
	var recs []store.Record   // the records of a write (see Record), reused
	var held []store.Record   // the turn's last records, written with its end
	// kept notes what the session knows of the records it wrote.
	kept := func(first llm.Message, stored []store.Record) {
		s.mu.Lock()
		if s.lastTurn != turnID {
			s.lastInput = inputOf(first)
		}
		s.lastSeq, s.lastTurn = stored[len(stored)-1].Seq, turnID
		s.mu.Unlock()
	}
	// What the session keeps of the turn is written before the turn says
	// it ended (turn_completed): the turn calls end (Request.OnEnd) — or,
	// for a turn an interceptor answered without running it, Run's caller
	// does.
	ended := false
	end := func(res *agent.Result) {
		ended = true
		// Spent, not the turn's own ToolCalls: its foreground forks'
		// calls are the session's too. What the records added already
		// is not added again.
		// The turn is counted by its end (FinishTurn's work), once
		// whatever its attempts, written with its last totals and its
		// last records (its answer: Recorded.Ending): one synced write,
		// not three one after the other.
		final := spentTotals(res.Usage, res.Spent)
		paused := res.StopReason == agent.StopPaused
		step := store.Step{Owner: s.owner, Records: held, Totals: final.Sub(recorded)}
		if !paused {
			step.Finish = &store.TurnEnd{TurnID: turnID, Prompt: input}
		}
		stored, terr := s.appendStep(ctx, step)
		switch {
		case terr == nil:
			if len(held) > 0 {
				kept(held[0].Message, stored)
			}
		case recordErr == nil:
			what := "finish turn"
			if paused {
				what = "totals"
			}
			endErr = fmt.Errorf("session %s: %s: %w", s.id, what, terr)
			return
		case !paused:
			// A record failed already (its error is the turn's): the
			// turn still ends, as far as the store lets it.
			s.r.store.FinishTurn(ctx, s.id, turnID, input)
		}
		if paused {
			// The turn goes on at its next step.
			s.mu.Lock()
			s.notStarted = res.Progress.CallsPending
			s.mu.Unlock()
			return
		}
		if p := res.Parked; p != nil && res.StopReason == agent.StopAwaitingApproval {
			pc := store.ParkedCall{ID: "park_" + randomID(), SessionID: s.id, RuntimeID: s.r.rt.ID(), TurnID: turnID,
				ToolUseID: p.ToolUseID, ToolName: p.ToolName, Input: p.Input, Reason: p.Reason, Rules: p.Rules, Status: store.ParkPending,
				TraceParent: p.TraceParent}
			if perr := s.r.store.Park(ctx, pc); perr != nil {
				endErr = fmt.Errorf("session %s: parking %s: %w", s.id, p.ToolName, perr)
			}
			s.mu.Lock()
			s.parked = &pc
			s.mu.Unlock()
		}
	}
	res, err := s.r.exec.Execute(turnCtx, s.r.rt, agent.Request{
		SessionID:   s.id,
		TurnID:      turnID,
		Input:       input,
		Media:       rc.media,
		Continue:    again,
		Context:     pending,
		History:     history,
		Resume:      resume,
		Approved:    approved,
		ClientTools: rc.clientTools,
		OnEvent:     s.feedFunc(),
		// A background fork outlives the turn: its events reach the
		// session's feed while the session is open.
		OnBackgroundEvent: s.feedFunc(),
		Budget:            &limits,
		Output:            rc.output,
		Step:              rc.step,
		Model:             model,
		TraceParent:       traceParent,
		Spent:             budget.Spent{Tokens: totals.Usage.Total(), CostUSD: totals.CostUSD, ToolCalls: totals.ToolCalls, WallTime: totals.WallTime},
		PromptTokens:      promptTokens,
		// The messages go with what the turn has spent up to them, in
		// one write: a crash loses neither. Those the turn ends with
		// wait for its end (OnEnd, next), and go in its write.
		Record: func(rs []agent.Recorded) error {
			if rs[0].Ending {
				for _, r := range rs {
					held = append(held, store.Record{TurnID: turnID, Kind: store.KindMessage, Message: r.Message, Model: r.Model})
				}
				return nil
			}
			now := spentTotals(rs[len(rs)-1].Usage, rs[len(rs)-1].Spent)
			// In a slice reused from write to write (the store keeps
			// copies; Record is called one call at a time).
			for _, r := range rs {
				recs = append(recs, store.Record{TurnID: turnID, Kind: store.KindMessage, Message: r.Message, Model: r.Model})
			}
			stored, err := s.appendStep(ctx, store.Step{Owner: s.owner, Records: recs, Totals: now.Sub(recorded)})
			clear(recs)
			recs = recs[:0]
			if err != nil {
				recordErr = err
				return err
			}
			recorded = now
			kept(rs[0].Message, stored)
			return nil
		},
		OnCompact: func(h []llm.Message) error { return s.replace(ctx, turnID, h) },
		// What the session keeps of the turn is written before the turn
		// says it ended (turn_completed).
		OnEnd: end,
		// Background forks finish after the turn: their spending is added
		// to the session's totals when they do.
		Account: func(sp budget.Spent, u llm.Usage) {
			if err := s.addSpending(context.WithoutCancel(ctx), store.Totals{Usage: u, CostUSD: sp.CostUSD, ToolCalls: sp.ToolCalls}); err != nil {
				s.r.rt.Logger().Warn("could not add a background task's spending to the session's totals", "session", s.id, "err", err)
			}
		},
	})
	if res == nil {
		return nil, err
	}
	if !ended {
		end(res)
	}
	if endErr != nil && err == nil {
		err = endErr
	}
	s.mu.Lock()
	if res.Transcript != nil {
		s.transcript = res.Transcript
		s.promptTokens = res.PromptTokens
	}
	s.mu.Unlock()
	return res, err
}

// replace records a compacted conversation: every earlier record is marked
// compacted (kept, not lost) and the new conversation appended.
func (s *LiveSession) replace(ctx context.Context, turnID string, h []llm.Message) error {
	s.mu.Lock()
	through := s.lastSeq
	s.mu.Unlock()
	recs := make([]store.Record, len(h))
	for i, m := range h {
		recs[i] = store.Record{TurnID: turnID, Kind: store.KindMessage, Message: m}
	}
	if len(recs) > 0 {
		recs[0].Kind = store.KindSummary
	}
	stored, err := s.appendStep(ctx, store.Step{Owner: s.owner, Records: recs})
	if err != nil {
		return err
	}
	if err := s.r.store.MarkCompacted(ctx, s.id, through); err != nil {
		return err
	}
	s.mu.Lock()
	s.lastSeq, s.lastTurn = stored[len(stored)-1].Seq, turnID
	s.transcript = h
	s.promptTokens = 0
	s.mu.Unlock()
	return nil
}

// compact runs a manual compaction, as an execution of the session's
// executor: its interceptors see it like a turn.
func (s *LiveSession) compact(ctx context.Context, instructions string) (*agent.Result, error) {
	res, err := s.r.exec.Execute(ctx, s.r.rt, agent.Request{SessionID: s.id, Compact: true, Input: instructions, History: s.Transcript(), OnEvent: s.feedFunc(), OnBackgroundEvent: s.feedFunc()})
	if res == nil || res.StopReason != agent.StopCompacted {
		return res, err // failed, or an interceptor blocked it
	}
	if _, err := s.appendStep(ctx, store.Step{Owner: s.owner, Totals: store.Totals{Usage: res.Usage, CostUSD: res.Spent.CostUSD}}); err != nil {
		return res, err
	}
	if res.Compacted {
		if err := s.replace(ctx, "", res.Transcript); err != nil {
			return res, fmt.Errorf("session %s: record compaction: %w", s.id, err)
		}
	}
	return res, err
}
