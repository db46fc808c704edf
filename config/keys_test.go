package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every key Claude Code's settings schema documents is one orca reads or
// one it knows to be Claude Code's alone: a user's Claude Code file is
// never called misspelt.
func TestSettingsKeysKnown(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "claude-code-settings.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	type object struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	var schema object
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	sub := func(raw json.RawMessage) map[string]json.RawMessage {
		var o object
		json.Unmarshal(raw, &o)
		return o.Properties
	}
	sandbox := sub(schema.Properties["sandbox"])
	for _, l := range []struct {
		where        string
		props        map[string]json.RawMessage
		read, claude []string
	}{
		{"", schema.Properties, settingsKeys, claudeKeys},
		{"permissions.", sub(schema.Properties["permissions"]), permissionsKeys, claudePermissionsKeys},
		{"sandbox.", sandbox, sandboxKeys, claudeSandboxKeys},
		{"sandbox.network.", sub(sandbox["network"]), networkKeys, claudeNetworkKeys},
		{"sandbox.filesystem.", sub(sandbox["filesystem"]), filesystemKeys, claudeFilesystemKeys},
	} {
		if len(l.props) == 0 {
			t.Fatalf("the schema has no %s keys", l.where)
		}
		for k := range l.props {
			if !slices.Contains(l.read, k) && !slices.Contains(l.claude, k) {
				t.Errorf("%s%s: Claude Code's schema has it; add it to the keys orca reads or to Claude Code's", l.where, k)
			}
		}
		for _, k := range l.claude {
			if _, ok := l.props[k]; !ok {
				t.Errorf("%s%s is listed as Claude Code's, but its schema has no such key", l.where, k)
			}
			if slices.Contains(l.read, k) {
				t.Errorf("%s%s is listed both as read and as Claude Code's alone", l.where, k)
			}
		}
	}
}

// A key neither orca nor Claude Code reads is a warning naming the file
// and the key — with the key meant, for a near miss — and the run goes on
// with the rest; a key only Claude Code reads is no warning, but listed
// in Settings.Ignored (for orca doctor).
func TestMisspelledKeysWarn(t *testing.T) {
	dir := t.TempDir()
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".orca"), 0o755)
	os.WriteFile(filepath.Join(ws, ".orca", "settings.json"), []byte(`{
		"permisions": {"allow": ["Bash"]},
		"modle": "x",
		"Model": "y",
		"permissions": {"alow": ["Read"], "deny": ["Bash(rm:*)"], "disableAutoMode": "disable"},
		"theme": "dark", "statusLine": {"type": "command", "command": "x"},
		"sandbox": {"netwrok": {}, "network": {"allowedDomain": ["*"], "httpProxyPort": 1}, "filesystem": {"allowRead": ["x"]}},
		"frobnicate": 1
	}`), 0o644)
	s, warns, err := Load(LoadOptions{Workspace: ws, ConfigDir: dir, ClaudeDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range warns {
		if w.File != filepath.Join(ws, ".orca", "settings.json") {
			t.Errorf("warning of another file: %+v", w)
		}
		got = append(got, w.Message)
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{
		`permisions: not a setting orca or Claude Code reads; it is ignored (did you mean "permissions"?)`,
		`modle: not a setting orca or Claude Code reads; it is ignored (did you mean "model"?)`,
		`Model: not a setting orca or Claude Code reads; it is ignored (did you mean "model"?)`,
		`permissions.alow: not a setting orca or Claude Code reads; it is ignored (did you mean "permissions.allow"?)`,
		`sandbox.netwrok: not a setting orca or Claude Code reads; it is ignored (did you mean "sandbox.network"?)`,
		`sandbox.network.allowedDomain: not a setting orca or Claude Code reads; it is ignored (did you mean "sandbox.network.allowedDomains"?)`,
		`frobnicate: not a setting orca or Claude Code reads; it is ignored`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no warning %q in\n%s", want, all)
		}
	}
	if strings.Contains(all, "frobnicate: not a setting orca or Claude Code reads; it is ignored (") {
		t.Errorf("a suggestion for a key near nothing:\n%s", all)
	}
	for _, quiet := range []string{"theme", "statusLine", "disableAutoMode", "httpProxyPort", "allowRead"} {
		if strings.Contains(all, quiet) {
			t.Errorf("Claude Code's key %s warned about:\n%s", quiet, all)
		}
	}
	if len(s.Ignored) != 1 || !slices.Equal(s.Ignored[0].Keys, []string{"statusLine", "theme", "permissions.disableAutoMode", "sandbox.network.httpProxyPort", "sandbox.filesystem.allowRead"}) {
		t.Errorf("Ignored = %+v", s.Ignored)
	}
	// The rest of the file applies.
	if !slices.Equal(s.Permissions.Deny, []string{"Bash(rm:*)"}) {
		t.Errorf("deny rules %v", s.Permissions.Deny)
	}
}

func TestNearest(t *testing.T) {
	words := []string{"permissions", "model", "env", "hooks", "sandbox"}
	for s, want := range map[string]string{"permisions": "permissions", "premissions": "permissions", "modle": "model", "mdel": "model", "MODEL": "model",
		"evn": "env", "envs": "env", "hook": "hooks", "sandbx": "sandbox", "theme": "", "e": "", "permissionsss": "permissions", "xyz": ""} {
		if got := nearest(s, words); got != want {
			t.Errorf("nearest(%q) = %q, want %q", s, got, want)
		}
	}
}
