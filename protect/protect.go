// Package protect is the one definition of protected state: the files and
// folders through which settings, hooks, orca's own state and git's
// configuration decide what runs on the user's machine. The agent's tools
// may not change them (package policy refuses such calls) and neither may
// the commands it runs (package sandbox keeps them read-only); both take
// them from here.
//
// In a workspace, protected state is (Match):
//
//	.orca/**, .claude/**      orca's and Claude Code's settings, hooks, skills, agents, trust files, the session store
//	.git/config, .git/config.worktree, .git/hooks/**, .git/info/attributes, .git/commondir
//	                          git's configuration and hooks, and where it takes them from, through which a later git command runs code
//	.git/modules/**/…         the same of every submodule
//	.git/worktrees/*/…        a linked worktree's config.worktree, commondir and gitdir
//	**/.git, **/.git/…        the same of every repository nested in the workspace, and the
//	                          .git file of a submodule or worktree, which says where its repository is
//
// Protected state is protected wherever it is reached from. Where a
// protected path is a symbolic link (.claude/settings.local.json ->
// ../notes.json, a whole .claude -> cfg), what decides what runs is what
// it leads to: Resolve follows every link in protected state, and the
// targets it returns are protected as the link is. A script that a
// trusted settings file runs outside the sandbox — a hook's, an MCP
// server's, an apiKeyHelper's (policy.Scripts finds them) — is protected
// the same way: code that runs on the host must not be the agent's to
// write.
//
// The package imports nothing but the standard library: the OS sandbox's
// server, which starts in this package's importers' init, must not wait
// for heavier packages to initialise first.
package protect

import (
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Match reports whether the workspace-relative, slash-separated path rel
// is protected state (see the package's doc). The path is cleaned first
// and compared case-insensitively, so that a case-insensitive file system
// cannot be used to reach it under another spelling.
func Match(rel string) bool {
	rel = strings.ToLower(path.Clean(filepath.ToSlash(rel)))
	rel = strings.TrimPrefix(rel, "./")
	segs := strings.Split(rel, "/")
	if segs[0] == ".orca" || segs[0] == ".claude" {
		return true
	}
	for i, s := range segs {
		if s == ".git" && gitState(segs[i+1:]) {
			return true
		}
	}
	return false
}

// gitState reports whether rest, the path below a .git folder, is one
// from which git takes code to run: the folder itself (or a .git file),
// config, config.worktree, commondir, info/attributes, hooks/**; the same
// in modules/** (submodules, nested); a linked worktree's
// config.worktree, commondir and gitdir.
func gitState(rest []string) bool {
	if len(rest) == 0 {
		return true
	}
	switch rest[0] {
	case "hooks":
		return true
	case "config", "config.worktree", "commondir":
		return len(rest) == 1
	case "info":
		return len(rest) == 2 && rest[1] == "attributes"
	case "worktrees":
		return len(rest) == 3 && (rest[2] == "config.worktree" || rest[2] == "commondir" || rest[2] == "gitdir")
	case "modules":
		sub := rest[1:]
		if len(sub) == 0 {
			return false
		}
		switch last := sub[len(sub)-1]; {
		case last == "config" || last == "config.worktree":
			return true
		case last == "attributes" && len(sub) >= 2 && sub[len(sub)-2] == "info":
			return true
		}
		return slices.Contains(sub, "hooks")
	}
	return false
}

// OrcaData are the parts of .orca that are orca's records rather than
// configuration: nothing in them decides what runs, and they can be
// large, so Resolve does not walk them (orca refuses links there itself,
// see workspace.Confine).
var OrcaData = []string{"orca.db", "orca.db-wal", "orca.db-shm", "orca.db-journal", "runs", "transcripts"}

// Secrets are the folders, under the user's configuration folder
// configDir, that hold secrets no tool of the agent may read, let alone
// write: the sign-ins to MCP servers (their tokens). None without a
// configuration folder.
func Secrets(configDir string) []string {
	if configDir == "" {
		return nil
	}
	return []string{MCPAuthDir(configDir)}
}

// MCPAuthDir is the folder of the sign-ins to MCP servers under the
// user's configuration folder configDir.
func MCPAuthDir(configDir string) string {
	return filepath.Join(configDir, "orca", "mcp-auth")
}
