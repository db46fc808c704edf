package store

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/orca-agent/orca/scope"
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
	// AppendObservations stores rows in one write, in order, and sets
	// each row's Seq to the one it was stored with. It keeps copies: the
	// caller may reuse rows and their Data once it returns.
	AppendObservations(ctx context.Context, rows []Observation) error
	// Observations returns rows matching f in Seq order.
	Observations(ctx context.Context, f ObservationFilter) ([]Observation, error)
}

// ObservationHeads is implemented by stores that tell at little cost which
// sessions have rows after a point (both of orca's do): a server that
// follows many sessions asks once for all of them, rather than each
// follower asking for its own.
type ObservationHeads interface {
	// ObservationHeads returns the last Seq of the rows after afterSeq
	// (afterSeq if there are none) and, by session (ObservationFilter's
	// SessionID), the last Seq of each session's rows after afterSeq;
	// rows of no session are in last only. With afterSeq < 0 it returns
	// the last Seq of all rows (0 if none), and no sessions.
	ObservationHeads(ctx context.Context, afterSeq int64) (last int64, sessions map[string]int64, err error)
}

// ObservationHeads implements ObservationHeads.
func (m *Memory) ObservationHeads(ctx context.Context, afterSeq int64) (int64, map[string]int64, error) {
	if err := m.begin(ctx); err != nil {
		return 0, nil, err
	}
	m.obsMu.RLock()
	defer m.obsMu.RUnlock()
	o := &m.observations
	if afterSeq < 0 {
		return int64(o.n), nil, nil
	}
	var sessions map[string]int64
	for seq := afterSeq + 1; seq <= int64(o.n); seq++ {
		rec := &o.chunks[(seq-1)/obsChunk][(seq-1)%obsChunk]
		if id := o.scopes[rec.scope].SessionID; id != "" {
			if sessions == nil {
				sessions = make(map[string]int64)
			}
			sessions[id] = seq
		}
	}
	return max(afterSeq, int64(o.n)), sessions, nil
}

// AppendObservations implements Observations.
func (m *Memory) AppendObservations(ctx context.Context, rows []Observation) error {
	if err := m.begin(ctx); err != nil {
		return err
	}
	m.obsMu.Lock()
	defer m.obsMu.Unlock()
	for i := range rows {
		m.observations.add(&rows[i])
		rows[i].Seq = int64(m.observations.n)
	}
	return nil
}

// obsRows are the memory store's observation rows, kept without a
// pointer the garbage collector would follow: a store that keeps many (a
// long-running process, a benchmark) holds them in arrays the collector
// does not scan, which it would otherwise do at every cycle. Each row is
// an obsRec, in chunks that never move once allocated; its data is bytes
// in a slab, and its name and scope are indexes into the names and scopes
// the rows have, each kept once (a scope is an execution's: rows by the
// hundred share one).
type obsRows struct {
	chunks [][]obsRec
	slabs  [][]byte
	n      int

	names   []string
	nameAt  map[string]uint32
	scopes  []scope.Scope
	scopeAt map[scope.Scope]uint32
	last    uint32 // the scope of the row added last, if any (n > 0)
}

// obsRec is a row: its time, its name's and scope's indexes, and where
// its data is.
type obsRec struct {
	sec         int64
	nsec        int32
	name, scope uint32
	slab, off   uint32
	size        uint32
}

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
	rec := obsRec{sec: r.Time.Unix(), nsec: int32(r.Time.Nanosecond()), name: o.nameOf(r.Name), scope: o.scopeOf(&r.Scope), size: uint32(len(r.Data))}
	last := len(o.slabs) - 1
	if last < 0 || cap(o.slabs[last])-len(o.slabs[last]) < len(r.Data) {
		o.slabs = append(o.slabs, make([]byte, 0, max(len(r.Data), obsSlab)))
		last++
	}
	rec.slab, rec.off = uint32(last), uint32(len(o.slabs[last]))
	o.slabs[last] = append(o.slabs[last], r.Data...)
	c := len(o.chunks) - 1
	o.chunks[c] = append(o.chunks[c], rec)
	o.n++
}

// nameOf returns the index of name, kept (a copy) if it is new.
func (o *obsRows) nameOf(name string) uint32 {
	i, ok := o.nameAt[name]
	if !ok {
		if o.nameAt == nil {
			o.nameAt = make(map[string]uint32)
		}
		i = uint32(len(o.names))
		o.names = append(o.names, strings.Clone(name))
		o.nameAt[o.names[i]] = i
	}
	return i
}

// scopeOf returns the index of sc, kept (a copy) if it is new; the last
// row's is found without a lookup.
func (o *obsRows) scopeOf(sc *scope.Scope) uint32 {
	if o.n > 0 && o.scopes[o.last] == *sc {
		return o.last
	}
	i, ok := o.scopeAt[*sc]
	if !ok {
		if o.scopeAt == nil {
			o.scopeAt = make(map[scope.Scope]uint32)
		}
		kept := scope.Scope{
			RuntimeID: strings.Clone(sc.RuntimeID), RootRuntimeID: strings.Clone(sc.RootRuntimeID), SessionID: strings.Clone(sc.SessionID),
			TurnID: strings.Clone(sc.TurnID), ExecutionID: strings.Clone(sc.ExecutionID), ParentExecutionID: strings.Clone(sc.ParentExecutionID), Depth: sc.Depth,
		}
		i = uint32(len(o.scopes))
		o.scopes = append(o.scopes, kept)
		o.scopeAt[kept] = i
	}
	o.last = i
	return i
}

// row returns the row of rec, the Seq-th, with data of its own.
func (o *obsRows) row(rec *obsRec, seq int64) Observation {
	r := Observation{Seq: seq, Time: time.Unix(rec.sec, int64(rec.nsec)), Name: o.names[rec.name], Scope: o.scopes[rec.scope]}
	if rec.size > 0 {
		r.Data = append(json.RawMessage(nil), o.slabs[rec.slab][rec.off:rec.off+rec.size]...)
	}
	return r
}

// Observations implements Observations.
func (m *Memory) Observations(ctx context.Context, f ObservationFilter) ([]Observation, error) {
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	m.obsMu.RLock()
	defer m.obsMu.RUnlock()
	o := &m.observations
	var out []Observation
	// Row Seq is at chunks[(Seq-1)/obsChunk][(Seq-1)%obsChunk]: a reader
	// following the rows (AfterSeq) starts where it left off.
	for seq := max(f.AfterSeq, 0) + 1; seq <= int64(o.n); seq++ {
		rec := &o.chunks[(seq-1)/obsChunk][(seq-1)%obsChunk]
		if sc := &o.scopes[rec.scope]; f.SessionID != "" && sc.SessionID != f.SessionID || f.TurnID != "" && sc.TurnID != f.TurnID {
			continue
		}
		out = append(out, o.row(rec, seq))
		if f.Limit > 0 && len(out) == f.Limit {
			break
		}
	}
	return out, nil
}
