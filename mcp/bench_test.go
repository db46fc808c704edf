package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orca-agent/orca/mcp"
	"github.com/orca-agent/orca/mcp/mcptest"
	"github.com/orca-agent/orca/tool"
)

// BenchmarkEcho is one call of mcptest's echo, three ways, so that the
// cost of orca's proxy shows beside what the call costs without it:
//
//   - sdk/in-memory: the SDK's client and server in this process, over
//     mcp.NewInMemoryTransports — the server's own time (with the JSON-RPC
//     both sides encode and decode), no pipes, no process;
//   - sdk/stdio: the SDK's client over the pipes of a server process (this
//     test binary serving mcptest over stdio);
//   - orca/stdio: the call as a turn makes it — the registry validates the
//     input against the tool's schema and calls the Provider's proxy,
//     which turns the result into an observation — to the same server,
//     started by the Provider.
//
// orca/stdio minus sdk/stdio is orca's overhead per call. Allocations are
// this process's only (the server's are its own).
//
//	go test -run '^$' -bench BenchmarkEcho -benchmem ./mcp
func BenchmarkEcho(b *testing.B) {
	input := json.RawMessage(`{"text":"hello"}`)
	args := map[string]any{"text": "hello"}
	b.Run("sdk/in-memory", func(b *testing.B) {
		st, ct := sdk.NewInMemoryTransports()
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- mcptest.Serve(ctx, mcptest.NewServer(mcptest.Faults{}, mcptest.Options{}), st) }()
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			cs.Close()
			cancel()
			<-served
		}()
		sdkCalls(b, cs, args)
	})
	b.Run("sdk/stdio", func(b *testing.B) {
		exe, err := os.Executable()
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), faultsEnv+"={}")
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		sdkCalls(b, cs, args)
	})
	b.Run("orca/stdio", func(b *testing.B) {
		exe, err := os.Executable()
		if err != nil {
			b.Fatal(err)
		}
		p := mcp.NewProvider([]mcp.Server{{Name: "faults", Command: exe, Env: map[string]string{faultsEnv: "{}"}}}, mcp.Options{})
		reg := tool.NewRegistry()
		tools, err := p.Tools(tool.Env{RuntimeID: "bench", Registry: reg})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		for _, t := range tools {
			if err := reg.Add(t); err != nil {
				b.Fatal(err)
			}
		}
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if res := reg.Call(ctx, &tool.Call{ID: "c", Name: "mcp__faults__echo", Input: input}); res.IsError || res.Content != "hello" {
				b.Fatalf("echo: %+v", res)
			}
		}
	})
}

func sdkCalls(b *testing.B, cs *sdk.ClientSession, args map[string]any) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("echo: %v, %+v", err, res)
		}
	}
}
