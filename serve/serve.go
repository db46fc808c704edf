// Package serve is orca's HTTP API over the composition root: a
// workspace's agent as JSON resources — sessions, messages that start
// turns, the turns' and sessions' events as Server-Sent Events, interrupts,
// parked approvals, compaction, totals and budgets — for `orca serve` and
// for any program that mounts the Handler.
//
// The store's observation rows are the event log: a stream replays the
// rows after the client's Last-Event-ID (each event's id is its row's
// sequence number) and then follows new ones, so a client that reconnects
// misses nothing and the server keeps no buffer of its own.
//
// Every request but the OpenAPI document (GET /v1/openapi.json) needs the
// bearer token (Authorization: Bearer TOKEN; an event stream may pass it
// as ?access_token=, which EventSource needs). A request from a browser
// page of another origin, and one whose Host is not loopback or allowed
// (DNS rebinding), is refused. Bodies are bounded and decoded strictly:
// an unknown field or a wrong type is a 400 naming the field.
//
// One writer per session: the server opens each session once (holding its
// lease); a message posted while a turn runs is queued into it, and runs
// when the turn ends, in order.
package serve

import (
	"bytes"
	"cmp"
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
)

//go:embed openapi.json
var openAPI []byte

// ui is the page GET / serves (ui/index.html, app.js, style.css).
//
//go:embed ui
var ui embed.FS

// cookieName is the sign-in cookie of the page: it carries the token.
const cookieName = "orca_token"

// Defaults of Options' zero fields.
const (
	DefaultMaxBody    = 1 << 20
	DefaultMaxStreams = 256
	// DefaultWriteTimeout bounds one write to an event stream: a client
	// that reads slower is cut off, and reconnects with Last-Event-ID.
	DefaultWriteTimeout = 10 * time.Second
	// keptTurns is how many finished turns a session's GET .../turns/ID
	// still answers for (their events stay in the rows).
	keptTurns = 100
	// pageRows is how many rows a stream reads from the store at once.
	pageRows = 512
)

// Options configure a Server.
type Options struct {
	// Token is the bearer token every request needs. Required.
	Token string
	// AllowedOrigins are origins ("https://tool.example") whose pages may
	// call the API, besides the server's own.
	AllowedOrigins []string
	// AllowedHosts are Host header values accepted besides loopback ones
	// (localhost, 127.0.0.1, [::1], with any port).
	AllowedHosts []string
	// MaxBody caps a request body (DefaultMaxBody if zero).
	MaxBody int64
	// MaxStreams caps the event streams open at once (DefaultMaxStreams).
	MaxStreams int
	// WriteTimeout bounds one write to an event stream
	// (DefaultWriteTimeout).
	WriteTimeout time.Duration
	// Heartbeat is how often an idle stream gets a comment line, so that
	// proxies keep it open (15 s if zero).
	Heartbeat time.Duration
	// Poll is how often a stream looks for rows another process wrote
	// (the server's own are signalled at once); 1 s if zero.
	Poll   time.Duration
	Logger *slog.Logger
	// TokenHint says where the token is, as the page's sign-in form names
	// it ("$ORCA_SERVE_TOKEN", "~/.config/orca/serve-token"); empty: where
	// orca serve printed it.
	TokenHint string
}

// Server serves one App. It is an http.Handler; Close stops its turns and
// closes the sessions it opened.
type Server struct {
	app     *app.App
	opts    Options
	mux     *http.ServeMux
	routes  []route
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	streams atomic.Int64

	mu       sync.Mutex
	sessions map[string]*entry
	closed   bool
}

// entry is a session the server opened.
type entry struct {
	ls *session.LiveSession
	mu sync.Mutex
	// busy: a turn (or a compaction) of the server's runs; messages
	// posted meanwhile are queued into it.
	busy bool
	// idle is closed when busy turns false.
	idle  chan struct{}
	turns map[string]*turnState
	order []string // turn ids, oldest first
}

