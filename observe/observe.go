// Package observe turns runtime events into records: observation rows in
// the store (every event but the streamed deltas, whether or not anything
// else watches) and, when
// enabled, a run's timeline as JSON lines in .orca/runs/<run-id>/events.jsonl.
// Both subscribe to the process's event bus: they only watch, and their
// failures never reach a run.
package observe

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/store"
	ws "github.com/orca-agent/orca/workspace"
)

// Buffer is how many events a writer may hold before the bus drops
// (counted) rather than stall a run.
const Buffer = 1 << 16

// Rows writes every event of a bus as an observation row, in batches, off
// the runs' path.
type Rows struct {
	to      store.Observations
	sub     event.Subscription
	logger  *slog.Logger
	mu      sync.Mutex // guards pending, arena and enc
	wmu     sync.Mutex // serialises writes, so rows keep the events' order
	pending []store.Observation
	arena   []byte // the pending rows' Data
	enc     event.Encoder
	// spareRows and spareArena are a written batch's, for the next.
	spareRows  []store.Observation
	spareArena []byte
	// recent are the batches written last, for Recent; last is the Seq
	// of the last row written.
	recent  recentRows
	last    atomic.Int64
	deltas  bool // llm_delta events are rows too
	failed  atomic.Uint64
	written atomic.Uint64
	// next is closed (and replaced) once a batch is written; bySession
	// holds a channel per session a reader waits for, closed (and
	// dropped) once a batch with rows of that session is written.
	nmu       sync.Mutex
	next      chan struct{}
	bySession map[string]chan struct{}
	stop      chan struct{}
	done      chan struct{}
	// ended asks the loop to write the batch now: a turn ended.
	ended chan struct{}
	// added counts the rows added (mu); taken, those a write has taken
	// (mu); handled, those whose write is over, written or lost (nmu),
	// when batchDone is closed (and replaced): for Flush.
	added, taken, handled int64
	batchDone             chan struct{}
}

// BatchSize and FlushEvery bound how long a row waits before it is written.
const (
	BatchSize  = 256
	FlushEvery = 200 * time.Millisecond
)

// RowsOption configures NewRows.
type RowsOption func(*Rows)

// WithDeltas keeps llm_delta events as rows too. Without it they are not
// written: a streamed answer is a delta per few tokens, and its whole
// text is in the llm_call_completed row after them.
func WithDeltas() RowsOption { return func(r *Rows) { r.deltas = true } }

// NewRows starts writing bus's events to to — every event but the
// llm_delta ones (see WithDeltas). Close it to write what is pending:
// nothing is lost on a clean shutdown.
func NewRows(bus *event.Bus, to store.Observations, logger *slog.Logger, opts ...RowsOption) (*Rows, error) {
	if logger == nil {
		logger = slog.Default()
	}
	r := &Rows{to: to, logger: logger, next: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{}), ended: make(chan struct{}, 1), batchDone: make(chan struct{})}
	for _, o := range opts {
		o(r)
	}
	sub, err := bus.SubscribePrefix("observation-rows", "", r.add, event.Buffer(Buffer), event.Priority(-1000))
	if err != nil {
		return nil, err
	}
	r.sub = sub
	go r.loop()
	return r, nil
}

func (r *Rows) add(e event.Event) error {
	if e.Name == event.LLMDelta && !r.deltas {
		return nil
	}
	r.mu.Lock()
	// The batch's rows are encoded into one buffer (the store keeps
	// copies), reused once the batch is written.
	start := len(r.arena)
	buf, err := r.enc.Append(r.arena, e)
	if err != nil {
		r.mu.Unlock()
		return fmt.Errorf("observation row for %s: %w", e.Name, err)
	}
	r.arena = buf
	r.pending = append(r.pending, store.Observation{
		Time: e.Time, Name: string(e.Name), Scope: e.Scope, Data: buf[start:len(buf):len(buf)],
	})
	r.added++
	// A batch is written when full, and when a turn ends: a reader
	// following the rows (orca serve) sees the end without waiting. The
	// loop writes the latter, so that the events keep coming meanwhile:
	// the turns that end while a batch is written go in the next one
	// together, rather than one write each.
	full := len(r.pending) >= BatchSize
	ended := e.Name == event.TurnCompleted && e.Scope.Depth == 0
	r.mu.Unlock()
	switch {
	case full:
		r.flush()
	case ended:
		select {
		case r.ended <- struct{}{}:
		default: // asked already
		}
	}
	return nil
}

func (r *Rows) loop() {
	defer close(r.done)
	t := time.NewTicker(FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			r.flush()
		case <-r.ended:
			r.flush()
		case <-r.stop:
			return
		}
	}
}

func (r *Rows) flush() {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.mu.Lock()
	batch, arena := r.pending, r.arena
	r.pending, r.arena = r.spareRows, r.spareArena
	r.spareRows, r.spareArena = nil, nil
	r.taken += int64(len(batch))
	taken := r.taken
	r.mu.Unlock()
	if len(batch) == 0 {
		r.keep(batch, arena)
		return
	}
	kept := false
	defer func() {
		r.nmu.Lock()
		r.handled = taken
		close(r.batchDone)
		r.batchDone = make(chan struct{})
		r.nmu.Unlock()
	}()
	if err := r.to.AppendObservations(context.Background(), batch); err != nil {
		r.failed.Add(uint64(len(batch)))
		r.logger.Warn("observation rows lost", "rows", len(batch), "err", err)
	} else {
		r.written.Add(uint64(len(batch)))
		r.last.Store(batch[len(batch)-1].Seq)
		kept = r.recent.add(batch) // before the readers wake
		r.nmu.Lock()
		close(r.next)
		r.next = make(chan struct{})
		if len(r.bySession) > 0 {
			for i := range batch {
				if ch, ok := r.bySession[batch[i].SessionID]; ok {
					close(ch)
					delete(r.bySession, batch[i].SessionID)
				}
			}
		}
		r.nmu.Unlock()
	}
	if kept {
		// The batch is the recent rows' now: the next one gets slices
		// of its own, as large (up to what keep keeps).
		batch, arena = make([]store.Observation, 0, min(cap(batch), 4*BatchSize)), make([]byte, 0, min(cap(arena), 1<<20))
	}
	r.keep(batch, arena)
}

