package event_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/event"
)

// logs collects WARN records.
type logs struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logs) Enabled(context.Context, slog.Level) bool { return true }
func (l *logs) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	msg := r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
	l.msgs = append(l.msgs, msg)
	return nil
}
func (l *logs) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logs) WithGroup(string) slog.Handler      { return l }
func (l *logs) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.msgs)
}

func newBus(t *testing.T) (*event.Bus, *logs) {
	l := &logs{}
	b := event.NewBus(slog.New(l))
	t.Cleanup(func() { b.Close() })
	return b, l
}

type recorder struct {
	mu    sync.Mutex
	names []event.Name
}

func (r *recorder) listen(e event.Event) error {
	r.mu.Lock()
	r.names = append(r.names, e.Name)
	r.mu.Unlock()
	return nil
}

func (r *recorder) got() []event.Name {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.names)
}

func flush(t *testing.T, b *event.Bus) {
	t.Helper()
	if err := b.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestSubscribeByNameAndPrefix(t *testing.T) {
	b, _ := newBus(t)
	var exact, tools, all recorder
	must(t)(b.Subscribe("exact", event.TurnCompleted, exact.listen))
	must(t)(b.SubscribePrefix("tools", "tool_exec_", tools.listen))
	must(t)(b.SubscribePrefix("all", "", all.listen))
	for _, n := range []event.Name{event.TurnStarted, event.ToolExecStarted, event.ToolExecFailed, event.TurnCompleted, "custom_thing"} {
		b.Publish(event.Event{Name: n})
	}
	flush(t, b)
	if got := exact.got(); !slices.Equal(got, []event.Name{event.TurnCompleted}) {
		t.Errorf("exact got %v", got)
	}
	if got := tools.got(); !slices.Equal(got, []event.Name{event.ToolExecStarted, event.ToolExecFailed}) {
		t.Errorf("prefix got %v", got)
	}
	if got := all.got(); len(got) != 5 || got[4] != "custom_thing" {
		t.Errorf("catch-all got %v", got)
	}
	if st := b.Stats(); st.Published != 5 || st.Delivered != 8 || st.Dropped != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func must(t *testing.T) func(event.Subscription, error) event.Subscription {
	return func(s event.Subscription, err error) event.Subscription {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func TestSubscribeRefusesBadInput(t *testing.T) {
	b, _ := newBus(t)
	nop := func(event.Event) error { return nil }
	must(t)(b.Subscribe("dup", event.TurnStarted, nop))
	for _, tc := range []struct {
		err  error
		want string
	}{
		{second(b.Subscribe("dup", event.TurnCompleted, nop)), `"dup" already exists`},
		{second(b.SubscribePrefix("dup", "x", nop)), "already exists"},
		{second(b.Subscribe("", event.TurnStarted, nop)), "needs a name"},
		{second(b.Subscribe("nil", event.TurnStarted, nil)), "nil listener"},
		{second(b.Subscribe("noevent", "", nop)), "no event name"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("error = %v, want %q", tc.err, tc.want)
		}
	}
	b.Close()
	if _, err := b.Subscribe("late", event.TurnStarted, nop); err == nil {
		t.Error("subscribing to a closed bus succeeded")
	}
}

func second(_ event.Subscription, err error) error { return err }

// A failing or panicking listener is counted and logged at WARN; the
// others, and later events, are delivered.
func TestListenerFailuresAreIsolated(t *testing.T) {
	b, l := newBus(t)
	var ok recorder
	failing := must(t)(b.Subscribe("failing", event.TurnStarted, func(event.Event) error { return errors.New("disk full") }))
	panicking := must(t)(b.Subscribe("panicking", event.TurnStarted, func(event.Event) error { panic("oops") }))
	must(t)(b.Subscribe("ok", event.TurnStarted, ok.listen))
	b.Publish(event.Event{Name: event.TurnStarted})
	b.Publish(event.Event{Name: event.TurnStarted})
	flush(t, b)
	if len(ok.got()) != 2 {
		t.Errorf("healthy listener got %v", ok.got())
	}
	if st := failing.Stats(); st.Failed != 2 {
		t.Errorf("failing stats = %+v", st)
	}
	if st := panicking.Stats(); st.Panicked != 2 {
		t.Errorf("panicking stats = %+v", st)
	}
	if st := b.Stats(); st.Failed != 2 || st.Panicked != 2 || st.Delivered != 2 {
		t.Errorf("bus stats = %+v", st)
	}
	text := strings.Join(l.all(), "\n")
	if !strings.Contains(text, "WARN event: listener failed subscription=failing") || !strings.Contains(text, "disk full") ||
		!strings.Contains(text, "WARN event: listener panicked subscription=panicking") {
		t.Errorf("logs:\n%s", text)
	}
}

// A slow listener never stalls Publish: past its buffer, events are dropped,
// counted and reported.
func TestSlowListenerDropsInsteadOfStalling(t *testing.T) {
	b, l := newBus(t)
	started, release := make(chan struct{}), make(chan struct{})
	var seen recorder
	slow := must(t)(b.Subscribe("slow", event.IterationStarted, func(e event.Event) error {
		if len(seen.got()) == 0 {
			close(started)
			<-release
		}
		return seen.listen(e)
	}, event.Buffer(2)))
	b.Publish(event.Event{Name: event.IterationStarted})
	<-started // the listener holds the first event
	for range 10 {
		b.Publish(event.Event{Name: event.IterationStarted}) // must not block
	}
	if st := slow.Stats(); st.Dropped != 8 {
		t.Errorf("dropped = %d, want 8 (buffer 2)", st.Dropped)
	}
	close(release)
	flush(t, b)
	if got := len(seen.got()); got != 3 {
		t.Errorf("delivered %d, want 3", got)
	}
	if st := b.Stats(); st.Dropped != 8 {
		t.Errorf("bus dropped = %d", st.Dropped)
	}
	warned := 0
	for _, m := range l.all() {
		if strings.Contains(m, "too slow; dropping events") {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("drop warnings = %d, want 1 per episode: %v", warned, l.all())
	}
	// After catching up, a new episode is reported again.
	b.Publish(event.Event{Name: event.IterationStarted})
	if !slices.ContainsFunc(l.all(), func(m string) bool { return strings.Contains(m, "caught up") }) {
		t.Errorf("no catch-up report: %v", l.all())
	}
}

func TestUnsubscribeDeliversQueuedThenStops(t *testing.T) {
	b, _ := newBus(t)
	var r recorder
	s := must(t)(b.Subscribe("r", event.TurnStarted, r.listen))
	for range 5 {
		b.Publish(event.Event{Name: event.TurnStarted})
	}
	s.Unsubscribe()
	if got := len(r.got()); got != 5 {
		t.Errorf("after Unsubscribe: %d delivered, want the 5 queued", got)
	}
	b.Publish(event.Event{Name: event.TurnStarted})
	flush(t, b)
	if got := len(r.got()); got != 5 {
		t.Errorf("delivered after Unsubscribe: %d", got)
	}
	// The name is free again.
	must(t)(b.Subscribe("r", event.TurnStarted, r.listen))
	if st := b.Stats(); st.Delivered != 5 {
		t.Errorf("stats keep retired subscriptions: %+v", st)
	}
}

func TestPublishFromManyGoroutines(t *testing.T) {
	b, _ := newBus(t)
	var r recorder
	must(t)(b.SubscribePrefix("all", "", r.listen, event.Buffer(10000)))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 100 {
				b.Publish(event.Event{Name: event.Name(fmt.Sprint("e", i))})
			}
		})
		wg.Go(func() {
			s, err := b.Subscribe(fmt.Sprint("churn", i), event.TurnStarted, r.listen)
			if err == nil {
				s.Unsubscribe()
			}
		})
	}
	wg.Wait()
	flush(t, b)
	if got := len(r.got()); got != 800 {
		t.Errorf("delivered %d of 800", got)
	}
}

func TestPublishAllocatesNothing(t *testing.T) {
	b := event.NewBus(slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer b.Close()
	must(t)(b.Subscribe("one", event.ToolExecCompleted, func(event.Event) error { return nil }, event.Buffer(1<<16)))
	e := event.Event{Name: event.ToolExecCompleted, Data: &event.ToolData{ToolName: "Read"}}
	// testing.AllocsPerRun rounds down, so it cannot see less than one
	// allocation per call: count them over many calls instead, after a
	// warm-up in which the subscription's queue reaches its working size.
	const n = 10000
	for range n {
		b.Publish(e)
	}
	b.Flush(t.Context())
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		b.Publish(e)
	}
	runtime.ReadMemStats(&after)
	if allocs := after.Mallocs - before.Mallocs; allocs > n/100 {
		t.Errorf("%d publishes to one subscriber allocated %d times", n, allocs)
	}
}

func BenchmarkPublish(b *testing.B) {
	for _, n := range []int{0, 1, 10} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			bus := event.NewBus(slog.New(slog.NewTextHandler(io.Discard, nil)))
			defer bus.Close()
			for i := range n {
				bus.Subscribe(fmt.Sprint("s", i), event.ToolExecCompleted, func(event.Event) error { return nil })
			}
			e := event.Event{Name: event.ToolExecCompleted, Data: &event.ToolData{ToolName: "Read"}}
			b.ReportAllocs()
			for b.Loop() {
				bus.Publish(e)
			}
			b.StopTimer()
			st := bus.Stats()
			b.ReportMetric(float64(st.Dropped)/float64(b.N), "dropped/op")
		})
	}
}

// A subscription to several names sees them in publish order (one queue);
// it refuses an empty set, and takes no other name.
func TestSubscribeNamesKeepsOrder(t *testing.T) {
	b, _ := newBus(t)
	var r recorder
	must(t)(b.SubscribeNames("both", []event.Name{event.TurnStarted, event.TurnCompleted}, r.listen))
	var want []event.Name
	for range 200 {
		for _, n := range []event.Name{event.TurnStarted, event.IterationStarted, event.TurnCompleted, "custom"} {
			b.Publish(event.Event{Name: n})
			if n == event.TurnStarted || n == event.TurnCompleted {
				want = append(want, n)
			}
		}
	}
	flush(t, b)
	if got := r.got(); !slices.Equal(got, want) {
		t.Errorf("got %d events out of order or filtered wrongly (first: %v)", len(got), got[:min(4, len(got))])
	}
	if _, err := b.SubscribeNames("none", nil, r.listen); err == nil {
		t.Error("an empty set was accepted")
	}
}
