// Package intercept wraps a whole execution — one call of Execute — in a
// chain of interceptors: the place for concerns that decide whether a run
// starts (authentication, authorisation, rate limits) and for per-run
// logging, metrics and request/response shaping.
//
// # The chain
//
// Wrap sorts the interceptors once, stably, by Order (lower is outer; equal
// orders keep registration order), so the interceptor with the lowest order
// sees the request first and the result last. Each interceptor receives a
// Next and may call its Proceed at most once:
//
//   - not at all: the run is blocked, and the interceptor returns its own
//     result; nothing inside it runs (no hook fires, no event is emitted:
//     there was no execution);
//   - once: the rest of the chain, and finally the delegate, runs;
//   - twice: the second call returns an error wrapping ErrProceedTwice and
//     never reaches the delegate, even when two goroutines race for it.
//
// Errors propagate to the caller unchanged; the chain never swallows one.
// Because an error from an inner interceptor returns straight through the
// outer ones, post-processing written after Proceed is skipped when an inner
// step fails: put cleanup and metrics in a defer.
//
//	func (m *Metrics[RT, Q, R]) Intercept(ctx context.Context, rt RT, req Q, next intercept.Next[RT, Q, R]) (R, error) {
//		start := time.Now()
//		defer func() { m.record(time.Since(start)) }() // runs even if an inner step fails
//		return next.Proceed(ctx, rt, req)
//	}
//
// Order bands: -1000…-100 infrastructure observation (queue metrics, run
// logging); -100…0 security (authentication, authorisation, rate limits);
// 0…100 business (normalisation, result shaping).
//
// Pass-through interceptors stay generic over [RT, Q, R any] and are reused
// on any executor; blocking interceptors build a result, so they are written
// for concrete types, and an interceptor that builds the wrong type does not
// compile. Retries do not belong here: a second pass would show the outer
// interceptors the same run twice and skew their logs, metrics and audit.
//
// A Chain implements Execute and nothing else: whatever the request
// carries to the delegate (an agent.Request's OnEvent, which agent.Start
// streams) passes through it, so a streamed run is intercepted like any
// other.
package intercept

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
)

// ErrProceedTwice is wrapped by the error a second Proceed returns.
var ErrProceedTwice = errors.New("intercept: already proceeded")

// Executor runs one execution: rt is what runs (an agent runtime), req what
// it is asked to do.
type Executor[RT, Q, R any] interface {
	Execute(ctx context.Context, rt RT, req Q) (R, error)
}

// Next continues the chain: the next interceptor, or the delegate.
type Next[RT, Q, R any] interface {
	Proceed(ctx context.Context, rt RT, req Q) (R, error)
}

// Interceptor wraps an execution. It may implement Order() int (default 0;
// lower is outer) and Name() string (default: its type's name).
type Interceptor[RT, Q, R any] interface {
	Intercept(ctx context.Context, rt RT, req Q, next Next[RT, Q, R]) (R, error)
}

// Func adapts a function to Interceptor, with order 0.
type Func[RT, Q, R any] func(ctx context.Context, rt RT, req Q, next Next[RT, Q, R]) (R, error)

// Intercept calls f.
func (f Func[RT, Q, R]) Intercept(ctx context.Context, rt RT, req Q, next Next[RT, Q, R]) (R, error) {
	return f(ctx, rt, req, next)
}

// Named gives fn a name and an order.
func Named[RT, Q, R any](name string, order int, fn Func[RT, Q, R]) Interceptor[RT, Q, R] {
	return named[RT, Q, R]{fn: fn, name: name, order: order}
}

type named[RT, Q, R any] struct {
	fn    Func[RT, Q, R]
	name  string
	order int
}

func (n named[RT, Q, R]) Intercept(ctx context.Context, rt RT, req Q, next Next[RT, Q, R]) (R, error) {
	return n.fn(ctx, rt, req, next)
}
func (n named[RT, Q, R]) Name() string { return n.name }
func (n named[RT, Q, R]) Order() int   { return n.order }

