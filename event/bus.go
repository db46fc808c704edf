package event

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Listener receives events. A returned error or a panic is isolated: it is
// logged at WARN and counted, and the run and the other listeners go on.
// Listeners must be safe for concurrent use; they are called from a
// goroutine of the bus, never from the one that published.
type Listener func(Event) error

// DefaultBuffer is how many events a subscription holds for a listener that
// is slower than the runs publishing them; past that, events are dropped
// (and counted) rather than stalling the runs.
const DefaultBuffer = 1024

// SubscribeOption configures a subscription.
type SubscribeOption func(*sub)

// Priority sets the order in which subscriptions are offered each event
// (lower first; equal priorities keep subscription order). Each listener
// runs on its own goroutine, so priority orders the offering, not the
// listeners' execution relative to each other.
func Priority(n int) SubscribeOption { return func(s *sub) { s.priority = n } }

// Buffer sets how many undelivered events the subscription holds before it
// drops (DefaultBuffer if unset).
func Buffer(n int) SubscribeOption {
	return func(s *sub) {
		if n > 0 {
			s.buffer = n
		}
	}
}

// Stats counts what a bus (or one subscription) did.
type Stats struct {
	Published uint64 // events handed to Publish (bus only)
	Delivered uint64 // listener calls that returned nil
	Failed    uint64 // listener calls that returned an error
	Panicked  uint64 // listener calls that panicked
	Dropped   uint64 // events not delivered because a buffer was full
}

// Bus is the process-wide event bus: runtimes publish, observers subscribe
// by event name or name prefix. Create one per process and inject it;
// Close it when the process is done.
type Bus struct {
	logger *slog.Logger

	mu     sync.Mutex // serialises Subscribe, unsubscribe and Close
	names  map[string]bool
	subs   []*sub                  // in offering order
	index  atomic.Pointer[routing] // read by Publish without locks
	closed bool
	seq    int // subscription counter, for stable priority ties

	published atomic.Uint64
	retired   Stats // totals of subscriptions that are gone
}

// routing is an immutable view of the subscriptions for Publish.
type routing struct {
	byName map[Name][]*sub // exact subscriptions merged with matching prefix ones
	prefix []*sub          // prefix subscriptions, for names not in byName
	any    bool            // there is a subscription
}

type sub struct {
	bus      *Bus
	name     string
	event    Name          // exact name, or
	set      map[Name]bool // a set of exact names, or
	prefix   string
	priority int
	buffer   int
	seq      int
	fn       Listener
	// q holds the events not yet delivered; the listener's goroutine swaps
	// it for an empty slice and delivers the batch, so a burst of events
	// wakes it once, not once per event.
	qmu      sync.Mutex
	q, spare []Event
	wake     chan struct{} // capacity 1: "there is something in q"
	quit     chan struct{}
	done     chan struct{}
	dropping atomic.Bool

	delivered, failed, panicked, dropped atomic.Uint64
}

// NewBus returns a bus that logs listener failures and drops to logger
// (slog.Default() if nil).
func NewBus(logger *slog.Logger) *Bus {
	if logger == nil {
		logger = slog.Default()
	}
	b := &Bus{logger: logger, names: make(map[string]bool)}
	b.index.Store(&routing{byName: map[Name][]*sub{}})
	return b
}

// Subscription is a registered listener.
type Subscription struct{ s *sub }

// Name returns the subscription's name.
func (s Subscription) Name() string { return s.s.name }

// Stats returns what was delivered to this subscription.
func (s Subscription) Stats() Stats { return s.s.stats() }

// Unsubscribe stops delivery: events already queued for the listener are
// delivered first, then Unsubscribe returns. It must not be called from the
// listener itself.
func (s Subscription) Unsubscribe() { s.s.bus.remove(s.s) }

// Subscribe registers fn for the events called event, under name, which
// must be unique on the bus.
func (b *Bus) Subscribe(name string, event Name, fn Listener, opts ...SubscribeOption) (Subscription, error) {
	if event == "" {
		return Subscription{}, fmt.Errorf("event: subscription %q: no event name", name)
	}
	return b.add(&sub{name: name, event: event, fn: fn}, opts)
}

