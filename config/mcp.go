package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/orca-agent/orca/internal/names"
)

// MCPServer is an MCP server a settings file or a workspace's .mcp.json
// declares, in Claude Code's format:
//
//	{"mcpServers": {
//	  "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."], "env": {"DEBUG": "${DEBUG:-0}"}},
//	  "docs":  {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}
//	}}
//
// ${VAR} and ${VAR:-default} in command, args, env, url and headers are
// replaced with orca's environment when the file is read; a variable that
// is not set and has no default is an error naming the server and the
// variable.
type MCPServer struct {
	// Name is the server's key; its tools are mcp__<Name>__<tool>.
	Name string
	// Type is "stdio" (a command; the default), "http" (streamable HTTP)
	// or "sse".
	Type string
	// Command, Args and Env start a stdio server.
	Command string
	Args    []string
	Env     map[string]string
	// URL and Headers reach an http or sse server.
	URL     string
	Headers map[string]string
	// OAuth is the "oauth" of an http server: how orca signs in to it
	// (nil: the defaults).
	OAuth *MCPOAuth
	// Timeout bounds one tool call (orca's "timeout" key, in seconds; 0:
	// the client's default).
	Timeout time.Duration
	// File is where it is declared; Project says the workspace declares it
	// (its .mcp.json or project settings), so that it starts only in a
	// trusted workspace and once approved.
	File    string
	Project bool
	// Digest identifies the entry as written (before ${VAR}s are
	// expanded): "sha256:…". A .mcp.json server starts only while its
	// digest is the one the user trusted (TrustStore.MCPDigests).
	Digest string
}

// MCPFile is the workspace's MCP server file, Claude Code's, relative to
// the workspace.
const MCPFile = ".mcp.json"

// MCPApproval is what the settings say of the workspace's .mcp.json
// servers: Claude Code's enableAllProjectMcpServers, enabledMcpjsonServers
// and disabledMcpjsonServers.
type MCPApproval struct {
	All      bool
	Enabled  []string
	Disabled []string
}

// Approves reports whether the settings approve the .mcp.json server name:
// named as disabled never; else all, or named as enabled.
func (a MCPApproval) Approves(name string) bool {
	if slices.Contains(a.Disabled, name) {
		return false
	}
	return a.All || slices.Contains(a.Enabled, name)
}

// CheckMCPName says what is wrong with name as an MCP server's, if
// anything: letters, digits, _ and - (at most 64), so that its tools can
// be named mcp__<name>__<tool>.
func CheckMCPName(name string) error {
	if !names.Token(name) {
		return fmt.Errorf("a server's name is letters, digits, _ and - (at most 64), so that its tools can be named mcp__%s__<tool>", name)
	}
	return nil
}

// parseMCPServers reads an "mcpServers" object; errors name the key.
func parseMCPServers(path string, raw json.RawMessage, getenv func(string) (string, bool)) ([]MCPServer, error) {
	fail := func(key string, format string, args ...any) error {
		return fmt.Errorf("%s: %s: %s", path, key, fmt.Sprintf(format, args...))
	}
	var byName map[string]json.RawMessage
	if err := json.Unmarshal(raw, &byName); err != nil || byName == nil {
		return nil, fail("mcpServers", "want an object of servers by name, got %s", kind(raw))
	}
	var out []MCPServer
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		key := fmt.Sprintf("mcpServers[%q]", name)
		if err := CheckMCPName(name); err != nil {
			return nil, fail(key, "%v", err)
		}
		var s struct {
			Type    string            `json:"type"`
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
			Timeout *float64          `json:"timeout"`
			OAuth   json.RawMessage   `json:"oauth"`
		}
		if err := json.Unmarshal(byName[name], &s); err != nil {
			return nil, fail(key, "want an object with command (and args, env) or type and url: %v", err)
		}
		expand := func(field, v string) (string, error) {
			out, err := expandVars(v, getenv)
			if err != nil {
				return "", fail(key+"."+field, "%v", err)
			}
			return out, nil
		}
		m := MCPServer{Name: name, Type: s.Type, File: path, Digest: digest(byName[name])}
		var err error
		switch s.Type {
		case "", "stdio":
			m.Type = "stdio"
			if strings.TrimSpace(s.Command) == "" {
				return nil, fail(key, "no command (a stdio server is a command; an http or sse one needs \"type\" and \"url\")")
			}
			if m.Command, err = expand("command", s.Command); err != nil {
				return nil, err
			}
			for i, a := range s.Args {
				v, err := expand(fmt.Sprintf("args[%d]", i), a)
				if err != nil {
					return nil, err
				}
				m.Args = append(m.Args, v)
			}
			for _, k := range slices.Sorted(maps.Keys(s.Env)) {
				if k == "" || strings.ContainsAny(k, "=\x00") {
					return nil, fail(key+".env", "%q is not a variable name", k)
				}
				v, err := expand("env."+k, s.Env[k])
				if err != nil {
					return nil, err
				}
				if m.Env == nil {
					m.Env = map[string]string{}
				}
				m.Env[k] = v
			}
		case "http", "sse", "streamable-http":
			if s.Type == "streamable-http" {
				m.Type = "http"
			}
			if m.URL, err = expand("url", s.URL); err != nil {
				return nil, err
			}
			if u, err := url.Parse(m.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, fail(key+".url", "%q is not an http or https URL", m.URL)
			}
			for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
				v, err := expand("headers."+k, s.Headers[k])
				if err != nil {
					return nil, err
				}
				if m.Headers == nil {
					m.Headers = map[string]string{}
				}
				m.Headers[k] = v
			}
			if s.OAuth != nil {
				if m.OAuth, err = parseMCPOAuth(s.OAuth, expand); err != nil {
					return nil, fail(key+".oauth", "%v", err)
				}
			}
		default:
			return nil, fail(key+".type", "%q is not stdio, http or sse", s.Type)
		}
		if s.Timeout != nil {
			if *s.Timeout < 0 || *s.Timeout > 24*3600 {
				return nil, fail(key+".timeout", "%v is not a number of seconds between 0 and a day", *s.Timeout)
			}
			m.Timeout = time.Duration(*s.Timeout * float64(time.Second))
		}
		out = append(out, m)
	}
	return out, nil
}

