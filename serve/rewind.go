package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/rewind"
	"github.com/orca-agent/orca/store"
)

// checkpoints returns the workspace's checkpoints: the App's store (its
// turns', and those orca run and orca chat keep in the workspace, which
// it reads from its folder at each request), else — an App that keeps
// none — the workspace's store, opened for the request as orca rewind
// opens it.
func (s *Server) checkpoints() (*rewind.Store, error) {
	if rs := s.app.Checkpoints(); rs != nil {
		return rs, nil
	}
	return app.RewindStore(s.app.Root(), rewind.Options{})
}

// noCheckpoint is the 404 of a turn with no checkpoint, err naming both.
func noCheckpoint(err error, session string) *apiError {
	return &apiError{status: http.StatusNotFound, code: "not_found", msg: fmt.Sprintf("%v: GET /v1/sessions/%s/checkpoints lists them", err, session)}
}

// settled waits until a turn of session id that has ended (its
// turn_completed is in the rows a client reads) has returned — its
// checkpoint is saved as it returns —, or ctx ends; a turn still running
// is not waited for.
func (s *Server) settled(ctx context.Context, id string) {
	s.mu.Lock()
	e := s.sessions[id]
	s.mu.Unlock()
	if e == nil {
		return
	}
	for {
		e.mu.Lock()
		busy, idle := e.busy, e.idle
		e.mu.Unlock()
		if !busy {
			return
		}
		if cur := e.ls.CurrentTurn(); cur != "" && !s.ended(ctx, cur) {
			return
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return
		}
	}
}

func (s *Server) listCheckpoints(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.ours(r.Context(), id); err != nil {
		return err
	}
	s.settled(r.Context(), id)
	rs, err := s.checkpoints()
	if err != nil {
		return err
	}
	cps, err := rs.Checkpoints(id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"checkpoints": app.CheckpointsOf(cps)})
	return nil
}

func (s *Server) getCheckpoint(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.ours(r.Context(), id); err != nil {
		return err
	}
	s.settled(r.Context(), id)
	rs, err := s.checkpoints()
	if err != nil {
		return err
	}
	cps, i, err := app.CheckpointOf(rs, id, r.PathValue("turn"))
	if errors.Is(err, app.ErrNoCheckpoint) {
		return noCheckpoint(err, id)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, app.DiffOf(cps[i], rs.Content))
	return nil
}

type rewindRequest struct {
	// Force puts back the paths that changed since the turns changed
	// them too.
	Force bool `json:"force"`
	// Conversation rewinds the conversation too: it goes on in a new
	// session, a branch of this one as it was before the turn.
	Conversation bool `json:"conversation"`
}

// rewindConflict is the 409 of a rewind that paths changed since stopped:
// the error, and what orca rewind --json says of it.
type rewindConflict struct {
	Error map[string]string `json:"error"`
	app.RewoundView
}

func (s *Server) rewindTo(w http.ResponseWriter, r *http.Request) error {
	var req rewindRequest
	if r.ContentLength != 0 {
		if err := decode(r, &req); err != nil {
			return err
		}
	}
	id, turn := r.PathValue("id"), r.PathValue("turn")
	// The session is the server's while it rewinds: no turn of it runs
	// here (claim), nor anywhere else (entryOf holds its lease).
	e, err := s.entryOf(r.Context(), id, false)
	if err != nil {
		return err
	}
	if err := s.claim(r.Context(), e); err != nil {
		return err
	}
	defer e.release()
	rs, err := s.checkpoints()
	if err != nil {
		return err
	}
	rw, err := app.Rewind(r.Context(), rs, s.app.Store(), id, turn, app.RewindOptions{Force: req.Force, Conversation: req.Conversation})
	switch {
	case errors.Is(err, app.ErrNoCheckpoint):
		return noCheckpoint(err, id)
	case errors.Is(err, app.ErrNoTurn), errors.Is(err, store.ErrNotFound):
		return &apiError{status: http.StatusConflict, code: "no_conversation", field: "conversation",
			msg: fmt.Sprintf("%v: the conversation cannot be rewound (without \"conversation\" the files are put back alone)", err)}
	case err != nil:
		return err
	case rw.Stopped:
		paths := make([]string, len(rw.Restored.Conflicts))
		for i, c := range rw.Restored.Conflicts {
			paths[i] = c.Path + " (" + c.Why + ")"
		}
		msg := fmt.Sprintf("nothing was put back: paths changed since the turns changed them: %s; look at them, then rewind with \"force\": true to put them back too",
			strings.Join(paths, ", "))
		writeJSON(w, http.StatusConflict, rewindConflict{Error: map[string]string{"code": "changed_since", "message": msg}, RewoundView: app.RewoundOf(rw)})
		return nil
	}
	writeJSON(w, http.StatusOK, app.RewoundOf(rw))
	return nil
}
