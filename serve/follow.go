package serve

import (
	"sync"
	"time"

	"github.com/orca-agent/orca/store"
)

// followers are the event streams waiting for rows, by session, for the
// rows another process writes: one poll of the store a Poll for all of
// them (store.ObservationHeads) wakes those whose session has rows they
// have not read. (The server's own rows wake their session's streams at
// once: observe.Rows.WrittenFor.)
type followers struct {
	mu      sync.Mutex
	waiting map[string]map[*waiter]struct{}
}

// waiter is one stream's wait: ch is closed once its session has rows
// after after, what the stream has read.
type waiter struct {
	ch    chan struct{}
	after int64
}

// wait returns a channel closed once the store has rows of session after
// seq (or later ones the caller may have read already: a wake may be
// spurious, never missed). Call it before reading the rows: rows written
// meanwhile wake it then. A stream passes the same w each time, and
// leaves once done.
func (f *followers) wait(session string, w *waiter, seq int64) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	ws := f.waiting[session]
	if ws == nil {
		if f.waiting == nil {
			f.waiting = map[string]map[*waiter]struct{}{}
		}
		ws = map[*waiter]struct{}{}
		f.waiting[session] = ws
	}
	if _, ok := ws[w]; !ok {
		w.ch = make(chan struct{})
		ws[w] = struct{}{}
	}
	w.after = seq
	return w.ch
}

// leave forgets w's wait.
func (f *followers) leave(session string, w *waiter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ws := f.waiting[session]; ws != nil {
		delete(ws, w)
		if len(ws) == 0 {
			delete(f.waiting, session)
		}
	}
}

// any reports whether a stream waits.
func (f *followers) any() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiting) > 0
}

// wake wakes the streams of each session whose last row (heads) is past
// what they have read.
func (f *followers) wake(heads map[string]int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, seq := range heads {
		ws := f.waiting[id]
		for w := range ws {
			if seq > w.after {
				close(w.ch)
				delete(ws, w)
			}
		}
		if len(ws) == 0 {
			delete(f.waiting, id)
		}
	}
}

// pollRows polls the store every Poll for rows written after last (the
// last row there was before any stream opened), while streams wait, and
// wakes their streams.
func (s *Server) pollRows(heads store.ObservationHeads, last int64) {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.Poll)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		if !s.follow.any() {
			// None waits: rows written meanwhile are read by the streams
			// that open later, before they wait; the next poll covers them
			// too, from last.
			continue
		}
		l, sessions, err := heads.ObservationHeads(s.ctx, last)
		if err != nil {
			if s.ctx.Err() == nil {
				s.opts.Logger.Warn("orca serve: polling for rows", "err", err)
			}
			continue
		}
		last = l
		s.follow.wake(sessions)
	}
}
