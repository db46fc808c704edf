package mcptest

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Handler serves a server with faults over HTTP, streamable or SSE, for
// httptest or the command's -http. It wraps the SDK's handler, so that
// CrashOnCall and DropSessionOnCall can cut requests and forget sessions
// as a real server's failures would. Close it when done: it closes the
// sessions clients left open (a client that met a crash or a dropped
// session never closes its old one).
type Handler struct {
	server *mcp.Server
	sdk    http.Handler
	sse    bool

	mu        sync.Mutex
	closed    bool
	reqs      map[*request]*session // every request in flight; nil: of no session known
	sessions  map[string]*session   // by session id
	forgotten map[string]bool       // session ids answered 404 from now on
	bg        sync.WaitGroup        // SDK sessions closing
}

// session is one session of a Handler, as its faults see it.
type session struct {
	id   string // "" until the server gives it
	conn *conn
}

// request is one HTTP request in flight.
type request struct {
	cancel context.CancelFunc
	w      *cutWriter
}

// NewStreamableHandler serves a new server with the faults f over the
// streamable HTTP transport (mcp.StreamableHTTPHandler), one session per
// initialize, sessions identified by Mcp-Session-Id.
func NewStreamableHandler(f Faults, o Options) *Handler {
	h := newHandler(f, o, false)
	h.sdk = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return h.server }, nil)
	return h
}

// NewSSEHandler serves a new server with the faults f over the older
// HTTP+SSE transport (mcp.SSEHandler): a GET opens a session and carries
// its answers, POSTs to the endpoint it names carry the requests.
func NewSSEHandler(f Faults, o Options) *Handler {
	h := newHandler(f, o, true)
	h.sdk = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return h.server }, nil)
	return h
}

func newHandler(f Faults, o Options, sse bool) *Handler {
	return &Handler{
		server:    NewServer(f, o),
		sse:       sse,
		reqs:      map[*request]*session{},
		sessions:  map[string]*session{},
		forgotten: map[string]bool{},
	}
}

// Server is the SDK server the handler serves.
func (h *Handler) Server() *mcp.Server { return h.server }

const sessionHeader = "Mcp-Session-Id"

// sessionOf is the session id a request names, and whether the request
// opens a new session (an initialize POST, or an SSE GET).
func (h *Handler) sessionOf(r *http.Request) (id string, opens bool) {
	if h.sse {
		return r.URL.Query().Get("sessionid"), r.Method == http.MethodGet
	}
	id = r.Header.Get(sessionHeader)
	return id, id == "" && r.Method == http.MethodPost
}

// ServeHTTP serves one request of MCP's HTTP transports.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, opens := h.sessionOf(r)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		http.Error(w, "mcptest: the handler is closed", http.StatusServiceUnavailable)
		return
	}
	if id != "" && h.forgotten[id] {
		h.mu.Unlock()
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	s := h.sessions[id]
	if s != nil && s.conn.stalled.Load() {
		// StallOnCall: held unanswered until the client gives up, or the
		// session is cut or closed.
		h.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-s.conn.gone:
			http.Error(w, "mcptest: the session stalled (StallOnCall) and was closed", http.StatusServiceUnavailable)
		}
		return
	}
	if opens {
		s = &session{conn: newConn()}
		s.conn.cut = h.crash
		s.conn.drop = func() { h.drop(s) }
		// The SDK hands this context's values down to every call of the
		// session: that is how a fault finds its session.
		ctx = withConn(ctx, s.conn)
	}
	rq := &request{cancel: cancel, w: &cutWriter{ResponseWriter: w}}
	if opens && h.sse {
		rq.w.onWrite = func(p []byte) { h.learnSSE(s, p) }
	}
	if opens && !h.sse {
		// Known by its id before the client can learn it: the client's
		// next request may come before this one's ServeHTTP returns.
		rq.w.onHeader = func(hdr http.Header, code int) {
			if sid := hdr.Get(sessionHeader); sid != "" && code < 300 {
				h.mu.Lock()
				if !h.forgotten[sid] {
					s.id = sid
					h.sessions[sid] = s
				}
				h.mu.Unlock()
			}
		}
	}
	h.reqs[rq] = s
	h.mu.Unlock()

	h.sdk.ServeHTTP(rq.w, r.WithContext(ctx))

	h.mu.Lock()
	delete(h.reqs, rq)
	switch {
	case opens && !h.sse:
		if sid := rq.w.Header().Get(sessionHeader); sid != "" && rq.w.status() < 300 && rq.w.cutBy() == 0 && !h.forgotten[sid] {
			s.id = sid
			h.sessions[sid] = s
		} else if s.id != "" && h.sessions[s.id] == s {
			delete(h.sessions, s.id) // its answer never left
		}
	case opens && h.sse, r.Method == http.MethodDelete && s != nil:
		// The session is over: the SSE GET that was it ended, or the
		// client deleted it.
		if s.id != "" && h.sessions[s.id] == s {
			delete(h.sessions, s.id)
		}
		s.conn.release()
	}
	h.mu.Unlock()

	switch rq.w.cutBy() {
	case cutDrop:
		// Unanswered: 404, as for any request of a forgotten session.
		// Answering (a GET stream): it ends, as a closed session's does.
		if !rq.w.hasStarted() {
			clear(w.Header())
			http.Error(w, "session not found", http.StatusNotFound)
		}
	case cutAbort:
		panic(http.ErrAbortHandler) // the connection closes without a complete answer
	}
}

