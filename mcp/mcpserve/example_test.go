package mcpserve_test

import (
	"context"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/mcp/mcpserve"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/toolset"
)

// A session's tools served to an MCP client (here the SDK's, in-process;
// `orca mcp serve` serves them over stdio): the client's Write lands in
// the workspace, and its Bash is refused by the policy as a model's would
// be, saying how to allow it.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "orca-mcpserve")
	defer os.RemoveAll(dir)
	pol, _ := policy.New(policy.ModeAcceptEdits, policy.Rules{})
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "served"}, agent.Collaborators{Client: script.New(), Workspace: dir, Policy: pol})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	st := store.NewMemory()
	defer st.Close()
	ctx := context.Background()
	live, err := session.NewRouter(rt, st, nil).Open(ctx, "mcp", session.OpenOptions{})
	if err != nil {
		panic(err)
	}
	defer live.Close(ctx)

	srv, err := mcpserve.New(live, mcpserve.Options{Tools: []string{"Write", "Bash"}})
	if err != nil {
		panic(err)
	}
	clientEnd, serverEnd := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, serverEnd) }()
	client, err := mcp.NewClient(&mcp.Implementation{Name: "example"}, nil).Connect(ctx, clientEnd, nil)
	if err != nil {
		panic(err)
	}
	res, _ := client.CallTool(ctx, &mcp.CallToolParams{Name: "Write", Arguments: map[string]string{"file_path": "hello.txt", "content": "hi\n"}})
	b, _ := os.ReadFile(dir + "/hello.txt")
	fmt.Printf("Write: error %v, hello.txt %q\n", res.IsError, b)
	res, _ = client.CallTool(ctx, &mcp.CallToolParams{Name: "Bash", Arguments: map[string]string{"command": "rm hello.txt"}})
	fmt.Println("Bash: error", res.IsError)
	client.Close()
	fmt.Println("server:", <-done)
	// Output:
	// Write: error false, hello.txt "hi\n"
	// Bash: error true
	// server: <nil>
}
