package config_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/hook"
)

func ExampleLoad() {
	cfgDir, _ := os.MkdirTemp("", "config")
	ws, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(cfgDir)
	defer os.RemoveAll(ws)
	os.MkdirAll(filepath.Join(ws, ".orca"), 0o755)
	os.WriteFile(filepath.Join(ws, ".orca", "settings.json"), []byte(`{
	  "permissions": {"allow": ["Bash(go test:*)"], "deny": ["Bash(rm:*)"]},
	  "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh", "timeout": 30}]}]}
	}`), 0o644)

	// A workspace nobody trusted: its hook and allow rule wait.
	s, warns, err := config.Load(config.LoadOptions{Workspace: ws, ConfigDir: cfgDir})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(s.Hooks), s.Permissions.Allow, s.Permissions.Deny, warns[0].Untrusted)

	// Trusted (as `orca trust` does), they apply.
	if _, err := config.NewTrustStore(cfgDir).Trust(ws); err != nil {
		panic(err)
	}
	s, _, _ = config.Load(config.LoadOptions{Workspace: ws, ConfigDir: cfgDir})
	reg := hook.NewRegistry()
	unregister, err := s.RegisterHooks(reg, ws)
	if err != nil {
		panic(err)
	}
	defer unregister()
	fmt.Println(len(s.Hooks), s.Permissions.Allow, len(reg.Handlers(hook.PreToolUse)))
	// Output:
	// 0 [] [Bash(rm:*)] true
	// 1 [Bash(go test:*)] 1
}
