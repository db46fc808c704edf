package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orca-agent/orca/internal/httpguard"
)

// Path is where Serve answers MCP: http://HOST:PORT/mcp.
const Path = "/mcp"

// HTTPOptions configure the server over streamable HTTP (Handler, Serve).
type HTTPOptions struct {
	// Token is the bearer token every request needs (Authorization:
	// Bearer TOKEN). Required.
	Token string
	// AllowedHosts are Host header values accepted besides loopback ones
	// (localhost, 127.0.0.1, [::1], with any port): the names the server
	// is reached by when it listens on another address.
	AllowedHosts []string
	// AllowedOrigins are origins (scheme://host[:port]) whose pages may
	// call the server, besides its own.
	AllowedOrigins []string
	// EventStore keeps what each stream sent, for a client that
	// reconnects with Last-Event-ID; nil: an mcp.MemoryEventStore of the
	// SDK's default size.
	EventStore mcp.EventStore
	// SessionTimeout ends an MCP session no request has used for that
	// long; 0: sessions last until the client ends them or the server
	// stops.
	SessionTimeout time.Duration
}

// Handler serves a Server over MCP's streamable HTTP transport, on the
// SDK's StreamableHTTPHandler: each client has an MCP session of its own
// (Mcp-Session-Id), all of them calling into the one live session, and a
// stream that breaks is resumed from the event store (Last-Event-ID).
//
// Before the SDK sees a request, the Host it was sent to, its Origin and
// its bearer token are checked as orca serve checks them (httpguard): a
// foreign Host or Origin is answered 403 (DNS rebinding, pages of other
// sites), a missing or wrong token 401 with WWW-Authenticate: Bearer.
// Close ends the sessions, cancelling their calls.
type Handler struct {
	s     *Server
	token string
	guard httpguard.Guard
	sdk   *mcp.StreamableHTTPHandler
	// ctx ends every call made through the handler: the SDK runs a
	// session's calls on a context of the session's own, which only
	// the client cancels.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	// posts are the POST requests being served: each ends once its
	// calls have been answered, which Close waits for before it ends the
	// sessions (their GET streams never end by themselves).
	posts sync.WaitGroup
}

// drain bounds how long Close waits for the answers of the calls it
// cancelled to be sent.
const drain = 10 * time.Second

// Handler returns s as an http.Handler of streamable HTTP (at whatever
// path it is mounted). A Server has at most one.
func (s *Server) Handler(opts HTTPOptions) (*Handler, error) {
	if opts.Token == "" {
		return nil, errors.New("mcpserve: no token: every request must be authorized")
	}
	for _, o := range opts.AllowedOrigins {
		if err := httpguard.CheckOrigin(o); err != nil {
			return nil, errors.New("mcpserve: " + err.Error())
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handler {
		return nil, errors.New("mcpserve: the server has an HTTP handler already")
	}
	s.handler = true
	store := opts.EventStore
	if store == nil {
		store = mcp.NewMemoryEventStore(nil)
	}
	h := &Handler{s: s, token: opts.Token, guard: httpguard.Guard{Hosts: opts.AllowedHosts, Origins: opts.AllowedOrigins}}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.sdk = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, &mcp.StreamableHTTPOptions{
		EventStore:     store,
		SessionTimeout: opts.SessionTimeout,
		Logger:         s.logger,
		// The guard checks the Host first, more strictly (whatever the
		// address it listens on) and with the allowed hosts.
		DisableLocalhostProtection: true,
	})
	s.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			stop := context.AfterFunc(h.ctx, func() { cancel(errors.New("the MCP server is stopping")) })
			defer stop()
			return next(ctx, method, req)
		}
	})
	return h, nil
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h.guard.Check(r); err != nil {
		refuse(w, http.StatusForbidden, err.Error())
		return
	}
	token, ok := httpguard.Bearer(r)
	if !ok || !httpguard.Same(token, h.token) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="orca"`)
		msg := "the request has no bearer token (Authorization: Bearer TOKEN)"
		if ok {
			msg = "the bearer token is wrong"
		}
		refuse(w, http.StatusUnauthorized, msg)
		return
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		refuse(w, http.StatusServiceUnavailable, "the MCP server is stopping")
		return
	}
	if r.Method == http.MethodPost {
		h.posts.Add(1)
		defer h.posts.Done()
	}
	h.mu.Unlock()
	h.sdk.ServeHTTP(w, r)
}

// refuse answers a request the SDK never saw with a JSON-RPC error, which
// MCP clients show (the SDK's does, with the status).
func refuse(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32000, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// Close cancels the calls still running, waits (a few seconds at most)
// until their answers are sent, then ends every MCP session (their
// streams close) and returns. Requests after it are answered 503.
func (h *Handler) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	h.cancel()
	answered := make(chan struct{})
	go func() {
		h.posts.Wait()
		close(answered)
	}()
	select {
	case <-answered:
	case <-time.After(drain):
	}
	var errs []error
	for ss := range h.s.srv.Sessions() {
		errs = append(errs, ss.Close())
	}
	return errors.Join(errs...)
}

// Serve serves s over streamable HTTP on ln, at Path, until ctx ends or
// the listener fails; then it closes the Handler (calls cancelled,
// sessions ended) and shuts the HTTP server down, returning once every
// request has. It closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener, opts HTTPOptions) error {
	h, err := s.Handler(opts)
	if err != nil {
		ln.Close()
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(Path, h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err = <-done:
	case <-ctx.Done():
	}
	cerr := h.Close()
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if serr := hs.Shutdown(shut); serr != nil && err == nil {
		err = serr
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, cerr)
}
