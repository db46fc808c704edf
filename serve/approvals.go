package serve

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
)

// watchDecisions goes on with the turns whose parked call was decided
// elsewhere — orca approve, another server over the same store — as a
// decision through the API does, looking every Options.Poll.
func (s *Server) watchDecisions() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.Poll)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		var waiting []*store.ParkedCall
		for _, e := range s.sessions {
			if p := e.ls.Parked(); p != nil {
				waiting = append(waiting, p)
			}
		}
		s.mu.Unlock()
		for _, p := range waiting {
			calls, err := s.app.Store().ParkedCalls(s.ctx, store.ParkFilter{SessionID: p.SessionID})
			if err != nil {
				continue
			}
			for _, c := range calls {
				if c.ID == p.ID && (c.Status == store.ParkApproved || c.Status == store.ParkDenied) {
					s.goOn(s.ctx, c)
				}
			}
		}
	}
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) error {
	calls, err := s.app.Store().ParkedCalls(r.Context(), store.ParkFilter{Status: store.ParkPending})
	if err != nil {
		return err
	}
	out := []Parked{}
	for _, p := range calls {
		if p.RuntimeID == "" || p.RuntimeID == s.app.Runtime().ID() {
			out = append(out, ParkedOf(p))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": out})
	return nil
}

type decideRequest struct {
	// Approve runs the call, false denies it; either way the parked turn
	// goes on (or, if a turn of the session runs, the next one does).
	// Required.
	Approve *bool `json:"approve"`
	// Note is kept with the decision.
	Note string `json:"note"`
	// By names who decided ("api" if empty).
	By string `json:"by"`
}

func (s *Server) decide(w http.ResponseWriter, r *http.Request) error {
	var req decideRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Approve == nil {
		return badRequest("approve", "approve: true runs the call, false denies it; it is required")
	}
	id := r.PathValue("id")
	calls, err := s.app.Store().ParkedCalls(r.Context(), store.ParkFilter{})
	if err != nil {
		return err
	}
	i := slices.IndexFunc(calls, func(p store.ParkedCall) bool { return p.ID == id })
	if i < 0 || calls[i].RuntimeID != "" && calls[i].RuntimeID != s.app.Runtime().ID() {
		return &apiError{status: http.StatusNotFound, code: "not_found", msg: fmt.Sprintf("no parked call %s", id)}
	}
	if calls[i].Status != store.ParkPending {
		return &apiError{status: http.StatusConflict, code: "decided", msg: fmt.Sprintf("call %s was decided already (%s)", id, calls[i].Status)}
	}
	status := store.ParkDenied
	if *req.Approve {
		status = store.ParkApproved
	}
	p, err := s.app.Store().SetParkStatus(r.Context(), id, status, cmp.Or(req.By, "api"), req.Note)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, decided{Parked: ParkedOf(p), Resumed: s.goOn(r.Context(), p)})
	return nil
}

// decided is the answer to a decision: the call, and whether its turn
// went on.
type decided struct {
	Parked
	Resumed bool `json:"resumed"`
}

// goOn goes on with the turn that parked p, now decided, if no turn of
// its session runs (decide, watchDecisions): the turn runs again under
// its id (session.Retry, with opts), the approved call first (a denied one is
// answered so), and its events follow the ones it had. It reports whether
// the turn went on; if not, the session's next message runs the approved
// call first.
func (s *Server) goOn(ctx context.Context, p store.ParkedCall, opts ...session.RunOption) bool {
	e, err := s.entryOf(ctx, p.SessionID, false)
	if err != nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.busy || s.ctx.Err() != nil {
		// Gone on already (the decision was seen in the store: the turn
		// is running again, though it may not have started in the
		// session yet), or another turn runs: its next message runs the
		// call.
		t := e.turns[p.TurnID]
		return e.busy && (t != nil && t.Status == "running" || e.ls.CurrentTurn() == p.TurnID)
	}
	e.setBusy(true)
	t := e.turns[p.TurnID]
	if t == nil {
		t = &turnState{ID: p.TurnID}
		e.track(t)
	}
	t.Status, t.EndedAt = "running", nil
	if t.StartedAt.IsZero() {
		t.StartedAt = time.Now().UTC()
	}
	s.wg.Add(1)
	// No input: the turn goes on with its own.
	go s.run(e, p.TurnID, "", t.output, append(opts, session.Retry())...)
	return true
}
