package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/config"
)

// The files orca mcp add, remove and get edit, by scope, as claude mcp's
// scopes: local (this workspace, not checked in), project (the
// workspace's .mcp.json, shared) and user (every workspace).
var mcpScopes = []string{"local", "project", "user"}

// mcpFile returns the file of scope for workspace ws.
func mcpFile(o options, ws, scope string) (string, error) {
	switch scope {
	case "local", "project":
		// The workspace must be one: a mistyped -w makes no folders.
		root, err := checkWorkspace(ws)
		if err != nil {
			return "", err
		}
		if scope == "local" {
			return filepath.Join(root, ".orca", "settings.local.json"), nil
		}
		return filepath.Join(root, config.MCPFile), nil
	case "user":
		dir := o.userConfigDir()
		if dir == "" {
			return "", errors.New("no user configuration folder (no home folder)")
		}
		return filepath.Join(dir, filepath.FromSlash(config.UserFile)), nil
	}
	return "", fmt.Errorf("--scope %q is not local, project or user", scope)
}

// readTop reads a JSON object file (missing: empty).
func readTop(path string) (map[string]json.RawMessage, error) {
	data, err := os.ReadFile(path)
	data = bytes.TrimPrefix(data, []byte("\uFEFF")) // as config reads it
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]json.RawMessage{}, nil
	}
	if err != nil {
		return nil, err
	}
	top := map[string]json.RawMessage{}
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("%s is not a JSON object: %v", path, err)
	}
	return top, nil
}

// writeTop writes a JSON object file (its keys sorted).
func writeTop(path string, top map[string]json.RawMessage) error {
	data, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".orca-tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// scopeFile reads the file of scope: its path, its keys and its servers.
func scopeFile(o options, ws, scope string) (string, map[string]json.RawMessage, map[string]json.RawMessage, error) {
	path, err := mcpFile(o, ws, scope)
	if err != nil {
		return "", nil, nil, usageErrorf("%v", err)
	}
	top, err := readTop(path)
	if err != nil {
		return "", nil, nil, &exitError{code: exitUsage, err: err}
	}
	all, err := servers(top)
	if err != nil {
		return "", nil, nil, &exitError{code: exitUsage, err: fmt.Errorf("%s: %w", path, err)}
	}
	return path, top, all, nil
}

func servers(top map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	if raw, ok := top["mcpServers"]; ok {
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, fmt.Errorf("mcpServers is not an object: %v", err)
		}
	}
	return out, nil
}

type mcpAddFlags struct {
	workspace, scope, transport string
	env, headers                []string
	timeout                     float64
}

