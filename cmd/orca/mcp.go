package main

import "github.com/spf13/cobra"

// mcpCommand is orca mcp, the parent of the commands about the Model
// Context Protocol.
func mcpCommand(o options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "orca and the Model Context Protocol: serve a workspace's tools to MCP clients",
		Long: `orca and the Model Context Protocol (MCP).

'orca mcp serve' makes orca an MCP server: another program's model (Claude
Code, an IDE, another agent) calls orca's tools in a workspace, each call
confined and policed as the calls of orca's own agent are. 'orca mcp add',
'list', 'get' and 'remove' manage the servers orca's agent uses; 'orca mcp
login' signs in to a remote one that asks for authorization (OAuth),
'logout' forgets that; 'orca mcp call' calls one of their tools.`,
		// A parent alone: its help, and an unknown subcommand is a usage
		// error (cobra would show the help and exit 0).
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(mcpServeCommand(o), mcpListCommand(o), mcpAddCommand(o), mcpRemoveCommand(o), mcpGetCommand(o),
		mcpLoginCommand(o), mcpLogoutCommand(o), mcpCallCommand(o))
	return cmd
}
