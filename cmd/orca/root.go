package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/tui"
)

// Exit codes of the orca command.
const (
	// exitOK: the command did its job; for run and demo, the turn answered
	// (or, for run /compact, the conversation was compacted).
	exitOK = 0
	// exitTurn: the turn ran but did not answer (it failed, was interrupted,
	// was refused by the model, exhausted the session's budget or reached
	// the iteration limit), or
	// something broke while running it: the session store could not be
	// opened or written, the runtime could not be built.
	exitTurn = 1
	// exitUsage: the command could not start: bad flags or arguments, an
	// unknown provider, a script file or workspace that cannot be used, a
	// session that does not exist or belongs to another runtime.
	exitUsage = 2
	// exitParked: the turn stopped at a call parked for approval
	// (--park-approvals), or the session waits for a decision on one.
	exitParked = 3
	// exitBusy: the session is open in another writer (another orca run,
	// chat or server has it): nothing ran; try again once it is closed.
	exitBusy = 4
	// exitPipe: the reader of the output went away before the command
	// wrote all of it (orca models | head), which it does not report: the
	// code of a process SIGPIPE killed, 128 + 13.
	exitPipe = 141
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
	return fmt.Sprintf("orca %s (%s %s/%s)", moduleVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// moduleVersion is orca's version alone: "v1.2.3", or "(devel)".
func moduleVersion() string {
	v := version
	if v == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			v = bi.Main.Version
		}
	}
	if v == "" {
		v = "(devel)"
	}
	return v
}

// options are what a command line runs with besides its arguments and
// streams.
type options struct {
	// configDir is the user's configuration folder, which holds
	// orca/settings.json and orca/trust.json; config.Dir() if
	// empty. Tests give each run a folder of its own.
	configDir string
	// signals are the signals the user sends (os.Interrupt for Ctrl-C,
	// SIGTERM); execute routes them (see interrupts). nil: none arrive.
	signals <-chan os.Signal
	// interrupts is set by execute: where commands install their handling
	// of signals.
	interrupts *interrupts
	// getenv reads the environment variables that choose the model
	// (ORCA_PROVIDER, ORCA_MODEL); os.Getenv if nil. The providers' own
	// variables (ANTHROPIC_API_KEY, …) are read by their clients.
	getenv func(string) string
}

// interrupts routes the signals the user sends to the command running: to
// the handler it installed while it can do something finer with them
// (interrupt a turn, keep a chat going), else to cancelling the command's
// context.
type interrupts struct {
	cancel context.CancelFunc

	mu      sync.Mutex
	handler func(os.Signal)
}

// handle makes fn receive the signals until restore is called. fn is called
// on the goroutine that receives them, one signal at a time: it must not
// block.
func (in *interrupts) handle(fn func(os.Signal)) (restore func()) {
	if in == nil { // a command tree built without execute: no signals
		return func() {}
	}
	in.mu.Lock()
	prev := in.handler
	in.handler = fn
	in.mu.Unlock()
	return func() {
		in.mu.Lock()
		in.handler = prev
		in.mu.Unlock()
	}
}

func (in *interrupts) deliver(sig os.Signal) {
	in.mu.Lock()
	h := in.handler
	in.mu.Unlock()
	if h == nil {
		in.cancel()
		return
	}
	h(sig)
}

// env returns the value of the environment variable key.
func (o options) env(key string) string {
	if o.getenv != nil {
		return o.getenv(key)
	}
	return os.Getenv(key)
}

// userConfigDir returns the configuration folder of o, or "" when there
// is none (no home folder): then no user settings are read and nothing can
// be trusted.
func (o options) userConfigDir() string {
	if o.configDir != "" {
		return o.configDir
	}
	d, err := config.Dir()
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
workspace folder, with the default tools Read, Write, Edit, Glob, Grep, Bash,
TodoWrite, WebFetch, WebSearch, Task, Skill, AgentOutput and TaskStop.

Start with 'orca demo': a scripted model fixes a bug in a tiny Go project,
and every tool call it asks for really runs.

'orca run' and 'orca chat' use a real model with --provider anthropic
(ANTHROPIC_API_KEY, or ANTHROPIC_AUTH_TOKEN for a gateway), --provider openai (OPENAI_API_KEY, or --base-url for a
local OpenAI-compatible server such as Ollama's), or the scripted model of
--script FILE.

Bare 'orca' at a terminal opens the chat, and 'orca -p PROMPT' runs one
turn, as claude does; Claude Code's flags (-c, --resume, --allowedTools,
--dangerously-skip-permissions, --output-format json …) work as there.

'orca run' runs one turn of a session, 'orca chat' holds a conversation in
the terminal; both keep the workspace's sessions (transcripts, totals,
budgets) in .orca/orca.db, which 'orca sessions' lists and shows, with
every event as an observation row ('orca timeline --session ID'); with
--timeline a run's events also go to .orca/runs/<run>/events.jsonl
('orca timeline').

