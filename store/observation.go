package store

import (
	"github.com/orca-agent/orca/scope"

	"context"
	"encoding/json"
	"time"
)

// Observation is one runtime event as a row: DESIGN §3.12's observation
// rows, written whatever else watches the events.
type Observation struct {
	// Seq is assigned by the store: 1, 2, 3… across the store, in write
	// order.
	Seq  int64
	Time time.Time
	Name string
	// Scope is the event's.
	scope.Scope
	// Data is the event as flat JSON (event.Event's MarshalJSON).
	Data json.RawMessage
}

// ObservationFilter selects observation rows; empty fields match all.
type ObservationFilter struct {
	SessionID string
	TurnID    string
	AfterSeq  int64
	// Limit caps the rows returned; 0 means no cap.
	Limit int
}

// Observations is implemented by stores that keep observation rows (both
// of orca's do). Rows need no provisioned session: events of a run that
// never opened one are observations too.
type Observations interface {
	// AppendObservations stores rows in one write, in order. It keeps
	// copies: the caller may reuse rows and their Data once it returns.
	AppendObservations(ctx context.Context, rows []Observation) error
	// Observations returns rows matching f in Seq order.
	Observations(ctx context.Context, f ObservationFilter) ([]Observation, error)
}

// AppendObservations implements Observations.
func (m *Memory) AppendObservations(ctx context.Context, rows []Observation) error {
	if err := m.begin(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range rows {
		m.observations.add(&rows[i])
	}
	return nil
}

// obsRows are the memory store's observation rows, kept without a
// pointer the garbage collector would follow: a store that keeps many (a
// long-running process, a benchmark) holds them in arrays the collector
// does not scan, which it would otherwise do at every cycle. Each row is
// an obsRec, in chunks that never move once allocated, and its strings
// and data are bytes in a slab.
type obsRows struct {
	chunks [][]obsRec
	slabs  [][]byte
	n      int
}

// obsRec is a row: its time, its scope's depth, and where its bytes are
// (the name, the scope's strings and the data, in obsFields order, one
// after the other).
type obsRec struct {
	sec       int64
	nsec      int32
	depth     int32
	slab, off uint32
	lens      [obsFields]uint32
}

// The row's strings, in the order of their bytes.
const (
	obsName = iota
	obsRuntime
	obsRootRuntime
	obsSession
	obsTurn
	obsExecution
	obsParentExecution
	obsData
	obsFields
)

const (
	obsChunk = 1024
	obsSlab  = 64 << 10
)

func (o *obsRows) add(r *Observation) {
	if o.n%obsChunk == 0 {
		size := obsChunk
		if o.n == 0 {
			size = 16 // a store that keeps a few rows holds a few
		}
		o.chunks = append(o.chunks, make([]obsRec, 0, size))
	}
	fields := [obsFields]string{r.Name, r.RuntimeID, r.RootRuntimeID, r.SessionID, r.TurnID, r.ExecutionID, r.ParentExecutionID}
	rec := obsRec{sec: r.Time.Unix(), nsec: int32(r.Time.Nanosecond()), depth: int32(r.Depth)}
	size := len(r.Data)
	for i, f := range fields[:obsData] {
		rec.lens[i] = uint32(len(f))
		size += len(f)
	}
	rec.lens[obsData] = uint32(len(r.Data))
	last := len(o.slabs) - 1
	if last < 0 || cap(o.slabs[last])-len(o.slabs[last]) < size {
		o.slabs = append(o.slabs, make([]byte, 0, max(size, obsSlab)))
		last++
	}
	slab := o.slabs[last]
	rec.slab, rec.off = uint32(last), uint32(len(slab))
	for _, f := range fields[:obsData] {
		slab = append(slab, f...)
	}
	o.slabs[last] = append(slab, r.Data...)
	c := len(o.chunks) - 1
	o.chunks[c] = append(o.chunks[c], rec)
	o.n++
}

// field returns the bytes of field i of rec.
func (o *obsRows) field(rec *obsRec, i int) []byte {
	off := rec.off
	for _, n := range rec.lens[:i] {
		off += n
	}
	return o.slabs[rec.slab][off : off+rec.lens[i] : off+rec.lens[i]]
}

// row returns the row of rec, the Seq-th, with strings and data of its own.
func (o *obsRows) row(rec *obsRec, seq int64) Observation {
	str := func(i int) string { return string(o.field(rec, i)) }
	r := Observation{
		Seq: seq, Time: time.Unix(rec.sec, int64(rec.nsec)), Name: str(obsName),
		Scope: scope.Scope{RuntimeID: str(obsRuntime), RootRuntimeID: str(obsRootRuntime), SessionID: str(obsSession), TurnID: str(obsTurn),
			ExecutionID: str(obsExecution), ParentExecutionID: str(obsParentExecution), Depth: int(rec.depth)},
	}
	if rec.lens[obsData] > 0 {
		r.Data = append(json.RawMessage(nil), o.field(rec, obsData)...)
	}
	return r
}

// Observations implements Observations.
func (m *Memory) Observations(ctx context.Context, f ObservationFilter) ([]Observation, error) {
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	o := &m.observations
	var out []Observation
	// Row Seq is at chunks[(Seq-1)/obsChunk][(Seq-1)%obsChunk]: a reader
	// following the rows (AfterSeq) starts where it left off.
	for seq := max(f.AfterSeq, 0) + 1; seq <= int64(o.n); seq++ {
		rec := &o.chunks[(seq-1)/obsChunk][(seq-1)%obsChunk]
		if f.SessionID != "" && string(o.field(rec, obsSession)) != f.SessionID ||
			f.TurnID != "" && string(o.field(rec, obsTurn)) != f.TurnID {
			continue
		}
		out = append(out, o.row(rec, seq))
		if f.Limit > 0 && len(out) == f.Limit {
			break
		}
	}
	return out, nil
}
