package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/schedule"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
)

// owner names this server in the fires it claims.
func owner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("orca serve %s:%d", host, os.Getpid())
}

// startSchedules fires the runtime's schedules while the server runs, if
// its store keeps them and Options.NoSchedules does not say otherwise.
func (s *Server) startSchedules() {
	st, ok := s.app.Store().(store.Schedules)
	if !ok || s.opts.NoSchedules {
		return
	}
	s.sched = &schedule.Scheduler{Store: st, RuntimeID: s.app.Runtime().ID(), Owner: owner(), Fire: s.fire, Logger: s.opts.Logger, Poll: s.opts.SchedulePoll}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.sched.Run(s.ctx)
	}()
}

// schedules returns the store's schedules, or a 404 if it keeps none (or
// the server does not fire them).
func (s *Server) schedules() (store.Schedules, error) {
	if s.sched == nil {
		return nil, &apiError{status: http.StatusNotFound, code: "no_schedules", msg: "this server fires no schedules (its store keeps none, or it was started without them)"}
	}
	return s.sched.Store, nil
}

// fire runs a fire of sc as a turn of the server's: in a new session, or
// in sc.SessionID's (queued into its turn if one runs). It is the
// Scheduler's Firer.
func (s *Server) fire(ctx context.Context, sc store.Schedule, at time.Time) (schedule.Outcome, error) {
	id, create := sc.SessionID, sc.SessionID == ""
	if create {
		id = session.NewID()
	}
	e, err := s.entryOf(ctx, id, create)
	if err != nil {
		return schedule.Outcome{SessionID: sc.SessionID}, err
	}
	out := schedule.Outcome{SessionID: e.ls.ID()}
	if create {
		if limit := schedule.FireBudget(sc); limit > 0 {
			if _, err := e.ls.ChangeBudget(ctx, budget.Change{CostUSD: &limit}); err != nil {
				return out, err
			}
		}
	}
	e.mu.Lock()
	if e.busy {
		e.ls.Runtime().Queues().Enqueue(e.ls.ID(), sc.Prompt)
		e.mu.Unlock()
		out.Note = "queued into the session's running turn"
		return out, nil
	}
	if p := e.ls.Parked(); p != nil {
		e.mu.Unlock()
		return out, fmt.Errorf("session %s waits for a decision on its parked %s call %s: a fired prompt does not decide it (POST /v1/approvals/%s)", e.ls.ID(), p.ToolName, p.ID, p.ID)
	}
	e.setBusy(true)
	turn := session.NewTurnID()
	e.track(&turnState{ID: turn, Status: "running", StartedAt: time.Now().UTC()})
	e.mu.Unlock()
	s.wg.Add(1)
	res := s.run(e, turn, sc.Prompt, nil)
	if res != nil {
		out.Spent, out.Note = res.Spent.CostUSD, app.FireNote(res)
		if res.Err != nil {
			return out, res.Err
		}
	}
	e.mu.Lock()
	t := e.turns[turn]
	e.mu.Unlock()
	if res == nil && t != nil && t.Error != "" {
		return out, errors.New(t.Error)
	}
	return out, nil
}

// scheduleRequest is the body of POST /v1/schedules.
type scheduleRequest struct {
	ID string `json:"id"`
	// Cron or EveryMS: one of them.
	Cron      string    `json:"cron"`
	EveryMS   int64     `json:"every_ms"`
	TimeZone  string    `json:"time_zone"`
	Prompt    string    `json:"prompt"`
	SessionID string    `json:"session_id"`
	BudgetUSD float64   `json:"budget_usd"`
	CapUSD    float64   `json:"cap_usd"`
	Overlap   string    `json:"overlap"`
	CatchUpMS int64     `json:"catch_up_ms"`
	ExpiresAt time.Time `json:"expires_at"`
}

func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request) error {
	st, err := s.schedules()
	if err != nil {
		return err
	}
	all, err := st.Schedules(r.Context(), s.app.Runtime().ID())
	if err != nil {
		return err
	}
	views := make([]schedule.View, 0, len(all))
	now := time.Now()
	for _, sc := range all {
		fires, err := st.Fires(r.Context(), sc.RuntimeID, sc.ID, 1)
		if err != nil {
			return err
		}
		v := schedule.ViewOf(sc, fires, now)
		v.Fires = nil
		views = append(views, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"schedules": views})
	return nil
}

