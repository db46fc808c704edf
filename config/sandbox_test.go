package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orca-agent/orca/config"
)

// The sandbox settings of Claude Code's shape: lists concatenate, the
// last "enabled" wins, paths resolve against the home folder and the
// workspace.
func TestSandboxSettings(t *testing.T) {
	cfgDir, ws := setup(t)
	home, _ := os.UserHomeDir()
	writeFile(t, cfgDir, "orca/settings.json", `{"sandbox": {
		"enabled": false,
		"autoAllowBashIfSandboxed": true,
		"excludedCommands": ["docker"],
		"network": {"allowedDomains": ["*"], "allowLocalBinding": true},
		"filesystem": {"allowWrite": ["~/.cache/pip", "/opt/build"], "denyRead": ["~/.ssh"]},
		"allowedEnvVars": ["NPM_*"]
	}}`)
	writeFile(t, ws, ".orca/settings.json", `{"sandbox": {"enabled": true, "filesystem": {"denyWrite": ["deploy"]}}}`)
	config.NewTrustStore(cfgDir).Trust(ws)
	s, warns, err := config.Load(config.LoadOptions{Workspace: ws, ConfigDir: cfgDir})
	if err != nil || len(warns) > 0 {
		t.Fatal(err, warns)
	}
	t.Setenv("NPM_TOKEN", "t")
	t.Setenv("OPENAI_API_KEY", "k")
	r := s.Sandbox.Runner(ws)
	if r.Disabled {
		t.Error("the project's enabled: true comes last and should win")
	}
	p := r.Policy
	if !slices.Equal(p.Writable, []string{filepath.Join(home, ".cache/pip"), "/opt/build"}) || !slices.Equal(p.ReadOnly, []string{filepath.Join(ws, "deploy")}) ||
		!slices.Equal(p.Hidden, []string{filepath.Join(home, ".ssh")}) || !p.Network || !slices.Equal(r.Excluded, []string{"docker"}) {
		t.Errorf("runner: %+v", r)
	}
	if !slices.Contains(r.Env, "NPM_TOKEN=t") || slices.Contains(r.Env, "OPENAI_API_KEY=k") {
		t.Errorf("env: %v", r.Env)
	}
}

// A cloned repository may tighten the sandbox but not loosen it, unless
// the workspace is trusted.
func TestSandboxSettingsUntrusted(t *testing.T) {
	cfgDir, ws := setup(t)
	writeFile(t, ws, ".orca/settings.local.json", `{"sandbox": {
		"enabled": false, "excludedCommands": ["sh", "bash"], "network": {"allowedDomains": ["*"], "allowAllUnixSockets": true},
		"filesystem": {"allowWrite": ["/"], "denyRead": ["secrets"]}, "allowedEnvVars": ["*"]
	}}`)
	s, warns, err := config.Load(config.LoadOptions{Workspace: ws, ConfigDir: cfgDir})
	if err != nil {
		t.Fatal(err)
	}
	r := s.Sandbox.Runner(ws)
	if r.Disabled || r.Policy.Network || r.Policy.UnixSockets || len(r.Policy.Writable) > 0 || len(r.Excluded) > 0 || !slices.Equal(r.Policy.Hidden, []string{filepath.Join(ws, "secrets")}) {
		t.Errorf("untrusted: %+v", r)
	}
	if len(warns) != 1 || !warns[0].Untrusted || !strings.Contains(warns[0].Message, "sandbox.enabled false") || !strings.Contains(warns[0].Message, "sandbox.filesystem.allowWrite") {
		t.Errorf("warnings: %v", warns)
	}
	config.NewTrustStore(cfgDir).Trust(ws)
	s, _, _ = config.Load(config.LoadOptions{Workspace: ws, ConfigDir: cfgDir})
	if r := s.Sandbox.Runner(ws); !r.Disabled || !r.Policy.Network {
		t.Errorf("trusted: %+v", r)
	}
}

