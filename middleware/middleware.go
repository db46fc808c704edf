// Package middleware holds orca's four trusted middleware chains, the places
// for in-process code that changes a request or wraps the real call:
//
//   - tool_request transforms a tool call before it is validated and
//     approved;
//   - tool_execution wraps the tool itself, after approval;
//   - llm_request transforms a model request before the provider is called,
//     under the cache guard;
//   - llm_execution wraps every provider call: each attempt of each call
//     path (the agent loop, the compaction summariser, subagent forks),
//     streaming or not.
//
// Middleware is trusted: it runs in the process with full power over what
// passes through it, so every misuse the runtime can see fails loud instead
// of being tolerated. Observation belongs to runtime events, and a stable
// contract for outside integrations to public hooks; neither is here.
//
// # Order
//
// Each chain runs its middleware in priority order, lower first; equal
// priorities keep registration order. A request chain is a pipeline: each
// middleware receives what the one before it returned. An execution chain
// is an onion: the middleware with the lowest priority is outermost — it is
// entered first, its next enters the one after it, and it sees the result
// last — and the innermost middleware's next calls the tool or provider.
//
// # next
//
// An execution middleware calls next at most once, with the request it was
// given, unchanged, before it returns:
//
//   - not at all: it short-circuits (a cache hit, a dry run) and its own
//     result is used; nothing inside it runs;
//   - once: the rest of the chain, and finally the tool or provider, runs;
//   - a second time: the call returns an error wrapping ErrNextTwice and
//     never reaches the tool or provider, even when two goroutines race;
//   - with a different or mutated request: an error wrapping
//     ErrRequestChanged, and nothing downstream runs (a request middleware
//     is the place to change requests);
//   - after the middleware returned without calling it: an error wrapping
//     ErrNextAfterReturn (a next handed to a goroutine that outlives its
//     middleware is this mistake, and may race the chain's end instead).
//
// Execution middleware must not retry: a tool's side effects happened, and
// the agent loop already retries provider calls — outside llm_execution, so
// that llm_execution runs once per attempt. A second next is refused anyway.
//
// # Errors
//
// An error a middleware returns, or a panic it raises (recovered, as a
// *PanicError), is reported as an *Error naming the chain and the
// middleware; errors.Is and errors.As see through it. An error a
// middleware merely passes on from its next keeps the name of the one that
// raised it, and errors from the tool or provider pass through unwrapped (so
// that llm.Retryable still sees them). A panic in the tool or provider is
// not a middleware's: it propagates to the caller unchanged, as it would
// with no middleware.
//
// An error raised after the tool or provider completed does not discard the
// completed result: the side effects happened, and the model must observe
// them. ExecuteTool and ExecuteLLM then return the result of the call itself
// and report each such error as a Failure, for the runtime's
// middleware_failed event.
//
// # Registration
//
// A Registry is created once per process and shared by every runtime, so
// that subagent forks and the compaction summariser run through the same
// chains as the agent loop; a registry created per request sees no
// registrations. Each chain is registered separately, names are unique per
// chain, and a registration applies to calls that start after it. Running
// chains read an immutable snapshot: they take no lock and never see a
// half-updated list. With no middleware registered, every Apply and
// Execute method costs a branch and no allocation.
package middleware

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/tool"
)

// The chains, as Failure.Chain, Error.Chain, Has and Names spell them.
const (
	ToolRequest   = "tool_request"
	ToolExecution = "tool_execution"
	LLMRequest    = "llm_request"
	LLMExecution  = "llm_execution"
)

// ToolRequestFunc transforms a tool call before it is validated against the
// tool's schema and approved. It returns the call to continue with: the one
// it was given (edited in place or not) or a new one, never nil.
type ToolRequestFunc func(ctx context.Context, call *tool.Call) (*tool.Call, error)

// ToolNext continues a tool_execution chain: the next middleware, or the
// tool.
type ToolNext func(ctx context.Context, call *tool.Call) (tool.Result, error)

