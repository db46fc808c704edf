package config_test

import (
	"testing"

	"github.com/orca-agent/orca/config"
)

// A plugin's MCP servers (its .mcp.json, ${CLAUDE_PLUGIN_ROOT} its folder)
// are named plugin_<plugin>_<server>; its skills and agents are named by
// its manifest's name; its commands are said to be unread.
func TestPluginMCPServersAndPrefix(t *testing.T) {
	ws, plugin := t.TempDir(), t.TempDir()
	writeFile(t, plugin, ".claude-plugin/plugin.json", `{"name": "state-tools"}`)
	writeFile(t, plugin, ".mcp.json", `{"mcpServers": {"t": {"command": "node", "args": ["${CLAUDE_PLUGIN_ROOT}/server.js"]}}}`)
	writeFile(t, plugin, "commands/go.md", "# go\n")
	s, warns, err := config.Load(config.LoadOptions{Workspace: ws, ConfigDir: "-", ClaudeDir: "-", PluginDirs: []string{plugin}})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Plugins) != 1 || s.Plugins[0].Prefix != "state-tools" {
		t.Fatalf("plugins %+v", s.Plugins)
	}
	if len(s.MCPServers) != 1 {
		t.Fatalf("servers %+v", s.MCPServers)
	}
	m := s.MCPServers[0]
	if m.Name != "plugin_state-tools_t" || m.Args[0] != plugin+"/server.js" || m.Env["CLAUDE_PLUGIN_ROOT"] != plugin || m.Project {
		t.Errorf("server %+v", m)
	}
	// Its commands/ are the skill package's to read: no warning here.
	if len(warns) != 0 {
		t.Errorf("warnings %v", warns)
	}
}
