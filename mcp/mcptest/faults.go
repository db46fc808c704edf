package mcptest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Faults says what goes wrong, and when. The zero value is a server that
// behaves.
//
// # Which calls count
//
// A server counts the tools/call requests it receives, from 1: every one,
// whatever tool it names (unknown ones included), over all its sessions
// and reconnections, whether or not it is ever answered. No other request
// counts. A fault "on call N" fires on that call and on no other: it does
// not repeat, and a client that reconnects to the same server goes on
// counting past it. A new server counts from 1 again, so a restarted
// orca-mcp-faults process started with -crash-on-call 3 crashes on the
// third call of every run.
//
// # What happens to a call, in order
//
//  1. It gets its number.
//  2. It waits SlowCall.
//  3. At most one of CrashOnCall, DropSessionOnCall, HangOnCall,
//     StallOnCall and ErrorOnCall applies, the first of them in that order
//     that names it. None of them runs the tool: a crashed, dropped, hung,
//     stalled or failed call had no effect (no note written).
//  4. The tool runs.
//  5. If ChangeToolsOnCall names it, the tool list changes once the call
//     has ended, answered or not.
type Faults struct {
	// StartDelay delays the answer to every initialize request (and to
	// every server/discover, its stand-in in the sessionless protocol
	// 2026-07-28) by this long: a server slow to start. Each new session
	// (a reconnection, a new HTTP session) waits again. The wait ends
	// early, with an error, if the request's context ends or its
	// connection is cut.
	StartDelay time.Duration

	// SlowCall delays every tools/call by this long before anything else
	// happens to it (step 2). A call whose context ends while it waits
	// gets an error and has no effect.
	SlowCall time.Duration

	// CrashOnCall crashes the server on call N. What a crash is depends on
	// how the server is served:
	//   - Options.OnCrash, if set, is called first; the command sets it to
	//     exit the process (exit status 3), a real crash.
	//   - Under Serve and ServeStdio, the connection is closed at once, with
	//     no answer to call N; the client reads end of file. Serve returns
	//     an error wrapping ErrCrashed.
	//   - Under a Handler, as a server process that dies and is restarted at
	//     once: every HTTP request in flight, the call's included, has its
	//     connection closed without a complete answer, and every session id
	//     issued so far is forgotten (answered 404 from then on), so that a
	//     client must initialize a new session. The Handler goes on serving
	//     new sessions, and its call count goes on.
	//   - Served otherwise (Server.Run on a transport of your own), the
	//     connection cannot be cut: call N is never answered, as with
	//     HangOnCall.
	CrashOnCall int

	// DropSessionOnCall makes a Handler forget the session of call N, as
	// a server that restarted or expired the session would: the request
	// carrying call N is answered 404 Not Found (streamable HTTP; the
	// client sees mcp.ErrSessionMissing) and never reaches the tool; any
	// other request of that session in flight is cut; every later request
	// with that session id is answered 404. Over SSE, where answers come on
	// the session's GET stream, that stream is cut and later POSTs are
	// answered 404. Other sessions are not touched. Over stdio or in-memory
	// transports, which have no sessions to forget, the fault is ignored
	// and call N goes on as if it were not set.
	DropSessionOnCall int

	// HangOnCall never answers call N: the call waits until its context
	// ends (the client cancels it with notifications/cancelled, or the
	// connection breaks), the connection is cut, or the Handler or Serve
	// that serves it closes. It then gets an error that no client should
	// still be waiting for. Other calls, before and after, are answered.
	HangOnCall int

	// StallOnCall makes the server stop answering on call N, as one whose
	// event loop is stuck: call N and every message after it on the same
	// connection — pings and notifications/cancelled included — get no
	// answer and have no effect, until the connection is cut or closed.
	// Under Serve and ServeStdio the messages that come are read and
	// dropped; under a Handler the session's requests are held unanswered
	// until the client gives up on them (other sessions are not touched).
	// Served otherwise, call N hangs, as with HangOnCall, and the rest is
	// answered.
	StallOnCall int

	// ErrorOnCall answers call N with a tool result whose isError is true
	// and whose text names the fault, without running the tool.
	ErrorOnCall int

	// FailListTools answers the first N tools/list requests the server
	// receives, over all its sessions and reconnections, with a JSON-RPC
	// error, as a server whose tools are not ready yet would; the ones
	// after are answered. These requests are counted apart from the
	// calls. A new server counts from 1 again.
	FailListTools int

	// ChangeToolsOnCall changes the tool list once call N has ended: the
	// tool "add" is removed and the tool "reverse" is added, and every
	// session of the server is sent notifications/tools/list_changed
	// (the SDK sends it some 10ms after the change).
	ChangeToolsOnCall int
}

// ErrCrashed is wrapped by the error Serve returns after CrashOnCall cut
// its connection.
var ErrCrashed = errors.New("mcptest: crashed on purpose (CrashOnCall)")

// errGone ends the waits of a connection that was cut or closed.
var errGone = errors.New("mcptest: connection cut or closed")

