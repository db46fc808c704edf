package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
)

// entryOf returns the session id names, opened by the server if it was
// not yet; create makes one that does not exist.
func (s *Server) entryOf(ctx context.Context, id string, create bool) (*entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, &apiError{status: http.StatusServiceUnavailable, code: "closing", msg: "the server is shutting down"}
	}
	if e, ok := s.sessions[id]; ok {
		return e, nil
	}
	if !create {
		if err := s.ours(ctx, id); err != nil {
			return nil, err
		}
	}
	ls, err := s.app.Session(ctx, app.SessionOptions{ID: id})
	if err != nil {
		var ce *app.ConfigError
		if errors.As(err, &ce) {
			return nil, &apiError{status: http.StatusForbidden, code: "other_runtime", msg: err.Error()}
		}
		if errors.Is(err, store.ErrLeased) {
			return nil, &apiError{status: http.StatusConflict, code: "session_busy", msg: err.Error()}
		}
		return nil, err
	}
	e := &entry{ls: ls, turns: map[string]*turnState{}}
	s.sessions[id] = e
	return e, nil
}

// open reports whether the server has session id open: then it exists
// and is this runtime's (the server opened it so, and holds its lease),
// without asking the store (ours).
func (s *Server) open(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.sessions[id]
	return ok
}

// ours checks that session id exists and is this runtime's.
func (s *Server) ours(ctx context.Context, id string) error {
	st, err := s.app.Store().Session(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return &apiError{status: http.StatusNotFound, code: "not_found", msg: fmt.Sprintf("no session %s", id)}
	}
	if err != nil {
		return err
	}
	if st.RuntimeID != s.app.Runtime().ID() {
		return &apiError{status: http.StatusForbidden, code: "other_runtime", msg: fmt.Sprintf("session %s belongs to another agent or workspace (%s)", id, st.Workspace)}
	}
	return nil
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) error {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return badRequest("limit", "limit: want a whole number from 1 to 1000, got %q", v)
		}
		limit = n
	}
	ss, err := s.app.Store().Sessions(r.Context(), store.Filter{RuntimeID: s.app.Runtime().ID(), Limit: limit})
	if err != nil {
		return err
	}
	out := []sessionJSON{}
	for _, st := range ss {
		j, err := s.sessionOf(r.Context(), st)
		if err != nil {
			return err
		}
		out = append(out, j)
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": out})
	return nil
}

type createSessionRequest struct {
	// ID names the new session (made up if empty).
	ID string `json:"id"`
}

