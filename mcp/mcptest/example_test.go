package mcptest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orca-agent/orca/mcp/mcptest"
)

// A server on loopback that drops the session of its second call: the
// client sees mcp.ErrSessionMissing and must initialize a new session.
func Example() {
	h := mcptest.NewStreamableHandler(mcptest.Faults{DropSessionOnCall: 2}, mcptest.Options{})
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close() // first: it closes the sessions clients left behind

	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		panic(err)
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Content[0].(*mcp.TextContent).Text)

	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "again"}})
	fmt.Println("session missing:", errors.Is(err, mcp.ErrSessionMissing))
	cs.Close()

	cs, err = client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "counter"})
	if err != nil {
		panic(err)
	}
	fmt.Println("counter:", r.StructuredContent)
	// Output:
	// hello
	// session missing: true
	// counter: map[call:3]
}

// A server in memory that crashes on its first call: the connection
// closes, and Serve says so.
func ExampleServe() {
	ctx := context.Background()
	serverT, clientT := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() {
		served <- mcptest.Serve(ctx, mcptest.NewServer(mcptest.Faults{CrashOnCall: 1}, mcptest.Options{}), serverT)
	}()

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "v0"}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		panic(err)
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}})
	fmt.Println("call:", err)
	cs.Close()
	fmt.Println("serve:", errors.Is(<-served, mcptest.ErrCrashed))
	// Output:
	// call: calling "tools/call": EOF
	// serve: true
}
