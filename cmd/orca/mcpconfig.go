package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/config"
)

// scopeFile opens the file of scope, for workspace ws (which must be one:
// a mistyped -w makes no folders) or the user.
func scopeFile(o options, ws, scope string) (*config.MCPServersFile, error) {
	if !slices.Contains(config.MCPScopes, scope) {
		return nil, usageErrorf("--scope %q is not local, project or user", scope)
	}
	root := ""
	if scope == "local" || scope == "project" {
		var err error
		if root, err = checkWorkspace(ws); err != nil {
			return nil, err
		}
	}
	f, err := config.OpenMCPScope(scope, root, o.userConfigDir())
	if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	return f, nil
}

type mcpAddFlags struct {
	workspace, scope, transport string
	env, headers                []string
	timeout                     float64
	clientID                    string
	callbackPort                int
}

func mcpAddCommand(o options) *cobra.Command {
	var f mcpAddFlags
	cmd := &cobra.Command{
		Use:   "add [flags] NAME -- COMMAND [ARGS...] | add --transport http|sse NAME URL",
		Short: "Add an MCP server to a settings file (or the workspace's .mcp.json), as claude mcp add does",
		Long: `Add an MCP server, in Claude Code's format, to the file of --scope:
local (yours, for this workspace: kept in ~/.config/orca/local.json, by
the workspace's path, as claude mcp add keeps its local scope in
~/.claude.json — the default), project (the workspace's .mcp.json,
shared: its servers start only in a trusted workspace, once approved, in
the OS sandbox) or user (your settings, every workspace). Your servers —
local and user — start trusted or not, and run as you, outside the OS
sandbox, as Claude Code runs them (npx can fetch its package). A server of that name in the file is
replaced. ${VAR} in the command, arguments, environment, URL and headers
is kept as written and read when orca starts the server. The file is
written back with its keys sorted.`,
		Example: `  orca mcp add files -- npx -y @modelcontextprotocol/server-filesystem .
  orca mcp add --scope user -e API_KEY='${API_KEY}' search -- search-mcp --stdio
  orca mcp add --transport http -H 'Authorization: Bearer ${DOCS_TOKEN}' docs https://mcp.example.com/mcp`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageErrorf("%s needs a name and then the server: NAME -- COMMAND [ARGS...], or --transport http|sse NAME URL", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			file, err := scopeFile(o, f.workspace, f.scope)
			if err != nil {
				return err
			}
			name := args[0]
			if err := config.CheckMCPName(name); err != nil {
				return usageErrorf("%v", err)
			}
			e := config.MCPEntry{Transport: f.transport, Timeout: f.timeout, ClientID: f.clientID, CallbackPort: f.callbackPort}
			if f.transport == "http" || f.transport == "sse" {
				if len(args) != 2 {
					return usageErrorf("an %s server takes NAME and URL, not %d arguments", f.transport, len(args))
				}
				e.URL = args[1]
			} else {
				e.Command, e.Args = args[1], args[2:]
			}
			for _, kv := range f.env {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usageErrorf("-e %q is not KEY=value", kv)
				}
				if e.Env == nil {
					e.Env = map[string]string{}
				}
				e.Env[k] = v
			}
			for _, kv := range f.headers {
				k, v, ok := strings.Cut(kv, ":")
				if !ok || strings.TrimSpace(k) == "" {
					return usageErrorf("-H %q is not 'Name: value'", kv)
				}
				if e.Headers == nil {
					e.Headers = map[string]string{}
				}
				e.Headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
			raw, err := e.JSON()
			if err != nil {
				return usageErrorf("%v", err)
			}
			_, replaced := file.Servers[name]
			file.Servers[name] = raw
			if err := file.Write(); err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			verb := "Added"
			if replaced {
				verb = "Replaced"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s MCP server %s in %s\n", verb, name, file.Path)
			trusted := true
			if f.scope == "project" {
				dir := o.userConfigDir()
				trusted = dir != "" && config.NewTrustStore(dir).Trusted(f.workspace)
			}
			if f.scope == "project" && trusted {
				// The user wrote this entry: it is trusted as it is now
				// (what else changed in .mcp.json is not).
				store := config.NewTrustStore(o.userConfigDir())
				approved := maps.Clone(store.MCPDigests(f.workspace))
				if now, err := config.MCPFileDigests(f.workspace); err == nil && now[name] != "" {
					if approved == nil {
						approved = map[string]string{}
					}
					approved[name] = now[name]
					if err := store.ApproveMCP(f.workspace, approved); err != nil {
						return &exitError{code: exitTurn, err: err}
					}
				}
			}
			switch f.scope {
			case "project":
				fmt.Fprintf(cmd.OutOrStdout(), "It starts in a trusted workspace once approved: \"enabledMcpjsonServers\": [%q] in a settings file.\n", name)
			case "local":
				fmt.Fprintln(cmd.OutOrStdout(), "It is yours: it starts in this workspace's runs, trusted or not, as you (outside the OS sandbox).")
			default:
				fmt.Fprintln(cmd.OutOrStdout(), "It is yours: it starts in every workspace's runs, as you (outside the OS sandbox).")
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.workspace, "workspace", "w", ".", "workspace `DIR` (for the local and project scopes)")
	fl.StringVarP(&f.scope, "scope", "s", "local", "where: local, project or user")
	fl.StringVarP(&f.transport, "transport", "t", "stdio", "stdio, http or sse")
	fl.StringArrayVarP(&f.env, "env", "e", nil, "an environment variable `KEY=value` for a stdio server (repeatable)")
	fl.StringArrayVarP(&f.headers, "header", "H", nil, "a header `'Name: value'` for an http or sse server (repeatable)")
	fl.Float64Var(&f.timeout, "timeout", 0, "bound one tool call to `SECONDS`")
	fl.StringVar(&f.clientID, "client-id", "", "an http server's OAuth client `ID`, registered with its authorization server beforehand (else orca registers itself); sign in with orca mcp login")
	fl.IntVar(&f.callbackPort, "callback-port", 0, "the loopback `PORT` an http server's sign-in comes back to (http://localhost:PORT/callback, as registered); any free one if 0")
	return cmd
}

func mcpRemoveCommand(o options) *cobra.Command {
	var workspace, scope string
	cmd := &cobra.Command{
		Use:   "remove [flags] NAME",
		Short: "Remove an MCP server from the file of --scope (or from every scope's file that has it)",
		Args:  oneArg("the name of an MCP server", "one that the settings' mcpServers or a .mcp.json declares"),
		RunE: func(cmd *cobra.Command, args []string) error {
			scopes := config.MCPScopes
			if scope != "" {
				scopes = []string{scope}
			}
			removed := 0
			for _, sc := range scopes {
				file, err := scopeFile(o, workspace, sc)
				if err != nil {
					return err
				}
				if _, ok := file.Servers[args[0]]; !ok {
					continue
				}
				delete(file.Servers, args[0])
				if err := file.Write(); err != nil {
					return &exitError{code: exitUsage, err: err}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Removed MCP server %s from %s\n", args[0], file.Path)
				removed++
			}
			if removed == 0 {
				files := scopes[0] + " file"
				if n := len(scopes); n > 1 {
					files = strings.Join(scopes[:n-1], ", ") + " or " + scopes[n-1] + " files"
				}
				return usageErrorf("no MCP server %q in the %s", args[0], files)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&workspace, "workspace", "w", ".", "workspace `DIR`")
	cmd.Flags().StringVarP(&scope, "scope", "s", "", "only this scope: local, project or user")
	return cmd
}

func mcpGetCommand(o options) *cobra.Command {
	var workspace string
	cmd := &cobra.Command{
		Use:   "get [flags] NAME",
		Short: "Show where an MCP server is declared and how (the scopes' files, in order)",
		Args:  oneArg("the name of an MCP server", "one that the settings' mcpServers or a .mcp.json declares"),
		RunE: func(cmd *cobra.Command, args []string) error {
			found := false
			for _, sc := range slices.Backward(config.MCPScopes) {
				file, err := scopeFile(o, workspace, sc)
				if err != nil {
					if sc == "user" {
						continue // no user folder: the workspace's scopes still count
					}
					return err
				}
				raw, ok := file.Servers[args[0]]
				if !ok {
					continue
				}
				found = true
				var pretty any
				json.Unmarshal(raw, &pretty)
				b, _ := json.MarshalIndent(pretty, "  ", "  ")
				fmt.Fprintf(cmd.OutOrStdout(), "%s (%s scope, %s):\n  %s\n", args[0], sc, file.Path, b)
			}
			if !found {
				return usageErrorf("no MCP server %q in the local, project or user files ('orca mcp list' starts those the settings declare)", args[0])
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&workspace, "workspace", "w", ".", "workspace `DIR`")
	return cmd
}