// validID reports whether id may name a session made through the API.
func validID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) error {
	var req createSessionRequest
	if r.ContentLength != 0 {
		if err := decode(r, &req); err != nil {
			return err
		}
	}
	if req.ID != "" && !validID(req.ID) {
		return badRequest("id", "id: letters, digits, '_', '-' and '.' only, 1 to 128 of them; got %q", req.ID)
	}
	id := cmp.Or(req.ID, session.NewID())
	if _, err := s.app.Store().Session(r.Context(), id); err == nil {
		return &apiError{status: http.StatusConflict, code: "exists", field: "id", msg: fmt.Sprintf("session %s exists already", id)}
	}
	e, err := s.entryOf(r.Context(), id, true)
	if err != nil {
		return err
	}
	st, err := s.app.Store().Session(r.Context(), e.ls.ID())
	if err != nil {
		return err
	}
	j, err := s.sessionOf(r.Context(), st)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, j)
	return nil
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	e, err := s.entryOf(r.Context(), id, false)
	if err != nil {
		return err
	}
	st, err := s.app.Store().Session(r.Context(), id)
	if err != nil {
		return err
	}
	j, err := s.sessionOf(r.Context(), st)
	if err != nil {
		return err
	}
	j.Running = e.ls.CurrentTurn()
	parked, err := s.app.Store().ParkedCalls(r.Context(), store.ParkFilter{SessionID: id, Status: store.ParkPending})
	if err != nil {
		return err
	}
	for _, p := range parked {
		j.Parked = append(j.Parked, ParkedOf(p))
	}
	j.Transcript = withoutBytes(e.ls.Transcript())
	writeJSON(w, http.StatusOK, j)
	return nil
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.ours(r.Context(), id); err != nil {
		return err
	}
	s.mu.Lock()
	e := s.sessions[id]
	s.mu.Unlock()
	if e != nil {
		if err := s.claim(r.Context(), e); err != nil {
			return err
		}
		defer e.release()
		s.mu.Lock()
		delete(s.sessions, id)
		s.mu.Unlock()
		if err := e.ls.Close(r.Context()); err != nil {
			return err
		}
	}
	if err := s.app.Store().DeleteSession(r.Context(), id); err != nil {
		if errors.Is(err, store.ErrLeased) {
			return &apiError{status: http.StatusConflict, code: "session_busy", msg: err.Error()}
		}
		return err
	}
	// Its checkpoints go with it (those orca run and orca chat kept).
	if err := app.ForgetCheckpoints(s.app.Root(), id); err != nil {
		s.opts.Logger.Warn("orca serve: the deleted session's checkpoints were kept", "session", id, "err", err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type compactRequest struct {
	// Instructions say what the summary must keep.
	Instructions string `json:"instructions"`
}

func (s *Server) compact(w http.ResponseWriter, r *http.Request) error {
	var req compactRequest
	if r.ContentLength != 0 {
		if err := decode(r, &req); err != nil {
			return err
		}
	}
	e, err := s.entryOf(r.Context(), r.PathValue("id"), false)
	if err != nil {
		return err
	}
	if err := s.claim(r.Context(), e); err != nil {
		return err
	}
	defer e.release()
	res, err := e.ls.Run(r.Context(), strings.TrimSpace("/compact "+req.Instructions))
	if res == nil {
		return err
	}
	body := map[string]any{"stop_reason": res.StopReason, "compacted": res.Compacted}
	if res.Err != nil {
		body["error"] = res.Err.Error()
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

func (s *Server) totals(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.ours(r.Context(), id); err != nil {
		return err
	}
	t, err := s.app.Store().Totals(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, app.TotalsOf(t))
	return nil
}

func (s *Server) getBudget(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entryOf(r.Context(), r.PathValue("id"), false)
	if err != nil {
		return err
	}
	b, err := e.ls.Budget(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, app.BudgetOf(b))
	return nil
}

type budgetRequest struct {
	// Limits; 0 lifts one. A null body field keeps the agent's default.
	Tokens     *int64   `json:"tokens"`
	CostUSD    *float64 `json:"cost_usd"`
	ToolCalls  *int64   `json:"tool_calls"`
	WallTimeMS *int64   `json:"wall_time_ms"`
}

func (s *Server) putBudget(w http.ResponseWriter, r *http.Request) error {
	var req budgetRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	e, err := s.entryOf(r.Context(), r.PathValue("id"), false)
	if err != nil {
		return err
	}
	c := budget.Change{Tokens: req.Tokens, CostUSD: req.CostUSD, ToolCalls: req.ToolCalls}
	if req.WallTimeMS != nil {
		// A time.Duration holds about 292 years of milliseconds; more would
		// wrap to a negative limit.
		if most := int64(math.MaxInt64 / time.Millisecond); *req.WallTimeMS > most {
			return badRequest("wall_time_ms", "wall_time_ms: at most %d ms (about 292 years); 0 lifts the limit", most)
		}
		c.WallTime = new(time.Duration(*req.WallTimeMS) * time.Millisecond)
	}
	if d, ok := c.Negative(); ok {
		name := map[budget.Dimension]string{budget.Tokens: "tokens", budget.Cost: "cost_usd", budget.ToolCalls: "tool_calls", budget.WallTime: "wall_time_ms"}[d]
		return badRequest(name, "%s: a limit is 0 (none) or more", name)
	}
	l, err := e.ls.ChangeBudget(r.Context(), c)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, app.BudgetOf(l))
	return nil
}