// A conn is one client connection as the faults see it: a connection
// served by Serve, or an HTTP session of a Handler. Serve and the Handler
// put it in the context of the connection, which the SDK hands down to
// every request handler of that connection.
type conn struct {
	gone chan struct{} // closed when the connection is cut or closed: ends waits
	once sync.Once
	// stalled: StallOnCall fired; nothing more is answered.
	stalled atomic.Bool

	cut  func() // crash: close the connection at once; never nil
	drop func() // forget the session; nil where there are no sessions
}

func newConn() *conn { return &conn{gone: make(chan struct{})} }

// release ends every wait of the connection's calls.
func (c *conn) release() { c.once.Do(func() { close(c.gone) }) }

type connKey struct{}

func withConn(ctx context.Context, c *conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

func connFrom(ctx context.Context) *conn {
	c, _ := ctx.Value(connKey{}).(*conn)
	return c
}

// wait waits d, or until ctx ends or the connection is cut or closed.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-goneOf(ctx):
		return errGone
	}
}

// hang waits until ctx ends or the connection is cut or closed.
func hang(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-goneOf(ctx):
		return errGone
	}
}

// goneOf is the connection's gone channel; nil (never ready) without one.
func goneOf(ctx context.Context) <-chan struct{} {
	if c := connFrom(ctx); c != nil {
		return c.gone
	}
	return nil
}

// faults is the state of one server's faults: its call count.
type faults struct {
	f       Faults
	onCrash func()
	log     *slog.Logger
	calls   atomic.Int64
	lists   atomic.Int64 // tools/list requests (FailListTools)
	change  func()       // changes the tool list (ChangeToolsOnCall)
}

// middleware is the SDK receiving middleware that makes the faults happen.
func (fs *faults) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "initialize", "server/discover": // the first request, in the old protocol and the new
			if d := fs.f.StartDelay; d > 0 {
				fs.log.Info("mcptest: slow start", "delay", d)
				if err := wait(ctx, d); err != nil {
					return nil, fmt.Errorf("mcptest: slow start cut short: %w", err)
				}
			}
		case "tools/call":
			return fs.call(ctx, method, req, next)
		case "notifications/cancelled":
			if p, ok := req.GetParams().(*mcp.CancelledParams); ok {
				fs.log.Info("mcptest: notifications/cancelled received", "request", p.RequestID, "reason", p.Reason)
			}
		case "tools/list":
			if n := int(fs.lists.Add(1)); n <= fs.f.FailListTools {
				fs.log.Info("mcptest: tools/list fails (FailListTools)", "list", n)
				return nil, fmt.Errorf("mcptest: tools/list %d of the first %d fails on purpose (FailListTools)", n, fs.f.FailListTools)
			}
		}
		return next(ctx, method, req)
	}
}

func (fs *faults) call(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	n := int(fs.calls.Add(1))
	tool := ""
	if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil {
		tool = r.Params.Name
	}
	log := fs.log.With("call", n, "tool", tool)
	if n == fs.f.ChangeToolsOnCall {
		defer func() {
			log.Info("mcptest: tool list changes: add removed, reverse added (ChangeToolsOnCall)")
			fs.change()
		}()
	}
	if d := fs.f.SlowCall; d > 0 {
		if err := wait(ctx, d); err != nil {
			return nil, fmt.Errorf("mcptest: slow call %d cut short: %w", n, err)
		}
	}
	c := connFrom(ctx)
	switch n {
	case fs.f.CrashOnCall:
		log.Info("mcptest: crash (CrashOnCall)")
		if fs.onCrash != nil {
			fs.onCrash()
		}
		if c != nil {
			c.cut()
			return nil, ErrCrashed
		}
		log.Info("mcptest: no connection of this package to cut: the call hangs instead")
		return nil, fs.hang(ctx, log)
	case fs.f.DropSessionOnCall:
		if c != nil && c.drop != nil {
			log.Info("mcptest: session dropped (DropSessionOnCall)")
			c.drop()
			return nil, errGone
		}
		log.Info("mcptest: no session to drop on this transport: the call goes on")
	case fs.f.HangOnCall:
		log.Info("mcptest: hang (HangOnCall)")
		return nil, fs.hang(ctx, log)
	case fs.f.StallOnCall:
		log.Info("mcptest: stall (StallOnCall): nothing more is answered")
		if c != nil {
			c.stalled.Store(true)
		}
		return nil, fs.hang(ctx, log)
	case fs.f.ErrorOnCall:
		log.Info("mcptest: error result (ErrorOnCall)")
		return &mcp.CallToolResult{
			IsError: true,
			Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("mcptest: error injected on call %d (ErrorOnCall)", n)}},
		}, nil
	}
	return next(context.WithValue(ctx, callKey{}, n), method, req)
}

type callKey struct{}

// callNumber is the number of the call whose context ctx is.
func callNumber(ctx context.Context) int {
	n, _ := ctx.Value(callKey{}).(int)
	return n
}

func (fs *faults) hang(ctx context.Context, log *slog.Logger) error {
	err := hang(ctx)
	log.Info("mcptest: hung call ended", "why", err)
	return fmt.Errorf("mcptest: hung call ended: %w", err)
}