// SubscribeNames registers fn for the events of every name in names, on
// one queue: fn sees them in the order they were published (separate
// subscriptions per name each have their own goroutine, and would not).
func (b *Bus) SubscribeNames(name string, names []Name, fn Listener, opts ...SubscribeOption) (Subscription, error) {
	if len(names) == 0 {
		return Subscription{}, fmt.Errorf("event: subscription %q: no event names", name)
	}
	set := make(map[Name]bool, len(names))
	for _, n := range names {
		if n == "" {
			return Subscription{}, fmt.Errorf("event: subscription %q: empty event name", name)
		}
		set[n] = true
	}
	return b.add(&sub{name: name, set: set, fn: fn}, opts)
}

// SubscribePrefix registers fn for every event whose name starts with
// prefix ("tool_exec_" for all tool executions, "" for everything). Meant
// for internal observers: public integrations name the events they need.
func (b *Bus) SubscribePrefix(name, prefix string, fn Listener, opts ...SubscribeOption) (Subscription, error) {
	return b.add(&sub{name: name, prefix: prefix, fn: fn}, opts)
}

var errClosed = errors.New("event: the bus is closed")

func (b *Bus) add(s *sub, opts []SubscribeOption) (Subscription, error) {
	if s.name == "" {
		return Subscription{}, errors.New("event: a subscription needs a name")
	}
	if s.fn == nil {
		return Subscription{}, fmt.Errorf("event: subscription %q: nil listener", s.name)
	}
	s.bus, s.buffer = b, DefaultBuffer
	for _, o := range opts {
		o(s)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return Subscription{}, errClosed
	}
	if b.names[s.name] {
		return Subscription{}, fmt.Errorf("event: a subscription named %q already exists", s.name)
	}
	b.names[s.name] = true
	b.seq++
	s.seq = b.seq
	s.q = make([]Event, 0, min(s.buffer, 64))
	s.wake = make(chan struct{}, 1)
	s.quit = make(chan struct{})
	s.done = make(chan struct{})
	b.subs = append(b.subs, s)
	slices.SortStableFunc(b.subs, func(x, y *sub) int {
		return cmp.Or(cmp.Compare(x.priority, y.priority), cmp.Compare(x.seq, y.seq))
	})
	b.reindex()
	go s.loop(b.logger)
	return Subscription{s: s}, nil
}

// reindex rebuilds the routing view; b.mu is held.
func (b *Bus) reindex() {
	r := &routing{byName: map[Name][]*sub{}, any: len(b.subs) > 0}
	names := map[Name]bool{}
	for _, s := range b.subs {
		switch {
		case s.event != "":
			names[s.event] = true
		case s.set != nil:
			for n := range s.set {
				names[n] = true
			}
		default:
			r.prefix = append(r.prefix, s)
		}
	}
	for _, n := range Names {
		names[n] = true
	}
	for n := range names {
		for _, s := range b.subs {
			if s.matches(n) {
				r.byName[n] = append(r.byName[n], s)
			}
		}
	}
	b.index.Store(r)
}

func (s *sub) matches(n Name) bool {
	if s.event != "" {
		return s.event == n
	}
	if s.set != nil {
		return s.set[n]
	}
	return strings.HasPrefix(string(n), s.prefix)
}

func (b *Bus) remove(s *sub) {
	b.mu.Lock()
	i := slices.Index(b.subs, s)
	if i >= 0 {
		b.subs = slices.Delete(b.subs, i, i+1)
		delete(b.names, s.name)
		b.reindex()
	}
	b.mu.Unlock()
	if i < 0 {
		return
	}
	close(s.quit)
	<-s.done
	b.mu.Lock()
	st := s.stats()
	b.retired.Delivered += st.Delivered
	b.retired.Failed += st.Failed
	b.retired.Panicked += st.Panicked
	b.retired.Dropped += st.Dropped
	b.mu.Unlock()
}

// Watched reports whether the bus has any subscription, so that a
// publisher can skip building events no one would receive. A nil bus has
// none.
func (b *Bus) Watched() bool {
	return b != nil && b.index.Load().any
}