// digest returns "sha256:" and the hex SHA-256 of the JSON value raw in
// its canonical form (keys sorted, no spaces), so that reformatting a
// file changes no digest.
func digest(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) == nil {
		if b, err := json.Marshal(v); err == nil {
			raw = b
		}
	}
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// MCPFileDigests returns the digests of the servers of the workspace's
// .mcp.json by name (none if it has none), for TrustStore.ApproveMCP.
func MCPFileDigests(workspace string) (map[string]string, error) {
	servers, err := readMCPFile(workspace, func(string) (string, bool) { return "x", true })
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, m := range servers {
		out[m.Name] = m.Digest
	}
	return out, nil
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expandVars replaces ${VAR} and ${VAR:-default}.
func expandVars(s string, getenv func(string) (string, bool)) (string, error) {
	var missing []string
	out := varRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		if v, ok := getenv(m[1]); ok && v != "" {
			return v
		}
		if m[2] != "" {
			return m[3]
		}
		missing = append(missing, m[1])
		return ""
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("the variable %s is not set (and has no default: ${%s:-…})", missing[0], missing[0])
	}
	return out, nil
}

// parseMCPApproval reads the .mcp.json approval keys of a settings file.
func parseMCPApproval(path string, top map[string]json.RawMessage) (*MCPApproval, error) {
	var a MCPApproval
	found := false
	if raw, ok := top["enableAllProjectMcpServers"]; ok {
		found = true
		if err := json.Unmarshal(raw, &a.All); err != nil {
			return nil, fmt.Errorf("%s: enableAllProjectMcpServers: want true or false, got %s", path, kind(raw))
		}
	}
	for _, k := range []struct {
		key string
		out *[]string
	}{{"enabledMcpjsonServers", &a.Enabled}, {"disabledMcpjsonServers", &a.Disabled}} {
		if raw, ok := top[k.key]; ok {
			found = true
			if err := json.Unmarshal(raw, k.out); err != nil {
				return nil, fmt.Errorf("%s: %s: want a list of server names, got %s", path, k.key, kind(raw))
			}
		}
	}
	if !found {
		return nil, nil
	}
	return &a, nil
}

