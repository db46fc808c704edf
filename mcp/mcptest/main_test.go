package mcptest_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/orca-agent/orca/mcp/mcptest"
)

// No server, client or hung call may leave a goroutine behind, and the
// command the tests build is removed.
func TestMain(m *testing.M) {
	code := m.Run()
	if commandDir != "" {
		os.RemoveAll(commandDir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// served is a server served by mcptest.Serve over in-memory transports,
// and a client session connected to it.
type served struct {
	cs   *mcp.ClientSession
	done chan error // Serve's result
	once sync.Once
	err  error
}

// wait is what Serve returned.
func (s *served) wait() error {
	s.once.Do(func() { s.err = <-s.done })
	return s.err
}

// serve serves s in memory and connects a client with opts at protocol
// version (empty: the SDK's latest); both end with the test.
func serve(t *testing.T, s *mcp.Server, opts *mcp.ClientOptions, version string) *served {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	sv := &served{done: make(chan error, 1)}
	go func() { sv.done <- mcptest.Serve(ctx, s, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		cancel()
		sv.wait()
		t.Fatalf("connect: %v", err)
	}
	sv.cs = cs
	t.Cleanup(func() {
		cs.Close()
		cancel()
		sv.wait()
	})
	return sv
}

func call(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
}

// textOf is the text content of a tool result.
func textOf(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// logs collects what a server logs.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logs) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }
