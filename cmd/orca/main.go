// Command orca runs LLM agents from the command line: `orca demo` shows a
// scripted agent fixing a bug in a throw-away Go project, `orca run` runs
// one turn of an agent in a workspace folder, and `orca trust` records
// which workspaces may run their own command hooks.
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
	// Ctrl-C cancels the turn's context: the executor ends the turn as
	// failed, the renderer prints how it ended, and orca exits.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, options{})
	stop()
	os.Exit(code)
}
