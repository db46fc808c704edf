// Command orca runs LLM agents from the command line: `orca demo` shows a
// scripted agent fixing a bug in a throw-away Go project, `orca run` runs
// one turn of a session in a workspace folder, `orca chat` holds a
// conversation in the terminal, `orca sessions` lists and shows the
// sessions a workspace's store keeps, `orca trust` records which
// workspaces may run their own command hooks, and `orca mcp serve` serves a
// workspace's tools to MCP clients.
//
// The commands only parse flags and render events; everything they run is
// the agent package's runtime and executor.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// Ctrl-C interrupts the running turn (run, chat) or cancels the
	// command; SIGTERM and SIGHUP (the terminal closed) end it, its
	// commands with it. execute routes the signals.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	// A reader of standard output that goes away (orca run … | head) does
	// not kill orca mid-turn: the write fails (EPIPE), and orca run ends
	// the turn as an interrupt, stored.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	code := execute(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, options{signals: sigs})
	signal.Stop(sigs)
	os.Exit(code)
}
