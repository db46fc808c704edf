package serve

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/media"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
)

type messageRequest struct {
	// Text is the user's message. Required.
	Text string `json:"text"`
	// OutputSchema asks the turn for its answer as a JSON value of it.
	OutputSchema json.RawMessage `json:"output_schema"`
	// Attachments are images and PDFs shown to the model with Text.
	Attachments []attachment `json:"attachments"`
}

// attachment is an image or a PDF a message carries: its bytes in base64.
type attachment struct {
	// MediaType is what the sender says it is; the bytes decide.
	MediaType string `json:"media_type"`
	Data      []byte `json:"data"`
	// Name is the file's name, for the model and for people.
	Name string `json:"name"`
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) error {
	var req messageRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Text) == "" {
		return badRequest("text", "text: the message is empty")
	}
	var out *agent.Output
	if len(req.OutputSchema) > 0 && string(req.OutputSchema) != "null" {
		out = &agent.Output{Schema: req.OutputSchema}
		if err := out.Check(); err != nil {
			return badRequest("output_schema", "output_schema: %v", err)
		}
	}
	var shown []*llm.Media
	text := req.Text
	for i, a := range req.Attachments {
		field := fmt.Sprintf("attachments[%d]", i)
		if len(a.Data) == 0 {
			return badRequest(field, "%s: data is empty: want the file's bytes in base64", field)
		}
		m, note, err := media.Prepare(a.Data, cmp.Or(a.Name, field))
		if err != nil {
			return badRequest(field, "%s: %v", field, err)
		}
		if a.MediaType != "" && a.MediaType != m.MediaType && note == "" {
			note = fmt.Sprintf("Sent as %s, it is %s.", a.MediaType, m.MediaType)
		}
		shown = append(shown, m)
		text += "\n\n" + media.Attached(m, note)
	}
	e, err := s.entryOf(r.Context(), r.PathValue("id"), false)
	if err != nil {
		return err
	}
	if err := s.lockForMessage(r.Context(), e); err != nil {
		return err
	}
	defer e.mu.Unlock()
	if e.busy && len(shown) > 0 {
		return &apiError{status: http.StatusConflict, code: "turn_running", msg: fmt.Sprintf("session %s has a turn running, and attachments cannot join it: send them when it ends", e.ls.ID())}
	}
	if e.busy {
		// Into the running turn, or the next one: one writer.
		e.ls.Runtime().Queues().Enqueue(e.ls.ID(), req.Text)
		writeJSON(w, http.StatusAccepted, map[string]any{"queued": true, "turn_id": e.ls.CurrentTurn()})
		return nil
	}
	// A turn would fail at once: say so here, naming the call to decide.
	// Only the session's writer parks its calls: if it has parked none,
	// none waits (the store is asked whether one it parked is decided).
	if e.ls.Parked() != nil {
		parked, err := s.app.Store().ParkedCalls(r.Context(), store.ParkFilter{SessionID: e.ls.ID(), Status: store.ParkPending})
		if err != nil {
			return err
		}
		if len(parked) > 0 {
			p := parked[0]
			return &apiError{status: http.StatusConflict, code: "awaiting_approval", msg: fmt.Sprintf(
				"session %s waits for a decision on its parked %s call %s (%s): approve or deny it first (POST /v1/approvals/%s)", e.ls.ID(), p.ToolName, p.ID, p.Reason, p.ID)}
		}
	}
	e.setBusy(true)
	id := session.NewTurnID()
	e.track(&turnState{ID: id, Status: "running", StartedAt: time.Now().UTC(), output: out})
	s.wg.Add(1)
	go s.run(e, id, text, out, session.WithMedia(shown...))
	writeJSON(w, http.StatusAccepted, map[string]any{"queued": false, "turn_id": id})
	return nil
}

// run runs turns of e until no message waits: the first is id's, with
// opts, and its result is returned.
func (s *Server) run(e *entry, id, text string, out *agent.Output, opts ...session.RunOption) (first *agent.Result) {
	defer s.wg.Done()
	for n := 0; ; n++ {
		res, err := e.ls.Run(s.ctx, text, append(opts, session.WithTurnID(id), session.WithOutput(out))...)
		if n == 0 {
			first = res
		}
		opts = nil
		if w := s.app.Rows(); w != nil {
			// The turn's events are rows before its status says it ended:
			// a client that reads them then (?follow=false) has them all.
			if err := w.Flush(s.ctx, s.app.Services().Bus); err != nil && s.ctx.Err() == nil {
				s.opts.Logger.Warn("orca serve: writing a turn's events", "session", e.ls.ID(), "turn", id, "err", err)
			}
		}
		e.mu.Lock()
		e.finished(id, res, err)
		queued := e.ls.Runtime().Queues().Drain(e.ls.ID())
		if len(queued) == 0 || s.ctx.Err() != nil {
			e.setBusy(false)
			e.mu.Unlock()
			return
		}
		id, text, out = session.NewTurnID(), strings.Join(queued, "\n\n"), nil
		e.track(&turnState{ID: id, Status: "running", StartedAt: time.Now().UTC()})
		e.mu.Unlock()
	}
}

