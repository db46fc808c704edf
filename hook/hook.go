// Package hook is orca's public hook contract: fifteen named points of a
// run where code outside the runtime may look at a documented payload and
// answer with a decision — block a tool call, ask for permission, rewrite a
// prompt or a tool's arguments, add context, send the agent back to work,
// answer an MCP server's question.
//
// Each hook has a contract (Contracts): the actions it allows besides
// continue, the payload fields a decision may rewrite, and whether it may
// add context. A decision outside its hook's contract is a contract
// violation: it is reported as a hook failure and ignored whole, never
// half-applied. Hook failures — an error, a panic, a timeout — are
// isolated: the run goes on, unless the handler was registered FailClosed,
// which turns its own failure into a block (or a deny).
//
// Handlers run in priority order (lower first; ties keep registration
// order). Rewrites apply in that order, so a later handler sees the
// payload as the earlier ones left it. Block (and deny), and a decision
// that ends the turn, short-circuit the remaining handlers. For
// PRE_TOOL_USE, defer wins over request_permission, which wins over allow;
// for ELICITATION and ELICITATION_RESULT, decline and cancel stop the
// other handlers, as a block does, and the first accept wins.
//
// Every payload is a versioned JSON shape, documented by a JSON Schema per
// hook in this package's schema folder, because command hooks outside the
// process receive it as JSON.
package hook

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orca-agent/orca/scope"
)

// Name names a hook.
type Name string

// The fifteen hooks; registering any other name fails.
const (
	SessionStart      Name = "SESSION_START"
	SessionEnd        Name = "SESSION_END"
	UserPromptSubmit  Name = "USER_PROMPT_SUBMIT"
	TurnStart         Name = "TURN_START"
	PreToolUse        Name = "PRE_TOOL_USE"
	PermissionRequest Name = "PERMISSION_REQUEST"
	// Elicitation and ElicitationResult frame an MCP server's question
	// for the person (elicitation/create), asked during a tool call.
	Elicitation        Name = "ELICITATION"
	ElicitationResult  Name = "ELICITATION_RESULT"
	PostToolUse        Name = "POST_TOOL_USE"
	PostToolUseFailure Name = "POST_TOOL_USE_FAILURE"
	PreCompact         Name = "PRE_COMPACT"
	SubagentStart      Name = "SUBAGENT_START"
	SubagentStop       Name = "SUBAGENT_STOP"
	Stop               Name = "STOP"
	PostVerify         Name = "POST_VERIFY"
)

// Names lists the fifteen hooks in the order a run meets them.
var Names = []Name{
	SessionStart, SessionEnd, UserPromptSubmit, TurnStart, PreToolUse, PermissionRequest, Elicitation, ElicitationResult,
	PostToolUse, PostToolUseFailure, PreCompact, SubagentStart, SubagentStop, Stop, PostVerify,
}

// Action is what a decision asks for.
type Action string

// Actions. Which ones a hook allows is in its Contract.
const (
	Continue          Action = "continue"
	Block             Action = "block"
	RequestPermission Action = "request_permission"
	Allow             Action = "allow"
	Deny              Action = "deny"
	Revise            Action = "revise"
	Accept            Action = "accept"
	// Defer hands the call to a person (PRE_TOOL_USE): the turn stops
	// before it, as when an approver parks a call, and the call is asked
	// about again, hooks first, when the session resumes.
	Defer Action = "defer"
	// Decline and Cancel answer an MCP server's question (ELICITATION,
	// ELICITATION_RESULT) as the MCP specification names the answers:
	// no, and no choice; Accept answers it with the payload's content.
	Decline Action = "decline"
	Cancel  Action = "cancel"
)

// Contract is what a hook lets a decision do.
type Contract struct {
	Hook Name
	// Actions are the allowed actions besides Continue.
	Actions []Action
	// Rewritable are the payload fields (by JSON name) Updates may set.
	Rewritable []string
	// AddContext says whether a decision may add context.
	AddContext bool
	// CanEnd says whether a decision may end the turn (Decision.EndTurn):
	// every hook that fires inside one.
	CanEnd bool
}

