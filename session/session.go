// Package session runs conversations: a LiveSession is one conversation on
// a runtime, whose turns run one at a time and whose state — transcript,
// totals, budget override, approvals — lives in a store.Store, the one
// witness of session state. A Router opens sessions (provisioning them
// before their first write) and resumes them by id, in this process or the
// next.
package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/subagent"
)

// ErrQueued is returned by Run when a turn was already running: the input
// was queued into it instead (it enters that turn at its next iteration
// boundary, or starts the next turn).
var ErrQueued = errors.New("session: a turn is running; the input was queued into it")

// ErrClosed is returned by a closed session.
var ErrClosed = errors.New("session: closed")

// ErrLeaseLost ends a running turn, and fails every later write, of a
// session whose writer lease another writer took over (this process was
// stopped longer than the lease lasts).
var ErrLeaseLost = errors.New("session: another writer took the session over")

// BusyError is Open's error for a session another writer holds. It wraps
// the store's *store.LeaseError (and so store.ErrLeased).
type BusyError struct {
	SessionID string
	// Holder names the writer that holds it (its process and host).
	Holder string
	// Until is when its lease ends unless it renews it (it does, every
	// few seconds, while it runs).
	Until time.Time
	err   error
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("session %s is open in another writer, %s: wait until it is closed (a writer that died lets go by %s at the latest), or open another session",
		e.SessionID, e.Holder, e.Until.Local().Format("15:04:05"))
}

func (e *BusyError) Unwrap() error { return e.err }

// Router opens the sessions of one runtime over one store.
type Router struct {
	rt    *agent.Runtime
	exec  agent.Runner
	store store.Store
}

// NewRouter returns a router for rt's sessions in st; exec runs their turns
// (agent.NewExecutor() if nil).
func NewRouter(rt *agent.Runtime, st store.Store, exec agent.Runner) *Router {
	if exec == nil {
		exec = agent.NewExecutor()
	}
	return &Router{rt: rt, exec: exec, store: st}
}

// OpenOptions configure Open.
type OpenOptions struct {
	// OnEvent is the session's event feed: it receives every event of the
	// session, one call at a time, in the order they happen —
	// session_started; each turn's and manual compaction's events, their
	// subagent forks' among them (a foreground fork's within its turn, a
	// background fork's as they come, also between turns); session_ended
	// last. Nothing is delivered after Close returns. It must not call
	// the session back.
	OnEvent func(event.Event)
	// Wait is how long Open waits for a session that another writer holds
	// (another process, or another LiveSession of this one) to be
	// released; zero refuses at once.
	Wait time.Duration
	// CallsNotStarted says that the tool calls the transcript's last
	// response left without a result never started: the step of a turn run
	// step by step (Step) that recorded the response ended before them
	// (agent.Progress.CallsPending), and nothing ran since. They run at the
	// next turn, instead of being answered as a crash's calls are.
	CallsNotStarted bool
	// Cleared says a new session starts because the user cleared the
	// conversation (orca chat's /clear, as Claude Code's): SESSION_START's
	// source, and session_started's, is "clear" rather than "new".
	Cleared bool
}

