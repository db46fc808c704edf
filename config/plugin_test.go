package config_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/hook"
)

// guardPlugin writes a plugin folder whose PreToolUse hook, run through
// ${CLAUDE_PLUGIN_ROOT}, blocks Bash commands that read .env, as
// security plugins do.
func guardPlugin(t *testing.T, dir string) {
	t.Helper()
	writeFile(t, dir, ".claude-plugin/plugin.json", `{"name": "env-guard", "version": "1.0.0", "description": "keeps .env closed"}`)
	writeFile(t, dir, "hooks/hooks.json", `{"description": "guard", "hooks": {
		"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "sh \"${CLAUDE_PLUGIN_ROOT}/hooks/guard.sh\"", "timeout": 10}]}],
		"Notification": [{"hooks": [{"type": "command", "command": "true"}]}]}}`)
	writeFile(t, dir, "hooks/guard.sh", `input=$(cat)
case "$input" in *'.env'*) echo "reading .env is not allowed ($CLAUDE_PLUGIN_ROOT)" >&2; exit 2;; esac
exit 0
`)
}

// decide runs the settings' PreToolUse hooks on a Bash call of command.
func decide(t *testing.T, s *config.Settings, ws, cmd string) hook.Outcome {
	t.Helper()
	reg := hook.NewRegistry()
	unregister, err := s.RegisterHooks(reg, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer unregister()
	args, _ := json.Marshal(map[string]string{"command": cmd})
	return reg.Run(context.Background(), &hook.PreToolUsePayload{Common: hook.Common{Cwd: ws}, ToolCall: hook.ToolCall{ToolName: "Bash", ToolUseID: "u", Arguments: args, Command: cmd}})
}

// A plugin folder named by --plugin-dir runs its hooks with
// CLAUDE_PLUGIN_ROOT set, its Notification entries too (they run as a
// Notifier, not a hook).
func TestPluginDirHooksRun(t *testing.T) {
	ws, plugin := t.TempDir(), t.TempDir()
	guardPlugin(t, plugin)
	s, warns, err := config.Load(config.LoadOptions{Workspace: ws, ConfigDir: "-", ClaudeDir: "-", PluginDirs: []string{plugin}})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Plugins) != 1 || s.Plugins[0].Dir != plugin || len(s.Hooks) != 2 || s.Hooks[1].Event != "Notification" || s.Hooks[1].Command != "true" {
		t.Fatalf("plugins %+v, hooks %+v", s.Plugins, s.Hooks)
	}
	if len(warns) != 0 {
		t.Errorf("warnings %v, want none", warns)
	}
	out := decide(t, s, ws, "cat .env")
	if out.Action != hook.Block || !strings.Contains(out.Reason, "reading .env is not allowed ("+plugin+")") {
		t.Fatalf("cat .env: %+v (failures %v); want blocked by the plugin's script", out, out.Failures)
	}
	if out := decide(t, s, ws, "ls"); out.Action != hook.Continue || len(out.Failures) != 0 {
		t.Errorf("ls: %+v", out)
	}
}

// Plugins Claude Code installed run when a settings file enables them; a
// project's settings enable them only in a trusted workspace.
func TestEnabledPluginsRun(t *testing.T) {
	cfgDir, ws, claude := t.TempDir(), t.TempDir(), t.TempDir()
	plugin := filepath.Join(claude, "plugins", "cache", "tools", "env-guard", "1.0.0")
	guardPlugin(t, plugin)
	installed, _ := json.Marshal(map[string]any{"version": 2, "plugins": map[string]any{
		"env-guard@tools": []map[string]any{{"scope": "user", "installPath": plugin, "version": "1.0.0"}},
	}})
	writeFile(t, claude, "plugins/installed_plugins.json", string(installed))

	// The user's settings enable it; a disabled and a missing one are not run.
	writeFile(t, claude, "settings.json", `{"enabledPlugins": {"env-guard@tools": true, "other@tools": false, "missing@tools": true}}`)
	s, warns, err := config.Load(config.LoadOptions{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: claude})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Plugins) != 1 || s.Plugins[0].Name != "env-guard@tools" {
		t.Fatalf("plugins %+v", s.Plugins)
	}
	if out := decide(t, s, ws, "cat .env"); out.Action != hook.Block {
		t.Errorf("the enabled plugin's guard did not block: %+v", out)
	}
	missing := false
	for _, w := range warns {
		missing = missing || strings.Contains(w.Message, `"missing@tools" is not installed`)
	}
	if !missing {
		t.Errorf("warnings %v, want the missing plugin named", warns)
	}

	// Enabled by the project only: not in an untrusted workspace.
	if err := os.Remove(filepath.Join(claude, "settings.json")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, ws, ".claude/settings.json", `{"enabledPlugins": {"env-guard@tools": true}}`)
	s, warns, err = config.Load(config.LoadOptions{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: claude})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Plugins) != 0 || len(s.Hooks) != 0 {
		t.Fatalf("an untrusted workspace enabled plugins: %+v", s.Plugins)
	}
	untrusted := false
	for _, w := range warns {
		untrusted = untrusted || w.Untrusted && strings.Contains(w.Message, "enabledPlugins")
	}
	if !untrusted {
		t.Errorf("warnings %v, want enabledPlugins reported as untrusted", warns)
	}
	config.NewTrustStore(cfgDir).Trust(ws)
	if s, _, err = config.Load(config.LoadOptions{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: claude}); err != nil || len(s.Plugins) != 1 {
		t.Fatalf("trusted: plugins %+v, %v", s.Plugins, err)
	}
	// --no-claude reads no plugins Claude Code installed.
	if s, _, err = config.Load(config.LoadOptions{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: claude, NoClaude: true}); err != nil || len(s.Plugins) != 0 {
		t.Fatalf("NoClaude: plugins %+v, %v", s.Plugins, err)
	}
}