The tools of the MCP servers that the settings' "mcpServers" and a
trusted workspace's approved .mcp.json declare are the agent's too
('orca mcp list' says which are up). 'orca mcp serve' serves the
workspace's tools, and optionally the agent, to an MCP client (Claude
Code, an IDE) over stdio, each call policed as the agent's own.

Settings files ($XDG_CONFIG_HOME/orca/settings.json, .orca/settings.json and
.orca/settings.local.json in the workspace) add permission rules, a default
permission mode and command hooks, in Claude Code's format, and choose the
model ("provider", "model", "base_url", and "modelAliases" for subagents),
its prices and a verification command ("verify"); a workspace's own hooks
run only once 'orca trust' has trusted it. The workspace's extensions
(.orca/hooks/<name>/hook.yaml and a handler) run only once 'orca trust
hook:<name>' has granted them.`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	// orca --version and -v are orca version (claudeStyle makes them
	// that command, also at a terminal, where a bare orca is the chat).
	root.Flags().BoolP("version", "v", false, "print the version (as orca version)")
	root.AddCommand(newDemoCmd(o), newRunCmd(o), newChatCmd(o), newSessionsCmd(o), newApprovalsCmd(o), newDecideCmd(o, true), newDecideCmd(o, false), newTimelineCmd(o), newRewindCmd(o), newEvalCmd(o), newScheduleCmd(o), newTrustCmd(o), newDoctorCmd(o), mcpCommand(o), newServeCmd(o), newACPCmd(o), newWorkerCmd(o), newModelsCmd(), newVersionCmd())
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
//
// The signals of o.signals cancel the command's context, unless the
// command installed a handler of its own (o.interrupts.handle).
func execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, o options) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	o.interrupts = &interrupts{cancel: cancel}
	if o.signals != nil {
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for {
				select {
				case sig := <-o.signals:
					o.interrupts.deliver(sig)
				case <-done:
					return
				}
			}
		})
		defer func() {
			close(done)
			wg.Wait()
		}()
	}
	root := newRootCmd(o)
	root.SetArgs(claudeStyle(root, args, stdin, stdout))
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	if errors.Is(err, syscall.EPIPE) {
		// The reader of the output went away (orca models | head): no
		// error to tell it, and no usage to suggest; the code a process
		// killed by SIGPIPE has, as the tools it replaces in a pipe.
		return exitPipe
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

// oneArg is cobra.ExactArgs(1) saying what the argument is (what: "the
// id of a parked call") and where to find one (hint), as a usage error;
// a blank argument ("") is as good as none.
func oneArg(what, hint string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) == 1 && strings.TrimSpace(args[0]) != "":
			return nil
		case len(args) <= 1:
			return usageErrorf("%s needs %s: %s", cmd.CommandPath(), what, hint)
		}
		return usageErrorf("%s takes one argument, %s, not %d: %q", cmd.CommandPath(), what, len(args), args)
	}
}

// claudeStyle turns Claude Code's way of starting it into orca's commands:
// with no command, -p or --print runs one turn (orca run -p "fix it"),
// and at a terminal anything else opens the chat (orca, orca -c, orca
// --resume ID), as claude does. Off a terminal, bare orca still prints
// its help.
func claudeStyle(root *cobra.Command, args []string, stdin io.Reader, stdout io.Writer) []string {
	if len(args) > 0 {
		switch first := args[0]; {
		case first == "-h" || first == "--help":
			return args
		case first == "--version" || first == "-v":
			return append([]string{"version"}, args[1:]...)
		case !strings.HasPrefix(first, "-"):
			for _, c := range root.Commands() {
				if c.Name() == first || slices.Contains(c.Aliases, first) {
					return args
				}
			}
		}
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-p" || a == "--print" || strings.HasPrefix(a, "--print=") {
			return append([]string{"run"}, args...)
		}
	}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args // not a command: cobra says so
	}
	if tui.IsTerminal(stdin) && tui.IsTerminal(stdout) {
		return append([]string{"chat"}, args...)
	}
	return args
}
