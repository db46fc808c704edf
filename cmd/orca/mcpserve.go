package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/mcp/mcpserve"
	"github.com/orca-agent/orca/tui"
)

// mcpServeFlags are the flags of orca mcp serve.
type mcpServeFlags struct {
	agent agentFlags
	// agentTool: also serve the agent as one tool.
	agentTool bool
	tools     []string
}

func mcpServeCommand(o options) *cobra.Command {
	var f mcpServeFlags
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve a workspace's tools, and optionally the agent, to an MCP client over stdio",
		Long: `Serve the tools of orca's agent in a workspace (Read, Write, Edit, Glob,
Grep, Bash, TodoWrite, Task, Skill, AgentOutput, TaskStop) to an MCP client,
over the standard input and output: the client starts 'orca mcp serve' and
speaks MCP to it. Each tool is listed with its description, its input
schema and annotations from its traits (readOnlyHint for read-only tools,
destructiveHint for the others, idempotentHint).

Every call the client makes goes through what the agent's own calls go
through: schema validation, the settings' PreToolUse and PostToolUse hooks,
the permission policy (the settings' rules, --allow, --deny, --ask, the
permission mode, and the built-in protection of .orca, .claude, .git and
the user's configuration), the OS sandbox for Bash, and an event per step,
kept as observation rows of the session in .orca/orca.db ('orca timeline
--session ID'). No one is asked: a call the policy would ask about is
refused, and the result says which rule would allow it — pass
--permission-mode accept-edits, or --allow rules, for the calls the client
should make. A refused or failed call is an error result (isError) that
says why; nothing it would have changed is changed.

The calls are made in one session: a new one, or the one --session or
--continue names. With --agent, the agent itself is one more tool,
orca_agent {"prompt": "…"}: each call runs a turn of that session with the
model that --provider, --model or --script choose (as for 'orca run'),
and returns its answer; the client cancelling the call interrupts the
turn. Without --agent no model is needed, unless Task is called.

Standard output carries MCP messages only; orca's diagnostics go to
standard error. orca exits when its standard input closes (the client
left), or on SIGINT or SIGTERM, after stopping what it started.

To use orca's tools from Claude Code, add it to the project's .mcp.json:

  {"mcpServers": {"orca": {"command": "orca",
    "args": ["mcp", "serve", "-w", "/path/to/project", "--permission-mode", "accept-edits"]}}}

or run 'claude mcp add orca -- orca mcp serve -w /path/to/project'. Its
tools then appear to Claude Code as mcp__orca__Read, mcp__orca__Bash, ….`,
		Example: `  orca mcp serve -w ./project
  orca mcp serve -w ./project --permission-mode accept-edits --allow "Bash(go test:*)"
  orca mcp serve -w ./project --tool Read --tool Grep --tool Glob
  orca mcp serve -w ./project --agent --provider anthropic`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMCPServe(cmd, &f, o)
		},
	}
	addAgentFlags(cmd, &f.agent)
	cmd.Flags().BoolVar(&f.agentTool, "agent", false, "also serve the agent as one tool, "+mcpserve.AgentTool+
		" {prompt}: a turn of the session on the chosen model, answered with the agent's answer")
	cmd.Flags().StringArrayVar(&f.tools, "tool", nil, "serve only the tool `NAME` (repeatable; default: all of the agent's tools)")
	return cmd
}

// noModel is the model when nothing chose one and none is needed but by
// a tool that forks (Task): it tells that tool why it cannot run.
var noModel = llm.ClientFunc(func(context.Context, *llm.Request, func(llm.Delta)) (*llm.Response, error) {
	return nil, errors.New("orca mcp serve was started without a model (no --provider, $ORCA_PROVIDER or \"provider\" in the settings): subagents cannot run")
})

func runMCPServe(cmd *cobra.Command, f *mcpServeFlags, o options) error {
	cfg, err := f.agent.check(cmd, o)
	if err != nil {
		return err
	}
	// orca serving its tools starts no MCP servers of its own: a
	// workspace's .mcp.json naming orca mcp serve would start it again,
	// and again.
	cfg.NoMCP = true
	ctx := cmd.Context()
	stdin, stdout, stderr := cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	a, err := openApp(ctx, cfg, stderr)
	if errors.Is(err, app.ErrNoProvider) && !f.agentTool {
		cfg.Client = noModel
		a, err = openApp(ctx, cfg, stderr)
	}
	if err != nil {
		return err
	}
	// The session's events are kept as observation rows; none is shown.
	l, err := f.agent.openSession(ctx, a, stderr, nil)
	if err != nil {
		return err
	}
	defer l.close(ctx)
	var tools []string
	if cmd.Flags().Changed("tool") {
		tools = f.tools
	}
	srv, err := mcpserve.New(l.LiveSession, mcpserve.Options{Name: "orca", Version: moduleVersion(), Tools: tools, Agent: f.agentTool,
		Logger: tui.Warnings(stderr, warningPrefix)})
	if err != nil {
		return usageErrorf("%v", strings.TrimPrefix(err.Error(), "mcpserve: "))
	}
	served := len(tools)
	if tools == nil {
		served = len(l.Runtime().Tools().Names())
	}
	if f.agentTool {
		served++
	}
	fmt.Fprintf(stderr, "orca: serving %s of %s over MCP on stdin and stdout, in session %s\n", tui.Plural(served, "tool"), a.Root(), l.ID())

	in, ok := stdin.(io.ReadCloser)
	if !ok {
		in = io.NopCloser(stdin)
	}
	err = srv.Run(ctx, &mcp.IOTransport{Reader: in, Writer: nopWriteCloser{stdout}})
	switch {
	case ctx.Err() != nil:
		return nil // SIGINT, SIGTERM: asked to stop
	case err != nil:
		return &exitError{code: exitTurn, err: fmt.Errorf("serving MCP: %w", err)}
	}
	fmt.Fprintln(stderr, "orca: the MCP client closed the connection")
	return nil
}

// nopWriteCloser is a writer that the transport may close and stays open:
// stdout is the process's, not the connection's.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
