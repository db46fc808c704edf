package mcpserve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orca-agent/orca/internal/proctest"
	"github.com/orca-agent/orca/mcp/mcpserve"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/sandbox"
)

const testToken = "test-token-0123456789abcdef"

// httpRig is a rig's server on a loopback port, over streamable HTTP.
type httpRig struct {
	*rig
	url     string
	logs    *syncBuffer
	stop    func() error
	stopped bool
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// serveHTTP serves a rig's session on 127.0.0.1 with the token testToken;
// Bash is allowed, in the OS sandbox when there is one.
func serveHTTP(t *testing.T, opts mcpserve.HTTPOptions) *httpRig {
	t.Helper()
	pol, err := policy.New(policy.ModeAcceptEdits, policy.Rules{Allow: []policy.Rule{{Tool: "Bash"}}})
	if err != nil {
		t.Fatal(err)
	}
	c := config{policy: pol}
	if err := sandbox.Available(); err != nil {
		t.Logf("no OS sandbox here (%v): Bash runs without it", err)
		c.sandbox = &sandbox.Runner{Disabled: true}
	}
	logs := &syncBuffer{}
	c.opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r, srv := newServer(t, c)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if opts.Token == "" {
		opts.Token = testToken
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { r.done <- srv.Serve(ctx, ln, opts) }()
	h := &httpRig{rig: r, url: "http://" + ln.Addr().String() + mcpserve.Path, logs: logs}
	t.Cleanup(func() {
		if !h.stopped {
			cancel()
			if err := <-r.done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		}
	})
	h.stop = func() error {
		h.stopped = true
		cancel()
		return <-r.done
	}
	return h
}

// connect is an SDK client of the server, its requests through rt (nil:
// with the token, as a client's configuration sends it).
func (h *httpRig) connect(t *testing.T, rt http.RoundTripper) (*mcp.ClientSession, error) {
	t.Helper()
	if rt == nil {
		rt = bearer{testToken, http.DefaultTransport}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: h.url, HTTPClient: &http.Client{Transport: rt}}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// bearer sends the token on every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(req)
}

// Two clients over HTTP, each in an MCP session of its own: one lists the
// tools and writes a file, the other reads it back; the token is in no
// event and no log line.
func TestHTTP(t *testing.T) {
	h := serveHTTP(t, mcpserve.HTTPOptions{})
	a, err := h.connect(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.connect(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID() == "" || a.ID() == b.ID() {
		t.Errorf("MCP sessions %q and %q: want two, with ids", a.ID(), b.ID())
	}
	list, err := a.ListTools(t.Context(), nil)
	if err != nil || len(list.Tools) != len(h.ls.Runtime().Tools().Names()) {
		t.Fatalf("tools: %v %+v", err, list)
	}
	res, err := a.CallTool(t.Context(), &mcp.CallToolParams{Name: "Write", Arguments: map[string]string{"file_path": "over/http.txt", "content": "streamed\n"}})
	if err != nil || res.IsError {
		t.Fatalf("Write: %v %s", err, text(res))
	}
	if got, _ := h.file("over/http.txt"); got != "streamed\n" {
		t.Errorf("over/http.txt = %q", got)
	}
	res, err = b.CallTool(t.Context(), &mcp.CallToolParams{Name: "Read", Arguments: map[string]string{"file_path": "over/http.txt"}})
	if err != nil || res.IsError || !strings.Contains(text(res), "streamed") {
		t.Errorf("Read: %v %s", err, text(res))
	}
	a.Close()
	b.Close()
	if err := h.stop(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	for len(h.events) > 0 {
		e := <-h.events
		if j, _ := json.Marshal(e); bytes.Contains(j, []byte(testToken)) {
			t.Errorf("event %s holds the token: %s", e.Name, j)
		}
	}
	if logs := h.logs.String(); logs == "" || strings.Contains(logs, testToken) {
		t.Errorf("the logs (want some, without the token):\n%s", logs)
	}
}

// Before the SDK sees a request: a foreign Host or Origin is refused with
// 403 whatever the token, a missing or wrong token with 401 and
// WWW-Authenticate: Bearer, and a JSON-RPC error saying why (its id
// null: the request is not read).
func TestHTTPRefused(t *testing.T) {
	h := serveHTTP(t, mcpserve.HTTPOptions{AllowedOrigins: []string{"https://ide.example"}, AllowedHosts: []string{"orca.internal"}})
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	for _, c := range []struct {
		name   string
		header []string
		code   int
		says   string
	}{
		{"no token", []string{"Authorization", ""}, 401, "no bearer token"},
		{"a wrong token", []string{"Authorization", "Bearer " + strings.Repeat("x", len(testToken))}, 401, "the bearer token is wrong"},
		{"basic auth", []string{"Authorization", "Basic dXNlcjpwYXNz"}, 401, "no bearer token"},
		{"a rebinding host", []string{"Host", "evil.example"}, 403, `evil.example`},
		{"a rebinding host, no token", []string{"Host", "evil.example:80", "Authorization", ""}, 403, "is not this server's"},
		{"a foreign origin", []string{"Origin", "https://evil.example"}, 403, "pages of https://evil.example"},
		{"cross-site", []string{"Sec-Fetch-Site", "cross-site"}, 403, "cross-site requests"},
		{"an allowed origin", []string{"Origin", "https://ide.example"}, 200, ""},
		{"an allowed host", []string{"Host", "orca.internal:1234"}, 200, ""},
		{"localhost", []string{"Host", "localhost"}, 200, ""},
		{"the same origin", []string{"Origin", strings.TrimSuffix(h.url, mcpserve.Path)}, 200, ""},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", h.url, strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+testToken)
		for i := 0; i+1 < len(c.header); i += 2 {
			switch {
			case c.header[i] == "Host":
				req.Host = c.header[i+1]
			case c.header[i+1] == "":
				req.Header.Del(c.header[i])
			default:
				req.Header.Set(c.header[i], c.header[i+1])
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || !strings.Contains(string(body), c.says) {
			t.Errorf("%s: %d %s, want %d saying %q", c.name, resp.StatusCode, body, c.code, c.says)
		}
		if auth := resp.Header.Get("WWW-Authenticate"); (c.code == 401) != strings.HasPrefix(auth, "Bearer ") {
			t.Errorf("%s: WWW-Authenticate %q", c.name, auth)
		}
		if c.code == 200 && resp.Header.Get("Mcp-Session-Id") == "" {
			t.Errorf("%s: no Mcp-Session-Id", c.name)
		}
	}
	if _, err := h.connect(t, http.DefaultTransport); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("the SDK's client without the token: %v", err)
	}
}

// A stream that breaks mid-call is resumed: the client reconnects with
// Last-Event-ID and gets the call's result, which the call went on to
// produce meanwhile (its file is on disk).
func TestHTTPResume(t *testing.T) {
	h := serveHTTP(t, mcpserve.HTTPOptions{})
	cut := &cutter{next: bearer{testToken, http.DefaultTransport}, cut: make(chan struct{})}
	cs, err := h.connect(t, cut)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "Bash", Arguments: map[string]string{
			"command": "until [ -e go ]; do sleep 0.02; done; echo resumed > out.txt; echo call finished"}})
		done <- result{res, err}
	}()
	select {
	case <-cut.cut:
	case <-time.After(20 * time.Second):
		t.Fatal("the call's stream was never cut")
	}
	if err := os.WriteFile(filepath.Join(h.root, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.res.IsError || !strings.Contains(text(r.res), "call finished") {
			t.Fatalf("the resumed call: %v %s", r.err, text(r.res))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call's result never came")
	}
	if got, _ := h.file("out.txt"); got != "resumed\n" {
		t.Errorf("out.txt = %q", got)
	}
	if !cut.resumed.Load() {
		t.Error("the client did not reconnect with Last-Event-ID")
	}
}

// cutter breaks the first tools/call stream after its first event, as a
// dropped connection would, and notes a GET that resumes one.
type cutter struct {
	next    http.RoundTripper
	once    sync.Once
	cut     chan struct{}
	resumed atomic.Bool
}

func (c *cutter) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	if req.Method == http.MethodGet && req.Header.Get("Last-Event-ID") != "" {
		c.resumed.Store(true)
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost || !bytes.Contains(body, []byte(`"tools/call"`)) {
		return resp, err
	}
	c.once.Do(func() { resp.Body = &cutBody{rc: resp.Body, cut: c.cut} })
	return resp, nil
}

// cutBody passes its first event through, then fails as a broken
// connection does.
type cutBody struct {
	rc   io.ReadCloser
	cut  chan struct{}
	seen []byte
	done bool
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.ErrUnexpectedEOF
	}
	n, err := b.rc.Read(p)
	b.seen = append(b.seen, p[:n]...)
	if i := bytes.Index(b.seen, []byte("\n\n")); i >= 0 {
		n -= len(b.seen) - (i + 2)
		b.done = true
		b.rc.Close()
		close(b.cut)
		return n, nil
	}
	return n, err
}

func (b *cutBody) Close() error { return b.rc.Close() }

// Stopping the server (its context cancelled: SIGINT, SIGTERM in orca mcp
// serve) cancels the calls still running, their processes with them,
// answers them, ends the sessions and their streams, and returns: no
// goroutine is left (goleak, TestMain).
func TestHTTPStop(t *testing.T) {
	h := serveHTTP(t, mcpserve.HTTPOptions{})
	cs, err := h.connect(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	hold := proctest.NewHolder(t, h.root, "hold")
	called := make(chan string, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "Bash", Arguments: map[string]string{"command": "sleep 1000 3>hold"}})
		switch {
		case err != nil:
			called <- err.Error()
		case !res.IsError:
			called <- "not an error: " + text(res)
		default:
			called <- text(res)
		}
	}()
	hold.Opened()
	start := time.Now()
	if err := h.stop(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Serve took %s to return", d)
	}
	hold.RequireGone()
	// The call's answer is sent before the session ends.
	select {
	case got := <-called:
		if !strings.Contains(got, "cancelled") {
			t.Errorf("the call's answer: %s", got)
		}
	case <-time.After(5 * time.Second):
		t.Error("the call never ended")
	}
	cs.Close()
	if _, err := h.connect(t, nil); err == nil {
		t.Error("a client connected after the server stopped")
	}
}

// A server without a token, or with a malformed origin, is not made; a
// server has one HTTP handler.
func TestHTTPOptions(t *testing.T) {
	_, srv := newServer(t, config{})
	if _, err := srv.Handler(mcpserve.HTTPOptions{}); err == nil || !strings.Contains(err.Error(), "no token") {
		t.Errorf("no token: %v", err)
	}
	if _, err := srv.Handler(mcpserve.HTTPOptions{Token: testToken, AllowedOrigins: []string{"ide.example"}}); err == nil {
		t.Error("an origin without a scheme was taken")
	}
	h, err := srv.Handler(mcpserve.HTTPOptions{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := srv.Handler(mcpserve.HTTPOptions{Token: testToken}); err == nil {
		t.Error("a second handler was made")
	}
}
