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
// (orca mcp add, remove, get), as claude mcp's: local (yours, for this
// workspace: LocalFile), project (the workspace's .mcp.json, shared) and
// user (the user's settings, every workspace).
var MCPScopes = []string{"local", "project", "user"}

// LocalFile is where the user's own MCP servers of one workspace are kept
// (orca mcp add's local scope), relative to the configuration folder:
//
//	{"projects": {"/abs/workspace": {"mcpServers": {…}}}}
//
// by the workspace's real path. It is the user's, outside every
// workspace, as Claude Code keeps its local scope in ~/.claude.json: so
// its servers start in the workspace trusted or not (a repository cannot
// put one there) and run as the user, and the agent's tools and commands
// cannot change it (protected state).
const LocalFile = "orca/local.json"

// OpenMCPScope opens the file that declares the MCP servers of scope, to
// edit them: for local, the workspace root's entry of LocalFile in the
// user configuration folder dir (Dir()); for project, the root's
// .mcp.json (with the links it has in the workspace followed, and refused
// if one leads it out: a cloned repository's .mcp.json -> ~/x is not
// edited); for user, the user's settings in dir.
func OpenMCPScope(scope, root, dir string) (*MCPServersFile, error) {
	switch scope {
	case "local":
		if dir == "" {
			return nil, errors.New("no user configuration folder (no home folder) to keep the local scope in")
		}
		real, err := canonical(root)
		if err != nil {
			return nil, err
		}
		return readMCPServersFile(filepath.Join(dir, filepath.FromSlash(LocalFile)), real)
	case "project":
		path, err := workspace.Confine(root, MCPFile)
		if err != nil {
			return nil, err
		}
		return ReadMCPServersFile(path)
	case "user":
		if dir == "" {
			return nil, errors.New("no user configuration folder (no home folder)")
		}
		return ReadMCPServersFile(filepath.Join(dir, filepath.FromSlash(UserFile)))
	}
	return nil, fmt.Errorf("scope %q is not local, project or user", scope)
}

// localServers returns the user's own MCP servers of the workspace
// (LocalFile in the configuration folder dir), which start trusted or not.
func localServers(dir, ws string) ([]MCPServer, []Warning) {
	real, err := canonical(ws)
	if err != nil || dir == "" {
		return nil, nil
	}
	path := filepath.Join(dir, filepath.FromSlash(LocalFile))
	f, err := readMCPServersFile(path, real)
	if err != nil {
		return nil, []Warning{{File: path, Message: fmt.Sprintf("not used: %v", err)}}
	}
	if len(f.Servers) == 0 {
		return nil, nil
	}
	raw, _ := json.Marshal(f.Servers)
	servers, err := parseMCPServers(path, raw, os.LookupEnv)
	if err != nil {
		return nil, []Warning{{File: path, Message: fmt.Sprintf("the servers of %s not used: %v", real, err)}}
	}
	return servers, nil
}

// MCPServersFile is a settings or .mcp.json file opened to edit its
// "mcpServers": Write writes the servers back and keeps the file's other
// keys as they were.
type MCPServersFile struct {
	Path string
	// Servers are the file's servers, by name, as written.
	Servers map[string]json.RawMessage
	top     map[string]json.RawMessage
	// project is the entry of "projects" that holds the servers (LocalFile),
	// "" for the top of the file; entry is that entry's other keys.
	project string
	entry   map[string]json.RawMessage
}

// ReadMCPServersFile reads the JSON object file at path (a missing file
// is empty; a UTF-8 byte order mark is skipped, as everywhere in config).
func ReadMCPServersFile(path string) (*MCPServersFile, error) { return readMCPServersFile(path, "") }

// readMCPServersFile reads the servers of the file at path: of its
// top, or of its "projects" entry project.
func readMCPServersFile(path, project string) (*MCPServersFile, error) {
	f := &MCPServersFile{Path: path, Servers: map[string]json.RawMessage{}, top: map[string]json.RawMessage{}, project: project, entry: map[string]json.RawMessage{}}
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
	holder := f.top
	if project != "" {
		var projects map[string]json.RawMessage
		if raw, ok := f.top["projects"]; ok {
			if err := json.Unmarshal(raw, &projects); err != nil {
				return nil, fmt.Errorf("%s: projects is not an object: %v", path, err)
			}
		}
		if raw, ok := projects[project]; ok {
			if err := json.Unmarshal(raw, &f.entry); err != nil || f.entry == nil {
				return nil, fmt.Errorf("%s: projects[%q] is not an object", path, project)
			}
		}
		holder = f.entry
	}
	if raw, ok := holder["mcpServers"]; ok {
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
	servers, _ := json.Marshal(f.Servers)
	if f.project == "" {
		f.top["mcpServers"] = servers
	} else {
		var projects map[string]json.RawMessage
		json.Unmarshal(f.top["projects"], &projects)
		if projects == nil {
			projects = map[string]json.RawMessage{}
		}
		f.entry["mcpServers"] = servers
		if len(f.Servers) == 0 {
			delete(f.entry, "mcpServers")
		}
		if len(f.entry) == 0 {
			delete(projects, f.project)
		} else {
			projects[f.project], _ = json.Marshal(f.entry)
		}
		f.top["projects"], _ = json.Marshal(projects)
	}
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
	// ClientID and CallbackPort are an http server's "oauth": a client
	// registered with its authorization server, and the loopback port
	// registered for it (Claude Code's --client-id, --callback-port).
	ClientID     string
	CallbackPort int
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
		if e.ClientID != "" || e.CallbackPort != 0 {
			return nil, errors.New("a sign-in (--client-id, --callback-port) is for http servers")
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
		if e.ClientID != "" || e.CallbackPort != 0 {
			if e.Transport != "http" {
				return nil, errors.New("a sign-in (--client-id, --callback-port) is for http servers")
			}
			if e.CallbackPort < 0 || e.CallbackPort > 65535 {
				return nil, fmt.Errorf("callback port %d is not a port (1 to 65535)", e.CallbackPort)
			}
			oauth := map[string]any{}
			if e.ClientID != "" {
				oauth["clientId"] = e.ClientID
			}
			if e.CallbackPort != 0 {
				oauth["callbackPort"] = e.CallbackPort
			}
			entry["oauth"] = oauth
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
