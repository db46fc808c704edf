package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/orca-agent/orca/elicit"
)

// DefaultElicitationWait is how long a question of an MCP server waits
// for an answer through the API (Elicitations.Wait) before it is
// declined; the call it came in may end it first (its timeout).
const DefaultElicitationWait = 5 * time.Minute

// Elicitations are the questions MCP servers ask during the server's
// turns, waiting for a client of the API — the page, a program — to
// answer them (GET /v1/elicitations, POST /v1/elicitations/{id}). It is
// the App's Elicitor (app.Config.Elicitor), made before the App, and the
// Server's (Options.Elicitations): a question no client could see — no
// one follows its session's events — is declined at once, and one no one
// answers within Wait is declined then, each saying why.
type Elicitations struct {
	// Wait bounds the wait for an answer (DefaultElicitationWait if
	// zero).
	Wait time.Duration

	mu sync.Mutex
	// watched reports whether a client follows a session's events
	// (any session's, for ""); nil until a Server takes the questions.
	watched func(session string) bool
	pending map[string]*pending
}

// pending is a question waiting for its answer.
type pending struct {
	view   Elicitation
	req    elicit.Request
	answer chan elicit.Answer // buffered: one answer
}

// Elicitation is a question waiting for an answer, as the API shows it.
type Elicitation struct {
	// ID is orca's id of the question (its events carry it).
	ID        string `json:"id"`
	SessionID string `json:"session_id,omitempty"`
	TurnID    string `json:"turn_id,omitempty"`
	ToolUseID string `json:"tool_use_id,omitempty"`
	ToolName  string `json:"tool_name,omitempty"`
	// Server is the MCP server asking, Message its question.
	Server  string `json:"server"`
	Mode    string `json:"mode"`
	Message string `json:"message"`
	// URL is the page a url question asks the person to open (never
	// opened by orca).
	URL string `json:"url,omitempty"`
	// Fields are the form's (form mode); Content the values it starts
	// with: the schema's defaults, which an accept that leaves a field
	// out gets.
	Fields  []elicit.Field `json:"fields,omitempty"`
	Content map[string]any `json:"content,omitempty"`
	// AskedAt and Expires: declined when no answer came by then.
	AskedAt time.Time `json:"asked_at"`
	Expires time.Time `json:"expires_at"`
}

// NewElicitations returns the questions of a server still to come.
func NewElicitations() *Elicitations {
	return &Elicitations{pending: map[string]*pending{}}
}

// attach makes e the questions of the server whose streams watched tells.
func (e *Elicitations) attach(watched func(string) bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.watched = watched
}

// Elicit implements elicit.Elicitor: the question waits for a client's
// answer.
func (e *Elicitations) Elicit(ctx context.Context, req elicit.Request) (elicit.Answer, error) {
	wait := cmp.Or(e.Wait, DefaultElicitationWait)
	now := time.Now().UTC()
	p := &pending{req: req, answer: make(chan elicit.Answer, 1), view: Elicitation{ID: req.ID, SessionID: req.SessionID, TurnID: req.TurnID,
		ToolUseID: req.ToolUseID, ToolName: req.ToolName, Server: req.Server, Mode: string(req.Mode), Message: req.Message, URL: req.URL,
		Content: req.Content, AskedAt: now, Expires: now.Add(wait)}}
	if req.Form != nil {
		p.view.Fields = req.Form.Fields
	}
	e.mu.Lock()
	watched := e.watched
	if watched != nil && watched(req.SessionID) {
		e.pending[req.ID] = p
	} else {
		watched = nil
	}
	e.mu.Unlock()
	if watched == nil {
		where := "the session's events (GET /v1/sessions/" + req.SessionID + "/events)"
		if req.SessionID == "" {
			where = "any session's events"
		}
		return elicit.Answer{Action: elicit.Decline, By: "none",
			Reason: fmt.Sprintf("Declined by orca serve: no client follows %s, so no one could see the MCP server %s's question.", where, req.Server)}, nil
	}
	defer func() {
		e.mu.Lock()
		delete(e.pending, req.ID)
		e.mu.Unlock()
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case a := <-p.answer:
		return a, nil
	case <-t.C:
		return elicit.Answer{Action: elicit.Decline, By: "none",
			Reason: fmt.Sprintf("Declined by orca serve: no answer came through its API within %v.", wait)}, nil
	case <-ctx.Done():
		return elicit.Answer{}, ctx.Err()
	}
}

