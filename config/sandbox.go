package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orca-agent/orca/sandbox"
)

// Sandbox is the "sandbox" of the settings files: how the commands orca
// starts on the model's behalf are sandboxed (package sandbox). The keys
// are Claude Code's, where it has them:
//
//	"sandbox": {
//	  "enabled": true,
//	  "excludedCommands": ["docker"],
//	  "network": {"allowedDomains": ["*"], "allowAllUnixSockets": true},
//	  "filesystem": {"allowWrite": ["~/.cache/pip"], "denyWrite": ["deploy/"], "denyRead": ["~/.ssh"]},
//	  "allowedEnvVars": ["AWS_PROFILE", "NPM_*"],
//	  "autoAllowBashIfSandboxed": true
//	}
//
// Unlike Claude Code's, orca's sandbox is on unless a file turns it off,
// and where it cannot be set up commands are refused, not run without it.
// Paths are absolute, start with ~/ (the home folder), or are relative to
// the workspace. Lists concatenate across files; the last "enabled" wins.
type Sandbox struct {
	// Disabled: a file turned the sandbox off ("enabled": false).
	Disabled bool
	// ExcludedCommands run without the sandbox when a command line is made
	// of them alone ("excludedCommands"); the permission rules still
	// decide whether they run.
	ExcludedCommands []string
	// Network lets commands use the network: "network.allowedDomains"
	// lists "*". orca has no per-host filter yet; a list of hosts leaves
	// the network off, with a warning.
	Network bool
	// UnixSockets lets commands create Unix sockets, and so reach the
	// host's daemons (Docker's, D-Bus, ssh-agent):
	// "network.allowAllUnixSockets".
	UnixSockets bool
	// AllowWrite are more folders commands may write; DenyWrite paths they
	// may not, though inside a writable folder; DenyRead paths they may not
	// read ("filesystem").
	AllowWrite, DenyWrite, DenyRead []string
	// AllowedEnvVars are more environment variables commands see, beyond
	// sandbox.EnvAllowed (names; a trailing * makes a prefix).
	AllowedEnvVars []string
	// AutoAllow: commands that run in the sandbox run without being asked
	// about ("autoAllowBashIfSandboxed": true, Claude Code's key); deny
	// and ask rules still apply. Only when a file says so: orca's sandbox
	// is on by default, Claude Code's is not, so its default (true once
	// the sandbox is enabled) is not orca's. The last file that sets it
	// wins.
	AutoAllow bool
}

// Runner returns the runner of commands run in workspace under s: its
// Policy has only what s adds (the runtime adds the workspace's own, see
// sandbox.WorkspacePolicy).
func (s Sandbox) Runner(workspace string) *sandbox.Runner {
	abs := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			out = append(out, resolvePath(workspace, p))
		}
		return out
	}
	return &sandbox.Runner{
		Disabled: s.Disabled,
		Excluded: slices.Clone(s.ExcludedCommands),
		Env:      sandbox.DefaultEnv(s.AllowedEnvVars...),
		Policy: sandbox.Policy{
			Writable:    abs(s.AllowWrite),
			ReadOnly:    abs(s.DenyWrite),
			Hidden:      abs(s.DenyRead),
			Network:     s.Network,
			UnixSockets: s.UnixSockets,
		},
	}
}

