package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/orca-agent/orca/hook/command"
)

// Plugin is a Claude Code plugin folder whose hooks orca runs: its
// hooks/hooks.json (or the hooks its .claude-plugin/plugin.json names), in
// the settings files' format, each command run with CLAUDE_PLUGIN_ROOT set
// to the folder, as Claude Code runs them.
//
// # Where plugins come from, and trust
//
// A plugin's hooks run as the user, like a settings file's: only plugins
// the user chose are read. Those are the folders LoadOptions.PluginDirs
// names (orca's --plugin-dir), and the plugins that settings files enable
// ("enabledPlugins": {"name@marketplace": true}) and that Claude Code
// installed in the user's Claude Code folder (plugins/installed_plugins.json
// says where). A project's settings enable plugins only in a trusted
// workspace, as they grant hooks only there; a project file cannot name a
// folder to run, only a plugin the user installed. Its MCP servers start
// under the same trust (MCPServers); its skills/, agents/ and commands/
// are the runtime's to read (tool.Folders.Plugins), named prefix:name.
type Plugin struct {
	// Name is the plugin's name (name@marketplace when enabled by
	// settings); Dir its folder.
	Name, Dir string
	// Prefix names its skills and agents (prefix:skill): its manifest's
	// name, else its folder's.
	Prefix string
	// Hooks are its command hooks.
	Hooks []command.Spec
	// MCPServers are its MCP servers (its .mcp.json, or the manifest's
	// mcpServers), named plugin_<prefix>_<server> as Claude Code names
	// them, ${CLAUDE_PLUGIN_ROOT} the folder.
	MCPServers []MCPServer
	// LSPServers are its language servers (its .lsp.json, or the
	// manifest's lspServers), ${CLAUDE_PLUGIN_ROOT} the folder.
	LSPServers []LSPServer
}

