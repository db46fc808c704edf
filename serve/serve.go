// Package serve is orca's HTTP API over the composition root: a
// workspace's agent as JSON resources — sessions, messages that start
// turns, the turns' and sessions' events as Server-Sent Events, interrupts,
// parked approvals, MCP servers' questions, compaction, totals and budgets,
// the turns' checkpoints and rewinds (of the files, and of the
// conversation into a new session) — for `orca serve` and for any program
// that mounts the Handler.
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
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/internal/httpguard"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/schedule"
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
	DefaultMaxBody = 1 << 20
	// DefaultMaxMessageBody caps a message's body, its attachments
	// (base64) included.
	DefaultMaxMessageBody = 64 << 20
	// DefaultMaxStreams is sized for a thousand clients each following a
	// session (BenchmarkServeLoad/followers=1000), with room for as many
	// again: a stream waiting holds its connection and a goroutine, no
	// rows.
	DefaultMaxStreams = 2048
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
	// MaxMessageBody caps a message's body, attachments included
	// (DefaultMaxMessageBody if zero); a larger one is answered 413.
	MaxMessageBody int64
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
	// Elicitations, if set, are the questions MCP servers ask during the
	// server's turns (the App's Elicitor): a client of the API answers
	// them (GET /v1/elicitations, POST /v1/elicitations/{id}).
	Elicitations *Elicitations
	// NoSchedules: the server does not fire the runtime's schedules (nor
	// serve /v1/schedules); another process does, or none should.
	NoSchedules bool
	// SchedulePoll is how often the server looks for schedules another
	// process added or changed (schedule.DefaultPoll if zero); its own
	// API's changes are seen at once.
	SchedulePoll time.Duration
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
	guard   httpguard.Guard
	mux     *http.ServeMux
	routes  []route
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	streams atomic.Int64
	// follow wakes the streams for rows of other processes (nil: each
	// stream polls, the store tells no heads).
	follow *followers
	// reads counts the streams' reads of the store (for tests).
	reads atomic.Int64

	mu       sync.Mutex
	sessions map[string]*entry
	closed   bool
	// watching counts the event streams open, by session.
	watching map[string]int
	// sched fires the runtime's schedules (nil: the store keeps none, or
	// Options.NoSchedules).
	sched *schedule.Scheduler
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
	// taken are the ids of the AG-UI messages the thread's runs took as
	// input (a client sends its whole conversation each run).
	taken map[string]bool
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
	// message: the body is a message, which may carry attachments
	// (Options.MaxMessageBody, not MaxBody).
	message bool
}

// New returns a Server over a, which stays the caller's to close (after
// the Server).
func New(a *app.App, opts Options) (*Server, error) {
	if opts.Token == "" {
		return nil, errors.New("serve: no token: every request must be authorized")
	}
	opts.MaxBody = cmp.Or(opts.MaxBody, DefaultMaxBody)
	opts.MaxMessageBody = cmp.Or(opts.MaxMessageBody, DefaultMaxMessageBody)
	opts.MaxStreams = cmp.Or(opts.MaxStreams, DefaultMaxStreams)
	opts.WriteTimeout = cmp.Or(opts.WriteTimeout, DefaultWriteTimeout)
	opts.Heartbeat = cmp.Or(opts.Heartbeat, 15*time.Second)
	opts.Poll = cmp.Or(opts.Poll, time.Second)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	for _, o := range opts.AllowedOrigins {
		if err := httpguard.CheckOrigin(o); err != nil {
			return nil, fmt.Errorf("serve: %w", err)
		}
	}
	s := &Server{app: a, opts: opts, guard: httpguard.Guard{Hosts: opts.AllowedHosts, Origins: opts.AllowedOrigins}, mux: http.NewServeMux(), sessions: map[string]*entry{}}
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
		{method: "POST", pattern: "/v1/sessions/{id}/messages", h: s.postMessage, body: messageRequest{}, message: true},
		{method: "GET", pattern: "/v1/sessions/{id}/events", h: s.sessionEvents},
		{method: "GET", pattern: "/v1/sessions/{id}/attachments/{digest}", h: s.attachment},
		{method: "GET", pattern: "/v1/sessions/{id}/turns/{turn}", h: s.getTurn},
		{method: "GET", pattern: "/v1/sessions/{id}/turns/{turn}/events", h: s.turnEvents},
		{method: "POST", pattern: "/v1/sessions/{id}/turns/{turn}/interrupt", h: s.interrupt},
		{method: "POST", pattern: "/v1/sessions/{id}/compact", h: s.compact, body: compactRequest{}},
		{method: "GET", pattern: "/v1/sessions/{id}/checkpoints", h: s.listCheckpoints},
		{method: "GET", pattern: "/v1/sessions/{id}/checkpoints/{turn}", h: s.getCheckpoint},
		{method: "POST", pattern: "/v1/sessions/{id}/checkpoints/{turn}/rewind", h: s.rewindTo, body: rewindRequest{}},
		{method: "GET", pattern: "/v1/sessions/{id}/totals", h: s.totals},
		{method: "GET", pattern: "/v1/sessions/{id}/budget", h: s.getBudget},
		{method: "PUT", pattern: "/v1/sessions/{id}/budget", h: s.putBudget, body: budgetRequest{}},
		{method: "GET", pattern: "/v1/approvals", h: s.listApprovals},
		{method: "POST", pattern: "/v1/approvals/{id}", h: s.decide, body: decideRequest{}},
		{method: "GET", pattern: "/v1/evals", h: s.listEvals},
		{method: "GET", pattern: "/v1/evals/{id}", h: s.getEval},
		{method: "GET", pattern: "/v1/schedules", h: s.listSchedules},
		{method: "POST", pattern: "/v1/schedules", h: s.addSchedule, body: scheduleRequest{}},
		{method: "GET", pattern: "/v1/schedules/{id}", h: s.getSchedule},
		{method: "DELETE", pattern: "/v1/schedules/{id}", h: s.deleteSchedule},
		{method: "POST", pattern: "/v1/schedules/{id}/pause", h: s.pauseSchedule(true)},
		{method: "POST", pattern: "/v1/schedules/{id}/resume", h: s.pauseSchedule(false)},
		{method: "POST", pattern: "/v1/schedules/{id}/run", h: s.runSchedule},
		{method: "GET", pattern: "/v1/elicitations", h: s.listElicitations},
		{method: "POST", pattern: "/v1/elicitations/{id}", h: s.answerElicitation, body: answerRequest{}},
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
	s.mountA2A()
	s.mountAGUI()
	if opts.Elicitations != nil {
		opts.Elicitations.attach(s.watched)
	}
	s.wg.Add(1)
	go s.watchDecisions()
	if heads, ok := a.Store().(store.ObservationHeads); ok {
		// From the last row before any stream opens: each reads what is
		// there before it waits.
		if last, _, err := heads.ObservationHeads(s.ctx, -1); err == nil {
			s.follow = &followers{}
			s.wg.Add(1)
			go s.pollRows(heads, last)
		}
	}
	s.startSchedules()
	return s, nil
}

// watched reports whether a client follows session's events (any
// session's, for ""): who could see a question asked in it.
func (s *Server) watched(session string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if session == "" {
		for _, n := range s.watching {
			if n > 0 {
				return true
			}
		}
		return false
	}
	return s.watching[session] > 0
}

// watch counts a stream of session's events opened (+1) or closed (-1).
func (s *Server) watch(session string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watching == nil {
		s.watching = map[string]int{}
	}
	if s.watching[session] += n; s.watching[session] <= 0 {
		delete(s.watching, session)
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

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(openAPI)
	return err
}
