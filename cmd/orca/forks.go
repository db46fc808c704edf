package main

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orca-agent/orca/event"
)

// forkWait bounds how long the turn's events wait for the bus to deliver
// the events of background forks published before them.
const forkWait = time.Second

// forkFeed hands a session's events to the renderer one at a time: the
// turn's own (Request.OnEvent), and those of its subagent forks (depth ≥ 1).
//
// A foreground fork's events come both through OnEvent and through the
// process's event bus; a background fork (Task with run_in_background) has
// no OnEvent, so its events come through the bus only. The feed subscribes
// to the bus for the session's fork events and shows each event once,
// from whichever path delivers it first: both carry the same Data pointer,
// which identifies it. At the points where a background fork's events
// matter to what follows (a tool that reads or stops background tasks
// completes, the turn completes), the turn's event first waits a moment
// for the bus to deliver what was published before it.
type forkFeed struct {
	bus     *event.Bus
	session string
	next    func(event.Event)
	// oneTurn: nothing is shown after the first turn_completed of depth
	// 0 (orca run, whose last event it is).
	oneTurn bool
	sub     event.Subscription
	// background: a background fork was started (or the bus delivered a
	// fork event first); from then on the turn's sync points wait for the
	// bus.
	background atomic.Bool

	mu sync.Mutex
	// seen holds the events shown by one path and not yet delivered by
	// the other, by Data: true if the bus delivered it.
	seen    map[any]bool
	stopped bool

	stopOnce sync.Once
}

// newForkFeed returns the feed of session's events to next.
func newForkFeed(bus *event.Bus, session string, next func(event.Event), oneTurn bool) (*forkFeed, error) {
	f := &forkFeed{bus: bus, session: session, next: next, oneTurn: oneTurn, seen: map[any]bool{}}
	if next == nil {
		f.next = func(event.Event) {}
	}
	sub, err := bus.SubscribePrefix("cli:forks", "", f.fromBus, event.Buffer(1<<14))
	if err != nil {
		return nil, err
	}
	f.sub = sub
	return f, nil
}

// identity returns what identifies ev on both paths: its Data pointer.
func identity(ev event.Event) (any, bool) {
	if ev.Data == nil || reflect.TypeOf(ev.Data).Kind() != reflect.Pointer {
		return nil, false
	}
	return ev.Data, true
}

// syncPoint reports whether ev, of depth 0, comes after background forks'
// events it should follow on the screen.
func syncPoint(ev event.Event) bool {
	switch d := ev.Data.(type) {
	case *event.TurnCompletedData:
		return true
	case *event.ToolData:
		return ev.Name != event.ToolExecStarted && (d.ToolName == "AgentOutput" || d.ToolName == "TaskStop")
	}
	return false
}

// startsBackground reports whether ev starts a background fork.
func startsBackground(ev event.Event) bool {
	d, ok := ev.Data.(*event.ToolData)
	if !ok || ev.Name != event.ToolExecStarted || d.ToolName != "Task" {
		return false
	}
	var in struct {
		Background bool `json:"run_in_background"`
	}
	return json.Unmarshal(d.Input, &in) == nil && in.Background
}

// fromTurn is the session's OnEvent.
func (f *forkFeed) fromTurn(ev event.Event) {
	if startsBackground(ev) {
		f.background.Store(true)
	}
	if ev.Depth == 0 && f.background.Load() && syncPoint(ev) {
		ctx, cancel := context.WithTimeout(context.Background(), forkWait)
		f.bus.Flush(ctx) // best effort: the screen's order, nothing else
		cancel()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if ev.Depth > 0 {
		if k, ok := identity(ev); ok {
			if _, dup := f.seen[k]; dup {
				delete(f.seen, k)
				return
			}
			f.seen[k] = false
		}
	}
	f.next(ev)
	if ev.Depth == 0 && ev.Name == event.TurnCompleted {
		// Every foreground fork of the turn has ended, and OnEvent brought
		// all its events: what the bus brought first and OnEvent did not
		// is a background fork's, which OnEvent never brings.
		for k, bus := range f.seen {
			if bus {
				delete(f.seen, k)
			}
		}
		f.stopped = f.stopped || f.oneTurn
	}
}

// fromBus receives every event of the bus.
func (f *forkFeed) fromBus(ev event.Event) error {
	if ev.Depth == 0 || ev.SessionID != f.session {
		return nil
	}
	k, ok := identity(ev)
	if !ok {
		return nil // OnEvent brings it, if it is a foreground fork's
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return nil
	}
	if bus, dup := f.seen[k]; dup && !bus {
		delete(f.seen, k)
		return nil
	}
	f.seen[k] = true
	f.background.Store(true)
	f.next(ev)
	return nil
}

// stop ends the bus's part: fork events not delivered yet are not shown.
// It is idempotent.
func (f *forkFeed) stop() {
	f.stopOnce.Do(func() {
		f.mu.Lock()
		f.stopped = true
		f.mu.Unlock()
		f.sub.Unsubscribe()
	})
}