// Written returns a channel that is closed once the next batch of rows
// is in the store: a reader following the rows (orca serve's event
// streams) waits on it instead of polling.
func (r *Rows) Written() <-chan struct{} {
	r.nmu.Lock()
	defer r.nmu.Unlock()
	return r.next
}

// WrittenFor returns a channel that is closed once a batch with rows of
// session (its own and its forks': the rows store.ObservationFilter's
// SessionID selects) is in the store. A reader following one session's
// rows waits on it, and is not woken by the other sessions' rows. A
// channel no batch has closed yet is shared by the readers of its
// session and kept until one does.
func (r *Rows) WrittenFor(session string) <-chan struct{} {
	r.nmu.Lock()
	defer r.nmu.Unlock()
	ch, ok := r.bySession[session]
	if !ok {
		if r.bySession == nil {
			r.bySession = make(map[string]chan struct{})
		}
		ch = make(chan struct{})
		r.bySession[session] = ch
	}
	return ch
}

// keep hands a written batch's slices back for the next batch (not too
// large ones: a burst's buffer is let go).
func (r *Rows) keep(batch []store.Observation, arena []byte) {
	clear(batch)
	r.mu.Lock()
	defer r.mu.Unlock()
	if cap(batch) <= 4*BatchSize {
		r.spareRows = batch[:0]
	}
	if cap(arena) <= 1<<20 {
		r.spareArena = arena[:0]
	}
}

// Stats says what happened to the events: rows written, rows a write lost,
// events the bus dropped because the writer fell behind.
type Stats struct{ Written, Failed, Dropped uint64 }

// Stats returns the writer's counts.
func (r *Rows) Stats() Stats {
	return Stats{Written: r.written.Load(), Failed: r.failed.Load(), Dropped: r.sub.Stats().Dropped}
}

// Flush returns once every row of an event published before the call is
// written (or lost: Stats): with the batch being written, or the next,
// which it asks for at once — not a write of its own after them.
func (r *Rows) Flush(ctx context.Context, bus *event.Bus) error {
	if err := bus.Flush(ctx); err != nil {
		return err
	}
	r.mu.Lock()
	target := r.added
	r.mu.Unlock()
	for {
		r.nmu.Lock()
		handled, batch := r.handled, r.batchDone
		r.nmu.Unlock()
		if handled >= target {
			return nil
		}
		select {
		case r.ended <- struct{}{}:
		default: // asked already
		}
		select {
		case <-batch:
		case <-r.done: // the loop has stopped (Close): written here
			r.flush()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close stops watching, then writes what is pending.
func (r *Rows) Close() error {
	r.sub.Unsubscribe() // delivers what the bus holds for us
	close(r.stop)
	<-r.done
	r.flush()
	if n := r.failed.Load(); n > 0 {
		return fmt.Errorf("observe: %d observation rows could not be written", n)
	}
	return nil
}

// RunsDir is where timelines live, below the workspace root.
const RunsDir = ".orca/runs"

// Timeline writes every event of a bus to <workspace>/.orca/runs/<run>/events.jsonl.
type Timeline struct {
	path string
	f    *os.File
	w    *bufio.Writer
	sub  event.Subscription
	mu   sync.Mutex
	err  error
}

// NewTimeline starts a run's timeline.
func NewTimeline(bus *event.Bus, workspace, run string) (*Timeline, error) {
	if run == "" || filepath.Base(run) != run {
		return nil, fmt.Errorf("observe: bad run id %q", run)
	}
	// Not through a link out of the workspace (a cloned repository's
	// .orca -> ~/x).
	dir, err := ws.Confine(workspace, RunsDir+"/"+run)
	if err != nil {
		return nil, fmt.Errorf("observe: timeline: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("observe: timeline: %w", err)
	}
	path := filepath.Join(dir, "events.jsonl")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("observe: timeline: %w", err)
	}
	t := &Timeline{path: path, f: f, w: bufio.NewWriter(f)}
	t.sub, err = bus.SubscribePrefix("timeline:"+run, "", t.add, event.Buffer(Buffer))
	if err != nil {
		f.Close()
		return nil, err
	}
	return t, nil
}

// Path returns the timeline file.
func (t *Timeline) Path() string { return t.path }

func (t *Timeline) add(e event.Event) error {
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return t.err
	}
	if _, err := t.w.Write(append(line, '\n')); err != nil {
		t.err = err
	}
	return t.err
}

// Close writes what is pending and closes the file.
func (t *Timeline) Close() error {
	t.sub.Unsubscribe()
	t.mu.Lock()
	defer t.mu.Unlock()
	err := errors.Join(t.err, t.w.Flush(), t.f.Close())
	if err != nil {
		return fmt.Errorf("observe: timeline %s: %w", t.path, err)
	}
	return nil
}