// turnState is what GET .../turns/ID says of a turn.
type turnState struct {
	ID         string          `json:"id"`
	Status     string          `json:"status"` // running, or the stop reason
	Answer     string          `json:"answer,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Error      string          `json:"error,omitempty"`
	Iterations int             `json:"iterations"`
	ToolCalls  int             `json:"tool_calls"`
	Usage      llm.Usage       `json:"usage"`
	StartedAt  time.Time       `json:"started_at"`
	EndedAt    *time.Time      `json:"ended_at,omitempty"`
	// output is what the turn was asked for (its message's output_schema),
	// for the attempt that goes on after a decision.
	output *agent.Output
}

type route struct {
	method, pattern string
	public          bool
	// page: a file of the web page, not an API operation (not in the
	// OpenAPI document).
	page bool
	h    func(w http.ResponseWriter, r *http.Request) error
	// body is the request body's type, for the OpenAPI check (nil: none).
	body any
}

// New returns a Server over a, which stays the caller's to close (after
// the Server).
func New(a *app.App, opts Options) (*Server, error) {
	if opts.Token == "" {
		return nil, errors.New("serve: no token: every request must be authorized")
	}
	opts.MaxBody = cmp.Or(opts.MaxBody, DefaultMaxBody)
	opts.MaxStreams = cmp.Or(opts.MaxStreams, DefaultMaxStreams)
	opts.WriteTimeout = cmp.Or(opts.WriteTimeout, DefaultWriteTimeout)
	opts.Heartbeat = cmp.Or(opts.Heartbeat, 15*time.Second)
	opts.Poll = cmp.Or(opts.Poll, time.Second)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	for _, o := range opts.AllowedOrigins {
		if u, err := url.Parse(o); err != nil || u.Scheme == "" || u.Host == "" || u.Path != "" {
			return nil, fmt.Errorf("serve: allowed origin %q: want scheme://host[:port]", o)
		}
	}
	s := &Server{app: a, opts: opts, mux: http.NewServeMux(), sessions: map[string]*entry{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.routes = []route{
		{method: "GET", pattern: "/{$}", public: true, page: true, h: s.page("ui/index.html")},
		{method: "GET", pattern: "/ui/app.js", public: true, page: true, h: s.page("ui/app.js")},
		{method: "GET", pattern: "/ui/style.css", public: true, page: true, h: s.page("ui/style.css")},
		{method: "GET", pattern: "/v1/openapi.json", public: true, h: s.openAPI},
		{method: "POST", pattern: "/v1/login", public: true, h: s.login, body: loginRequest{}},
		{method: "GET", pattern: "/v1/sessions", h: s.listSessions},
		{method: "POST", pattern: "/v1/sessions", h: s.createSession, body: createSessionRequest{}},
		{method: "GET", pattern: "/v1/sessions/{id}", h: s.getSession},
		{method: "DELETE", pattern: "/v1/sessions/{id}", h: s.deleteSession},
		{method: "POST", pattern: "/v1/sessions/{id}/messages", h: s.postMessage, body: messageRequest{}},
		{method: "GET", pattern: "/v1/sessions/{id}/events", h: s.sessionEvents},
		{method: "GET", pattern: "/v1/sessions/{id}/turns/{turn}", h: s.getTurn},
		{method: "GET", pattern: "/v1/sessions/{id}/turns/{turn}/events", h: s.turnEvents},
		{method: "POST", pattern: "/v1/sessions/{id}/turns/{turn}/interrupt", h: s.interrupt},
		{method: "POST", pattern: "/v1/sessions/{id}/compact", h: s.compact, body: compactRequest{}},
		{method: "GET", pattern: "/v1/sessions/{id}/totals", h: s.totals},
		{method: "GET", pattern: "/v1/sessions/{id}/budget", h: s.getBudget},
		{method: "PUT", pattern: "/v1/sessions/{id}/budget", h: s.putBudget, body: budgetRequest{}},
		{method: "GET", pattern: "/v1/approvals", h: s.listApprovals},
		{method: "POST", pattern: "/v1/approvals/{id}", h: s.decide, body: decideRequest{}},
	}
	// paths finds the pattern of a request whatever its method, so that
	// a path of the API asked with a method it has not is a 405 naming
	// those it has (the catch-all below would make it a 404).
	paths, allow := http.NewServeMux(), map[string][]string{}
	for _, rt := range s.routes {
		s.mux.Handle(rt.method+" "+rt.pattern, s.wrap(rt))
		if allow[rt.pattern] == nil {
			paths.Handle(rt.pattern, http.NotFoundHandler())
		}
		allow[rt.pattern] = append(allow[rt.pattern], rt.method)
		if rt.method == "GET" {
			allow[rt.pattern] = append(allow[rt.pattern], "HEAD")
		}
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if !s.admitted(w, r, false) {
			return
		}
		if _, pattern := paths.Handler(r); pattern != "" {
			methods := strings.Join(allow[pattern], ", ")
			w.Header().Set("Allow", methods)
			writeError(w, &apiError{status: http.StatusMethodNotAllowed, code: "method_not_allowed", msg: fmt.Sprintf("%s %s: this path takes %s (GET /v1/openapi.json describes it)", r.Method, r.URL.Path, methods)})
			return
		}
		writeError(w, &apiError{status: http.StatusNotFound, code: "not_found", msg: fmt.Sprintf("no %s %s in this API (GET /v1/openapi.json describes it)", r.Method, r.URL.Path)})
	})
	s.wg.Add(1)
	go s.watchDecisions()
	return s, nil
}

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

// Streams returns how many event streams are open.
func (s *Server) Streams() int { return int(s.streams.Load()) }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Close cancels the turns still running, waits for them, and closes the
// sessions the server opened. Streams end with their requests (the
// http.Server's Shutdown).
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, e := range s.sessions {
		errs = append(errs, e.ls.Close(context.Background()))
	}
	return errors.Join(errs...)
}

// apiError is an error with its HTTP status, code and the field at fault.
type apiError struct {
	status int
	code   string
	msg    string
	field  string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(field, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "invalid_request", field: field, msg: fmt.Sprintf(format, args...)}
}

func writeError(w http.ResponseWriter, e *apiError) {
	body := map[string]any{"code": e.code, "message": e.msg}
	if e.field != "" {
		body["field"] = e.field
	}
	writeJSON(w, e.status, map[string]any{"error": body})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// wrap admits a request and turns a handler's error into its response.
func (s *Server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.admitted(w, r, rt.public) {
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBody)
		err := rt.h(w, r)
		if err == nil {
			return
		}
		var ae *apiError
		if !errors.As(err, &ae) {
			s.opts.Logger.Error("orca serve", "method", r.Method, "path", r.URL.Path, "err", err)
			ae = &apiError{status: http.StatusInternalServerError, code: "internal", msg: err.Error()}
		}
		writeError(w, ae)
	})
}

// admitted checks the Host, the Origin and the token, answering the
// request itself when one fails.
func (s *Server) admitted(w http.ResponseWriter, r *http.Request, public bool) bool {
	if !s.hostAllowed(r.Host) {
		writeError(w, &apiError{status: http.StatusMisdirectedRequest, code: "host_not_allowed",
			msg: fmt.Sprintf("Host %q is not this server's (it answers loopback names and the allowed hosts only)", r.Host)})
		return false
	}
	if origin := r.Header.Get("Origin"); origin != "" && !s.originAllowed(r, origin) {
		writeError(w, &apiError{status: http.StatusForbidden, code: "origin_not_allowed", msg: fmt.Sprintf("requests from pages of %s are not allowed", origin)})
		return false
	}
	if r.Header.Get("Origin") == "" && r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		writeError(w, &apiError{status: http.StatusForbidden, code: "origin_not_allowed", msg: "cross-site requests are not allowed"})
		return false
	}
	if public {
		return true
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if c, err := r.Cookie(cookieName); !ok && err == nil {
		token, ok = c.Value, true
	}
	if !ok && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/events") {
		token, ok = r.URL.Query().Get("access_token"), r.URL.Query().Has("access_token")
	}
	if !ok || subtle.ConstantTimeCompare([]byte(token), []byte(s.opts.Token)) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="orca"`)
		msg := "the request has no bearer token (Authorization: Bearer TOKEN)"
		if ok {
			msg = "the bearer token is wrong"
		}
		writeError(w, &apiError{status: http.StatusUnauthorized, code: "unauthorized", msg: msg})
		return false
	}
	return true
}