// resolvePath makes p absolute: ~/ is the home folder, a relative path is
// relative to workspace.
func resolvePath(workspace, p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok || p == "~" {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(workspace, p)
}

// sandboxFile is one file's "sandbox".
type sandboxFile struct {
	enabled   *bool
	autoAllow *bool
	Sandbox
	// ignored are the keys only Claude Code reads (IgnoredKeys).
	ignored []string
}

// grants reports whether the file's sandbox settings loosen the sandbox:
// what an untrusted workspace may not do.
func (s *sandboxFile) grants() []string {
	var what []string
	if s.enabled != nil && !*s.enabled {
		what = append(what, "sandbox.enabled false")
	}
	if len(s.ExcludedCommands) > 0 {
		what = append(what, "sandbox.excludedCommands")
	}
	if s.Network {
		what = append(what, "sandbox network access")
	}
	if s.UnixSockets {
		what = append(what, "sandbox.network.allowAllUnixSockets")
	}
	if len(s.AllowWrite) > 0 {
		what = append(what, "sandbox.filesystem.allowWrite")
	}
	if len(s.AllowedEnvVars) > 0 {
		what = append(what, "sandbox.allowedEnvVars")
	}
	if s.autoAllow != nil && *s.autoAllow {
		what = append(what, "sandbox.autoAllowBashIfSandboxed")
	}
	return what
}

// restrict drops what grants reports; deny lists, which only restrict,
// stay.
func (s *sandboxFile) restrict() {
	if s.enabled != nil && !*s.enabled {
		s.enabled = nil
	}
	s.ExcludedCommands, s.Network, s.UnixSockets, s.AllowWrite, s.AllowedEnvVars = nil, false, false, nil, nil
	if s.autoAllow != nil && *s.autoAllow {
		s.autoAllow = nil
	}
}

func (s *Sandbox) merge(f *sandboxFile) {
	if f.enabled != nil {
		s.Disabled = !*f.enabled
	}
	if f.autoAllow != nil {
		s.AutoAllow = *f.autoAllow
	}
	s.ExcludedCommands = append(s.ExcludedCommands, f.ExcludedCommands...)
	s.Network = s.Network || f.Network
	s.UnixSockets = s.UnixSockets || f.UnixSockets
	s.AllowWrite = append(s.AllowWrite, f.AllowWrite...)
	s.DenyWrite = append(s.DenyWrite, f.DenyWrite...)
	s.DenyRead = append(s.DenyRead, f.DenyRead...)
	s.AllowedEnvVars = append(s.AllowedEnvVars, f.AllowedEnvVars...)
}

// parseSandbox checks a file's "sandbox"; errors name the key. Keys of
// Claude Code's that orca has no use for are ignored (sandboxFile.ignored);
// warnings say what is not done as written, and name keys neither reads.
func parseSandbox(raw json.RawMessage) (*sandboxFile, []string, error) {
	fail := func(key, format string, args ...any) error {
		return fmt.Errorf("sandbox.%s: %s", key, fmt.Sprintf(format, args...))
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return nil, nil, fmt.Errorf("sandbox: want an object, got %s", kind(raw))
	}
	f := &sandboxFile{}
	warns, ignored := checkKeys("sandbox.", top, sandboxKeys, claudeSandboxKeys)
	f.ignored = ignored
	if raw, ok := top["enabled"]; ok {
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, nil, fail("enabled", "want true or false, got %s", kind(raw))
		}
		f.enabled = &b
	}
	if raw, ok := top["autoAllowBashIfSandboxed"]; ok {
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, nil, fail("autoAllowBashIfSandboxed", "want true or false, got %s", kind(raw))
		}
		f.autoAllow = &b
	}
	strs := func(key string, raw json.RawMessage, what string) ([]string, error) {
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, fail(key, "want a list of %ss, got %s", what, kind(raw))
		}
		var out []string
		for i, item := range items {
			var s string
			if err := json.Unmarshal(item, &s); err != nil || strings.TrimSpace(s) == "" {
				return nil, fail(fmt.Sprintf("%s[%d]", key, i), "want a %s (a non-empty string), got %s", what, kind(item))
			}
			out = append(out, s)
		}
		return out, nil
	}
	var err error
	if raw, ok := top["excludedCommands"]; ok {
		if f.ExcludedCommands, err = strs("excludedCommands", raw, "command name"); err != nil {
			return nil, nil, err
		}
	}
	if raw, ok := top["allowedEnvVars"]; ok {
		if f.AllowedEnvVars, err = strs("allowedEnvVars", raw, "variable name"); err != nil {
			return nil, nil, err
		}
	}
	if raw, ok := top["network"]; ok {
		var net map[string]json.RawMessage
		if err := json.Unmarshal(raw, &net); err != nil || net == nil {
			return nil, nil, fail("network", "want an object, got %s", kind(raw))
		}
		w, ig := checkKeys("sandbox.network.", net, networkKeys, claudeNetworkKeys)
		warns, f.ignored = append(warns, w...), append(f.ignored, ig...)
		if raw, ok := net["allowAllUnixSockets"]; ok {
			if err := json.Unmarshal(raw, &f.UnixSockets); err != nil {
				return nil, nil, fail("network.allowAllUnixSockets", "want true or false, got %s", kind(raw))
			}
		}
		if raw, ok := net["allowedDomains"]; ok {
			hosts, err := strs("network.allowedDomains", raw, "host name")
			if err != nil {
				return nil, nil, err
			}
			f.Network = slices.Contains(hosts, "*")
			if others := slices.DeleteFunc(slices.Clone(hosts), func(h string) bool { return h == "*" }); len(others) > 0 && !f.Network {
				warns = append(warns, fmt.Sprintf("sandbox.network.allowedDomains: orca cannot open the network to some hosts only yet, so commands run without network access (%s not reachable); list \"*\" to allow every host",
					strings.Join(others, ", ")))
			}
		}
	}
	if raw, ok := top["filesystem"]; ok {
		var fsys map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fsys); err != nil || fsys == nil {
			return nil, nil, fail("filesystem", "want an object, got %s", kind(raw))
		}
		w, ig := checkKeys("sandbox.filesystem.", fsys, filesystemKeys, claudeFilesystemKeys)
		warns, f.ignored = append(warns, w...), append(f.ignored, ig...)
		for _, l := range []struct {
			key string
			out *[]string
		}{{"allowWrite", &f.AllowWrite}, {"denyWrite", &f.DenyWrite}, {"denyRead", &f.DenyRead}} {
			if raw, ok := fsys[l.key]; ok {
				if *l.out, err = strs("filesystem."+l.key, raw, "path"); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	return f, warns, nil
}
