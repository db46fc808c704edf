package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/orca-agent/orca/workspace"
)

// MCPScopes are the scopes of the files a program edits MCP servers in
// (orca mcp add, remove, get), as claude mcp's: local (the workspace's
// .orca/settings.local.json: not checked in), project (the workspace's
// .mcp.json, shared) and user (the user's settings, every workspace).
var MCPScopes = []string{"local", "project", "user"}

// MCPScopeFile returns the file that declares the MCP servers of scope:
// in the workspace root for local and project (with the links it has in
// the workspace followed, and refused if one leads it out: a cloned
// repository's .orca -> ~/x is not edited), in the user configuration
// folder dir (Dir()) for user.
func MCPScopeFile(scope, root, dir string) (string, error) {
	switch scope {
	case "local":
		return workspace.Confine(root, ".orca/settings.local.json")
	case "project":
		return workspace.Confine(root, MCPFile)
	case "user":
		if dir == "" {
			return "", errors.New("no user configuration folder (no home folder)")
		}
		return filepath.Join(dir, filepath.FromSlash(UserFile)), nil
	}
	return "", fmt.Errorf("scope %q is not local, project or user", scope)
}

// MCPServersFile is a settings or .mcp.json file opened to edit its
// "mcpServers": Write writes the servers back and keeps the file's other
// keys as they were.
type MCPServersFile struct {
	Path string
	// Servers are the file's servers, by name, as written.
	Servers map[string]json.RawMessage
	top     map[string]json.RawMessage
}

// ReadMCPServersFile reads the JSON object file at path (a missing file
// is empty; a UTF-8 byte order mark is skipped, as everywhere in config).
func ReadMCPServersFile(path string) (*MCPServersFile, error) {
	f := &MCPServersFile{Path: path, Servers: map[string]json.RawMessage{}, top: map[string]json.RawMessage{}}
	data, err := readConfig(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &f.top); err != nil {
		return nil, fmt.Errorf("%s is not a JSON object: %v", path, err)
	}
	if f.top == nil { // the file says null
		f.top = map[string]json.RawMessage{}
	}
	if raw, ok := f.top["mcpServers"]; ok {
		if err := json.Unmarshal(raw, &f.Servers); err != nil {
			return nil, fmt.Errorf("%s: mcpServers is not an object: %v", path, err)
		}
		if f.Servers == nil {
			f.Servers = map[string]json.RawMessage{}
		}
	}
	return f, nil
}

// Write writes the file, its keys sorted, through a temporary file
// renamed over it (writeAtomic), keeping its mode (a new file's is 0644);
// its folder is made if need be.
func (f *MCPServersFile) Write() error {
	f.top["mcpServers"], _ = json.Marshal(f.Servers)
	data, err := json.MarshalIndent(f.top, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
		return err
	}
	perm := os.FileMode(0o644)
	if fi, err := os.Stat(f.Path); err == nil {
		perm = fi.Mode().Perm()
	}
	return writeAtomic(f.Path, append(data, '\n'), perm)
}

// MCPEntry is an MCP server to declare, in the terms of claude mcp add:
// a stdio server's Command and Args, or an http or sse server's URL.
// ${VAR} anywhere is kept as written, and read when the server starts.
type MCPEntry struct {
	// Transport is "stdio" (or ""), "http" or "sse".
	Transport string
	Command   string
	Args      []string
	URL       string
	// Env is a stdio server's environment; Headers an http or sse
	// server's.
	Env     map[string]string
	Headers map[string]string
	// Timeout bounds one tool call, in seconds (0: the default).
	Timeout float64
}

// JSON checks e and returns it in Claude Code's format, the value of its
// name in "mcpServers".
func (e MCPEntry) JSON() (json.RawMessage, error) {
	entry := map[string]any{}
	switch e.Transport {
	case "stdio", "":
		if strings.TrimSpace(e.Command) == "" {
			return nil, errors.New("the command is empty")
		}
		if e.URL != "" {
			return nil, errors.New("a stdio server has a command, not a URL")
		}
		if len(e.Headers) > 0 {
			return nil, errors.New("headers are for http and sse servers")
		}
		entry["command"] = e.Command
		if len(e.Args) > 0 {
			entry["args"] = e.Args
		}
	case "http", "sse":
		if e.Command != "" {
			return nil, fmt.Errorf("an %s server has a URL, not a command", e.Transport)
		}
		if u, err := url.Parse(e.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			if !strings.Contains(e.URL, "${") {
				return nil, fmt.Errorf("%q is not an http or https URL", e.URL)
			}
		}
		entry["type"], entry["url"] = e.Transport, e.URL
		if len(e.Headers) > 0 {
			entry["headers"] = e.Headers
		}
	default:
		return nil, fmt.Errorf("transport %q is not stdio, http or sse", e.Transport)
	}
	if len(e.Env) > 0 {
		entry["env"] = e.Env
	}
	if e.Timeout < 0 {
		return nil, fmt.Errorf("timeout %g is negative", e.Timeout)
	}
	if e.Timeout > 0 {
		entry["timeout"] = e.Timeout
	}
	return json.Marshal(entry)
}