func (s *Server) hostAllowed(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.Trim(h, "[]")
	if h == "localhost" || slices.Contains(s.opts.AllowedHosts, host) || slices.Contains(s.opts.AllowedHosts, h) {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) originAllowed(r *http.Request, origin string) bool {
	if slices.Contains(s.opts.AllowedOrigins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host && (u.Scheme == "http" || u.Scheme == "https")
}

// decode reads the JSON body into v strictly: one value, no unknown
// field; errors name the field.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if dec.More() {
			return badRequest("", "the body has more than one JSON value")
		}
		if _, err := dec.Token(); err != io.EOF {
			return badRequest("", "the body has more than one JSON value")
		}
		return nil
	}
	var mbe *http.MaxBytesError
	var ute *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &mbe):
		return &apiError{status: http.StatusRequestEntityTooLarge, code: "too_large", msg: fmt.Sprintf("the body is over %d bytes", mbe.Limit)}
	case errors.Is(err, io.EOF):
		return badRequest("", "the body is empty: want a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("", "the body is not JSON: it ends in the middle of a value")
	case errors.As(err, &ute):
		return badRequest(ute.Field, "%s: want %s, got %s", cmp.Or(ute.Field, "the body"), ute.Type, ute.Value)
	case errors.As(err, &se):
		return badRequest("", "the body is not JSON: %v (at byte %d)", se, se.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return badRequest(f, "unknown field %q", f)
	}
	return badRequest("", "the body: %v", err)
}

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