// loadPlugins reads the plugins opts names and enabled installs.
func loadPlugins(opts LoadOptions, enabled map[string]bool) ([]Plugin, []Warning) {
	var (
		out   []Plugin
		warns []Warning
		seen  = map[string]bool{}
	)
	add := func(name, dir, why string) {
		abs, err := filepath.Abs(dir)
		if err == nil {
			dir = abs
		}
		if seen[dir] {
			return
		}
		seen[dir] = true
		p, pw, err := readPlugin(name, dir)
		if err != nil {
			warns = append(warns, Warning{File: dir, Message: fmt.Sprintf("plugin %s (%s) not used: %v", name, why, err)})
			return
		}
		for _, w := range pw {
			warns = append(warns, Warning{File: dir, Message: "plugin " + name + ": " + w})
		}
		out = append(out, p)
	}
	for _, dir := range opts.PluginDirs {
		add(filepath.Base(dir), dir, "--plugin-dir")
	}
	if opts.NoClaude || !enables(enabled) {
		return out, warns
	}
	claudeDir := opts.ClaudeDir
	switch claudeDir {
	case "-":
		claudeDir = ""
	case "":
		claudeDir, _ = ClaudeDir()
	}
	installed, err := readInstalled(claudeDir)
	if err != nil {
		warns = append(warns, Warning{File: filepath.Join(claudeDir, installedFile), Message: fmt.Sprintf("enabled plugins not used: %v", err)})
		return out, warns
	}
	var names []string
	for name, on := range enabled {
		if on {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		dir, ok := installed[name]
		if !ok {
			warns = append(warns, Warning{File: filepath.Join(claudeDir, installedFile), Message: fmt.Sprintf("enabledPlugins: %q is not installed (install it with Claude Code, or pass its folder with --plugin-dir)", name)})
			continue
		}
		add(name, dir, "enabledPlugins")
	}
	return out, warns
}

// installedFile is where Claude Code records the plugins it installed,
// relative to its folder.
const installedFile = "plugins/installed_plugins.json"

// readInstalled returns the install folders of the plugins Claude Code
// installed, by name@marketplace; the file may hold one install per name
// (version 1) or a list of them (version 2: the first, user-scoped
// preferred, is taken).
func readInstalled(claudeDir string) (map[string]string, error) {
	if claudeDir == "" {
		return nil, errors.New("no Claude Code folder")
	}
	data, err := readConfig(filepath.Join(claudeDir, installedFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return map[string]string{}, nil
		}
		return nil, err
	}
	var doc struct {
		Plugins map[string]json.RawMessage `json:"plugins"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not a plugin list: %v", err)
	}
	type install struct {
		Scope       string `json:"scope"`
		InstallPath string `json:"installPath"`
	}
	out := map[string]string{}
	for name, raw := range doc.Plugins {
		var list []install
		if err := json.Unmarshal(raw, &list); err != nil {
			var one install
			if err := json.Unmarshal(raw, &one); err != nil {
				continue
			}
			list = []install{one}
		}
		slices.SortStableFunc(list, func(a, b install) int {
			switch {
			case a.Scope == "user" && b.Scope != "user":
				return -1
			case b.Scope == "user" && a.Scope != "user":
				return 1
			}
			return 0
		})
		for _, in := range list {
			if in.InstallPath != "" {
				out[name] = in.InstallPath
				break
			}
		}
	}
	return out, nil
}

// readPlugin reads the hooks of the plugin in dir, and what of them is
// skipped.
func readPlugin(name, dir string) (Plugin, []string, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return Plugin{}, nil, err
	}
	if !fi.IsDir() {
		return Plugin{}, nil, fmt.Errorf("%s is not a folder", dir)
	}
	p := Plugin{Name: name, Dir: dir}
	// The manifest may name its hooks: a file, relative to the plugin, or
	// the hooks object itself.
	var manifest struct {
		Name       string          `json:"name"`
		Hooks      json.RawMessage `json:"hooks"`
		MCPServers json.RawMessage `json:"mcpServers"`
		LSPServers json.RawMessage `json:"lspServers"`
	}
	if data, err := readConfig(filepath.Join(dir, ".claude-plugin", "plugin.json")); err == nil {
		if err := json.Unmarshal(data, &manifest); err != nil {
			return Plugin{}, nil, fmt.Errorf(".claude-plugin/plugin.json: %v", err)
		}
	}
	p.Prefix = strings.TrimSpace(manifest.Name)
	if p.Prefix == "" {
		p.Prefix = filepath.Base(dir)
	}
	// Its MCP servers: .mcp.json, else the manifest's (inline, or a file).
	getenv := func(k string) (string, bool) {
		if k == "CLAUDE_PLUGIN_ROOT" {
			return dir, true
		}
		return os.LookupEnv(k)
	}
	mcpRaw, mcpPath := json.RawMessage(nil), filepath.Join(dir, MCPFile)
	if data, err := readConfig(mcpPath); err == nil {
		var top map[string]json.RawMessage
		if err := json.Unmarshal(data, &top); err != nil {
			return Plugin{}, nil, fmt.Errorf("%s: %v", mcpPath, err)
		}
		mcpRaw = top["mcpServers"]
	} else if m := strings.TrimSpace(string(manifest.MCPServers)); m != "" && m != "null" {
		mcpRaw, mcpPath = manifest.MCPServers, filepath.Join(dir, ".claude-plugin", "plugin.json")
		var rel string
		if json.Unmarshal(manifest.MCPServers, &rel) == nil {
			rel = strings.ReplaceAll(rel, "${CLAUDE_PLUGIN_ROOT}", dir)
			if !filepath.IsAbs(rel) {
				rel = filepath.Join(dir, rel)
			}
			data, err := readConfig(rel)
			if err != nil {
				return Plugin{}, nil, err
			}
			var top map[string]json.RawMessage
			if err := json.Unmarshal(data, &top); err != nil {
				return Plugin{}, nil, fmt.Errorf("%s: %v", rel, err)
			}
			mcpRaw, mcpPath = top["mcpServers"], rel
			if mcpRaw == nil {
				mcpRaw = data // a file of servers alone
			}
		}
	}
	if len(mcpRaw) > 0 {
		servers, err := parseMCPServers(mcpPath, mcpRaw, getenv)
		if err != nil {
			return Plugin{}, nil, err
		}
		for _, m := range servers {
			m.Name = unsafeMCPName.ReplaceAllString("plugin_"+p.Prefix+"_"+m.Name, "_")
			if m.Type == "stdio" && m.Env == nil {
				m.Env = map[string]string{}
			}
			if m.Type == "stdio" {
				m.Env["CLAUDE_PLUGIN_ROOT"] = dir
			}
			p.MCPServers = append(p.MCPServers, m)
		}
	}
	if p.LSPServers, err = readPluginLSP(dir, manifest.LSPServers); err != nil {
		return Plugin{}, nil, err
	}
	sources := []string{filepath.Join(dir, "hooks", "hooks.json")}
	var inline json.RawMessage
	if h := strings.TrimSpace(string(manifest.Hooks)); h != "" && h != "null" {
		var rel string
		if json.Unmarshal(manifest.Hooks, &rel) == nil {
			rel = strings.ReplaceAll(rel, "${CLAUDE_PLUGIN_ROOT}", dir)
			if !filepath.IsAbs(rel) {
				rel = filepath.Join(dir, rel)
			}
			sources = append(sources, rel)
		} else {
			inline = manifest.Hooks
		}
	}
	env := []string{"CLAUDE_PLUGIN_ROOT=" + dir}
	var warns []string
	addSpecs := func(path string, raw json.RawMessage) error {
		specs, ws, err := parseHooks(path, raw)
		if err != nil {
			return err
		}
		warns = append(warns, ws...) // unknown events are skipped, as in settings files
		for i := range specs {
			specs[i].Env = append(slices.Clone(env), specs[i].Env...)
		}
		p.Hooks = append(p.Hooks, specs...)
		return nil
	}
	seen := map[string]bool{}
	for _, path := range sources {
		if seen[filepath.Clean(path)] {
			continue
		}
		seen[filepath.Clean(path)] = true
		data, err := readConfig(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return Plugin{}, nil, err
		}
		var doc struct {
			Hooks json.RawMessage `json:"hooks"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			return Plugin{}, nil, fmt.Errorf("%s: %v", path, err)
		}
		if len(doc.Hooks) == 0 {
			continue
		}
		if err := addSpecs(path, doc.Hooks); err != nil {
			return Plugin{}, nil, err
		}
	}
	if inline != nil {
		if err := addSpecs(filepath.Join(dir, ".claude-plugin", "plugin.json"), inline); err != nil {
			return Plugin{}, nil, err
		}
	}
	return p, warns, nil
}

var unsafeMCPName = regexp.MustCompile(`[^A-Za-z0-9_-]`)