// Open opens session id: it provisions the session if it is new (its
// source "new") or loads its transcript if it exists ("resumed"), then
// fires SESSION_START. A transcript that ends with tool calls whose results
// were never recorded (the process died while they ran) is completed with
// results saying so: a resumed session never runs a tool call again.
//
// A session has one writer at a time, across processes: the LiveSession
// holds the store's lease of the session until it is closed. Opening a
// session another writer holds — another process, or another LiveSession
// of this one — waits up to opts.Wait, then fails with an error that wraps
// store.ErrLeased and names the holder.
func (r *Router) Open(ctx context.Context, id string, opts OpenOptions) (*LiveSession, error) {
	if id == "" {
		return nil, errors.New("session: no session id")
	}
	source := "resumed"
	if _, err := r.store.Session(ctx, id); errors.Is(err, store.ErrNotFound) {
		source = "new"
		if opts.Cleared {
			source = "clear"
		}
	} else if err != nil {
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	info, err := r.store.Provision(ctx, store.Session{ID: id, RuntimeID: r.rt.ID(), Workspace: r.rt.FS().Root(), Agent: r.rt.Definition().Name})
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	s := &LiveSession{r: r, id: id, info: info, onEvent: opts.OnEvent, owner: leaseOwner(), notStarted: opts.CallsNotStarted}
	if err := s.lease(ctx, opts.Wait); err != nil {
		return nil, err
	}
	s.feedOpen.Store(opts.OnEvent != nil)
	if err := s.load(ctx); err != nil {
		s.release()
		return nil, err
	}
	if hooks := r.rt.Hooks(); hooks.Has(hook.SessionStart) {
		p := &hook.SessionStartPayload{Common: s.common(), Source: source}
		// Hooks may leave variables for the session's commands in a file
		// of their own (CLAUDE_ENV_FILE), read once they all ran.
		if f, err := os.CreateTemp("", "orca-session-env-*"); err == nil {
			p.EnvFile = f.Name()
			f.Close()
		}
		out := hooks.Run(ctx, p)
		s.reportHookFailures(out)
		s.pendingContext = out.Context
		if p.EnvFile != "" {
			s.env = readEnvFile(p.EnvFile)
			os.Remove(p.EnvFile)
		}
	}
	s.source = source
	s.publish(event.SessionStarted, &event.SessionData{Source: source})
	return s, nil
}

// ErrExists is Fork's error when the new session's id is taken.
var ErrExists = errors.New("session: a session by that id exists already")

// Fork starts session newID from the conversation of session from, as the
// model sees it now (a compacted one from its summary on), and opens it:
// from is left as it was, and the two go their own ways. The new
// session's totals and budget start fresh. from may be open elsewhere
// (its records are read in one go); newID must be new (ErrExists).
func (r *Router) Fork(ctx context.Context, from, newID string, opts OpenOptions) (*LiveSession, error) {
	if newID == "" {
		newID = NewID()
	}
	src, err := r.store.Session(ctx, from)
	if err != nil {
		return nil, fmt.Errorf("fork session %s: %w", from, err)
	}
	if src.RuntimeID != r.rt.ID() {
		return nil, fmt.Errorf("fork session %s: %w (%q, not %q)", from, store.ErrWrongRuntime, src.RuntimeID, r.rt.ID())
	}
	if _, err := r.store.Session(ctx, newID); err == nil {
		return nil, fmt.Errorf("fork session %s into %s: %w", from, newID, ErrExists)
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("fork session %s: %w", from, err)
	}
	recs, err := r.store.Records(ctx, from, store.RecordFilter{})
	if err != nil {
		return nil, fmt.Errorf("fork session %s: %w", from, err)
	}
	if _, err := r.store.Provision(ctx, store.Session{ID: newID, RuntimeID: r.rt.ID(), Workspace: r.rt.FS().Root(), Agent: r.rt.Definition().Name}); err != nil {
		return nil, fmt.Errorf("fork session %s into %s: %w", from, newID, err)
	}
	copies := make([]store.Record, len(recs))
	for i, rec := range recs {
		copies[i] = store.Record{TurnID: rec.TurnID, Time: rec.Time, Kind: rec.Kind, Message: rec.Message}
	}
	if len(copies) > 0 {
		if _, err := r.store.Append(ctx, newID, copies...); err != nil {
			return nil, fmt.Errorf("fork session %s into %s: %w", from, newID, err)
		}
	}
	return r.Open(ctx, newID, opts)
}

// LiveSession is one open conversation. Its methods are safe for
// concurrent use; turns run one at a time. Close it before its runtime.
type LiveSession struct {
	r       *Router
	id      string
	info    store.Session
	source  string
	onEvent func(event.Event)
	// feedMu serialises the feed (turns and background forks deliver from
	// their own goroutines); feedOpen is false once Close has delivered
	// session_ended.
	feedMu   sync.Mutex
	feedOpen atomic.Bool

	mu         sync.Mutex // guards the fields below
	transcript []llm.Message
	resume     []llm.Block // calls the next turn runs first (see unanswered)
	approved   map[string]bool
	parked     *store.ParkedCall // a parked call no one decided yet
	lastSeq    int64
	// lastTurn is the turn of the transcript's last record; lastInput is
	// that turn's input (see inputOf).
	lastTurn, lastInput string
	promptTokens        int64
	// model is the model of the next turns (SetModel), "" for the definition's.
	model string
	// traceParent is the parked turn's, for the turn that resumes its
	// approved call (settle).
	traceParent string
	// notStarted: the calls the last response left without a result have
	// not started (a step paused before them); settle runs them.
	notStarted bool
	// totals are the session's totals as the session's last write left
	// them (see knownTotals).
	totals knownTotals

	pendingContext []string
	// env are the variables SESSION_START hooks left for the session's
	// commands (CLAUDE_ENV_FILE).
	env     []string
	running bool
	turnID  string
	cancel  context.CancelCauseFunc
	closed  bool

	turnMu sync.Mutex // held while a turn (or a compaction) runs
	// budgetMu serialises ChangeBudget's read and write of the override.
	budgetMu sync.Mutex
	// calls are the tool calls running outside a turn (CallTool), which
	// End waits for too.
	calls sync.WaitGroup

	// owner names this writer in the store's lease; renewing ends when
	// stopRenew is closed; lost is set when another writer took over.
	owner     string
	stopRenew chan struct{}
	renewDone chan struct{}
	lost      atomic.Bool
}

// ID returns the session id.
func (s *LiveSession) ID() string { return s.id }

// Closed reports whether Close (or End) was called.
func (s *LiveSession) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Runtime returns the runtime the session runs on.
func (s *LiveSession) Runtime() *agent.Runtime { return s.r.rt }

// Source says how the session was opened: "new", "resumed", or "clear"
// (new, replacing one the user cleared: OpenOptions.Cleared).
func (s *LiveSession) Source() string { return s.source }

func (s *LiveSession) common() hook.Common {
	return hook.Common{Scope: s.scope(), Cwd: s.r.rt.FS().Root()}
}

// scope is the identity of what the session does outside a turn.
func (s *LiveSession) scope() scope.Scope {
	return scope.Scope{RuntimeID: s.r.rt.ID(), SessionID: s.id}
}

func (s *LiveSession) reportHookFailures(out hook.Outcome) {
	for _, f := range out.Failures {
		s.publish(event.HookFailed, &event.HookFailedData{Hook: string(f.Hook), Handler: f.Handler, Error: f.Err.Error(), Violation: f.Violation, FailClosed: f.FailClosed})
		agent.LogViolation(s.r.rt.Logger(), f)
	}
	for _, m := range out.Messages {
		s.publish(event.HookMessage, &event.HookMessageData{Hook: string(out.Payload.Hook()), Handler: m.Handler, Message: m.Text})
	}
}

// publish emits an event of the session itself (outside any turn) to the
// runtime's bus and the feed.
func (s *LiveSession) publish(name event.Name, data any) {
	e := event.Event{Name: name, Time: time.Now(), Scope: s.scope(), Data: data}
	if bus := s.r.rt.Bus(); bus.Watched() {
		bus.Publish(e)
	}
	s.feed(e)
}

// feed hands e to the session's feed, one event at a time.
func (s *LiveSession) feed(e event.Event) {
	if !s.feedOpen.Load() {
		return
	}
	s.feedMu.Lock()
	defer s.feedMu.Unlock()
	if s.feedOpen.Load() {
		s.onEvent(e)
	}
}

// feedFunc is the OnEvent of the session's executions: nil without a feed.
func (s *LiveSession) feedFunc() func(event.Event) {
	if s.onEvent == nil {
		return nil
	}
	return s.feed
}

// load reads the transcript from the store and completes the tool calls
// a crash left unanswered (see unanswered).
func (s *LiveSession) load(ctx context.Context) error {
	recs, err := s.r.store.Records(ctx, s.id, store.RecordFilter{})
	if err != nil {
		return fmt.Errorf("session %s: load transcript: %w", s.id, err)
	}
	msgs := make([]llm.Message, 0, len(recs)+1)
	for _, rec := range recs {
		// Tool results are recorded one by one as the calls end: the
		// results of one assistant message are one message again.
		if n := len(msgs); n > 1 && resultsOnly(rec.Message) && resultsOnly(msgs[n-1]) && msgs[n-2].Role == llm.RoleAssistant {
			joined := msgs[n-1]
			joined.Content = append(append([]llm.Block(nil), joined.Content...), rec.Message.Content...)
			msgs[n-1] = joined
		} else {
			msgs = append(msgs, rec.Message)
		}
		if rec.TurnID != s.lastTurn {
			s.lastInput = inputOf(rec.Message)
		}
		s.lastSeq, s.lastTurn = rec.Seq, rec.TurnID
	}
	s.transcript = msgs
	// Calls left for a client are settled by the turn that answers them.
	return s.settle(ctx, nil)
}

// Transcript returns the conversation the model will see next (compacted
// records excluded).
func (s *LiveSession) Transcript() []llm.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]llm.Message(nil), s.transcript...)
}