// readMCPFile reads the workspace's .mcp.json, if there is one.
func readMCPFile(workspace string, getenv func(string) (string, bool)) ([]MCPServer, error) {
	path := filepath.Join(workspace, MCPFile)
	data, err := readConfig(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var top map[string]json.RawMessage
	if err := strictJSON(data, &top); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	raw, ok := top["mcpServers"]
	if !ok {
		return nil, nil
	}
	servers, err := parseMCPServers(path, raw, getenv)
	for i := range servers {
		servers[i].Project = true
	}
	return servers, err
}

// ClaudeStateFile is the name of Claude Code's state file of the user,
// where `claude mcp add` keeps the servers of its user scope (the
// top-level "mcpServers") and of its local scope (the "mcpServers" of the
// project's entry under "projects", keyed by the project's path), and
// where the user's answers about a project's .mcp.json servers are kept
// (the entry's "enabledMcpjsonServers" and "disabledMcpjsonServers"). It
// lies in $CLAUDE_CONFIG_DIR when that is set, else in the home folder,
// beside ~/.claude.
const ClaudeStateFile = ".claude.json"

// claudeState is what orca reads of Claude Code's state file: the user's
// servers, those of the user for the workspace, and the user's approvals
// of the workspace's .mcp.json servers.
type claudeState struct {
	path     string
	user     []MCPServer
	local    []MCPServer
	approval *MCPApproval
}

// ClaudeStatePath returns where the state file (ClaudeStateFile) of
// Claude Code's folder claudeDir is: inside it (as with
// $CLAUDE_CONFIG_DIR) if it is there, else beside it.
func ClaudeStatePath(claudeDir string) string {
	inside := filepath.Join(claudeDir, ClaudeStateFile)
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); filepath.IsAbs(d) && filepath.Clean(d) == filepath.Clean(claudeDir) {
		return inside // Claude Code's own override: nothing beside it is read
	}
	if fileExists(inside) {
		return inside
	}
	return filepath.Join(filepath.Dir(claudeDir), ClaudeStateFile)
}

