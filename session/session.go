// Package session runs conversations: a LiveSession is one conversation on
// a runtime, whose turns run one at a time and whose state — transcript,
// totals, budget override, approvals — lives in a store.Store, the one
// witness of session state. A Router opens sessions (provisioning them
// before their first write) and resumes them by id, in this process or the
// next.
package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/sandbox"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/subagent"
	"github.com/orca-agent/orca/tool"
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

// The writer lease a LiveSession holds while it is open: renewed every
// leaseRenew, it lapses leaseTTL after the last renewal (a writer that
// died without releasing it holds the session that long at most).
const (
	leaseTTL   = 30 * time.Second
	leaseRenew = 10 * time.Second
)

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

// Approvals adapts a store to agent.Approvals, so that "always allow"
// approvals persist with their reach.
func Approvals(st store.Store) agent.Approvals { return storeApprovals{st} }

type storeApprovals struct{ st store.Store }

func (a storeApprovals) Grant(ctx context.Context, runtimeID, sessionID string, scope policy.Scope, rules []string) error {
	if scope == policy.ScopeAgent {
		sessionID = ""
	} else if scope != policy.ScopeSession {
		return fmt.Errorf("session: approvals: scope %q is not stored", scope)
	}
	for _, r := range rules {
		if err := a.st.AddApproval(ctx, store.Approval{RuntimeID: runtimeID, SessionID: sessionID, Rule: r}); err != nil {
			return err
		}
	}
	return nil
}

func (a storeApprovals) Rules(ctx context.Context, runtimeID, sessionID string) ([]string, error) {
	as, err := a.st.Approvals(ctx, runtimeID, sessionID)
	if err != nil {
		return nil, err
	}
	rules := make([]string, len(as))
	for i, x := range as {
		rules[i] = x.Rule
	}
	return rules, nil
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

// leaseOwner names a new writer: the process and a handle of its own, so
// that two sessions of one process are two writers too.
func leaseOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("pid %d on %s (handle %s)", os.Getpid(), cmp.Or(host, "this host"), randomID()[:8])
}