// lockForMessage locks e.mu once e is idle, or runs a turn that has not
// ended. A turn whose turn_completed is written, its goroutine returning
// (its checkpoint taken, its rows flushed), takes no more messages: one
// queued then would start a turn of its own, whose id the poster is not
// told. So a client that posts as soon as it sees a turn end starts a
// turn, and is told its id.
func (s *Server) lockForMessage(ctx context.Context, e *entry) error {
	for {
		e.mu.Lock()
		cur := e.ls.CurrentTurn()
		if !e.busy || cur != "" && !s.ended(ctx, cur) {
			return nil
		}
		idle := e.idle
		e.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// setBusy marks e busy or idle; e.mu is held.
func (e *entry) setBusy(b bool) {
	switch {
	case b && !e.busy:
		e.idle = make(chan struct{})
	case !b && e.busy:
		close(e.idle)
	}
	e.busy = b
}

// claim makes e busy for the caller, waiting for a turn that has ended and
// is returning (its events can be seen before it has returned); a turn
// still running is an error. e.mu is not held.
func (s *Server) claim(ctx context.Context, e *entry) error {
	for {
		e.mu.Lock()
		if !e.busy {
			e.setBusy(true)
			e.mu.Unlock()
			return nil
		}
		idle := e.idle
		e.mu.Unlock()
		if cur := e.ls.CurrentTurn(); cur != "" && !s.ended(ctx, cur) {
			return &apiError{status: http.StatusConflict, code: "turn_running", msg: fmt.Sprintf("session %s has a turn running: interrupt it, or wait for it to end", e.ls.ID())}
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ended reports whether turn's turn_completed row is written.
func (s *Server) ended(ctx context.Context, turn string) bool {
	t := turnState{ID: turn}
	return s.endedInRows(ctx, &t) == nil && t.EndedAt != nil
}

// release makes e idle again after claim.
func (e *entry) release() {
	e.mu.Lock()
	e.setBusy(false)
	e.mu.Unlock()
}

// track keeps a turn's state, forgetting the oldest finished ones.
func (e *entry) track(t *turnState) {
	e.turns[t.ID] = t
	e.order = append(e.order, t.ID)
	for len(e.order) > keptTurns {
		delete(e.turns, e.order[0])
		e.order = e.order[1:]
	}
}

func (e *entry) finished(id string, res *agent.Result, err error) {
	t := e.turns[id]
	if t == nil {
		return
	}
	now := time.Now().UTC()
	t.EndedAt = &now
	switch {
	case res != nil:
		t.Status, t.Answer, t.Output, t.Reason = string(res.StopReason), res.Answer, res.Output, res.Reason
		t.Iterations, t.ToolCalls, t.Usage = res.Iterations, res.ToolCalls, res.Usage
		if res.Err != nil {
			t.Error = res.Err.Error()
		}
	case err != nil:
		t.Status, t.Error = string(agent.StopFailed), err.Error()
	}
}

func (s *Server) getTurn(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entryOf(r.Context(), r.PathValue("id"), false)
	if err != nil {
		return err
	}
	e.mu.Lock()
	t := e.turns[r.PathValue("turn")]
	var out turnState
	if t != nil {
		out = *t
	}
	e.mu.Unlock()
	if t == nil {
		return &apiError{status: http.StatusNotFound, code: "not_found", msg: fmt.Sprintf("no turn %s this server ran in session %s (its events may still be read)", r.PathValue("turn"), r.PathValue("id"))}
	}
	if out.EndedAt == nil {
		// The rows are the log: a client that saw the turn end in its
		// events sees it ended here, even before the turn's goroutine
		// has returned.
		if err := s.endedInRows(r.Context(), &out); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// endedInRows fills t from its turn_completed row, if that is written
// after its last turn_started (a turn that parked has one per attempt).
func (s *Server) endedInRows(ctx context.Context, t *turnState) error {
	rows, ok := s.app.Store().(store.Observations)
	if !ok {
		return nil
	}
	all, err := rows.Observations(ctx, store.ObservationFilter{TurnID: t.ID})
	if err != nil {
		return err
	}
	for i := len(all) - 1; i >= 0; i-- {
		o := all[i]
		if o.Name == "turn_started" && o.Depth == 0 {
			return nil // an attempt that went on after a decision runs
		}
		if o.Name != "turn_completed" || o.Depth != 0 {
			continue
		}
		var d struct {
			StopReason string          `json:"stop_reason"`
			Answer     string          `json:"answer"`
			Output     json.RawMessage `json:"output"`
			Reason     string          `json:"reason"`
			Error      string          `json:"error"`
			Iterations int             `json:"iterations"`
			ToolCalls  int             `json:"tool_calls"`
			Usage      llm.Usage       `json:"usage"`
		}
		if err := json.Unmarshal(o.Data, &d); err != nil {
			return err
		}
		ended := o.Time.UTC()
		t.Status, t.Answer, t.Output, t.Reason, t.Error = d.StopReason, d.Answer, d.Output, d.Reason, d.Error
		t.Iterations, t.ToolCalls, t.Usage, t.EndedAt = d.Iterations, d.ToolCalls, d.Usage, &ended
		return nil
	}
	return nil
}

func (s *Server) interrupt(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entryOf(r.Context(), r.PathValue("id"), false)
	if err != nil {
		return err
	}
	turn := r.PathValue("turn")
	if !e.ls.Interrupt(turn) {
		return &apiError{status: http.StatusConflict, code: "not_running", msg: fmt.Sprintf("turn %s is not running in session %s", turn, r.PathValue("id"))}
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"interrupted": turn})
	return nil
}
