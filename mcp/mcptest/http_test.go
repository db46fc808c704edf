package mcptest_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orca-agent/orca/mcp/mcptest"
)

// streamable serves a Handler for the streamable HTTP transport on
// loopback; both end with the test.
func streamable(t *testing.T, f mcptest.Faults, o mcptest.Options) (*mcptest.Handler, *httptest.Server) {
	t.Helper()
	h := mcptest.NewStreamableHandler(f, o)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	return h, srv
}

// connectHTTP connects a client to a streamable HTTP endpoint.
func connectHTTP(t *testing.T, url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, opts).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// eventually waits a few seconds for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

func TestStreamableStartDelay(t *testing.T) {
	_, srv := streamable(t, mcptest.Faults{StartDelay: 300 * time.Millisecond}, mcptest.Options{})
	start := time.Now()
	cs := connectHTTP(t, srv.URL, nil)
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("connecting took %v, want 300ms at least", d)
	}
	// The stateful handler turns the SDK client's sessionless protocol
	// down: it falls back to initialize.
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Errorf("protocol %s, want 2025-11-25", v)
	}
	if r, err := call(context.Background(), cs, "echo", map[string]any{"text": "up"}); err != nil || textOf(r) != "up" {
		t.Errorf("echo: %v, %v", r, err)
	}
}