var contracts = map[Name]Contract{
	SessionStart:       {Hook: SessionStart, AddContext: true},
	SessionEnd:         {Hook: SessionEnd},
	UserPromptSubmit:   {Hook: UserPromptSubmit, Actions: []Action{Block}, Rewritable: []string{"prompt"}, AddContext: true, CanEnd: true},
	TurnStart:          {Hook: TurnStart, AddContext: true, CanEnd: true},
	PreToolUse:         {Hook: PreToolUse, Actions: []Action{Block, Defer, RequestPermission, Allow}, Rewritable: []string{"arguments"}, AddContext: true, CanEnd: true},
	PermissionRequest:  {Hook: PermissionRequest, Actions: []Action{Allow, Deny}, Rewritable: []string{"arguments"}, CanEnd: true},
	Elicitation:        {Hook: Elicitation, Actions: []Action{Accept, Decline, Cancel}, Rewritable: []string{"content"}},
	ElicitationResult:  {Hook: ElicitationResult, Actions: []Action{Accept, Decline, Cancel}, Rewritable: []string{"content"}},
	PostToolUse:        {Hook: PostToolUse, Actions: []Action{Block}, Rewritable: []string{"output"}, AddContext: true, CanEnd: true},
	PostToolUseFailure: {Hook: PostToolUseFailure, AddContext: true, CanEnd: true},
	PreCompact:         {Hook: PreCompact, Actions: []Action{Block}, Rewritable: []string{"instructions"}, CanEnd: true},
	SubagentStart:      {Hook: SubagentStart, Actions: []Action{Block}, Rewritable: []string{"prompt"}, AddContext: true, CanEnd: true},
	SubagentStop:       {Hook: SubagentStop, Actions: []Action{Revise}, CanEnd: true},
	Stop:               {Hook: Stop, Actions: []Action{Revise}, CanEnd: true},
	PostVerify:         {Hook: PostVerify, Actions: []Action{Accept, Revise}, CanEnd: true},
}

// refusal is the action a fail-closed failure of c's hook becomes: a
// deny where the hook denies, a decline where it declines, else a block
// ("" if it can do none of them).
func refusal(c Contract) Action {
	for _, a := range []Action{Deny, Decline, Block} {
		if slices.Contains(c.Actions, a) {
			return a
		}
	}
	return ""
}

// ContractOf returns the contract of hook n.
func ContractOf(n Name) (Contract, bool) {
	c, ok := contracts[n]
	return c, ok
}

// Decision is a handler's answer. A nil *Decision means continue.
type Decision struct {
	// Action is what the handler asks for; empty means Continue.
	Action Action
	// Reason explains a block, deny or permission request (the model may
	// see it).
	Reason string
	// Updates rewrites payload fields, keyed by their JSON names; each
	// value must encode to what the field holds.
	Updates map[string]any
	// Context is added to what the model sees.
	Context string
	// Instruction tells the agent what to do when the action is Revise.
	Instruction string
	// EndTurn, when set, ends the turn once the hook has run, with EndTurn
	// as the reason the user sees (Claude Code's continue: false with
	// stopReason): the tool call, prompt or fork the hook was about does
	// not go ahead, and the model is not called again. It wins over the
	// action and stops the other handlers.
	EndTurn string
	// Message is shown to the user, not to the model (Claude Code's
	// systemMessage): a warning, a note of what the hook did.
	Message string
}

