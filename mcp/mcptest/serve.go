package mcptest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Serve serves s (from NewServer) over one connection of t, as s.Run
// does, but through a connection this package can cut, so that
// CrashOnCall closes it. It returns when the client closes the connection
// (nil), when ctx ends (ctx.Err(), after closing the session and ending
// its hung calls), or after a crash (an error wrapping ErrCrashed).
//
// A test that serves the same s again, say over a new pair of
// mcp.NewInMemoryTransports, reconnects to the same server: the call
// count goes on. A new server from NewServer is a restarted one.
func Serve(ctx context.Context, s *mcp.Server, t mcp.Transport) error {
	c := newConn()
	ct := &cutTransport{t: t, c: c}
	c.cut = ct.cut
	defer c.release()
	ss, err := s.Connect(withConn(ctx, c), ct, nil)
	if err != nil {
		return fmt.Errorf("mcptest: connecting the server: %w", err)
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err = <-ended:
	case <-ctx.Done():
		c.release() // hung calls end, so that Close does not wait for them
		ss.Close()
		<-ended
		return ctx.Err()
	}
	if ct.crashed.Load() {
		return fmt.Errorf("mcptest: serving: %w", ErrCrashed)
	}
	return err
}

// ServeStdio serves a server with the faults f over standard input and
// output until the client closes them or ctx ends; see Serve. The command
// orca-mcp-faults is this with o.OnCrash exiting the process.
func ServeStdio(ctx context.Context, f Faults, o Options) error {
	return Serve(ctx, NewServer(f, o), &mcp.StdioTransport{})
}

// cutTransport is a transport whose connection a crash can close from
// under the SDK, which otherwise closes a session only once its calls
// have been answered.
type cutTransport struct {
	t       mcp.Transport
	c       *conn
	crashed atomic.Bool

	mu   sync.Mutex
	conn *cutConn
}

func (t *cutTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	inner, err := t.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	cc := &cutConn{Connection: inner, c: t.c}
	t.mu.Lock()
	t.conn = cc
	t.mu.Unlock()
	return cc, nil
}

// cut closes the connection: the SDK's read fails, so that it cancels the
// calls in flight and ends the session, and the client reads end of file.
func (t *cutTransport) cut() {
	t.crashed.Store(true)
	t.c.release()
	t.mu.Lock()
	cc := t.conn
	t.mu.Unlock()
	if cc != nil {
		cc.Close()
	}
}

// cutConn closes its connection once, whoever asks first; once the
// connection stalled (StallOnCall), it drops what it reads.
type cutConn struct {
	mcp.Connection
	c    *conn
	once sync.Once
	err  error
}

// Read returns the next message, unless the connection stalled: then
// each message is read and dropped, as a stuck server would leave it,
// until reading fails (the client closed the connection, or it was cut).
func (c *cutConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		m, err := c.Connection.Read(ctx)
		if err != nil || !c.c.stalled.Load() {
			return m, err
		}
	}
}

func (c *cutConn) Close() error {
	c.once.Do(func() { c.err = c.Connection.Close() })
	return c.err
}