// ToolExecutionFunc wraps the real tool call, after approval. See the
// package documentation for what it may do with next.
type ToolExecutionFunc func(ctx context.Context, call *tool.Call, next ToolNext) (tool.Result, error)

// LLMRequestFunc transforms a model request before the provider call. It
// returns the request to continue with, never nil, and may change the
// cache-sensitive prefix only with AllowCacheInvalidation (see
// ApplyLLMRequest).
type LLMRequestFunc func(ctx context.Context, req *llm.Request) (*llm.Request, error)

// LLMNext continues an llm_execution chain: the next middleware, or the
// provider.
type LLMNext func(ctx context.Context, req *llm.Request) (*llm.Response, error)

// LLMExecutionFunc wraps every provider call, once per attempt. See the
// package documentation for what it may do with next.
//
// Streaming deltas go from the provider to the caller's callback, around
// the chain: a middleware that short-circuits produces none, and the
// caller renders its response whole.
type LLMExecutionFunc func(ctx context.Context, req *llm.Request, next LLMNext) (*llm.Response, error)

// The underlying types of the execution funcs, which the chains run.
type (
	toolExecFn = func(context.Context, *tool.Call, ToolNext) (tool.Result, error)
	llmExecFn  = func(context.Context, *llm.Request, LLMNext) (*llm.Response, error)
)

// Errors to branch on with errors.Is. Each reaches the caller inside an
// *Error naming the middleware.
var (
	// ErrDuplicate: a middleware of that name is already registered on
	// that chain.
	ErrDuplicate = errors.New("name already registered")
	// ErrNilResult: a middleware returned a nil call, request or response
	// without an error.
	ErrNilResult = errors.New("returned nil without an error")
	// ErrNextTwice: an execution middleware called next a second time; the
	// second call did not reach the tool or provider.
	ErrNextTwice = errors.New("next called twice")
	// ErrRequestChanged: an execution middleware called next with another
	// request than the one it was given, or with that one mutated; nothing
	// downstream ran.
	ErrRequestChanged = errors.New("next called with a changed request")
	// ErrNextAfterReturn: next was called after its middleware had
	// returned; nothing downstream ran.
	ErrNextAfterReturn = errors.New("next called after its middleware returned")
	// ErrCacheInvalidation: an llm_request middleware changed the
	// cache-sensitive prefix of the request without being allowed to.
	ErrCacheInvalidation = errors.New("cache-sensitive prefix changed")
)