func TestSandboxSettingsErrorsAndWarnings(t *testing.T) {
	for body, want := range map[string]string{
		`{"sandbox": true}`:                                   "sandbox: want an object, got a boolean",
		`{"sandbox": {"enabled": "yes"}}`:                     "sandbox.enabled: want true or false, got a string",
		`{"sandbox": {"excludedCommands": ["docker", 3]}}`:    "sandbox.excludedCommands[1]: want a command name (a non-empty string), got a number",
		`{"sandbox": {"filesystem": {"allowWrite": "/opt"}}}`: "sandbox.filesystem.allowWrite: want a list of paths, got a string",
		`{"sandbox": {"network": {"allowedDomains": [""]}}}`:  "sandbox.network.allowedDomains[0]: want a host name (a non-empty string), got a string",
	} {
		_, err := config.ParseFile("s.json", []byte(body))
		if err == nil || err.Error() != "s.json: "+want {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
	cfgDir, _ := setup(t)
	writeFile(t, cfgDir, "orca/settings.json", `{"sandbox": {"network": {"allowedDomains": ["github.com", "*.npmjs.org"]}}}`)
	s, warns, err := config.Load(config.LoadOptions{ConfigDir: cfgDir})
	if err != nil {
		t.Fatal(err)
	}
	if s.Sandbox.Network || len(warns) != 1 || !strings.Contains(warns[0].Message, "github.com, *.npmjs.org not reachable") {
		t.Errorf("network %v, warnings %v", s.Sandbox.Network, warns)
	}
}

// autoAllowBashIfSandboxed is taken only as a file says it, the last that
// sets it winning, and not from a workspace that is not trusted (it
// loosens what runs unasked): that one is told so.
func TestSandboxAutoAllow(t *testing.T) {
	cfgDir, ws := t.TempDir(), t.TempDir()
	writeFile(t, cfgDir, "orca/settings.json", `{"sandbox": {"autoAllowBashIfSandboxed": true}}`)
	s, _, err := config.Load(config.LoadOptions{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: "-"})
	if err != nil || !s.Sandbox.AutoAllow {
		t.Fatalf("user file: auto allow %v, %v", s.Sandbox.AutoAllow, err)
	}
	writeFile(t, ws, ".orca/settings.json", `{"sandbox": {"autoAllowBashIfSandboxed": false}}`)
	if s, _, err = config.Load(config.LoadOptions{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: "-"}); err != nil || s.Sandbox.AutoAllow {
		t.Errorf("a later false: auto allow %v, %v", s.Sandbox.AutoAllow, err)
	}
	cfgDir = t.TempDir()
	writeFile(t, ws, ".orca/settings.json", `{"sandbox": {"autoAllowBashIfSandboxed": true}}`)
	s, warns, err := config.Load(config.LoadOptions{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: "-"})
	if err != nil || s.Sandbox.AutoAllow {
		t.Fatalf("untrusted workspace: auto allow %v, %v", s.Sandbox.AutoAllow, err)
	}
	var said []string
	for _, w := range warns {
		said = append(said, w.Message)
	}
	if !strings.Contains(strings.Join(said, "\n"), "sandbox.autoAllowBashIfSandboxed") {
		t.Errorf("the warnings do not say it was not applied: %q", said)
	}
	if s, _, err = config.Load(config.LoadOptions{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: "-", TrustOverride: true}); err != nil || !s.Sandbox.AutoAllow {
		t.Errorf("trusted workspace: auto allow %v, %v", s.Sandbox.AutoAllow, err)
	}
	writeFile(t, cfgDir, "orca/settings.json", `{"sandbox": {"autoAllowBashIfSandboxed": "yes"}}`)
	if _, _, err := config.Load(config.LoadOptions{Workspace: t.TempDir(), ConfigDir: cfgDir, ClaudeDir: "-"}); err == nil || !strings.Contains(err.Error(), "sandbox.autoAllowBashIfSandboxed: want true or false") {
		t.Errorf("a value that is not a boolean: %v", err)
	}
}