func mcpAddCommand(o options) *cobra.Command {
	var f mcpAddFlags
	cmd := &cobra.Command{
		Use:   "add [flags] NAME -- COMMAND [ARGS...] | add --transport http|sse NAME URL",
		Short: "Add an MCP server to a settings file (or the workspace's .mcp.json), as claude mcp add does",
		Long: `Add an MCP server, in Claude Code's format, to the file of --scope:
local (the workspace's .orca/settings.local.json: yours, this workspace,
not checked in — the default), project (the workspace's .mcp.json, shared:
its servers start only in a trusted workspace, once approved) or user
(your settings, every workspace). A server of that name in the file is
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
			path, top, all, err := scopeFile(o, f.workspace, f.scope)
			if err != nil {
				return err
			}
			name := args[0]
			if err := config.CheckMCPName(name); err != nil {
				return usageErrorf("%v", err)
			}
			entry := map[string]any{}
			switch f.transport {
			case "stdio", "":
				if strings.TrimSpace(args[1]) == "" {
					return usageErrorf("the command is empty")
				}
				entry["command"] = args[1]
				if len(args) > 2 {
					entry["args"] = args[2:]
				}
				if len(f.headers) > 0 {
					return usageErrorf("-H is for http and sse servers")
				}
			case "http", "sse":
				if len(args) != 2 {
					return usageErrorf("an %s server takes NAME and URL, not %d arguments", f.transport, len(args))
				}
				if u, err := url.Parse(args[1]); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					if !strings.Contains(args[1], "${") {
						return usageErrorf("%q is not an http or https URL", args[1])
					}
				}
				entry["type"], entry["url"] = f.transport, args[1]
			default:
				return usageErrorf("--transport %q is not stdio, http or sse", f.transport)
			}
			if len(f.env) > 0 {
				env := map[string]string{}
				for _, kv := range f.env {
					k, v, ok := strings.Cut(kv, "=")
					if !ok || k == "" {
						return usageErrorf("-e %q is not KEY=value", kv)
					}
					env[k] = v
				}
				entry["env"] = env
			}
			if len(f.headers) > 0 {
				h := map[string]string{}
				for _, kv := range f.headers {
					k, v, ok := strings.Cut(kv, ":")
					if !ok || strings.TrimSpace(k) == "" {
						return usageErrorf("-H %q is not 'Name: value'", kv)
					}
					h[strings.TrimSpace(k)] = strings.TrimSpace(v)
				}
				entry["headers"] = h
			}
			if f.timeout > 0 {
				entry["timeout"] = f.timeout
			}
			raw, _ := json.Marshal(entry)
			_, replaced := all[name]
			all[name] = raw
			top["mcpServers"], _ = json.Marshal(all)
			if err := writeTop(path, top); err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			verb := "Added"
			if replaced {
				verb = "Replaced"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s MCP server %s in %s\n", verb, name, path)
			trusted := true
			if f.scope != "user" {
				dir := o.userConfigDir()
				trusted = dir != "" && config.NewTrustStore(dir).Trusted(f.workspace)
			}
			switch {
			case f.scope == "project":
				fmt.Fprintf(cmd.OutOrStdout(), "It starts in a trusted workspace once approved: \"enabledMcpjsonServers\": [%q] in a settings file.\n", name)
			case !trusted:
				// A workspace's own files apply only once it is trusted:
				// say so now, not at the first run that skips the server.
				ws, _ := filepath.Abs(f.workspace)
				fmt.Fprintf(cmd.OutOrStdout(), "It starts once the workspace is trusted: orca trust %s (or --trust for one run).\n", ws)
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
	return cmd
}

func mcpRemoveCommand(o options) *cobra.Command {
	var workspace, scope string
	cmd := &cobra.Command{
		Use:   "remove [flags] NAME",
		Short: "Remove an MCP server from the file of --scope (or from every scope's file that has it)",
		Args:  oneArg("the name of an MCP server", "one that the settings' mcpServers or a .mcp.json declares"),
		RunE: func(cmd *cobra.Command, args []string) error {
			scopes := mcpScopes
			if scope != "" {
				scopes = []string{scope}
			}
			removed := 0
			for _, sc := range scopes {
				path, top, all, err := scopeFile(o, workspace, sc)
				if err != nil {
					return err
				}
				if _, ok := all[args[0]]; !ok {
					continue
				}
				delete(all, args[0])
				top["mcpServers"], _ = json.Marshal(all)
				if err := writeTop(path, top); err != nil {
					return &exitError{code: exitUsage, err: err}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Removed MCP server %s from %s\n", args[0], path)
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
			for _, sc := range slices.Backward(mcpScopes) {
				path, _, all, err := scopeFile(o, workspace, sc)
				if err != nil {
					if sc == "user" {
						continue // no user folder: the workspace's scopes still count
					}
					return err
				}
				raw, ok := all[args[0]]
				if !ok {
					continue
				}
				found = true
				var pretty any
				json.Unmarshal(raw, &pretty)
				b, _ := json.MarshalIndent(pretty, "  ", "  ")
				fmt.Fprintf(cmd.OutOrStdout(), "%s (%s scope, %s):\n  %s\n", args[0], sc, path, b)
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
