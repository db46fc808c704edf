package agent

import (
	"context"
	"iter"
	"sync"

	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/intercept"
)

// Stream is a turn running on its own goroutine, seen as the sequence of its
// events: the per-execution stream a UI renders. The turn never waits for
// the reader: events are buffered until Events yields them.
type Stream struct {
	mu     sync.Mutex
	events []event.Event
	wake   chan struct{} // closed and replaced whenever events grow or the turn ends
	done   bool

	finished chan struct{}
	res      *Result
	err      error
}

// Runner runs executions: an *Executor, or one wrapped in interceptors
// (intercept.Wrap).
type Runner = intercept.Executor[*Runtime, Request, *Result]

// Start starts one execution of req on rt through exec — an *Executor or
// an interceptor chain, whose interceptors see it as they see any run — on
// a goroutine of its own, and returns its stream at once. A req.OnEvent, if
// set, is still called, before the event is streamed. A run an interceptor
// blocks streams no event.
func Start(ctx context.Context, exec Runner, rt *Runtime, req Request) *Stream {
	s := &Stream{wake: make(chan struct{}), finished: make(chan struct{})}
	inner := req.OnEvent
	req.OnEvent = func(ev event.Event) {
		if inner != nil {
			inner(ev)
		}
		s.mu.Lock()
		s.events = append(s.events, ev)
		close(s.wake)
		s.wake = make(chan struct{})
		s.mu.Unlock()
	}
	go func() {
		res, err := exec.Execute(ctx, rt, req)
		s.mu.Lock()
		s.res, s.err, s.done = res, err, true
		close(s.wake)
		s.mu.Unlock()
		close(s.finished)
	}()
	return s
}

// Events yields the turn's events in order, from the first, and ends after
// the last (turn_completed), when the turn is over. It may be ranged over
// more than once, and from several goroutines; stopping early leaves the
// turn running.
func (s *Stream) Events() iter.Seq[event.Event] {
	return func(yield func(event.Event) bool) {
		for i := 0; ; {
			s.mu.Lock()
			batch := s.events[i:len(s.events):len(s.events)]
			done, wake := s.done, s.wake
			s.mu.Unlock()
			for _, ev := range batch {
				if !yield(ev) {
					return
				}
			}
			i += len(batch)
			if len(batch) == 0 {
				if done {
					return
				}
				<-wake
			}
		}
	}
}

// Result waits for the turn to end and returns what Execute returned.
func (s *Stream) Result() (*Result, error) {
	<-s.finished
	return s.res, s.err
}

// Done is closed when the turn has ended.
func (s *Stream) Done() <-chan struct{} { return s.finished }