// Error is a middleware's failure: an error it returned, a panic it raised
// (as a *PanicError), or a misuse the chain refused.
type Error struct {
	Chain      string // ToolRequest, ToolExecution, LLMRequest or LLMExecution
	Middleware string // the registered name
	Err        error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s middleware %q: %v", e.Chain, e.Middleware, e.Err)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// PanicError is a recovered panic of a middleware.
type PanicError struct {
	Value any    // what was passed to panic
	Stack []byte // the panicking goroutine's stack
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Failure is an execution middleware that failed after the tool or provider
// call had completed: the result was kept, and the runtime reports the
// failure as a middleware_failed event.
type Failure struct {
	Chain      string // ToolExecution or LLMExecution
	Middleware string
	Err        error // as the middleware returned it, or a *PanicError
}

func (f Failure) String() string {
	return fmt.Sprintf("%s middleware %q failed after the call completed: %v", f.Chain, f.Middleware, f.Err)
}

// Option configures a registration.
type Option func(*config)

type config struct {
	priority   int
	allowCache bool
	when       func(*tool.Call) bool
}

// Priority orders a middleware in its chain: lower runs first and, in an
// execution chain, outermost. The default is 0; equal priorities keep
// registration order.
func Priority(n int) Option { return func(c *config) { c.priority = n } }

// AllowCacheInvalidation lets an llm_request middleware change the
// cache-sensitive prefix of requests that carry a
// Metadata.CacheInvalidationReason. Registering any other chain with it
// fails.
func AllowCacheInvalidation() Option { return func(c *config) { c.allowCache = true } }

// When registers a tool_request or tool_execution middleware for the
// calls pred reports true for: the others pass by it as if it were not
// registered, and a call no middleware of a chain is for costs that chain
// nothing (HasFor). pred is asked about every call, from any goroutine,
// and must answer the same for the same call; it sees the call as it
// reaches the middleware. Registering an llm chain with it fails.
func When(pred func(call *tool.Call) bool) Option { return func(c *config) { c.when = pred } }

type entry[F any] struct {
	name       string
	priority   int
	seq        uint64 // registration order, and the registration's identity
	allowCache bool
	when       func(*tool.Call) bool // nil: every call
	fn         F
}

// applies reports whether e is for call.
func (e *entry[F]) applies(call *tool.Call) bool { return e.when == nil || e.when(call) }

// snapshot is the registry's content at one moment. It is never modified
// once stored; a registration stores a new one.
type snapshot struct {
	toolRequest   []entry[ToolRequestFunc]
	toolExecution []entry[toolExecFn]
	llmRequest    []entry[LLMRequestFunc]
	llmExecution  []entry[llmExecFn]
}

// Registry holds the four chains. Create one per process and share it; it
// is safe for concurrent use. The zero value is an empty registry, and a
// nil *Registry is an empty one to every method but the Register methods.
type Registry struct {
	mu   sync.Mutex // serialises registrations
	seq  uint64
	snap atomic.Pointer[snapshot]
	// strict: the cache guard copies the prefix by value (see
	// ApplyLLMRequest).
	strict atomic.Bool
}

// SetStrictCacheGuard makes the cache guard of ApplyLLMRequest copy the
// whole prefix by value before the chain, so that it also catches a
// middleware that edits, in place, a block the caller shares or a message
// the guard by reference does not keep — at the cost of a copy of the
// conversation per model call. For tests: orcatest turns it on.
func (r *Registry) SetStrictCacheGuard(on bool) { r.strict.Store(on) }

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

func (r *Registry) load() *snapshot {
	if r == nil {
		return nil
	}
	return r.snap.Load()
}

// RegisterToolRequest adds fn to the tool_request chain and returns the
// function that removes it again.
func (r *Registry) RegisterToolRequest(name string, fn ToolRequestFunc, opts ...Option) (unregister func(), err error) {
	return register(r, ToolRequest, name, fn, fn == nil, opts, func(s *snapshot) *[]entry[ToolRequestFunc] { return &s.toolRequest })
}

// RegisterToolExecution adds fn to the tool_execution chain and returns the
// function that removes it again.
func (r *Registry) RegisterToolExecution(name string, fn ToolExecutionFunc, opts ...Option) (unregister func(), err error) {
	return register(r, ToolExecution, name, toolExecFn(fn), fn == nil, opts, func(s *snapshot) *[]entry[toolExecFn] { return &s.toolExecution })
}

// RegisterLLMRequest adds fn to the llm_request chain and returns the
// function that removes it again.
func (r *Registry) RegisterLLMRequest(name string, fn LLMRequestFunc, opts ...Option) (unregister func(), err error) {
	return register(r, LLMRequest, name, fn, fn == nil, opts, func(s *snapshot) *[]entry[LLMRequestFunc] { return &s.llmRequest })
}

// RegisterLLMExecution adds fn to the llm_execution chain and returns the
// function that removes it again.
func (r *Registry) RegisterLLMExecution(name string, fn LLMExecutionFunc, opts ...Option) (unregister func(), err error) {
	return register(r, LLMExecution, name, llmExecFn(fn), fn == nil, opts, func(s *snapshot) *[]entry[llmExecFn] { return &s.llmExecution })
}

func register[F any](r *Registry, chain, name string, fn F, isNil bool, opts []Option, list func(*snapshot) *[]entry[F]) (func(), error) {
	if name == "" {
		return nil, fmt.Errorf("middleware: %s: a middleware needs a name", chain)
	}
	if isNil {
		return nil, fmt.Errorf("middleware: %s %q: nil func", chain, name)
	}
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.allowCache && chain != LLMRequest {
		return nil, fmt.Errorf("middleware: %s %q: AllowCacheInvalidation applies to %s middleware only", chain, name, LLMRequest)
	}
	if c.when != nil && chain != ToolRequest && chain != ToolExecution {
		return nil, fmt.Errorf("middleware: %s %q: When applies to %s and %s middleware only", chain, name, ToolRequest, ToolExecution)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var next snapshot
	if old := r.snap.Load(); old != nil {
		next = *old
	}
	l := *list(&next)
	for _, e := range l {
		if e.name == name {
			return nil, fmt.Errorf("middleware: %s %q: %w", chain, name, ErrDuplicate)
		}
	}
	r.seq++
	e := entry[F]{name: name, priority: c.priority, seq: r.seq, allowCache: c.allowCache, when: c.when, fn: fn}
	// After every entry of the same or a lower priority: ties keep
	// registration order.
	i := slices.IndexFunc(l, func(x entry[F]) bool { return x.priority > e.priority })
	if i < 0 {
		i = len(l)
	}
	*list(&next) = slices.Insert(slices.Clip(l), i, e) // Clip: never write into the old snapshot
	r.snap.Store(&next)
	return func() { unregister(r, e.seq, list) }, nil
}

func unregister[F any](r *Registry, seq uint64, list func(*snapshot) *[]entry[F]) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.snap.Load()
	i := slices.IndexFunc(*list(old), func(x entry[F]) bool { return x.seq == seq })
	if i < 0 {
		return // already removed
	}
	next := *old
	*list(&next) = slices.Delete(slices.Clone(*list(old)), i, i+1)
	r.snap.Store(&next)
}

// Empty reports whether no middleware is registered on any chain.
func (r *Registry) Empty() bool {
	s := r.load()
	return s == nil || len(s.toolRequest)+len(s.toolExecution)+len(s.llmRequest)+len(s.llmExecution) == 0
}

// Has reports whether chain has middleware, so that callers can skip work
// no middleware would see. An unknown chain has none.
func (r *Registry) Has(chain string) bool {
	s := r.load()
	if s == nil {
		return false
	}
	switch chain {
	case ToolRequest:
		return len(s.toolRequest) > 0
	case ToolExecution:
		return len(s.toolExecution) > 0
	case LLMRequest:
		return len(s.llmRequest) > 0
	case LLMExecution:
		return len(s.llmExecution) > 0
	}
	return false
}

// HasFor reports whether a middleware of the tool chain (ToolRequest or
// ToolExecution) is for call (When), so that callers can skip the chain
// for a call no middleware would see. Another chain has none.
func (r *Registry) HasFor(chain string, call *tool.Call) bool {
	s := r.load()
	if s == nil {
		return false
	}
	switch chain {
	case ToolRequest:
		return anyFor(s.toolRequest, call)
	case ToolExecution:
		return anyFor(s.toolExecution, call)
	}
	return false
}

func anyFor[F any](l []entry[F], call *tool.Call) bool {
	for i := range l {
		if l[i].applies(call) {
			return true
		}
	}
	return false
}

// forCall returns the entries of l that are for call: l itself when all
// are (no allocation).
func forCall[F any](l []entry[F], call *tool.Call) []entry[F] {
	n := 0
	for i := range l {
		if l[i].applies(call) {
			n++
		}
	}
	if n == len(l) {
		return l
	}
	out := make([]entry[F], 0, n)
	for i := range l {
		if l[i].applies(call) {
			out = append(out, l[i])
		}
	}
	return out
}

// Names returns the names of chain's middleware in the order they run
// (outermost first).
func (r *Registry) Names(chain string) []string {
	s := r.load()
	if s == nil {
		return nil
	}
	switch chain {
	case ToolRequest:
		return names(s.toolRequest)
	case ToolExecution:
		return names(s.toolExecution)
	case LLMRequest:
		return names(s.llmRequest)
	case LLMExecution:
		return names(s.llmExecution)
	}
	return nil
}

func names[F any](l []entry[F]) []string {
	out := make([]string, len(l))
	for i, e := range l {
		out[i] = e.name
	}
	return out
}
