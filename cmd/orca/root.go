package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/extension"
)

// Exit codes of the orca command.
const (
	// exitOK: the command did its job; for run and demo, the turn answered.
	exitOK = 0
	// exitTurn: the turn ran but did not answer (it failed, was interrupted
	// or reached the iteration limit), or something broke while running it.
	exitTurn = 1
	// exitUsage: the command could not start: bad flags or arguments, an
	// unknown provider, a script file or workspace that cannot be used.
	exitUsage = 2
)

// exitError is an error that carries the exit code orca ends with.
type exitError struct {
	code int
	err  error
	// quiet: the error was already shown to the user on stdout (the turn's
	// summary), so it is not printed again on stderr.
	quiet bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErrorf returns an error that ends orca with exitUsage.
func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// version is the version orca reports; release builds set it with
// -ldflags "-X main.version=v1.2.3". Empty means: ask the build info.
var version string

func versionString() string {
	v := version
	if v == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			v = bi.Main.Version
		}
	}
	if v == "" {
		v = "(devel)"
	}
	return fmt.Sprintf("orca %s (%s %s/%s)", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// options are what a command line runs with besides its arguments and
// streams.
type options struct {
	// configDir is the user's configuration folder, which holds
	// orca/settings.json and orca/trust.json; extension.UserConfigDir() if
	// empty. Tests give each run a folder of its own.
	configDir string
}

// userConfigDir returns the configuration folder of o, or "" when there
// is none (no home folder): then no user settings are read and nothing can
// be trusted.
func (o options) userConfigDir() string {
	if o.configDir != "" {
		return o.configDir
	}
	d, err := extension.UserConfigDir()
	if err != nil {
		return ""
	}
	return d
}

// newRootCmd returns the orca command tree. Each call builds a fresh tree,
// so that tests can run commands in-process without sharing flag state.
func newRootCmd(o options) *cobra.Command {
	root := &cobra.Command{
		Use:   "orca",
		Short: "orca runs LLM agents: a ReAct loop of model calls and tool calls in a workspace",
		Long: `orca runs LLM agents: a ReAct loop of model calls and tool calls inside a
workspace folder, with the default tools Read, Write, Edit, Glob, Grep, Bash
and TodoWrite.

Start with 'orca demo': a scripted model fixes a bug in a tiny Go project,
and every tool call it asks for really runs.

Settings files ($XDG_CONFIG_HOME/orca/settings.json, .orca/settings.json and
.orca/settings.local.json in the workspace) add permission rules, a default
permission mode and command hooks, in Claude Code's format; a workspace's own
hooks run only once 'orca trust' has trusted it.`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.AddCommand(newDemoCmd(o), newRunCmd(o), newTrustCmd(o), newVersionCmd())
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print orca's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionString())
			return err
		},
	}
}

// execute runs the orca command line args with the given streams and
// returns the exit code. Errors are printed on stderr, never on stdout, so
// that stdout stays machine-readable in --json mode.
func execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, o options) int {
	root := newRootCmd(o)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	code := exitUsage // cobra's own errors: unknown command, bad flag, wrong arguments
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		if ee.quiet {
			return code
		}
	}
	fmt.Fprintf(stderr, "orca: %v\n", err)
	if code == exitUsage && cmd != nil {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}