func (s *Server) addSchedule(w http.ResponseWriter, r *http.Request) error {
	st, err := s.schedules()
	if err != nil {
		return err
	}
	var req scheduleRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.EveryMS < 0 || req.CatchUpMS < 0 {
		return badRequest("every_ms", "every_ms and catch_up_ms are milliseconds, 0 or more")
	}
	if req.SessionID != "" {
		if err := s.ours(r.Context(), req.SessionID); err != nil {
			return err
		}
	}
	sc, err := schedule.Request{ID: req.ID, Cron: req.Cron, Every: time.Duration(req.EveryMS) * time.Millisecond, TimeZone: req.TimeZone,
		Prompt: req.Prompt, SessionID: req.SessionID, BudgetUSD: req.BudgetUSD, CapUSD: req.CapUSD, Overlap: req.Overlap,
		CatchUp: time.Duration(req.CatchUpMS) * time.Millisecond, Expires: req.ExpiresAt}.Schedule(s.app.Runtime().ID(), time.Now())
	var fe *schedule.FieldError
	if errors.As(err, &fe) {
		field := map[string]string{"every": "every_ms", "catch_up": "catch_up_ms"}[fe.Field]
		if field == "" {
			field = fe.Field
		}
		return badRequest(field, "%s: %s", field, fe.Msg)
	} else if err != nil {
		return badRequest("", "%v", err)
	}
	if _, err := st.Schedule(r.Context(), sc.RuntimeID, sc.ID); err == nil {
		return &apiError{status: http.StatusConflict, code: "exists", field: "id", msg: fmt.Sprintf("schedule %s exists already", sc.ID)}
	}
	if err := st.AddSchedule(r.Context(), sc); err != nil {
		return err
	}
	s.sched.Wake()
	writeJSON(w, http.StatusCreated, schedule.ViewOf(sc, nil, time.Now()))
	return nil
}

// scheduleOf returns the schedule the request's path names.
func (s *Server) scheduleOf(r *http.Request) (store.Schedules, store.Schedule, error) {
	st, err := s.schedules()
	if err != nil {
		return nil, store.Schedule{}, err
	}
	id := r.PathValue("id")
	sc, err := st.Schedule(r.Context(), s.app.Runtime().ID(), id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, sc, &apiError{status: http.StatusNotFound, code: "not_found", msg: fmt.Sprintf("no schedule %s", id)}
	}
	return st, sc, err
}

func (s *Server) getSchedule(w http.ResponseWriter, r *http.Request) error {
	st, sc, err := s.scheduleOf(r)
	if err != nil {
		return err
	}
	fires, err := st.Fires(r.Context(), sc.RuntimeID, sc.ID, 50)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, schedule.ViewOf(sc, fires, time.Now()))
	return nil
}

// pauseSchedule pauses (POST .../pause) or resumes (.../resume) one.
func (s *Server) pauseSchedule(paused bool) func(w http.ResponseWriter, r *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		st, sc, err := s.scheduleOf(r)
		if err != nil {
			return err
		}
		sc.Paused = paused
		if err := st.UpdateSchedule(r.Context(), sc); err != nil {
			return err
		}
		s.sched.Wake()
		fires, err := st.Fires(r.Context(), sc.RuntimeID, sc.ID, 1)
		if err != nil {
			return err
		}
		v := schedule.ViewOf(sc, fires, time.Now())
		v.Fires = nil
		writeJSON(w, http.StatusOK, v)
		return nil
	}
}

// runSchedule fires one now: the fire is claimed and recorded running,
// and runs on the server.
func (s *Server) runSchedule(w http.ResponseWriter, r *http.Request) error {
	st, sc, err := s.scheduleOf(r)
	if err != nil {
		return err
	}
	f, err := schedule.Claim(r.Context(), st, sc, s.sched.Owner, time.Now())
	if err != nil {
		return &apiError{status: http.StatusConflict, code: "not_fired", msg: err.Error()}
	}
	s.sched.Start(s.ctx, sc, f)
	writeJSON(w, http.StatusAccepted, schedule.ViewOf(sc, []store.Fire{f}, time.Now()).Fires[0])
	return nil
}

func (s *Server) deleteSchedule(w http.ResponseWriter, r *http.Request) error {
	st, sc, err := s.scheduleOf(r)
	if err != nil {
		return err
	}
	if err := st.DeleteSchedule(r.Context(), sc.RuntimeID, sc.ID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