// SetModel makes model the model of the session's next turns (agent.
// Request.Model: a model of the same provider, or an alias of the
// definition's ModelAliases); "" goes back to the definition's.
func (s *LiveSession) SetModel(model string) {
	s.mu.Lock()
	s.model = model
	s.mu.Unlock()
}

// Model returns the model SetModel chose, "" for the definition's.
func (s *LiveSession) Model() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.model
}

// PromptTokens is the size of the last prompt the session sent the model,
// as the provider counted it (0 before the first, and after a
// compaction): how much of the context window the conversation fills.
func (s *LiveSession) PromptTokens() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.promptTokens
}

// Why a session ended, for SESSION_END (its reason, Claude Code's
// vocabulary).
const (
	// EndOther: the program closed it (Close).
	EndOther = "other"
	// EndPromptInputExit: the user left an interactive prompt.
	EndPromptInputExit = "prompt_input_exit"
	// EndClear: the user cleared the conversation to start anew.
	EndClear = "clear"
)

// StopTasks stops the session's background tasks that still run — the
// subagents and commands its turns started in the background, which
// outlive its handles (End leaves them running) — and returns them, in the
// order they started. A program calls it when it leaves the session for
// good: orca chat's /clear and /resume, the end of orca run.
func (s *LiveSession) StopTasks() []subagent.TaskInfo {
	tasks := s.r.rt.Tasks()
	if tasks == nil {
		return nil
	}
	return tasks.StopOwner(subagent.Owner(s.scope()))
}

// Close ends the session with reason EndOther (see End).
func (s *LiveSession) Close(ctx context.Context) error { return s.End(ctx, EndOther) }

// End ends the session: it waits for a running turn and for the tool
// calls of CallTool, fires SESSION_END with reason (EndOther if empty),
// and leaves the runtime open (close sessions before their runtime).
// Ending an ended session does nothing.
func (s *LiveSession) End(ctx context.Context, reason string) error {
	if reason == "" {
		reason = EndOther
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.turnMu.Lock()
	defer s.turnMu.Unlock()
	s.calls.Wait()
	if hooks := s.r.rt.Hooks(); hooks.Has(hook.SessionEnd) {
		s.reportHookFailures(hooks.Run(ctx, &hook.SessionEndPayload{Common: s.common(), Reason: reason}))
	}
	s.publish(event.SessionEnded, &event.SessionData{Reason: reason})
	s.feedMu.Lock()
	s.feedOpen.Store(false)
	s.feedMu.Unlock()
	s.release()
	return nil
}
