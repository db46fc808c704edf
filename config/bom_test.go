package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/orca-agent/orca/config"
)

// Files that start with a UTF-8 byte order mark — Windows Notepad,
// PowerShell 5.1's Set-Content -Encoding UTF8 and editors' "UTF-8 with
// BOM" write one — are read as without it, as Claude Code's CLI reads them
// (anthropics/claude-code#9906): settings, .mcp.json, a plugin's manifest,
// servers and hooks, the trust store. Refusing them made every command in
// the workspace a usage error ("invalid character 'ï'").
func TestFilesWithByteOrderMark(t *testing.T) {
	const bom = "\uFEFF"
	cfgDir, ws, claude, plugin := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, claude, "settings.json", bom+`{"permissions": {"allow": ["Read"]}}`)
	writeFile(t, cfgDir, "orca/settings.json", bom+`{"permissions": {"allow": ["Glob"]}}`)
	writeFile(t, ws, ".claude/settings.json", bom+`{"permissions": {"deny": ["Bash(rm:*)"]}, "enabledMcpjsonServers": ["files"]}`)
	writeFile(t, ws, ".mcp.json", bom+`{"mcpServers": {"files": {"command": "files-mcp"}}}`)
	writeFile(t, plugin, ".claude-plugin/plugin.json", bom+`{"name": "bom-tools"}`)
	writeFile(t, plugin, ".mcp.json", bom+`{"mcpServers": {"t": {"command": "node"}}}`)
	writeFile(t, plugin, "hooks/hooks.json", bom+`{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "guard.sh"}]}]}}`)
	trust := config.NewTrustStore(cfgDir)
	if _, err := trust.Trust(ws); err != nil {
		t.Fatal(err)
	}
	kept, err := os.ReadFile(filepath.Join(cfgDir, filepath.FromSlash(config.TrustFile)))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfgDir, config.TrustFile, bom+string(kept))

	s, _, err := config.Load(config.LoadOptions{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: claude, PluginDirs: []string{plugin}})
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Permissions; !slices.Equal(p.Allow, []string{"Read", "Glob"}) || !slices.Equal(p.Deny, []string{"Bash(rm:*)"}) {
		t.Errorf("permissions: %+v", p)
	}
	var servers, hooks []string
	for _, m := range s.MCPServers {
		servers = append(servers, m.Name)
	}
	for _, h := range s.Hooks {
		hooks = append(hooks, h.Command)
	}
	slices.Sort(servers)
	if want := []string{"files", "plugin_bom-tools_t"}; !slices.Equal(servers, want) {
		t.Errorf("MCP servers %q, want %q", servers, want)
	}
	if !slices.Equal(hooks, []string{"guard.sh"}) {
		t.Errorf("hooks %q", hooks)
	}
	if !trust.Trusted(ws) {
		t.Error("a trust store with a byte order mark trusts nothing")
	}
}