// sessionJSON is a session as the API shows it.
type sessionJSON struct {
	ID         string      `json:"id"`
	Agent      string      `json:"agent"`
	CreatedAt  time.Time   `json:"created_at"`
	UpdatedAt  time.Time   `json:"updated_at"`
	Turns      int         `json:"turns"`
	LastPrompt string      `json:"last_prompt"`
	Totals     *totalsJSON `json:"totals,omitempty"`
	Budget     *budgetJSON `json:"budget,omitempty"`
	Running    string      `json:"running_turn,omitempty"`
	Parked     []Parked    `json:"parked,omitempty"`
	// Transcript is the conversation, on GET of one session.
	Transcript []llm.Message `json:"transcript,omitempty"`
}

type totalsJSON struct {
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	ToolCalls        int64   `json:"tool_calls"`
	WallTimeMS       int64   `json:"wall_time_ms"`
	Turns            int64   `json:"turns"`
}

func totalsOf(t store.Totals) *totalsJSON {
	return &totalsJSON{InputTokens: t.Usage.InputTokens, OutputTokens: t.Usage.OutputTokens, CacheReadTokens: t.Usage.CacheReadTokens,
		CacheWriteTokens: t.Usage.CacheWriteTokens, CostUSD: t.CostUSD, ToolCalls: t.ToolCalls, WallTimeMS: t.WallTime.Milliseconds(), Turns: t.Turns}
}

type budgetJSON struct {
	Tokens     int64   `json:"tokens"`
	CostUSD    float64 `json:"cost_usd"`
	ToolCalls  int64   `json:"tool_calls"`
	WallTimeMS int64   `json:"wall_time_ms"`
}

func budgetOf(l budget.Limits) *budgetJSON {
	return &budgetJSON{Tokens: l.Tokens, CostUSD: l.CostUSD, ToolCalls: l.ToolCalls, WallTimeMS: l.WallTime.Milliseconds()}
}

// Parked is a parked call as the API (and orca approvals --json) shows it.
type Parked struct {
	ID        string          `json:"id"`
	SessionID string          `json:"session_id"`
	TurnID    string          `json:"turn_id"`
	ToolUseID string          `json:"tool_use_id"`
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input"`
	Reason    string          `json:"reason"`
	Rules     []string        `json:"rules"`
	Status    string          `json:"status"`
	DecidedBy string          `json:"decided_by,omitempty"`
	Note      string          `json:"note,omitempty"`
}

// ParkedOf returns p as the API shows it (arguments that are not JSON
// become a JSON string).
func ParkedOf(p store.ParkedCall) Parked {
	in := p.Input
	if !json.Valid(in) {
		in, _ = json.Marshal(string(in))
	}
	rules := p.Rules
	if rules == nil {
		rules = []string{}
	}
	return Parked{ID: p.ID, SessionID: p.SessionID, TurnID: p.TurnID, ToolUseID: p.ToolUseID, ToolName: p.ToolName, Input: in,
		Reason: p.Reason, Rules: rules, Status: p.Status, DecidedBy: p.DecidedBy, Note: p.Note}
}

func sessionOf(st store.Session) sessionJSON {
	return sessionJSON{ID: st.ID, Agent: st.Agent, CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt, Turns: st.Turns, LastPrompt: st.LastPrompt}
}