// list_changed reaches an HTTP client on its standalone SSE stream.
func TestStreamableChangeTools(t *testing.T) {
	_, srv := streamable(t, mcptest.Faults{ChangeToolsOnCall: 2}, mcptest.Options{})
	changed := make(chan struct{}, 1)
	cs := connectHTTP(t, srv.URL, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	checkToolsChange(t, cs, changed)
}

func TestStreamableHang(t *testing.T) {
	var l logs
	dir := t.TempDir()
	_, srv := streamable(t, mcptest.Faults{HangOnCall: 1}, mcptest.Options{Dir: dir, Logger: l.logger()})
	cs := connectHTTP(t, srv.URL, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := note(ctx, cs, "one"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the hung call: %v", err)
	}
	eventually(t, "the hung call ends on the server", func() bool { return strings.Contains(l.String(), "context canceled") })
	if _, err := note(context.Background(), cs, "two"); err != nil {
		t.Fatal(err)
	}
	noteIs(t, dir, "two")
}

// Closing the handler ends a hung call: the client is not left waiting.
func TestHandlerCloseEndsHang(t *testing.T) {
	var l logs
	h, srv := streamable(t, mcptest.Faults{HangOnCall: 1}, mcptest.Options{Logger: l.logger()})
	cs := connectHTTP(t, srv.URL, nil)
	ended := make(chan error, 1)
	go func() {
		_, err := call(context.Background(), cs, "echo", map[string]any{"text": "x"})
		ended <- err
	}()
	eventually(t, "the call hangs", func() bool { return strings.Contains(l.String(), "HangOnCall") })
	h.Close()
	select {
	case err := <-ended:
		if err == nil {
			t.Error("the hung call was answered")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the hung call outlived the handler")
	}
}

// A dropped session: its call is answered 404 (ErrSessionMissing) and did
// nothing, the session is over for the client, other sessions go on, and a
// new session works, counting on.
func TestStreamableDropSession(t *testing.T) {
	dir := t.TempDir()
	_, srv := streamable(t, mcptest.Faults{DropSessionOnCall: 2}, mcptest.Options{Dir: dir})
	a := connectHTTP(t, srv.URL, nil)
	b := connectHTTP(t, srv.URL, nil)
	ctx := context.Background()
	if _, err := note(ctx, a, "one"); err != nil {
		t.Fatal(err)
	}
	if _, err := note(ctx, b, "two"); !errors.Is(err, mcp.ErrSessionMissing) {
		t.Fatalf("the dropped call: %v, want ErrSessionMissing", err)
	}
	if _, err := note(ctx, a, "three"); err != nil {
		t.Errorf("the other session: %v", err)
	}
	if _, err := note(ctx, b, "four"); !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Errorf("the dropped session's next call: %v, want ErrConnectionClosed", err)
	}
	if err := b.Wait(); !errors.Is(err, mcp.ErrSessionMissing) {
		t.Errorf("the dropped session ended with %v", err)
	}
	c := connectHTTP(t, srv.URL, nil)
	if n := counterOf(t, c); n != 4 {
		t.Errorf("counter in a new session: call %d, want 4", n)
	}
	noteIs(t, dir, "one", "three")
}

// A crash under a Handler: the call is cut, hung calls of other sessions
// end, every session is forgotten, a new session works and counts on.
func TestStreamableCrash(t *testing.T) {
	dir := t.TempDir()
	var l logs
	_, srv := streamable(t, mcptest.Faults{HangOnCall: 1, CrashOnCall: 2}, mcptest.Options{Dir: dir, Logger: l.logger()})
	a := connectHTTP(t, srv.URL, nil)
	b := connectHTTP(t, srv.URL, nil)
	ctx := context.Background()
	hung := make(chan error, 1)
	go func() {
		_, err := note(ctx, a, "one")
		hung <- err
	}()
	eventually(t, "call 1 hangs", func() bool { return strings.Contains(l.String(), "HangOnCall") })
	if r, err := note(ctx, b, "two"); !errors.Is(err, io.EOF) {
		t.Fatalf("the crashing call: %v, %v; want io.EOF", r, err)
	}
	select {
	case err := <-hung:
		if err == nil {
			t.Error("the hung call was answered")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the hung call outlived the crash")
	}
	for _, cs := range []*mcp.ClientSession{a, b} {
		if _, err := note(ctx, cs, "three"); !errors.Is(err, mcp.ErrSessionMissing) && !errors.Is(err, mcp.ErrConnectionClosed) {
			t.Errorf("a call of a session from before the crash: %v", err)
		}
	}
	c := connectHTTP(t, srv.URL, nil)
	// The calls of old sessions were answered 404 by the "restarted"
	// server: they never reached a tool, nor the count.
	if n := counterOf(t, c); n != 3 {
		t.Errorf("counter after the crash: call %d, want 3", n)
	}
	noteIs(t, dir)
}

func sseConnect(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(context.Background(), &mcp.SSEClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// Over SSE, a dropped session's stream ends and a crash cuts it; either
// way the call is not answered, the client's session is over, and a new
// one works.
func TestSSE(t *testing.T) {
	for _, f := range []mcptest.Faults{{DropSessionOnCall: 2}, {CrashOnCall: 2}} {
		dir := t.TempDir()
		h := mcptest.NewSSEHandler(f, mcptest.Options{Dir: dir})
		srv := httptest.NewServer(h)
		cs := sseConnect(t, srv.URL)
		ctx := context.Background()
		if r, err := note(ctx, cs, "one"); err != nil || r.IsError {
			t.Fatalf("%+v: call 1: %v, %v", f, r, err)
		}
		// The stream's end, or — when the session is dropped before the
		// call's POST arrives — the server's 404 for a session it no
		// longer has: unanswered either way.
		if r, err := note(ctx, cs, "two"); r != nil || !errors.Is(err, io.EOF) && (err == nil || !strings.Contains(err.Error(), "404 Not Found")) {
			t.Errorf("%+v: call 2: %v, %v; want io.EOF or a 404", f, r, err)
		}
		if _, err := note(ctx, cs, "three"); !errors.Is(err, mcp.ErrConnectionClosed) {
			t.Errorf("%+v: call 3: %v, want ErrConnectionClosed", f, err)
		}
		if n := counterOf(t, sseConnect(t, srv.URL)); n != 3 {
			t.Errorf("%+v: counter in a new session: call %d, want 3", f, n)
		}
		noteIs(t, dir, "one")
		cs.Close()
		h.Close()
		srv.Close()
	}
}

// A stalled session holds its requests unanswered — a ping too — until
// the client gives up; another session of the same handler is answered,
// and Close ends the held requests.
func TestStreamableStall(t *testing.T) {
	h, srv := streamable(t, mcptest.Faults{StallOnCall: 1}, mcptest.Options{})
	cs := connectHTTP(t, srv.URL, nil)
	for _, what := range []string{"the stalled call", "a ping"} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		var err error
		if what == "a ping" {
			err = cs.Ping(ctx, nil)
		} else {
			_, err = call(ctx, cs, "echo", map[string]any{"text": "x"})
		}
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: %v, want no answer", what, err)
		}
	}
	other := connectHTTP(t, srv.URL, nil)
	if err := other.Ping(context.Background(), nil); err != nil {
		t.Errorf("another session's ping: %v", err)
	}
	h.Close()
}
