package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/mcp"
	"github.com/orca-agent/orca/tui"
)

// mcpListFlags are the flags of orca mcp list.
type mcpListFlags struct {
	agent agentFlags
	json  bool
}

func mcpListCommand(o options) *cobra.Command {
	var f mcpListFlags
	cmd := &cobra.Command{
		Use:   "list [flags]",
		Short: "Start the MCP servers the settings and .mcp.json declare, and say which are up and what tools they offer",
		Long: `Start the MCP servers a workspace's agent would use — the settings files'
"mcpServers" and the workspace's .mcp.json (Claude Code's file: its servers
start only in a trusted workspace, as they were when it was trusted, and
only once a settings file approves them with "enabledMcpjsonServers" or
"enableAllProjectMcpServers") — and
list each: up, with the tools it offers (mcp__<server>__<tool>), or failed,
with why, or needing a sign-in (a remote server that asks for
authorization: orca mcp login NAME). Servers that are not started at all
are named on standard error, with what would start them. Exit status 1 if
a server failed or needs a sign-in.`,
		Example: `  orca mcp list -w ./project
  orca mcp list -w ./project --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMCPList(cmd, &f, o)
		},
	}
	addAgentFlags(cmd, &f.agent)
	cmd.Flags().BoolVar(&f.json, "json", false, "print the servers as one JSON array")
	return cmd
}

func runMCPList(cmd *cobra.Command, f *mcpListFlags, o options) error {
	cfg, err := f.agent.check(cmd, o)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	a, err := openForMCP(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	defer a.Close()
	servers := a.MCPServers()
	failed, login := 0, 0
	for _, s := range servers {
		switch s.State {
		case mcp.StateFailed:
			failed++
		case mcp.StateNeedsLogin:
			login++
		}
	}
	if f.json {
		type row struct {
			Name      string   `json:"name"`
			Type      string   `json:"type"`
			State     string   `json:"state"`
			Server    string   `json:"server,omitempty"`
			Tools     []string `json:"tools"`
			Prompts   []string `json:"prompts"`
			Resources bool     `json:"resources"`
			Error     string   `json:"error,omitempty"`
		}
		rows := []row{}
		for _, s := range servers {
			rows = append(rows, row{Name: s.Name, Type: s.Type, State: string(s.State), Server: s.Server, Tools: append([]string{}, s.Tools...),
				Prompts: append([]string{}, s.Prompts...), Resources: s.Resources, Error: s.Error})
		}
		b, _ := json.MarshalIndent(rows, "", "  ")
		fmt.Fprintln(stdout, string(b))
	} else {
		if len(servers) == 0 {
			fmt.Fprintf(stdout, "No MCP servers start in %s.\n", a.Root())
		}
		mcp.WriteStatus(stdout, servers)
	}
	switch {
	case failed > 0:
		return &exitError{code: exitTurn, err: fmt.Errorf("%s of %d failed", tui.Plural(failed, "MCP server"), len(servers))}
	case login > 0:
		return &exitError{code: exitTurn, err: fmt.Errorf("%s of %d need a sign-in (orca mcp login NAME)", tui.Plural(login, "MCP server"), len(servers))}
	}
	return nil
}