// page serves a file of the web page.
func (s *Server) page(name string) func(w http.ResponseWriter, r *http.Request) error {
	types := map[string]string{".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
	return func(w http.ResponseWriter, r *http.Request) error {
		b, err := ui.ReadFile(name)
		if err != nil {
			return err
		}
		if name == "ui/index.html" {
			hint := cmp.Or(s.opts.TokenHint, "the token orca serve printed when it started")
			b = bytes.ReplaceAll(b, []byte("{{TOKEN_HINT}}"), []byte(html.EscapeString(hint)))
		}
		h := w.Header()
		h.Set("Content-Type", types[name[strings.LastIndexByte(name, '.'):]])
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		_, err = w.Write(b)
		return err
	}
}

type loginRequest struct {
	// Token is the server's token. Required.
	Token string `json:"token"`
}

// login checks the token and gives the page its sign-in cookie (HttpOnly,
// SameSite=Strict: no other site's page sends it).
func (s *Server) login(w http.ResponseWriter, r *http.Request) error {
	var req loginRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if subtle.ConstantTimeCompare([]byte(req.Token), []byte(s.opts.Token)) != 1 {
		return &apiError{status: http.StatusUnauthorized, code: "unauthorized", field: "token", msg: "the token is wrong"}
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.opts.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(openAPI)
	return err
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
		j := sessionOf(st)
		if t, err := s.app.Store().Totals(r.Context(), st.ID); err == nil {
			j.Totals = totalsOf(t)
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
	writeJSON(w, http.StatusCreated, sessionOf(st))
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
	j := sessionOf(st)
	t, err := e.ls.Totals(r.Context())
	if err != nil {
		return err
	}
	j.Totals = totalsOf(t)
	b, err := e.ls.Budget(r.Context())
	if err != nil {
		return err
	}
	j.Budget = budgetOf(b)
	j.Running = e.ls.CurrentTurn()
	parked, err := s.app.Store().ParkedCalls(r.Context(), store.ParkFilter{SessionID: id, Status: store.ParkPending})
	if err != nil {
		return err
	}
	for _, p := range parked {
		j.Parked = append(j.Parked, ParkedOf(p))
	}
	j.Transcript = e.ls.Transcript()
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
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type messageRequest struct {
	// Text is the user's message. Required.
	Text string `json:"text"`
	// OutputSchema asks the turn for its answer as a JSON value of it.
	OutputSchema json.RawMessage `json:"output_schema"`
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
	e, err := s.entryOf(r.Context(), r.PathValue("id"), false)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.busy {
		// Into the running turn, or the next one: one writer.
		e.ls.Runtime().Queues().Enqueue(e.ls.ID(), req.Text)
		writeJSON(w, http.StatusAccepted, map[string]any{"queued": true, "turn_id": e.ls.CurrentTurn()})
		return nil
	}
	// A turn would fail at once: say so here, naming the call to decide.
	parked, err := s.app.Store().ParkedCalls(r.Context(), store.ParkFilter{SessionID: e.ls.ID(), Status: store.ParkPending})
	if err != nil {
		return err
	}
	if len(parked) > 0 {
		p := parked[0]
		return &apiError{status: http.StatusConflict, code: "awaiting_approval", msg: fmt.Sprintf(
			"session %s waits for a decision on its parked %s call %s (%s): approve or deny it first (POST /v1/approvals/%s)", e.ls.ID(), p.ToolName, p.ID, p.Reason, p.ID)}
	}
	e.setBusy(true)
	id := session.NewTurnID()
	e.track(&turnState{ID: id, Status: "running", StartedAt: time.Now().UTC(), output: out})
	s.wg.Add(1)
	go s.run(e, id, req.Text, out)
	writeJSON(w, http.StatusAccepted, map[string]any{"queued": false, "turn_id": id})
	return nil
}

// run runs turns of e until no message waits: the first is id's, with
// opts.
func (s *Server) run(e *entry, id, text string, out *agent.Output, opts ...session.RunOption) {
	defer s.wg.Done()
	for {
		res, err := e.ls.Run(s.ctx, text, append(opts, session.WithTurnID(id), session.WithOutput(out))...)
		opts = nil
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
	writeJSON(w, http.StatusOK, totalsOf(t))
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
	writeJSON(w, http.StatusOK, budgetOf(b))
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
	writeJSON(w, http.StatusOK, budgetOf(l))
	return nil
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
// its id (session.Retry), the approved call first (a denied one is
// answered so), and its events follow the ones it had. It reports whether
// the turn went on; if not, the session's next message runs the approved
// call first.
func (s *Server) goOn(ctx context.Context, p store.ParkedCall) bool {
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
	go s.run(e, p.TurnID, "", t.output, session.Retry())
	return true
}