// readClaudeState reads the MCP servers and approvals of Claude Code's
// state file for workspace ("" for none). The file is Claude Code's,
// written by it with many keys orca has no use for: those are ignored,
// and a file orca cannot use is a warning, never an error.
func readClaudeState(claudeDir, workspace string, getenv func(string) (string, bool)) (*claudeState, []Warning) {
	st := &claudeState{path: ClaudeStatePath(claudeDir)}
	data, err := readConfig(st.path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	// The warning names the file; the parsers' errors, which name it
	// too, say it once.
	warn := func(format string, args ...any) []Warning {
		msg := strings.ReplaceAll(fmt.Sprintf(format, args...), st.path+": ", "")
		return []Warning{{File: st.path, Message: msg}}
	}
	if err != nil {
		return st, warn("its MCP servers not used: %v", err)
	}
	// Only the keys orca reads are decoded: the file also holds every
	// project's history, which may be megabytes.
	var top struct {
		MCPServers json.RawMessage          `json:"mcpServers"`
		Projects   map[string]claudeProject `json:"projects"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		return st, warn("its MCP servers not used: %v", err)
	}
	var warns []Warning
	if len(top.MCPServers) > 0 && string(top.MCPServers) != "null" {
		servers, err := parseMCPServers(st.path, top.MCPServers, getenv)
		if err != nil {
			warns = append(warns, warn("its user MCP servers not used: %v", err)...)
		}
		st.user = servers
	}
	if workspace == "" {
		return st, warns
	}
	entry, ok := projectEntry(top.Projects, workspace)
	if !ok {
		return st, warns
	}
	if raw := entry.MCPServers; len(raw) > 0 && string(raw) != "null" {
		servers, err := parseMCPServers(st.path, raw, getenv)
		if err != nil {
			warns = append(warns, warn("its local MCP servers of %s not used: %v", workspace, err)...)
		}
		st.local = servers
	}
	keys := map[string]json.RawMessage{}
	for k, v := range map[string]json.RawMessage{"enableAllProjectMcpServers": entry.All, "enabledMcpjsonServers": entry.Enabled, "disabledMcpjsonServers": entry.Disabled} {
		if len(v) > 0 {
			keys[k] = v
		}
	}
	a, err := parseMCPApproval(st.path, keys)
	if err != nil {
		warns = append(warns, warn("its approvals of %s's .mcp.json servers not used: %v", workspace, err)...)
	} else {
		st.approval = a
	}
	return st, warns
}

// claudeProject is what orca reads of a project's entry in the state
// file.
type claudeProject struct {
	MCPServers json.RawMessage `json:"mcpServers"`
	All        json.RawMessage `json:"enableAllProjectMcpServers"`
	Enabled    json.RawMessage `json:"enabledMcpjsonServers"`
	Disabled   json.RawMessage `json:"disabledMcpjsonServers"`
}

// projectEntry returns the entry of the state file's projects for
// workspace: its key is the project's absolute path as Claude Code found
// it, the workspace's own or its links resolved (Claude Code's working
// folder is the resolved one).
func projectEntry(projects map[string]claudeProject, workspace string) (claudeProject, bool) {
	if e, ok := projects[filepath.Clean(workspace)]; ok {
		return e, true
	}
	if real, err := filepath.EvalSymlinks(workspace); err == nil {
		if e, ok := projects[real]; ok {
			return e, true
		}
	}
	for key, e := range projects {
		if filepath.Clean(key) == filepath.Clean(workspace) {
			return e, true // a key written with a trailing slash
		}
	}
	return claudeProject{}, false
}

// MCPOAuth is the "oauth" of an http server's entry: Claude Code's keys
// (clientId, callbackPort, authServerMetadataUrl, scopes) and orca's
// (clientSecret, clientMetadataUrl, grant, privateKeyFile), ${VAR}s
// expanded in the strings.
type MCPOAuth struct {
	ClientID, ClientSecret string
	ClientMetadataURL      string
	CallbackPort           int
	AuthServerMetadataURL  string
	Scopes                 []string
	// ClientCredentials: "grant": "client_credentials".
	ClientCredentials bool
	// PrivateKeyFile signs the client's JWT in the client_credentials
	// grant (private_key_jwt).
	PrivateKeyFile string
}

// parseMCPOAuth checks an "oauth" object; expand expands a field's
// ${VAR}s.
func parseMCPOAuth(raw json.RawMessage, expand func(field, v string) (string, error)) (*MCPOAuth, error) {
	var o struct {
		ClientID              string          `json:"clientId"`
		ClientSecret          string          `json:"clientSecret"`
		ClientMetadataURL     string          `json:"clientMetadataUrl"`
		CallbackPort          *float64        `json:"callbackPort"`
		AuthServerMetadataURL string          `json:"authServerMetadataUrl"`
		Scopes                json.RawMessage `json:"scopes"`
		Grant                 string          `json:"grant"`
		PrivateKeyFile        string          `json:"privateKeyFile"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return nil, fmt.Errorf("want an object of clientId, clientSecret, clientMetadataUrl, callbackPort, authServerMetadataUrl, scopes, grant and privateKeyFile: %v", err)
	}
	out := &MCPOAuth{}
	var err error
	for _, f := range []struct {
		key      string
		in       string
		out      *string
		httpsURL bool
	}{
		{"clientId", o.ClientID, &out.ClientID, false},
		{"clientSecret", o.ClientSecret, &out.ClientSecret, false},
		{"clientMetadataUrl", o.ClientMetadataURL, &out.ClientMetadataURL, true},
		{"authServerMetadataUrl", o.AuthServerMetadataURL, &out.AuthServerMetadataURL, true},
		{"privateKeyFile", o.PrivateKeyFile, &out.PrivateKeyFile, false},
	} {
		if *f.out, err = expand("oauth."+f.key, f.in); err != nil {
			return nil, err
		}
		if f.httpsURL && *f.out != "" {
			if u, err := url.Parse(*f.out); err != nil || u.Scheme != "https" || u.Host == "" {
				return nil, fmt.Errorf("%s: %q is not an https URL", f.key, *f.out)
			}
		}
	}
	if p := o.CallbackPort; p != nil {
		if *p != float64(int(*p)) || *p < 1 || *p > 65535 {
			return nil, fmt.Errorf("callbackPort: %v is not a port (1 to 65535)", *p)
		}
		out.CallbackPort = int(*p)
	}
	if len(o.Scopes) > 0 && string(o.Scopes) != "null" {
		var one string
		if json.Unmarshal(o.Scopes, &one) == nil {
			out.Scopes = strings.Fields(one)
		} else if err := json.Unmarshal(o.Scopes, &out.Scopes); err != nil {
			return nil, fmt.Errorf("scopes: want a string of scopes separated by spaces, or a list of them")
		}
		if len(out.Scopes) == 0 {
			return nil, fmt.Errorf("scopes: empty (leave it out to ask for the scopes the server says it needs)")
		}
	}
	switch o.Grant {
	case "", "authorization_code":
	case "client_credentials":
		out.ClientCredentials = true
		if out.ClientID == "" {
			return nil, fmt.Errorf("grant client_credentials needs clientId")
		}
		if out.ClientSecret == "" && out.PrivateKeyFile == "" {
			return nil, fmt.Errorf("grant client_credentials needs clientSecret or privateKeyFile")
		}
	default:
		return nil, fmt.Errorf("grant: %q is not authorization_code or client_credentials", o.Grant)
	}
	if out.PrivateKeyFile != "" && !out.ClientCredentials {
		return nil, fmt.Errorf("privateKeyFile is for grant client_credentials")
	}
	return out, nil
}
