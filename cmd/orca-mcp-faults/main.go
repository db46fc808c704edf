// Command orca-mcp-faults is an MCP server that fails on purpose, for
// testing MCP clients and the setups around them: it crashes on the N-th
// call, hangs, starts slowly, fails to list its tools, drops its HTTP
// session or changes its tool list, as its flags say. Its tools,
// resources and prompt, and exactly when each fault fires, are
// documented in package github.com/orca-agent/orca/mcp/mcptest.
//
// Usage:
//
//	orca-mcp-faults [flags]                    serve MCP over stdin and stdout
//	orca-mcp-faults -http 127.0.0.1:0 [flags]  serve streamable HTTP (with -sse: HTTP+SSE)
//
// For example, in a .mcp.json:
//
//	{"mcpServers": {"faults": {"command": "orca-mcp-faults", "args": ["-crash-on-call", "3", "-dir", "/tmp/notes"]}}}
//
// Over stdio, standard output carries the protocol and nothing else; the
// log (each fault as it fires, each notifications/cancelled received, each
// call cut short) goes to standard error, or to the file -log names (a
// client that keeps only the end of a server's stderr loses none of it).
// Over HTTP, the first line on standard error says where it serves:
//
//	orca-mcp-faults: serving streamable HTTP at http://127.0.0.1:40123/
//
// A crash (-crash-on-call) is a real one: the process exits at once with
// status 3, the call unanswered. SIGINT or SIGTERM end it with status 0;
// so does the client closing standard input. Bad flags exit with status 2.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/orca-agent/orca/mcp/mcptest"
)

// crashStatus is the exit status of a crash on purpose.
const crashStatus = 3

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	fl := flag.NewFlagSet("orca-mcp-faults", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var (
		f       mcptest.Faults
		o       mcptest.Options
		addr    string
		useSSE  bool
		logFile string
	)
	fl.StringVar(&addr, "http", "", "serve HTTP on this address (e.g. 127.0.0.1:0) instead of stdio")
	fl.BoolVar(&useSSE, "sse", false, "with -http, serve the older HTTP+SSE transport instead of streamable HTTP")
	fl.StringVar(&o.Dir, "dir", "", "the folder write_note and delete_note work in (without it, no note tools)")
	fl.DurationVar(&f.StartDelay, "start-delay", 0, "answer each initialize this late")
	fl.DurationVar(&f.SlowCall, "slow-call", 0, "delay every tools/call this long")
	fl.IntVar(&f.CrashOnCall, "crash-on-call", 0, "exit with status 3 on the N-th tools/call, unanswered")
	fl.IntVar(&f.HangOnCall, "hang-on-call", 0, "never answer the N-th tools/call, until the client cancels it")
	fl.IntVar(&f.StallOnCall, "stall-on-call", 0, "from the N-th tools/call on, answer nothing on its connection (pings included): a stuck server")
	fl.IntVar(&f.DropSessionOnCall, "drop-session-on-call", 0, "HTTP: forget the session of the N-th tools/call (404)")
	fl.IntVar(&f.ErrorOnCall, "error-on-call", 0, "answer the N-th tools/call with an isError result")
	fl.IntVar(&f.FailListTools, "fail-list-tools", 0, "answer the first N tools/list requests with an error")
	fl.IntVar(&f.ChangeToolsOnCall, "change-tools-on-call", 0, "after the N-th tools/call, remove add, add reverse, send list_changed")
	fl.StringVar(&logFile, "log", "", "append the log to this file instead of standard error")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "orca-mcp-faults: unexpected arguments %q\n", fl.Args())
		return 2
	}
	if useSSE && addr == "" {
		fmt.Fprintln(stderr, "orca-mcp-faults: -sse needs -http")
		return 2
	}
	logTo := stderr
	if logFile != "" {
		lf, err := os.OpenFile(logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			fmt.Fprintln(stderr, "orca-mcp-faults:", err)
			return 2
		}
		defer lf.Close()
		logTo = lf
	}
	o.Logger = slog.New(slog.NewTextHandler(logTo, nil))
	o.OnCrash = func() {
		fmt.Fprintf(stderr, "orca-mcp-faults: crashing on purpose (-crash-on-call %d)\n", f.CrashOnCall)
		os.Exit(crashStatus)
	}

	if addr == "" {
		if err := mcptest.ServeStdio(ctx, f, o); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(stderr, "orca-mcp-faults:", err)
			return 1
		}
		return 0
	}
	return serveHTTP(ctx, addr, useSSE, f, o, stderr)
}

func serveHTTP(ctx context.Context, addr string, useSSE bool, f mcptest.Faults, o mcptest.Options, stderr io.Writer) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(stderr, "orca-mcp-faults:", err)
		return 1
	}
	h, kind := mcptest.NewStreamableHandler(f, o), "streamable HTTP"
	if useSSE {
		h, kind = mcptest.NewSSEHandler(f, o), "HTTP+SSE"
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stderr, "orca-mcp-faults: serving %s at http://%s/\n", kind, ln.Addr())

	select {
	case err = <-served:
	case <-ctx.Done():
	}
	h.Close() // first: it ends the streams that would keep Shutdown waiting
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil {
		srv.Close()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(stderr, "orca-mcp-faults:", err)
		return 1
	}
	return 0
}
