package serve

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/orca-agent/orca/store"
)

func (s *Server) sessionEvents(w http.ResponseWriter, r *http.Request) error {
	return s.stream(w, r, store.ObservationFilter{SessionID: r.PathValue("id")})
}

func (s *Server) turnEvents(w http.ResponseWriter, r *http.Request) error {
	return s.stream(w, r, store.ObservationFilter{SessionID: r.PathValue("id"), TurnID: r.PathValue("turn")})
}

// stream sends the observation rows f selects as Server-Sent Events —
// those after Last-Event-ID (or ?after=) first, then new ones as they are
// written — until the client goes, the server closes, or (with
// ?follow=false) the rows there are have been sent. Each event's id is
// its row's sequence number, its event name the runtime event's, its data
// the event's flat JSON.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, f store.ObservationFilter) error {
	if !s.open(f.SessionID) {
		if err := s.ours(r.Context(), f.SessionID); err != nil {
			return err
		}
	}
	rows, ok := s.app.Store().(store.Observations)
	if !ok {
		return &apiError{status: http.StatusNotImplemented, code: "no_rows", msg: "this store keeps no observation rows"}
	}
	last := r.Header.Get("Last-Event-ID")
	field := "Last-Event-ID"
	if last == "" {
		last, field = r.URL.Query().Get("after"), "after"
	}
	if last != "" {
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n < 0 {
			return badRequest(field, "%s: want an event id (a whole number), got %q", field, last)
		}
		f.AfterSeq = n
	}
	follow := true
	if v := r.URL.Query().Get("follow"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return badRequest("follow", "follow: want true or false, got %q", v)
		}
		follow = b
	}
	if n := s.streams.Add(1); n > int64(s.opts.MaxStreams) {
		s.streams.Add(-1)
		return &apiError{status: http.StatusServiceUnavailable, code: "too_many_streams", msg: fmt.Sprintf("%d event streams are open, the most this server keeps", s.opts.MaxStreams)}
	}
	defer s.streams.Add(-1)
	// A client that follows a session's events can see its questions
	// (Elicitations).
	s.watch(f.SessionID, 1)
	defer s.watch(f.SessionID, -1)

	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// Events are written as they are read, through the connection's own
	// buffer, and flushed once a page is out: a stream holds no more than
	// a page of rows (pageRows) while it sends them, and nothing while it
	// waits.
	flush := func() error {
		rc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
		return rc.Flush()
	}
	// The retry hint, and the headers out now: the client knows the
	// stream is open before any event.
	rc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
	if _, err := io.WriteString(w, "retry: 1000\n\n"); err != nil || flush() != nil {
		return nil
	}
	f.Limit = pageRows
	heartbeat := time.NewTicker(s.opts.Heartbeat)
	defer heartbeat.Stop()
	var poll <-chan time.Time // each stream polls if the store tells no heads
	if s.follow == nil {
		t := time.NewTicker(s.opts.Poll)
		defer t.Stop()
		poll = t.C
	}
	var line []byte
	var me waiter
	if s.follow != nil {
		defer s.follow.leave(f.SessionID, &me)
	}
	writer := s.app.Rows()
	// ours: what woke the stream is a batch of the server's own rows,
	// which its writer holds (observe.Rows.Recent): they are read there,
	// not from the store. Other processes' rows (the poll) are read
	// from the store.
	ours := false
	for {
		// Wait for the rows written after this read, not before it: the
		// server's own (of this session only), and other processes'.
		var written, polled <-chan struct{}
		if writer != nil {
			written = writer.WrittenFor(f.SessionID)
		}
		if s.follow != nil {
			polled = s.follow.wait(f.SessionID, &me, f.AfterSeq)
		}
		var page []store.Observation
		seen := f.AfterSeq // the rows up to it that f selects are read
		if ours {
			page, seen, ours = writer.Recent(f)
		}
		if !ours {
			if writer != nil {
				seen = writer.LastSeq() // in the store before the read
			}
			s.reads.Add(1)
			var err error
			if page, err = rows.Observations(r.Context(), f); err != nil {
				if r.Context().Err() != nil {
					return nil
				}
				s.opts.Logger.Warn("orca serve: reading events", "session", f.SessionID, "err", err)
				return nil // the headers are out: the client reconnects
			}
		}
		if len(page) > 0 {
			rc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
			for _, o := range page {
				line = append(line[:0], "id: "...)
				line = strconv.AppendInt(line, o.Seq, 10)
				line = append(line, "\nevent: "...)
				line = append(line, o.Name...)
				line = append(line, "\ndata: "...)
				if _, err := w.Write(line); err != nil {
					return nil // the client went, or read too slowly: it reconnects
				}
				if _, err := w.Write(o.Data); err != nil {
					return nil
				}
				if _, err := io.WriteString(w, "\n\n"); err != nil {
					return nil
				}
				f.AfterSeq = o.Seq
			}
			if err := flush(); err != nil {
				return nil
			}
		}
		if len(page) == pageRows {
			continue
		}
		// Rows of others up to what was seen are not f's: the stream
		// follows on from there (with its writer's rows, once one
		// wakes it).
		f.AfterSeq = max(f.AfterSeq, seen)
		page = nil
		if !follow {
			return nil
		}
		ours = false
		select {
		case <-r.Context().Done():
			return nil
		case <-s.ctx.Done():
			return nil
		case <-written:
			ours = true
		case <-polled:
		case <-poll:
		case <-heartbeat.C:
			rc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil || flush() != nil {
				return nil
			}
		}
	}
}
