package queue

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/orca-agent/orca/intercept"
)

// MetricsOrder is the order of the queue-metrics interceptor: outermost,
// so that queue activity caused by other interceptors is counted too.
const MetricsOrder = -1000

// TurnStats is what the interceptor saw of one run.
type TurnStats struct {
	SessionID    string
	DepthAtStart int
	Enqueued     int64
	Dequeued     int64
}

// Snapshot is the interceptor's totals, for a metrics backend to read.
type Snapshot struct {
	Turns            int64
	Enqueued         int64
	Dequeued         int64
	LastDepthAtStart int64
	MaxDepthAtStart  int64
}

// Metrics is the queue-metrics interceptor: for the length of one run it
// listens to the run's session queue and reports the queue depth at the
// start of the turn and how many messages were enqueued and dequeued while
// the turn ran — one debug log line per turn, OnTurn if set, and totals in
// Snapshot. Counters are atomic; Metrics is safe for concurrent runs.
//
// Two concurrent runs of the same session each attach a listener to the
// same queue, so each counts the other's traffic too: the totals
// double-count. Turns of one session normally run one at a time, so this
// does not arise in practice, but it is the contract.
type Metrics[RT, Q, R any] struct {
	queues    *Manager
	sessionOf func(Q) string
	logger    *slog.Logger

	// OnTurn, if set, receives each run's numbers (a metrics backend's
	// entry point). It is called from the goroutine that ran the turn.
	OnTurn func(TurnStats)

	turns, enqueued, dequeued atomic.Int64
	lastDepth, maxDepth       atomic.Int64
}

// NewMetrics returns the interceptor for the queues of m; sessionOf says
// which session a request belongs to. logger defaults to slog.Default().
func NewMetrics[RT, Q, R any](m *Manager, sessionOf func(Q) string, logger *slog.Logger) *Metrics[RT, Q, R] {
	if logger == nil {
		logger = slog.Default()
	}
	return &Metrics[RT, Q, R]{queues: m, sessionOf: sessionOf, logger: logger}
}

// Order returns MetricsOrder.
func (x *Metrics[RT, Q, R]) Order() int { return MetricsOrder }

// Name returns "queue-metrics".
func (x *Metrics[RT, Q, R]) Name() string { return "queue-metrics" }

// turnListener counts one run's queue traffic.
type turnListener struct{ enq, deq atomic.Int64 }

func (t *turnListener) Enqueued(string, int)        { t.enq.Add(1) }
func (t *turnListener) Dequeued(_ string, n, _ int) { t.deq.Add(int64(n)) }

// Intercept implements intercept.Interceptor.
func (x *Metrics[RT, Q, R]) Intercept(ctx context.Context, rt RT, req Q, next intercept.Next[RT, Q, R]) (R, error) {
	sid := x.sessionOf(req)
	var tl turnListener
	depth := x.queues.Depth(sid)
	detach := x.queues.Listen(sid, &tl)
	defer func() {
		detach()
		st := TurnStats{SessionID: sid, DepthAtStart: depth, Enqueued: tl.enq.Load(), Dequeued: tl.deq.Load()}
		x.turns.Add(1)
		x.enqueued.Add(st.Enqueued)
		x.dequeued.Add(st.Dequeued)
		x.lastDepth.Store(int64(depth))
		for {
			m := x.maxDepth.Load()
			if int64(depth) <= m || x.maxDepth.CompareAndSwap(m, int64(depth)) {
				break
			}
		}
		x.logger.LogAttrs(ctx, slog.LevelDebug, "queue metrics",
			slog.String("session", sid), slog.Int("depth_at_start", depth),
			slog.Int64("enqueued", st.Enqueued), slog.Int64("dequeued", st.Dequeued))
		if x.OnTurn != nil {
			x.OnTurn(st)
		}
	}()
	return next.Proceed(ctx, rt, req)
}

// Snapshot returns the totals so far.
func (x *Metrics[RT, Q, R]) Snapshot() Snapshot {
	return Snapshot{
		Turns: x.turns.Load(), Enqueued: x.enqueued.Load(), Dequeued: x.dequeued.Load(),
		LastDepthAtStart: x.lastDepth.Load(), MaxDepthAtStart: x.maxDepth.Load(),
	}
}