// list returns the questions waiting, oldest first: of session (and
// those asked outside any session), or all for "".
func (e *Elicitations) list(session string) []Elicitation {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []Elicitation{}
	for _, p := range e.pending {
		if session == "" || p.view.SessionID == session || p.view.SessionID == "" {
			out = append(out, p.view)
		}
	}
	slices.SortFunc(out, func(a, b Elicitation) int { return a.AskedAt.Compare(b.AskedAt) })
	return out
}

// errNoQuestion is an answer to a question that is not waiting.
var errNoQuestion = errors.New("no question waits")

// answer gives question id its answer, checked against the question: an
// accepted form is completed with its defaults first.
func (e *Elicitations) answer(id string, ans elicit.Answer) (elicit.Answer, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.pending[id]
	if p == nil {
		return ans, errNoQuestion
	}
	if ans.Action == elicit.Accept && p.req.Mode != elicit.ModeURL && p.req.Form != nil {
		ans.Content = p.req.Form.Complete(ans.Content)
	}
	if err := elicit.Check(p.req, ans); err != nil {
		return ans, err
	}
	delete(e.pending, id)
	p.answer <- ans
	return ans, nil
}

type answerRequest struct {
	// Action is accept, decline or cancel. Required.
	Action string `json:"action"`
	// Content is the form's values, with accept: a field left out gets
	// its default.
	Content map[string]any `json:"content"`
	// By names who answered ("api" if empty).
	By string `json:"by"`
}

func (s *Server) listElicitations(w http.ResponseWriter, r *http.Request) error {
	out := []Elicitation{}
	if e := s.opts.Elicitations; e != nil {
		out = e.list(r.URL.Query().Get("session"))
	}
	writeJSON(w, http.StatusOK, map[string]any{"elicitations": out})
	return nil
}

func (s *Server) answerElicitation(w http.ResponseWriter, r *http.Request) error {
	var req answerRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	ans := elicit.Answer{Action: elicit.Action(req.Action), Content: req.Content, By: cmp.Or(req.By, "api")}
	switch ans.Action {
	case elicit.Accept, elicit.Decline, elicit.Cancel:
	default:
		return badRequest("action", "action: want accept, decline or cancel, got %q", req.Action)
	}
	if ans.Action != elicit.Accept {
		ans.Reason = fmt.Sprintf("The user (%s) answered %s.", ans.By, ans.Action)
	}
	id := r.PathValue("id")
	var got elicit.Answer
	var err error
	if e := s.opts.Elicitations; e != nil {
		got, err = e.answer(id, ans)
	} else {
		err = errNoQuestion
	}
	var fe *elicit.FieldError
	switch {
	case errors.Is(err, errNoQuestion):
		return &apiError{status: http.StatusNotFound, code: "not_found", msg: fmt.Sprintf("no question %s waits for an answer (answered, declined or ended with its call)", id)}
	case errors.As(err, &fe):
		return badRequest("content."+fe.Field, "content: %v", err)
	case err != nil:
		return badRequest("content", "%v", err)
	}
	writeJSON(w, http.StatusOK, answered{ID: id, Action: string(got.Action), Content: got.Content})
	return nil
}

// answered is an answer taken: the question's id, the action, and the
// content sent (the defaults filled in).
type answered struct {
	ID      string         `json:"id"`
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}
