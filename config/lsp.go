package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// LSPServer is a language server of the settings' "lspServers" or a
// Claude Code plugin's (.lsp.json, or its manifest's "lspServers"): the
// entry Claude Code reads — command, args, env, extensionToLanguage,
// initializationOptions, settings, startupTimeout (ms), maxRestarts,
// restartOnCrash. A name given false ("gopls": false) is Off: the server
// orca would find installed does not start.
type LSPServer struct {
	Name                  string
	Off                   bool
	Command               string
	Args                  []string
	Env                   map[string]string
	ExtensionToLanguage   map[string]string
	InitializationOptions json.RawMessage
	Settings              json.RawMessage
	StartupTimeout        time.Duration
	// MaxRestarts is how many failures in a row are restarted (0: the
	// default; -1: none, restartOnCrash false).
	MaxRestarts int
	// File is where it is declared; Project says the workspace declares
	// it, so that it starts only in a trusted workspace.
	File    string
	Project bool
}

// lspEntry is an "lspServers" entry as written.
type lspEntry struct {
	Command               string            `json:"command"`
	Args                  []string          `json:"args"`
	Env                   map[string]string `json:"env"`
	ExtensionToLanguage   map[string]string `json:"extensionToLanguage"`
	Transport             string            `json:"transport"`
	InitializationOptions json.RawMessage   `json:"initializationOptions"`
	Settings              json.RawMessage   `json:"settings"`
	StartupTimeout        *float64          `json:"startupTimeout"`
	MaxRestarts           *int              `json:"maxRestarts"`
	RestartOnCrash        *bool             `json:"restartOnCrash"`
}

// parseLSPServers reads an "lspServers" object (or a .lsp.json file's
// top level) of the file at path; expand rewrites a plugin's
// ${CLAUDE_PLUGIN_ROOT} (nil: nothing is rewritten).
func parseLSPServers(path string, raw json.RawMessage, expand func(string) string) ([]LSPServer, error) {
	if expand == nil {
		expand = func(s string) string { return s }
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("%s: lspServers: want an object of language servers by name, got %s", path, kind(raw))
	}
	names := make([]string, 0, len(top))
	for name := range top {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]LSPServer, 0, len(names))
	for _, name := range names {
		v := top[name]
		key := "lspServers." + name
		if strings.TrimSpace(string(v)) == "false" {
			out = append(out, LSPServer{Name: name, Off: true, File: path})
			continue
		}
		var e lspEntry
		if err := json.Unmarshal(v, &e); err != nil {
			return nil, fmt.Errorf("%s: %s: want an object (command, args, extensionToLanguage …) or false: %v", path, key, err)
		}
		if strings.TrimSpace(e.Command) == "" {
			return nil, fmt.Errorf("%s: %s.command: missing: name the server's executable", path, key)
		}
		if len(e.ExtensionToLanguage) == 0 {
			return nil, fmt.Errorf("%s: %s.extensionToLanguage: missing: map the extensions of the files it serves to their languages, such as {\".go\": \"go\"}", path, key)
		}
		if e.Transport != "" && e.Transport != "stdio" {
			return nil, fmt.Errorf("%s: %s.transport: %q: orca speaks to language servers over stdio only", path, key, e.Transport)
		}
		s := LSPServer{Name: name, Command: expand(e.Command), ExtensionToLanguage: e.ExtensionToLanguage,
			InitializationOptions: e.InitializationOptions, Settings: e.Settings, File: path}
		for _, a := range e.Args {
			s.Args = append(s.Args, expand(a))
		}
		if len(e.Env) > 0 {
			s.Env = make(map[string]string, len(e.Env))
			for k, v := range e.Env {
				s.Env[k] = expand(v)
			}
		}
		if e.StartupTimeout != nil {
			if *e.StartupTimeout <= 0 {
				return nil, fmt.Errorf("%s: %s.startupTimeout: want a positive number of milliseconds, got %v", path, key, *e.StartupTimeout)
			}
			s.StartupTimeout = time.Duration(*e.StartupTimeout * float64(time.Millisecond))
		}
		if e.MaxRestarts != nil {
			if *e.MaxRestarts < 0 {
				return nil, fmt.Errorf("%s: %s.maxRestarts: want 0 or more, got %d", path, key, *e.MaxRestarts)
			}
			s.MaxRestarts = *e.MaxRestarts
			if s.MaxRestarts == 0 {
				s.MaxRestarts = -1
			}
		}
		if e.RestartOnCrash != nil && !*e.RestartOnCrash {
			s.MaxRestarts = -1
		}
		out = append(out, s)
	}
	return out, nil
}

// readPluginLSP reads a plugin's language servers: its .lsp.json, else
// its manifest's "lspServers" (inline, or a file relative to it).
func readPluginLSP(dir string, manifest json.RawMessage) ([]LSPServer, error) {
	expand := func(s string) string { return strings.ReplaceAll(s, "${CLAUDE_PLUGIN_ROOT}", dir) }
	path := filepath.Join(dir, ".lsp.json")
	data, err := readConfig(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		m := strings.TrimSpace(string(manifest))
		if m == "" || m == "null" {
			return nil, nil
		}
		path, data = filepath.Join(dir, ".claude-plugin", "plugin.json"), manifest
		var rel string
		if json.Unmarshal(manifest, &rel) == nil {
			rel = expand(rel)
			if !filepath.IsAbs(rel) {
				rel = filepath.Join(dir, rel)
			}
			if data, err = readConfig(rel); err != nil {
				return nil, err
			}
			path = rel
		}
	}
	servers, err := parseLSPServers(path, data, expand)
	if err != nil {
		return nil, err
	}
	for i := range servers {
		if servers[i].Env == nil {
			servers[i].Env = map[string]string{}
		}
		servers[i].Env["CLAUDE_PLUGIN_ROOT"] = dir
	}
	return servers, nil
}

// lastLSPByName keeps, of servers of one name, the last.
func lastLSPByName(servers []LSPServer) []LSPServer {
	var out []LSPServer
	for i, s := range servers {
		if !slices.ContainsFunc(servers[i+1:], func(o LSPServer) bool { return o.Name == s.Name }) {
			out = append(out, s)
		}
	}
	return out
}
