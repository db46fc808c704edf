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

func (f ObservationFilter) match(o Observation) bool {
	return (f.SessionID == "" || o.SessionID == f.SessionID) && (f.TurnID == "" || o.TurnID == f.TurnID) && o.Seq > f.AfterSeq
}

// AppendObservations implements Observations.
func (m *Memory) AppendObservations(ctx context.Context, rows []Observation) error {
	if err := m.begin(ctx); err != nil {
		return err
	}
	// The rows' data are copied into one array: rows are kept for good,
	// so a batch's rows keeping each other's bytes alive costs nothing.
	size := 0
	for _, r := range rows {
		size += len(r.Data)
	}
	arena := make([]byte, 0, size)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range rows {
		r.Seq = int64(m.observations.n) + 1
		if len(r.Data) == 0 {
			r.Data = nil
		} else {
			start := len(arena)
			arena = append(arena, r.Data...)
			r.Data = json.RawMessage(arena[start:len(arena):len(arena)])
		}
		m.observations.add(r)
	}
	return nil
}

// obsRows are the memory store's observation rows in chunks, so that a
// store that keeps many (a long-running process, a benchmark) never
// copies them to grow.
type obsRows struct {
	chunks [][]Observation
	n      int
}

const obsChunk = 1024

func (o *obsRows) add(r Observation) {
	if o.n%obsChunk == 0 {
		size := obsChunk
		if o.n == 0 {
			size = 16 // a store that keeps a few rows holds a few
		}
		o.chunks = append(o.chunks, make([]Observation, 0, size))
	}
	last := len(o.chunks) - 1
	o.chunks[last] = append(o.chunks[last], r)
	o.n++
}

// Observations implements Observations.
func (m *Memory) Observations(ctx context.Context, f ObservationFilter) ([]Observation, error) {
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []Observation
	for _, chunk := range m.observations.chunks {
		for _, o := range chunk {
			if f.match(o) {
				o.Data = append(json.RawMessage(nil), o.Data...)
				out = append(out, o)
				if f.Limit > 0 && len(out) == f.Limit {
					return out, nil
				}
			}
		}
	}
	return out, nil
}
