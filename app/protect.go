package app

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/protect"
)

// claudeData are the folders of the user's Claude Code folder that hold
// Claude Code's records, not configuration: large, and not walked for
// links.
var claudeData = []string{"projects", "todos", "shell-snapshots", "statsig", "logs", "debug", "file-history", "session-env", "ide", "plans", "paste-cache", "telemetry"}

// protectedTargets are what protected state leads to, protected as the
// state itself (see package protect): where the links in the workspace's
// .orca, .claude and git configuration and in the user's folders lead,
// Claude Code's state file (its MCP servers), and the scripts that the
// settings in effect run — hooks, the apiKeyHelper, MCP servers. It is
// read when the App opens; a walk cut short at its limits is a warning.
func (a *App) protectedTargets() []protect.Target {
	orca := filepath.Join(a.root, ".orca")
	roots := []string{orca, filepath.Join(a.root, ".claude"), filepath.Join(a.root, ".git", "config"), filepath.Join(a.root, ".git", "hooks")}
	var claude string
	if a.configDir != "" {
		roots = append(roots, filepath.Join(a.configDir, "orca"))
	}
	if a.claudeDir != "" {
		claude = filepath.Clean(a.claudeDir)
		roots = append(roots, claude)
	}
	skip := func(p string) bool {
		if dir, name := filepath.Dir(p), filepath.Base(p); dir == orca {
			return slices.Contains(protect.OrcaData, name)
		} else if dir == claude {
			return slices.Contains(claudeData, name)
		}
		return false
	}
	targets, complete := protect.Resolve(roots, skip)
	if !complete {
		a.warnings = append(a.warnings, config.Warning{File: a.root, Message: "protected state (.orca, .claude, git's hooks, your configuration folders) holds too many files to look through for symbolic links: links beyond the first 20,000 entries are not followed, and what they lead to is not protected"})
	}
	if a.claudeDir != "" {
		if state := config.ClaudeStatePath(a.claudeDir); exists(state) {
			targets = append(targets, protect.Target{Path: state, By: "Claude Code's state file (its MCP servers start in every workspace)"})
		}
	}
	// The scripts of the commands that run outside the sandbox, or with
	// more than it (an MCP server's variables, its network).
	vars := map[string]string{"CLAUDE_PROJECT_DIR": a.root}
	if home, err := os.UserHomeDir(); err == nil {
		vars["HOME"] = home
	}
	for k, v := range a.settings.Env {
		if _, ok := vars[k]; !ok {
			vars[k] = v
		}
	}
	named := func(scripts []string, by string) {
		for _, s := range scripts {
			if fi, err := os.Stat(s); err != nil || !fi.Mode().IsRegular() {
				continue
			}
			targets = append(targets, protect.Target{Path: s, By: by})
			// A script that is a link is what it leads to.
			more, _ := protect.Resolve([]string{s}, nil)
			targets = append(targets, more...)
		}
	}
	for _, h := range a.settings.Hooks {
		if h.Command == "" {
			continue
		}
		v := vars
		if len(h.Env) > 0 {
			v = maps.Clone(vars)
			for _, kv := range h.Env {
				if k, x, ok := strings.Cut(kv, "="); ok {
					v[k] = x
				}
			}
		}
		named(policy.Scripts(h.Command, a.root, v), "the command of a "+h.Event+" hook ("+h.File+")")
	}
	if a.settings.APIKeyHelper != "" {
		named(policy.Scripts(a.settings.APIKeyHelper, a.root, vars), "the apiKeyHelper")
	}
	for _, m := range a.settings.MCPServers {
		if m.Command != "" {
			named(policy.Argv(append([]string{m.Command}, m.Args...), a.root, vars), "the MCP server "+m.Name)
		}
	}
	return targets
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
