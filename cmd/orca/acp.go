package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/acp"
	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/tui"
)

func newACPCmd(o options) *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "acp [flags]",
		Short: "Be an Agent Client Protocol agent on stdin and stdout, for an editor (Zed, JetBrains IDEs, Neovim) to drive",
		Long: `Speak the Agent Client Protocol (ACP: JSON-RPC over the standard input
and output) to the editor that started orca: the editor opens sessions
(new, or loaded from the workspace's store, their history replayed), sends
prompts, and shows the turn as it runs — the agent's text, its tool calls
with the files they touch, a diff for each edit, a command's output, its
todo list as a plan. A call the permission policy asks about is asked in
the editor (allow once, always allow the suggested rule, reject); the
editor's modes are orca's permission modes (default, acceptEdits, plan,
dontAsk, bypassPermissions); cancelling interrupts the turn and the
command it runs.

A session's folder is the cwd the editor gives it (the workspace, with its
settings, .orca/orca.db and sandbox); MCP servers the editor names for a
session start as your own servers do. orca reads and writes the files
itself, under its rules and protection and in its sandbox, not through
the editor's buffers. The model is chosen as for orca run (--provider,
--model, the settings, the environment).

Standard output carries ACP messages only; orca's diagnostics go to
standard error. orca exits when its standard input closes, after ending
the turns still running and storing the sessions.

Zed's settings.json:

  "agent_servers": {"orca": {"command": "orca", "args": ["acp"]}}`,
		Example: `  orca acp
  orca acp --provider anthropic --model claude-sonnet-4-5 --permission-mode accept-edits`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runACP(cmd, &f, o) },
	}
	addAgentFlags(cmd, &f)
	return cmd
}

func runACP(cmd *cobra.Command, f *agentFlags, o options) error {
	cfg, err := f.check(cmd, o)
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	mode := cfg.Mode
	// The App asks what its default mode asks; the session's mode (the
	// editor's) decides about it.
	cfg.Mode = policy.ModeDefault
	open := func(ctx context.Context, cwd string, servers []config.MCPServer, approver policy.Approver) (*app.App, error) {
		c := cfg
		c.Workspace, c.MCPServers, c.Approver = cwd, servers, approver
		a, err := openApp(ctx, c, stderr)
		var exit *exitError
		if errors.As(err, &exit) {
			return nil, exit.err
		}
		if err == nil {
			warnSandbox(a, stderr)
		}
		return a, err
	}
	return acp.Serve(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), acp.Options{Open: open, Mode: mode, Name: "orca", Version: moduleVersion(),
		Logger: tui.Warnings(stderr, warningPrefix)})
}
