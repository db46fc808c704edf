package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/orca-agent/orca/config"
)

// FuzzParseFile reads settings files as others write them (the vendored
// Claude Code settings are among the seeds), as orca's and as Claude
// Code's: a file parses or is an error, never a panic.
func FuzzParseFile(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "cmd", "orca", "testdata", "claude", "*", "settings.json"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(string(data), true)
		}
	}
	for _, s := range []string{
		`{}`, `{"permissions":{"allow":["Bash(git status:*)"],"deny":["Read(./.env)"],"defaultMode":"acceptEdits"}}`,
		`{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"x","timeout":5,"if":"Bash(git:*)"}]}]}}`,
		`{"hooks":{"Stop":[{"hooks":[{"type":"prompt","prompt":"p"}]}],"Notification":[{"matcher":"idle_prompt","hooks":[{"type":"http","url":"http://127.0.0.1:1/x"}]}]}}`,
		`{"env":{"A":"1"},"model":"sonnet","mcpServers":{"fs":{"command":"npx","args":["-y","x"]},"web":{"type":"http","url":"https://x"}}}`,
		`{"sandbox":{"enabled":true,"filesystem":{"allowWrite":["/tmp/x"]}},"disableAllHooks":true}`,
		`{"hooks":{"PreToolUse":"nope"}}`, `{"permissions":{"allow":[1]}}`, `[]`, `null`, `{"hooks":{"PreToolUse":[{"hooks":[{"timeout":-1}]}]}}`,
		"\uFEFF{}", `{"enabledPlugins":{"a@b":true},"extraKnownMarketplaces":{}}`, `{"prices":{"m":{"input":1e308}}}`,
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, data string, claude bool) {
		path := filepath.Join("ws", ".orca", "settings.json")
		if claude {
			path = filepath.Join("ws", ".claude", "settings.json")
		}
		config.ParseFile(path, []byte(data))
	})
}