// Handler answers a hook.
type Handler interface {
	Handle(ctx context.Context, p Payload) (*Decision, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, p Payload) (*Decision, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, p Payload) (*Decision, error) { return f(ctx, p) }

// On adapts a function of one payload type; registering it for another
// hook fails.
func On[P Payload](fn func(ctx context.Context, p P) (*Decision, error)) Handler {
	return typed[P]{fn: fn}
}

// Handle registers fn, a handler of one payload type, under name on the
// hook that payload belongs to — the common case in one line:
//
//	hook.Handle(svc.Hooks, "require-operator", func(ctx context.Context, p *hook.PreToolUsePayload) (*hook.Decision, error) {
//		…
//	}, hook.Priority(50))
func Handle[P Payload](r *Registry, name string, fn func(ctx context.Context, p P) (*Decision, error), opts ...Option) (unregister func(), err error) {
	t := typed[P]{fn: fn}
	return r.Register(t.hook(), name, t, opts...)
}

type typed[P Payload] struct {
	fn func(context.Context, P) (*Decision, error)
}

func (t typed[P]) Handle(ctx context.Context, p Payload) (*Decision, error) {
	tp, ok := p.(P)
	if !ok {
		return nil, fmt.Errorf("handler takes %T, got %T", *new(P), p)
	}
	return t.fn(ctx, tp)
}

func (t typed[P]) hook() Name {
	var zero P
	rt := reflect.TypeOf(zero)
	if rt == nil || rt.Kind() != reflect.Pointer {
		return ""
	}
	return reflect.New(rt.Elem()).Interface().(Payload).Hook()
}

// DefaultTimeout bounds a handler that was registered without Timeout.
const DefaultTimeout = 60 * time.Second

// Option configures a registration.
type Option func(*entry)

// Priority orders handlers: lower runs first.
func Priority(n int) Option { return func(e *entry) { e.priority = n } }

// Timeout bounds one call of the handler (DefaultTimeout if unset).
func Timeout(d time.Duration) Option { return func(e *entry) { e.timeout = d } }

// FailClosed turns a failure of the handler (error, panic, timeout,
// contract violation) into a block (a deny for PERMISSION_REQUEST, a
// decline for the elicitation hooks), for security hooks. Only hooks that
// can block, deny or decline accept it.
func FailClosed() Option { return func(e *entry) { e.failClosed = true } }

// MayBlock says the handler may not return when its context ends — it
// waits on something that ignores contexts — so it runs on a goroutine
// of its own, and Run stops waiting for it at its timeout (the goroutine
// is left to end by itself). Other handlers run on Run's goroutine, which
// costs no goroutine and no channel: they must return once their context
// is done (see Run).
func MayBlock() Option { return func(e *entry) { e.mayBlock = true } }

type entry struct {
	hook       Name
	name       string
	applies    func(Payload) bool // the handler's Applies, if it is an Applier
	priority   int
	seq        int
	timeout    time.Duration
	failClosed bool
	mayBlock   bool
	h          Handler
}

// Registry holds the handlers of every hook. Create one per process and
// share it (a registry created per request sees no registrations). It is
// safe for concurrent use; Run reads an immutable snapshot.
type Registry struct {
	mu   sync.Mutex
	seq  int
	snap atomic.Pointer[map[Name][]*entry]
	// observer is told of every handler's run (Observe).
	observer atomic.Pointer[func(Ran)]
}

// Applier is a Handler that says which payloads it is for (a settings
// hook's matcher): Run calls it for those only, and only those calls are
// its runs (Observe).
type Applier interface {
	Handler
	Applies(p Payload) bool
}

// Ran is a handler's run, as Observe tells it.
type Ran struct {
	// Hook and Handler name the hook point and the handler (as failures
	// and hook:NAME name it).
	Hook    Name
	Handler string
	// Scope is the run the hook fired in.
	scope.Scope
	// Decision is what the handler answered (nil: nothing), Err how it
	// failed or broke the contract.
	Decision *Decision
	Err      error
}

// Observe has fn told of every handler's run, after it: the evidence that
// a hook fired, whatever it decided (orca eval's hooks scorer). One
// observer at a time; nil removes it. fn runs on the hook's goroutine
// (a handler that may block: after it, on Run's) and must be quick.
func (r *Registry) Observe(fn func(Ran)) {
	if fn == nil {
		r.observer.Store(nil)
		return
	}
	r.observer.Store(&fn)
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	r := &Registry{}
	r.snap.Store(&map[Name][]*entry{})
	return r
}

// Register adds h to hook n under name (unique per hook: failures and
// events name the handler by it) and returns the function that removes it.
func (r *Registry) Register(n Name, name string, h Handler, opts ...Option) (unregister func(), err error) {
	c, ok := contracts[n]
	if !ok {
		return nil, fmt.Errorf("hook: unknown hook %q (the hooks are %s)", n, joinNames())
	}
	if h == nil {
		return nil, fmt.Errorf("hook %s: nil handler", n)
	}
	e := &entry{hook: n, name: name, h: h, timeout: DefaultTimeout}
	if a, ok := h.(Applier); ok {
		e.applies = a.Applies
	}
	for _, o := range opts {
		o(e)
	}
	if e.name == "" {
		return nil, fmt.Errorf("hook %s: the handler needs a name", n)
	}
	if t, ok := h.(interface{ hook() Name }); ok && t.hook() != n {
		return nil, fmt.Errorf("hook %s: handler %q takes the payload of %s", n, e.name, t.hook())
	}
	if e.failClosed && refusal(c) == "" {
		return nil, fmt.Errorf("hook %s: handler %q cannot be fail-closed: the hook can neither block, deny nor decline", n, e.name)
	}
	if e.timeout <= 0 {
		return nil, fmt.Errorf("hook %s: handler %q: timeout must be positive", n, e.name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := *r.snap.Load()
	for _, x := range old[n] {
		if x.name == e.name {
			return nil, fmt.Errorf("hook %s: a handler named %q is already registered", n, e.name)
		}
	}
	r.seq++
	e.seq = r.seq
	next := make(map[Name][]*entry, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	list := append(slices.Clone(old[n]), e)
	slices.SortStableFunc(list, func(a, b *entry) int {
		return cmp.Or(cmp.Compare(a.priority, b.priority), cmp.Compare(a.seq, b.seq))
	})
	next[n] = list
	r.snap.Store(&next)
	return func() { r.remove(e) }, nil
}

func (r *Registry) remove(e *entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := *r.snap.Load()
	i := slices.Index(old[e.hook], e)
	if i < 0 {
		return
	}
	next := make(map[Name][]*entry, len(old))
	for k, v := range old {
		next[k] = v
	}
	next[e.hook] = slices.Delete(slices.Clone(old[e.hook]), i, i+1)
	r.snap.Store(&next)
}

// Has reports whether hook n has handlers, so that callers skip building a
// payload no one reads.
func (r *Registry) Has(n Name) bool {
	if r == nil {
		return false
	}
	return len((*r.snap.Load())[n]) > 0
}

// Handlers returns the names of hook n's handlers in the order they run.
func (r *Registry) Handlers(n Name) []string {
	var out []string
	for _, e := range (*r.snap.Load())[n] {
		out = append(out, e.name)
	}
	return out
}

func joinNames() string {
	s := make([]string, len(Names))
	for i, n := range Names {
		s[i] = string(n)
	}
	return strings.Join(s, ", ")
}

// Failure is a handler that failed or broke its hook's contract.
type Failure struct {
	Hook    Name
	Handler string
	Err     error
	// Violation: the handler answered, but outside its hook's contract.
	Violation bool
	// FailClosed: the failure was turned into a block or deny.
	FailClosed bool
}

// ErrViolation is wrapped by the errors of contract violations.
var ErrViolation = errors.New("hook contract violation")

// Outcome is the combined answer of a hook's handlers.
type Outcome struct {
	// Action is Continue, or the action that won: Block / Deny / Decline
	// / Cancel (which stop the other handlers), else Defer over
	// RequestPermission over Allow, else Revise over Accept.
	Action Action
	// Reason and By are the deciding handler's reason and name.
	Reason, By string
	// Payload is the payload after every applied rewrite (the one given
	// when there was none).
	Payload Payload
	// Rewritten says whether any handler rewrote the payload;
	// RewrittenBy names those that did, in order.
	Rewritten   bool
	RewrittenBy []string
	// Context is what handlers added, in order.
	Context []string
	// Instruction is the revise instructions, in order, joined by blank
	// lines.
	Instruction string
	// EndTurn is the reason of the handler (By) that ended the turn, if
	// one did (Decision.EndTurn).
	EndTurn string
	// Messages are what handlers had shown to the user, in order.
	Messages []Message
	// Failures are the handlers that failed or broke the contract (the
	// caller reports each as a hook_failed event).
	Failures []Failure
}

// Message is what a handler had shown to the user (Decision.Message).
type Message struct {
	Handler, Text string
}

// Run calls hook p.Hook()'s handlers with p and combines their decisions.
// It sets p's hook name and version. Run never fails: failures are in the
// outcome.
//
// Handlers run one after another, in order, on Run's goroutine (those
// registered MayBlock on one of their own). Their context ends at a
// deadline the hook point's handlers share — the longest of their
// timeouts from when Run began — or earlier if ctx ends; a handler that
// returns after its own timeout has failed ("timed out"), and what it
// answered is ignored. A handler that panics has failed too; the panic
// goes no further.
func (r *Registry) Run(ctx context.Context, p Payload) Outcome {
	return r.RunIn(ctx, nil, p)
}

// Frame is the room Run needs for one run of a hook point. RunIn runs in
// a Frame its caller provides (allocated together with the payload, say),
// which saves Run's own allocation. A Frame serves one run: a handler may
// keep the context it was given, which ends with that run. Given again, it
// is ignored and the run gets room of its own.
type Frame struct {
	pc   pointContext
	used bool
}

// RunIn is Run in the Frame f (nil: in room of Run's own).
func (r *Registry) RunIn(ctx context.Context, f *Frame, p Payload) Outcome {
	n := p.Hook()
	c := p.common()
	c.HookName, c.Version = n, Version
	out := Outcome{Action: Continue, Payload: p}
	if r == nil {
		return out
	}
	var instructions []string
	entries := (*r.snap.Load())[n]
	if len(entries) == 0 {
		return out
	}
	var pc *pointContext
	if f != nil && !f.used {
		f.used = true
		pc = &f.pc
	} else {
		pc = new(pointContext)
	}
	pc.init(ctx, entries)
	defer pc.cancel()
	for _, e := range entries {
		if e.applies != nil && !e.applies(out.Payload) {
			continue // not this handler's payload: it does not fire
		}
		var (
			d   *Decision
			err error
		)
		if e.mayBlock {
			d, err = e.callAside(ctx, out.Payload)
			pc.atKnown = false
		} else {
			d, err = pc.call(e, out.Payload)
		}
		if o := r.observer.Load(); o != nil {
			(*o)(Ran{Hook: n, Handler: e.name, Scope: c.Scope, Decision: d, Err: err})
		}
		if err == nil && d != nil {
			var rewritten Payload
			if rewritten, err = check(n, out.Payload, d); err == nil && rewritten != nil {
				out.Payload, out.Rewritten = rewritten, true
				out.RewrittenBy = append(out.RewrittenBy, e.name)
			}
		}
		if err != nil {
			f := Failure{Hook: n, Handler: e.name, Err: err, Violation: errors.Is(err, ErrViolation), FailClosed: e.failClosed}
			out.Failures = append(out.Failures, f)
			if e.failClosed {
				out.Action, out.By = refusal(contracts[n]), e.name
				out.Reason = fmt.Sprintf("hook %s failed and is fail-closed: %v", e.name, err)
				return out
			}
			continue
		}
		if d == nil {
			continue
		}
		if d.Context != "" {
			out.Context = append(out.Context, d.Context)
		}
		if d.Message != "" {
			out.Messages = append(out.Messages, Message{Handler: e.name, Text: d.Message})
		}
		if d.EndTurn != "" {
			out.EndTurn, out.By = d.EndTurn, e.name
			if d.Action == Block || d.Action == Deny {
				out.Action, out.Reason = d.Action, d.Reason
			}
			return out
		}
		switch d.Action {
		case Block, Deny, Decline, Cancel:
			out.Action, out.Reason, out.By = d.Action, d.Reason, e.name
			return out
		case Defer:
			if out.Action != Defer {
				out.Action, out.Reason, out.By = Defer, d.Reason, e.name
			}
		case RequestPermission:
			if out.Action != RequestPermission && out.Action != Defer {
				out.Action, out.Reason, out.By = RequestPermission, d.Reason, e.name
			}
		case Allow, Accept:
			if out.Action == Continue {
				out.Action, out.Reason, out.By = d.Action, d.Reason, e.name
			}
		case Revise:
			instructions = append(instructions, d.Instruction)
			if out.Action != Revise {
				out.Action, out.Reason, out.By = Revise, d.Reason, e.name
			}
		}
	}
	out.Instruction = strings.Join(instructions, "\n\n")
	return out
}

// pointContext is the context of a hook point's handlers that run on
// Run's goroutine: ctx, ending at the longest of their timeouts — one
// context for the point, not a context and a timer per handler, and its
// timer set only once a handler asks when it ends (Done): a handler that
// answers at once costs none. A handler whose own deadline (its timeout
// from when it starts) is more than a millisecond off the point's gets a
// context of its own.
type pointContext struct {
	parent context.Context
	ctx    context.Context // parent, or lazy
	lazy   lazyDeadline
	// The clock is read once in full (t0, when the point starts); the
	// handlers' times are offsets from it, read from the monotonic clock
	// alone, which costs half as much. left is the deadline's offset; at
	// is when the next handler starts, if known (atKnown): each handler's
	// end is the next one's start, one clock read for both, unless a
	// handler ran aside in between.
	t0       time.Time
	left, at time.Duration
	atKnown  bool
}

// init makes pc, a zero pointContext, the context of entries' run.
func (pc *pointContext) init(ctx context.Context, entries []*entry) {
	pc.parent, pc.ctx = ctx, ctx
	var longest time.Duration
	for _, e := range entries {
		if !e.mayBlock {
			longest = max(longest, e.timeout)
		}
	}
	if longest == 0 {
		return
	}
	pc.t0 = time.Now()
	deadline := pc.t0.Add(longest)
	pc.left, pc.at, pc.atKnown = longest, 0, true
	if d, ok := ctx.Deadline(); ok && !d.After(deadline) {
		pc.left = d.Sub(pc.t0) // ctx ends first anyway
		return
	}
	pc.lazy.Context, pc.lazy.deadline = ctx, deadline
	pc.ctx = &pc.lazy
}

func (pc *pointContext) cancel() {
	if pc.ctx == &pc.lazy {
		pc.lazy.stop()
	}
}

// lazyDeadline is its parent with a deadline whose timer is set the
// first time Done is asked for. Once stopped (Run returned), it is done:
// a handler that kept it finds it cancelled.
type lazyDeadline struct {
	context.Context
	deadline time.Time
	// armed is nil until Done is first asked for (then the context with
	// the timer) or the run ends (then stoppedDeadline); set once.
	armed atomic.Pointer[armedDeadline]
}

// armedDeadline is what a lazyDeadline became: a context and what
// cancels it (nil: nothing to cancel).
type armedDeadline struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// stoppedDeadline is a lazyDeadline stopped before it was armed.
var stoppedDeadline = func() *armedDeadline {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return &armedDeadline{ctx: ctx}
}()

func (c *lazyDeadline) arm() context.Context {
	if a := c.armed.Load(); a != nil {
		return a.ctx
	}
	ctx, cancel := context.WithDeadline(c.Context, c.deadline)
	if c.armed.CompareAndSwap(nil, &armedDeadline{ctx, cancel}) {
		return ctx
	}
	cancel() // armed by another Done first, or stopped
	return c.armed.Load().ctx
}

// stop ends it: one atomic swap when no one asked for Done, the common
// case.
func (c *lazyDeadline) stop() {
	if c.armed.CompareAndSwap(nil, stoppedDeadline) {
		return
	}
	if a := c.armed.Load(); a.cancel != nil {
		a.cancel()
	}
}

// Value looks in the armed context once there is one (so that
// context.Cause and derived contexts find its cancellation), else in the
// parent; the armed context holds the parent's values too.
func (c *lazyDeadline) Value(key any) any {
	if a := c.armed.Load(); a != nil && a != stoppedDeadline {
		return a.ctx.Value(key)
	}
	return c.Context.Value(key)
}

func (c *lazyDeadline) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *lazyDeadline) Done() <-chan struct{}       { return c.arm().Done() }

func (c *lazyDeadline) Err() error {
	if a := c.armed.Load(); a != nil {
		return a.ctx.Err()
	}
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// call runs the handler on the caller's goroutine, turning a panic into
// an error, and an answer that came after its timeout into a timeout.
func (pc *pointContext) call(e *entry, p Payload) (d *Decision, err error) {
	start := pc.at
	if !pc.atKnown {
		start = time.Since(pc.t0)
	}
	ctx := pc.ctx
	if off := pc.left - (start + e.timeout); off < -time.Millisecond || off > time.Millisecond {
		own := pc.t0.Add(start + e.timeout)
		if d, ok := pc.parent.Deadline(); !ok || own.Before(d) {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(pc.parent, own)
			defer cancel()
		} else {
			ctx = pc.parent // it ends first anyway
		}
	}
	defer func() {
		end := time.Since(pc.t0)
		pc.at, pc.atKnown = end, true
		if v := recover(); v != nil {
			d, err = nil, fmt.Errorf("panic: %v", v)
			return
		}
		if took := end - start; took >= e.timeout {
			d, err = nil, fmt.Errorf("timed out after %v (it answered after %v)", e.timeout, took.Round(time.Millisecond))
		}
	}()
	return e.h.Handle(ctx, p)
}

// callAside returns the call of a MayBlock handler: on a goroutine of its
// own with its timeout, waited for no longer than that.
func (e *entry) callAside(ctx context.Context, p Payload) (*Decision, error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	type answer struct {
		d   *Decision
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				ch <- answer{err: fmt.Errorf("panic: %v", v)}
			}
		}()
		d, err := e.h.Handle(ctx, p)
		ch <- answer{d, err}
	}()
	select {
	case a := <-ch:
		return a.d, a.err
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("timed out after %v", e.timeout)
		}
		return nil, ctx.Err()
	}
}

// check validates d against the hook's contract and returns the rewritten
// payload (nil if d rewrites nothing). Nothing is applied unless all of d
// is valid.
func check(n Name, p Payload, d *Decision) (Payload, error) {
	c := contracts[n]
	if d.Action != "" && d.Action != Continue && !slices.Contains(c.Actions, d.Action) {
		return nil, fmt.Errorf("%w: %s does not allow action %q (allowed: continue%s)", ErrViolation, n, d.Action, listActions(c.Actions))
	}
	if d.Action == Revise && strings.TrimSpace(d.Instruction) == "" {
		return nil, fmt.Errorf("%w: %s: revise needs a non-empty instruction", ErrViolation, n)
	}
	if d.Context != "" && !c.AddContext {
		return nil, fmt.Errorf("%w: %s cannot add context", ErrViolation, n)
	}
	if d.EndTurn != "" && !c.CanEnd {
		return nil, fmt.Errorf("%w: %s fires outside a turn and cannot end one", ErrViolation, n)
	}
	if d.Action == Block && n == PreCompact {
		if pc, ok := p.(*PreCompactPayload); ok && pc.Trigger != "auto" {
			return nil, fmt.Errorf("%w: PRE_COMPACT can block only automatic compaction, not %q", ErrViolation, pc.Trigger)
		}
	}
	if len(d.Updates) == 0 {
		return nil, nil
	}
	for k := range d.Updates {
		if !slices.Contains(c.Rewritable, k) {
			return nil, fmt.Errorf("%w: %s cannot rewrite %q (rewritable: %s)", ErrViolation, n, k, strings.Join(c.Rewritable, ", "))
		}
	}
	return rewrite(p, d.Updates)
}

func listActions(as []Action) string {
	var b strings.Builder
	for _, a := range as {
		b.WriteString(", ")
		b.WriteString(string(a))
	}
	return b.String()
}

// rewrite returns a copy of p with updates applied through its JSON form,
// so that an update is checked against the field's real type.
func rewrite(p Payload, updates map[string]any) (Payload, error) {
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	for k, v := range updates {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%w: update of %q does not encode: %v", ErrViolation, k, err)
		}
		if k == "arguments" && (len(b) == 0 || b[0] != '{') {
			return nil, fmt.Errorf("%w: arguments must be a JSON object, got %s", ErrViolation, b)
		}
		fields[k] = b
	}
	raw, err = json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	out := reflect.New(reflect.TypeOf(p).Elem()).Interface().(Payload)
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(out); err != nil {
		return nil, fmt.Errorf("%w: update does not fit the payload: %v", ErrViolation, err)
	}
	return out, nil
}