// Publish offers e to every matching subscription without blocking: a
// subscription whose buffer is full drops it and counts the drop. Publish
// never calls a listener itself.
func (b *Bus) Publish(e Event) {
	b.published.Add(1)
	r := b.index.Load()
	subs, ok := r.byName[e.Name]
	if !ok {
		for _, s := range r.prefix {
			if s.matches(e.Name) {
				s.offer(e)
			}
		}
		return
	}
	for _, s := range subs {
		s.offer(e)
	}
}

func (s *sub) offer(e Event) {
	s.qmu.Lock()
	if len(s.q) >= s.buffer {
		s.qmu.Unlock()
		s.dropped.Add(1)
		if s.dropping.CompareAndSwap(false, true) {
			s.bus.logger.Warn("event: listener is too slow; dropping events", "subscription", s.name, "buffer", s.buffer, "event", e.Name)
		}
		return
	}
	s.q = append(s.q, e)
	s.qmu.Unlock()
	s.signal()
	if s.dropping.Load() && s.dropping.CompareAndSwap(true, false) {
		s.bus.logger.Warn("event: listener caught up; events were dropped", "subscription", s.name, "dropped_total", s.dropped.Load())
	}
}

// signal wakes the listener's goroutine unless a wake-up is already
// pending.
func (s *sub) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// enqueue adds e whatever the buffer holds (Flush's markers).
func (s *sub) enqueue(e Event) {
	s.qmu.Lock()
	s.q = append(s.q, e)
	s.qmu.Unlock()
	s.signal()
}

// take returns the queued events and empties the queue; the previous
// batch's slice is reused, so steady delivery allocates nothing.
func (s *sub) take() []Event {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	batch := s.q
	clear(s.spare) // drop references to delivered events
	s.q, s.spare = s.spare[:0], batch
	return batch
}

// loop delivers events to the listener until the subscription ends, then
// delivers what is still queued.
func (s *sub) loop(logger *slog.Logger) {
	defer close(s.done)
	for {
		select {
		case <-s.wake:
			for _, e := range s.take() {
				s.deliver(logger, e)
			}
		case <-s.quit:
			for {
				batch := s.take()
				if len(batch) == 0 {
					return
				}
				for _, e := range batch {
					s.deliver(logger, e)
				}
			}
		}
	}
}

func (s *sub) deliver(logger *slog.Logger, e Event) {
	if e.Name == flushName {
		close(e.Data.(chan struct{}))
		return
	}
	defer func() {
		if p := recover(); p != nil {
			s.panicked.Add(1)
			logger.Warn("event: listener panicked", "subscription", s.name, "event", e.Name, "panic", p)
		}
	}()
	if err := s.fn(e); err != nil {
		s.failed.Add(1)
		logger.Warn("event: listener failed", "subscription", s.name, "event", e.Name, "err", err)
		return
	}
	s.delivered.Add(1)
}

func (s *sub) stats() Stats {
	return Stats{Delivered: s.delivered.Load(), Failed: s.failed.Load(), Panicked: s.panicked.Load(), Dropped: s.dropped.Load()}
}

// Stats returns the bus's totals, over current and past subscriptions.
func (b *Bus) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.retired
	st.Published = b.published.Load()
	for _, s := range b.subs {
		x := s.stats()
		st.Delivered += x.Delivered
		st.Failed += x.Failed
		st.Panicked += x.Panicked
		st.Dropped += x.Dropped
	}
	return st
}

// Flush waits until every event published before the call has been
// handled by its listeners, or ctx is done. Tests and shutdown paths use it.
func (b *Bus) Flush(ctx context.Context) error {
	b.mu.Lock()
	subs := slices.Clone(b.subs)
	b.mu.Unlock()
	for _, s := range subs {
		// A marker event through the same queue: once it comes out, all
		// earlier events have been handled.
		mark := make(chan struct{})
		s.enqueue(Event{Name: flushName, Data: mark})
		select {
		case <-mark:
		case <-s.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// flushName marks Flush's internal events; listeners never see them.
const flushName Name = "\x00flush"

// Close ends every subscription after delivering what is queued. Publish
// after Close delivers nothing.
func (b *Bus) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	subs := slices.Clone(b.subs)
	b.mu.Unlock()
	for _, s := range subs {
		b.remove(s)
	}
	return nil
}
