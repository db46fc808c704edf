package observe

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/orca-agent/orca/store"
)

// RecentRows is about how many of the rows it wrote last a writer keeps
// for Recent, once a reader has asked for them: at 1,000 turns a second
// of a dozen rows each, the last two thirds of a second. A reader further
// behind reads the store.
const RecentRows = 8192

// recentRows are the batches a writer wrote last, in Seq order, each
// following the one before it without a gap: every row the store has
// from the first one held to the last is here (rows another writer adds
// after the last are not known). It holds nothing until on is set.
type recentRows struct {
	on   atomic.Bool
	mu   sync.RWMutex
	segs [][]store.Observation
	n    int
}

// add keeps a batch just written, and reports whether it did (it is not
// to be reused then). A batch that does not follow the last one held
// without a gap (another writer's rows came between, or the store gave
// no Seqs) replaces what is held.
func (t *recentRows) add(batch []store.Observation) bool {
	if !t.on.Load() || len(batch) == 0 {
		return false
	}
	first, last := batch[0].Seq, batch[len(batch)-1].Seq
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := len(t.segs); n > 0 {
		prev := t.segs[n-1]
		if first != prev[len(prev)-1].Seq+1 {
			clear(t.segs)
			t.segs, t.n = t.segs[:0], 0
		}
	}
	if first <= 0 || last-first != int64(len(batch)-1) {
		clear(t.segs)
		t.segs, t.n = t.segs[:0], 0
		return false
	}
	t.segs = append(t.segs, batch)
	t.n += len(batch)
	for t.n-len(t.segs[0]) >= RecentRows {
		t.n -= len(t.segs[0])
		t.segs[0] = nil
		t.segs = t.segs[1:]
	}
	return true
}

// LastSeq returns the Seq of the last row this writer wrote (0: none
// yet). The store gives Seqs in the order rows are written, so every row
// up to it was in the store once it was: a reader that reads the store
// after asking has every row up to it that it selects, and may follow
// on from there (with Recent).
func (r *Rows) LastSeq() int64 { return r.last.Load() }

// Recent returns the rows f selects that this writer wrote after
// f.AfterSeq, up to f.Limit, if it holds every row the store has after
// f.AfterSeq up to the last it wrote, through; ok is false otherwise (the
// reader has fallen behind what it holds, another writer's rows came
// between its batches, or it has not been asked before: it keeps rows
// only once a reader asks), and the rows are to be read from the store.
// Rows another writer adds after this one's last batch are not in them:
// a reader that learns of such rows (orca serve's poll) reads the store.
// The rows' Data are shared: not to be changed.
//
// A reader that waits on WrittenFor, and reads with Recent once woken,
// follows what this writer writes without reading the store: from
// through on, once it has the rows (fewer than f.Limit).
func (r *Rows) Recent(f store.ObservationFilter) (rows []store.Observation, through int64, ok bool) {
	t := &r.recent
	if !t.on.Load() {
		t.on.Store(true)
		return nil, 0, false
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if len(t.segs) == 0 || f.AfterSeq+1 < t.segs[0][0].Seq {
		return nil, 0, false
	}
	tail := t.segs[len(t.segs)-1]
	through = tail[len(tail)-1].Seq
	// The first batch with a row after AfterSeq.
	i := sort.Search(len(t.segs), func(i int) bool {
		seg := t.segs[i]
		return seg[len(seg)-1].Seq > f.AfterSeq
	})
	for ; i < len(t.segs); i++ {
		seg := t.segs[i]
		for _, o := range seg[max(f.AfterSeq+1-seg[0].Seq, 0):] {
			if f.SessionID != "" && o.SessionID != f.SessionID || f.TurnID != "" && o.TurnID != f.TurnID {
				continue
			}
			rows = append(rows, o)
			if f.Limit > 0 && len(rows) == f.Limit {
				return rows, through, true
			}
		}
	}
	return rows, through, true
}