// deadHolder reports whether owner (as leaseOwner names writers) is a
// process of this host that no longer exists.
func deadHolder(owner string) bool {
	var pid int
	var host string
	if n, _ := fmt.Sscanf(owner, "pid %d on %s", &pid, &host); n != 2 || pid <= 0 {
		return false
	}
	if me, _ := os.Hostname(); host != cmp.Or(me, "this host") && host != "this" {
		return false
	}
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

// lease takes the session's writer lease, waiting up to wait for its
// holder to let go, and starts renewing it.
func (s *LiveSession) lease(ctx context.Context, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		_, err := s.r.store.AcquireLease(ctx, s.id, s.owner, leaseTTL)
		if err == nil {
			break
		}
		var le *store.LeaseError
		if errors.As(err, &le) && deadHolder(le.Owner) {
			// Its process died (killed, crashed) on this host without
			// letting go: its lease would hold the session for nothing.
			if err := s.r.store.ReleaseLease(ctx, s.id, le.Owner); err != nil {
				return fmt.Errorf("session %s: %w", s.id, err)
			}
			continue
		}
		left := time.Until(deadline)
		if !errors.Is(err, store.ErrLeased) || left <= 0 {
			if le != nil {
				return &BusyError{SessionID: s.id, Holder: le.Owner, Until: le.Expires, err: err}
			}
			return fmt.Errorf("session %s: %w", s.id, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("session %s: %w", s.id, ctx.Err())
		case <-time.After(min(left, 100*time.Millisecond)):
		}
	}
	s.stopRenew, s.renewDone = make(chan struct{}), make(chan struct{})
	go s.renew()
	return nil
}

// renew renews the lease until the session closes; if another writer took
// the session over, the running turn ends (ErrLeaseLost) and so does every
// later write.
func (s *LiveSession) renew() {
	defer close(s.renewDone)
	t := time.NewTicker(leaseRenew)
	defer t.Stop()
	for {
		select {
		case <-s.stopRenew:
			return
		case <-t.C:
		}
		_, err := s.r.store.AcquireLease(context.Background(), s.id, s.owner, leaseTTL)
		switch {
		case errors.Is(err, store.ErrLeased):
			s.lost.Store(true)
			s.mu.Lock()
			if s.running && s.cancel != nil {
				s.cancel(ErrLeaseLost)
			}
			s.mu.Unlock()
			return
		case err != nil:
			// The store failed for a moment: the lease lasts three periods.
			s.r.rt.Logger().Warn("could not renew the session's writer lease", "session", s.id, "err", err)
		}
	}
}

// release stops renewing and gives the lease up.
func (s *LiveSession) release() {
	if s.stopRenew == nil {
		return
	}
	close(s.stopRenew)
	<-s.renewDone
	if err := s.r.store.ReleaseLease(context.Background(), s.id, s.owner); err != nil && !errors.Is(err, store.ErrClosed) {
		s.r.rt.Logger().Warn("could not release the session's writer lease", "session", s.id, "err", err)
	}
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
	return s.settle(ctx)
}

// ErrAwaitingApproval is Run's error for a session whose last turn parked
// a call that no one has decided on yet.
var ErrAwaitingApproval = errors.New("session: a parked call waits for a decision")

// settle decides what becomes of the tool calls of the transcript's last
// assistant message that have no result (see unanswered): it records the
// results of those that will not run, and keeps those that will for the
// next turn (resume, approved). A call parked and still undecided leaves
// them as they are (parked is set).
func (s *LiveSession) settle(ctx context.Context) error {
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
	fix, resume, approved, waiting := s.unanswered(msgs, byUse)
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
		recs, _, err := s.r.store.AppendStep(ctx, s.id, store.Step{Owner: s.owner, Totals: ran,
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
// fix answers the calls that will not run.
func (s *LiveSession) unanswered(msgs []llm.Message, parked map[string]store.ParkedCall) (fix, resume []llm.Block, approved []store.ParkedCall, waiting *store.ParkedCall) {
	first, goOn := true, false
	for _, u := range unansweredUses(msgs) {
		p, isParked := parked[u.ID]
		switch {
		case !first && goOn:
			resume = append(resume, u) // after a decided parked call: the turn goes on
		case !first && s.traits(u.Name).Idempotent:
			resume = append(resume, u)
		case !first && s.traits(u.Name).ReadOnly:
			fix = append(fix, llm.ToolResultBlock(u.ID, inDoubt, true))
		case !first:
			fix = append(fix, llm.ToolResultBlock(u.ID, "Not run: the session stopped before this call started.", true))
		case isParked && p.Status == store.ParkPending:
			return nil, nil, nil, &p
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
	return fix, resume, approved, nil
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

// Transcript returns the conversation the model will see next (compacted
// records excluded).
func (s *LiveSession) Transcript() []llm.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]llm.Message(nil), s.transcript...)
}

// ParkedTurn returns the turn that parked the session's latest parked
// call, if nothing has run since (the transcript's last records are that
// turn's, and it has not answered); "" if there is none. Run(ctx, "",
// WithTurnID(id), Retry()) goes on with it once the call is decided; while
// the call waits, Run says so (ErrAwaitingApproval).
func (s *LiveSession) ParkedTurn(ctx context.Context) (string, error) {
	calls, err := s.r.store.ParkedCalls(ctx, store.ParkFilter{SessionID: s.id})
	if err != nil || len(calls) == 0 {
		return "", err
	}
	p := calls[len(calls)-1]
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.TurnID == "" || p.TurnID != s.lastTurn {
		return "", nil // a later turn has run
	}
	if n := len(s.transcript); n > 0 {
		if last := s.transcript[n-1]; last.Role == llm.RoleAssistant && len(last.ToolUses()) == 0 {
			return "", nil // it went on, and answered
		}
	}
	return p.TurnID, nil
}

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

// Totals returns the session's totals, from the store.
func (s *LiveSession) Totals(ctx context.Context) (store.Totals, error) {
	return s.r.store.Totals(ctx, s.id)
}

// SetBudget overrides the runtime's budget for this session (nil clears
// the override). The override is stored: it outlives this handle.
func (s *LiveSession) SetBudget(ctx context.Context, b *budget.Limits) error {
	return s.r.store.SetBudget(ctx, s.id, b)
}

// ChangeBudget sets the limits c names on the session's stored override,
// starting from the budget in force (the other dimensions keep theirs),
// and returns the budget now in force. A limit c would set below zero is
// refused, naming its dimension, and nothing changes. Changes through one
// LiveSession do not lose each other.
func (s *LiveSession) ChangeBudget(ctx context.Context, c budget.Change) (budget.Limits, error) {
	if d, ok := c.Negative(); ok {
		return budget.Limits{}, fmt.Errorf("session %s: the %s budget must not be negative", s.id, strings.ReplaceAll(string(d), "_", " "))
	}
	s.budgetMu.Lock()
	defer s.budgetMu.Unlock()
	l, err := s.Budget(ctx)
	if err != nil || c.IsZero() {
		return l, err
	}
	l = c.Apply(l)
	if err := s.SetBudget(ctx, &l); err != nil {
		return budget.Limits{}, err
	}
	return l, nil
}

// Budget returns the budget in force: the session's override, else the
// runtime's.
func (s *LiveSession) Budget(ctx context.Context) (budget.Limits, error) {
	b, err := s.r.store.Budget(ctx, s.id)
	if err != nil {
		return budget.Limits{}, err
	}
	if b == nil {
		return s.r.rt.Definition().Budget, nil
	}
	return *b, nil
}

// RunOption changes how Run runs its turns.
type RunOption func(*runConfig)

type runConfig struct {
	output      *agent.Output
	turnID      string
	retry       bool
	step        *agent.Progress
	interrupted bool
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
		rc.turnID, rc.retry, rc.step, rc.interrupted = "", false, nil, false // the queued messages' turns get their own
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
	s.mu.Unlock()
	if unsettled {
		if err := s.settle(ctx); err != nil {
			return nil, err
		}
	}
	if p := s.Parked(); p != nil {
		return nil, fmt.Errorf("session %s: %w: %s of %s (%s); approve or deny it first", s.id, ErrAwaitingApproval, p.ID, p.ToolName, p.Reason)
	}
	totals, err := s.r.store.Totals(ctx, s.id)
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
	var one [1]store.Record   // the record of a step (see Record)
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
		// The turn is counted by FinishTurn, once whatever its attempts.
		final := spentTotals(res.Usage, res.Spent)
		paused := res.StopReason == agent.StopPaused
		if _, _, terr := s.r.store.AppendStep(ctx, s.id, store.Step{Owner: s.owner, Totals: final.Sub(recorded)}); terr != nil && recordErr == nil {
			endErr = fmt.Errorf("session %s: totals: %w", s.id, terr)
			return
		}
		if paused {
			// The turn goes on at its next step.
			s.mu.Lock()
			s.notStarted = res.Progress.CallsPending
			s.mu.Unlock()
			return
		}
		if ferr := s.r.store.FinishTurn(ctx, s.id, turnID, input); ferr != nil && recordErr == nil {
			endErr = fmt.Errorf("session %s: finish turn: %w", s.id, ferr)
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
		SessionID: s.id,
		TurnID:    turnID,
		Input:     input,
		Continue:  again,
		Context:   pending,
		History:   history,
		Resume:    resume,
		Approved:  approved,
		OnEvent:   s.feedFunc(),
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
		// Each message goes with what the turn has spent up to it, in one
		// write: a crash loses neither.
		Record: func(r agent.Recorded) error {
			now := spentTotals(r.Usage, r.Spent)
			// One record per step, in a slice the turn reuses (the store
			// keeps copies; Record is called one call at a time).
			one[0] = store.Record{TurnID: turnID, Kind: store.KindMessage, Message: r.Message}
			recs, _, err := s.r.store.AppendStep(ctx, s.id, store.Step{Owner: s.owner,
				Records: one[:], Totals: now.Sub(recorded)})
			one[0] = store.Record{}
			if err != nil {
				recordErr = err
				return err
			}
			recorded = now
			s.mu.Lock()
			if s.lastTurn != turnID {
				s.lastInput = inputOf(r.Message)
			}
			s.lastSeq, s.lastTurn = recs[len(recs)-1].Seq, turnID
			s.mu.Unlock()
			return nil
		},
		OnCompact: func(h []llm.Message) error { return s.replace(ctx, turnID, h) },
		// What the session keeps of the turn is written before the turn
		// says it ended (turn_completed).
		OnEnd: end,
		// Background forks finish after the turn: their spending is added
		// to the session's totals when they do.
		Account: func(sp budget.Spent, u llm.Usage) {
			if _, err := s.r.store.AddTotals(context.WithoutCancel(ctx), s.id, store.Totals{Usage: u, CostUSD: sp.CostUSD, ToolCalls: sp.ToolCalls}); err != nil {
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

// Parked returns the call the session's last turn parked that no one has
// decided on yet, if any.
func (s *LiveSession) Parked() *store.ParkedCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.parked == nil {
		return nil
	}
	p := *s.parked
	return &p
}

// Decide approves or denies a parked call of this session's store (by its
// id), as orca approve and orca deny do; the session's next turn runs an
// approved call first.
func (r *Router) Decide(ctx context.Context, id string, approve bool, by, note string) (store.ParkedCall, error) {
	status := store.ParkDenied
	if approve {
		status = store.ParkApproved
	}
	return r.store.SetParkStatus(ctx, id, status, by, note)
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
	stored, _, err := s.r.store.AppendStep(ctx, s.id, store.Step{Owner: s.owner, Records: recs})
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
	if _, _, err := s.r.store.AppendStep(ctx, s.id, store.Step{Owner: s.owner, Totals: store.Totals{Usage: res.Usage, CostUSD: res.Spent.CostUSD}}); err != nil {
		return res, err
	}
	if res.Compacted {
		if err := s.replace(ctx, "", res.Transcript); err != nil {
			return res, fmt.Errorf("session %s: record compaction: %w", s.id, err)
		}
	}
	return res, err
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

// spentTotals is a turn's spending as totals.
func spentTotals(u llm.Usage, sp budget.Spent) store.Totals {
	return store.Totals{Usage: u, CostUSD: sp.CostUSD, ToolCalls: sp.ToolCalls, WallTime: sp.WallTime}
}