// learnSSE learns an SSE session's id from the endpoint event the SDK
// writes first on its GET ("data: /path?sessionid=ID").
func (h *Handler) learnSSE(s *session, p []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.id != "" {
		return
	}
	_, rest, ok := bytes.Cut(p, []byte("sessionid="))
	if !ok {
		return
	}
	if i := bytes.IndexAny(rest, "&\r\n"); i >= 0 {
		rest = rest[:i]
	}
	s.id = string(rest)
	h.sessions[s.id] = s
}

// drop forgets session s (DropSessionOnCall): its requests in flight are
// cut, its id is answered 404 from now on, and the SDK's session closes
// in the background.
func (h *Handler) drop(s *session) {
	h.mu.Lock()
	if s.id != "" {
		h.forgotten[s.id] = true
		delete(h.sessions, s.id)
	}
	var cut []*request
	for rq, rs := range h.reqs {
		if rs == s {
			cut = append(cut, rq)
		}
	}
	h.mu.Unlock()
	s.conn.release()
	for _, rq := range cut {
		rq.w.cut(cutDrop)
		rq.cancel()
	}
	if h.sse || s.id == "" {
		return // the SDK closes an SSE session when its GET ends
	}
	for ss := range h.server.Sessions() {
		if ss.ID() == s.id {
			h.bg.Go(func() { ss.Close() })
		}
	}
}

// crash is CrashOnCall under a Handler: a server that dies and comes back
// at once, knowing no session. The SDK's sessions to close are taken
// before any request is cut: once one is, its client may reconnect, and
// the session it opens then is of the server that came back.
func (h *Handler) crash() {
	dead := slices.Collect(h.server.Sessions())
	h.cutAll()
	for _, ss := range dead {
		h.bg.Go(func() { ss.Close() })
	}
}

// cutAll forgets every session, ends the waits of their connections and
// cuts the requests in flight, as a dying process would.
func (h *Handler) cutAll() {
	cut, conns := h.forgetAll()
	for _, c := range conns {
		c.release()
	}
	for _, rq := range cut {
		rq.w.cut(cutAbort)
		rq.cancel()
	}
}

// forgetAll forgets every session and returns the requests in flight and
// the sessions' connections.
func (h *Handler) forgetAll() ([]*request, []*conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var cut []*request
	var conns []*conn
	seen := map[*session]bool{}
	for rq, s := range h.reqs {
		cut = append(cut, rq)
		if s != nil && !seen[s] {
			seen[s] = true
			conns = append(conns, s.conn)
		}
	}
	for id, s := range h.sessions {
		h.forgotten[id] = true
		if !seen[s] {
			seen[s] = true
			conns = append(conns, s.conn)
		}
	}
	h.sessions = map[string]*session{}
	return cut, conns
}

// Close cuts the requests in flight, ends the calls that hang, closes
// every session and waits for them to end. Requests after Close are
// answered 503.
func (h *Handler) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	h.cutAll()
	for ss := range h.server.Sessions() {
		ss.Close()
	}
	h.bg.Wait()
	return nil
}

// How a request was cut.
const (
	cutDrop  = 1 + iota // its session was dropped: 404 if nothing was sent yet
	cutAbort            // a crash: the connection closes
)

var errCut = errors.New("mcptest: request cut")

// cutWriter passes a response through until the request is cut, and
// nothing after: an answer the SDK writes to a cut request never leaves.
type cutWriter struct {
	http.ResponseWriter
	onWrite func([]byte) // sees what is written; called without mu
	// onHeader sees the header and status once, before they are sent;
	// called without mu.
	onHeader   func(http.Header, int)
	headerOnce sync.Once

	mu      sync.Mutex
	code    int
	started bool
	by      int
}

func (w *cutWriter) cut(by int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.by == 0 {
		w.by = by
	}
}

func (w *cutWriter) cutBy() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.by
}

func (w *cutWriter) hasStarted() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.started
}

func (w *cutWriter) status() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

// header tells onHeader of the header about to be sent.
func (w *cutWriter) header(code int) {
	if w.onHeader != nil {
		w.headerOnce.Do(func() { w.onHeader(w.ResponseWriter.Header(), code) })
	}
}

func (w *cutWriter) WriteHeader(code int) {
	w.header(code)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.by != 0 || w.started {
		return
	}
	w.code, w.started = code, true
	w.ResponseWriter.WriteHeader(code)
}

func (w *cutWriter) Write(p []byte) (int, error) {
	w.header(http.StatusOK)
	w.mu.Lock()
	if w.by != 0 {
		w.mu.Unlock()
		return 0, errCut
	}
	w.started = true
	n, err := w.ResponseWriter.Write(p)
	w.mu.Unlock()
	if w.onWrite != nil {
		w.onWrite(p[:n])
	}
	return n, err
}

func (w *cutWriter) Flush() {
	w.header(http.StatusOK)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.by != 0 {
		return
	}
	w.started = true // a flush sends the header
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (w *cutWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