// OrderOf returns ic's order: its Order method's answer, or 0.
func OrderOf[RT, Q, R any](ic Interceptor[RT, Q, R]) int {
	if o, ok := ic.(interface{ Order() int }); ok {
		return o.Order()
	}
	return 0
}

// NameOf returns ic's name: its Name method's answer, or its type's name
// (without package path or type arguments).
func NameOf[RT, Q, R any](ic Interceptor[RT, Q, R]) string {
	if n, ok := ic.(interface{ Name() string }); ok {
		return n.Name()
	}
	t := reflect.TypeOf(ic)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "<nil>"
	}
	name := t.Name()
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	if name == "" {
		name = t.String()
	}
	return name
}

// Chain is a delegate wrapped in interceptors. It is built once by Wrap and
// is safe for concurrent use.
type Chain[RT, Q, R any] struct {
	delegate     Executor[RT, Q, R]
	interceptors []Interceptor[RT, Q, R]
	names        []string
}

// Wrap returns delegate wrapped in interceptors, sorted stably by order.
// The type arguments are inferred from delegate. A nil interceptor is
// skipped.
func Wrap[RT, Q, R any](delegate Executor[RT, Q, R], interceptors ...Interceptor[RT, Q, R]) *Chain[RT, Q, R] {
	ics := make([]Interceptor[RT, Q, R], 0, len(interceptors))
	for _, ic := range interceptors {
		if ic != nil {
			ics = append(ics, ic)
		}
	}
	orders := make([]int, len(ics)) // asked once per interceptor
	for i, ic := range ics {
		orders[i] = OrderOf(ic)
	}
	idx := make([]int, len(ics))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return orders[a] - orders[b] })
	c := &Chain[RT, Q, R]{delegate: delegate}
	for _, i := range idx {
		c.interceptors = append(c.interceptors, ics[i])
		c.names = append(c.names, NameOf(ics[i]))
	}
	return c
}

// Delegate returns the wrapped executor.
func (c *Chain[RT, Q, R]) Delegate() Executor[RT, Q, R] { return c.delegate }

// Interceptors returns the interceptors in the order they run (outermost
// first). The slice is a copy.
func (c *Chain[RT, Q, R]) Interceptors() []Interceptor[RT, Q, R] {
	return slices.Clone(c.interceptors)
}

// Names returns the interceptors' names, outermost first.
func (c *Chain[RT, Q, R]) Names() []string { return slices.Clone(c.names) }

// Execute runs the chain. With no interceptors it calls the delegate
// directly.
func (c *Chain[RT, Q, R]) Execute(ctx context.Context, rt RT, req Q) (R, error) {
	if len(c.interceptors) == 0 {
		return c.delegate.Execute(ctx, rt, req)
	}
	// One allocation per run: the one-shot guard of every step.
	steps := make([]step[RT, Q, R], len(c.interceptors))
	for i := range steps {
		steps[i].c, steps[i].i, steps[i].all = c, i, steps
	}
	return c.interceptors[0].Intercept(ctx, rt, req, &steps[0])
}

// step is the Next handed to interceptor i: it proceeds to interceptor i+1
// (or the delegate) once.
type step[RT, Q, R any] struct {
	c    *Chain[RT, Q, R]
	i    int
	all  []step[RT, Q, R] // the run's steps, this one at index i
	used atomic.Bool
}

func (s *step[RT, Q, R]) Proceed(ctx context.Context, rt RT, req Q) (R, error) {
	if !s.used.CompareAndSwap(false, true) {
		var zero R
		return zero, fmt.Errorf("%w: interceptor %s called Proceed a second time; the delegate was not called again", ErrProceedTwice, s.c.names[s.i])
	}
	next := s.i + 1
	if next == len(s.c.interceptors) {
		return s.c.delegate.Execute(ctx, rt, req)
	}
	return s.c.interceptors[next].Intercept(ctx, rt, req, &s.all[next])
}
