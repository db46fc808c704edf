package policy

import (
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/orca-agent/orca/protect"
)

// grantPatterns are the protected paths through which the workspace
// grants itself power: a Bash command that names one is refused. Commands
// that name the rest of .orca and .claude — a skill's scripts, to run
// them; the store, to read it — may run: the OS sandbox keeps all of it
// read-only for them.
var grantPatterns = []string{
	".orca/hooks/**",
	".orca/agents/**",
	".orca/settings*.json",
	".orca/trust*",
	".orca/trust*/**",
	".orca/orca.db*",
	".claude/hooks/**",
	".claude/agents/**",
	".claude/settings*.json",
}

// grants reports whether rel (cleaned, lower case) is one of grantPatterns.
func grants(rel string) bool {
	for _, p := range grantPatterns {
		if ok, _ := doublestar.Match(p, rel); ok {
			return true
		}
	}
	return false
}

// protectedSamples stand for every protected path and the folders holding
// them; a word that may take one of these values may touch a protected path.
var protectedSamples = []string{
	".orca",
	".orca/hooks",
	".orca/hooks/pre-tool-use",
	".orca/skills",
	".orca/skills/release/SKILL.md",
	".orca/settings.json",
	".orca/settings.local.json",
	".orca/trust",
	".orca/trust.json",
	".orca/trust/workspace",
	".orca/orca.db",
	".claude",
	".claude/hooks",
	".claude/hooks/pre-tool-use.sh",
	".claude/skills",
	".claude/agents",
	".claude/agents/reviewer.md",
	".claude/settings.json",
	".claude/settings.local.json",
}

// Protected reports whether the workspace-relative, slash-separated path rel
// is one that the agent's own tools may never change: protected state, as
// package protect defines it (protect.Match) — anything in .orca and
// .claude, git's configuration and hooks. A model that could edit these
// could grant itself any permission, install a hook that runs anywhere,
// or make a later git command run its code. The path is cleaned first
// and compared case-insensitively.
func Protected(rel string) bool { return protect.Match(rel) }

// mentionsProtected reports whether a shell word, given as a pattern of the
// values it may take, may name a protected path or a folder that holds one:
// anywhere in the path (sub/../.orca/hooks, /abs/ws/.orca/trust), after an
// option's "=" or a short option's letter, and including globs (.orca/*).
func mentionsProtected(pat string) bool {
	if !strings.Contains(pat, ".") {
		return false
	}
	if mentionsPath(pat) {
		return true
	}
	if i := strings.IndexByte(pat, '='); i >= 0 && mentionsPath(pat[i+1:]) {
		return true
	}
	return len(pat) > 2 && pat[0] == '-' && pat[1] != '-' && mentionsPath(pat[2:])
}

func mentionsPath(pat string) bool {
	pat = strings.ToLower(pat)
	segs := strings.Split(pat, "/")
	for i, seg := range segs {
		// A glob matches a leading dot only when the dot is written out.
		if !strings.HasPrefix(seg, ".") {
			continue
		}
		orca, _ := doublestar.Match(seg, ".orca")
		claude, _ := doublestar.Match(seg, ".claude")
		if !orca && !claude {
			continue
		}
		rest := path.Clean(strings.Join(segs[i:], "/"))
		if grants(rest) {
			return true
		}
		for _, s := range protectedSamples {
			if ok, _ := doublestar.Match(rest, s); ok {
				return true
			}
		}
	}
	return false
}

// configGuard knows the user's configuration folders the agent may not
// change either: orca's (see WithUserConfigDir) and Claude Code's (see
// WithClaudeDir).
type configGuard struct {
	folders []guarded
	// secrets are folders no tool reads either (protect.Secrets).
	secrets []guarded
}

// guarded is one folder (or file) of a configGuard.
type guarded struct {
	dirs   []string // the folder as configured and with symlinks resolved, cleaned, lower case
	shown  string   // the folder for messages
	what   string   // what it is, for messages
	target bool     // a protect.Target: what protected state leads to
}

func newConfigGuard(configDir, claudeDir string, targets []protect.Target) configGuard {
	var g configGuard
	add := func(d, what string, target bool) {
		f := guarded{shown: d, what: what, dirs: []string{strings.ToLower(d)}, target: target}
		if real, err := evalExisting(d); err == nil && real != d {
			f.dirs = append(f.dirs, strings.ToLower(real))
		}
		g.folders = append(g.folders, f)
	}
	if configDir != "" {
		add(filepath.Join(configDir, "orca"), "the user's orca configuration folder", false)
		for _, d := range protect.Secrets(configDir) {
			f := guarded{shown: d, what: "the sign-ins to MCP servers", dirs: []string{strings.ToLower(d)}}
			if real, err := evalExisting(d); err == nil && real != d {
				f.dirs = append(f.dirs, strings.ToLower(real))
			}
			g.secrets = append(g.secrets, f)
		}
	}
	if claudeDir != "" {
		add(filepath.Clean(claudeDir), "the user's Claude Code folder", false)
	}
	for _, t := range targets {
		if filepath.IsAbs(t.Path) {
			add(filepath.Clean(t.Path), t.By, true)
		}
	}
	return g
}

// contains reports whether the absolute OS path abs lies in one of the
// folders, following symlinks of the part of abs that exists, and
// returns that folder.
func (g configGuard) contains(abs string) (guarded, bool) {
	if len(g.folders) == 0 || abs == "" {
		return guarded{}, false
	}
	if f, ok := g.lexical(abs); ok {
		return f, true
	}
	real, ok := followLinks("", abs)
	if !ok {
		return guarded{}, false // a loop leads nowhere: the write fails
	}
	return g.lexical(real)
}

func (g configGuard) lexical(abs string) (guarded, bool) {
	abs = strings.ToLower(filepath.Clean(abs))
	for _, f := range g.folders {
		for _, d := range f.dirs {
			if _, ok := within(d, abs); ok {
				return f, true
			}
		}
	}
	return guarded{}, false
}

// has reports whether abs lies in one of the folders (see contains).
func (g configGuard) has(abs string) bool {
	_, ok := g.contains(abs)
	return ok
}

// matches reports whether a shell word pattern may name a path in one of
// the folders.
func (g configGuard) matches(pat string) bool {
	if len(g.folders) == 0 || !strings.HasPrefix(pat, "/") && !strings.HasPrefix(pat, "*") {
		return false
	}
	pat = strings.ToLower(pat)
	for _, f := range g.folders {
		for _, d := range f.dirs {
			d = filepath.ToSlash(d)
			for _, s := range []string{d, d + "/settings.json", d + "/hooks/x"} {
				if ok, _ := doublestar.Match(pat, s); ok {
					return true
				}
			}
			if !strings.ContainsAny(pat, `*?[{\`) {
				if _, ok := within(d, path.Clean(pat)); ok {
					return true
				}
			}
		}
	}
	return false
}

// within returns p relative to root when p lies inside root (or is root).
func within(root, p string) (string, bool) {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

// evalExisting resolves the symlinks of the longest existing prefix of the
// absolute path p and appends the rest unchanged, so that a file about to be
// created is judged where it will really be written.
func evalExisting(p string) (string, error) {
	p = filepath.Clean(p)
	rest := ""
	for {
		if _, err := os.Lstat(p); err == nil {
			break
		}
		parent := filepath.Dir(p)
		if parent == p {
			return "", os.ErrNotExist
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	return filepath.Join(real, rest), nil
}

// maxLinks is how many symbolic links followLinks follows before it calls
// the path a loop (as the kernel's ELOOP does).
const maxLinks = 40

// followLinks returns where the absolute path p leads once every symbolic
// link in it is followed — a dangling one too, since writing through it
// creates its target — with the part that does not exist appended
// unchanged. known is a prefix of p without links ("" for none), below
// which the walk starts. ok is false for a loop.
func followLinks(known, p string) (string, bool) {
	p = filepath.Clean(p)
	cur, rest := string(filepath.Separator), p
	if known != "" {
		if r, ok := within(known, p); ok {
			cur, rest = known, r
		}
	}
	parts := strings.Split(strings.Trim(rest, string(filepath.Separator)), string(filepath.Separator))
	for hops := 0; len(parts) > 0; {
		part := parts[0]
		parts = parts[1:]
		if part == "" || part == "." {
			continue
		}
		if part == ".." {
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if err != nil {
			return filepath.Join(append([]string{next}, parts...)...), true
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > maxLinks {
			return "", false
		}
		dest, err := os.Readlink(next)
		if err != nil {
			return filepath.Join(append([]string{next}, parts...)...), true
		}
		if filepath.IsAbs(dest) {
			cur = string(filepath.Separator)
		}
		parts = append(strings.Split(dest, string(filepath.Separator)), parts...)
	}
	return cur, true
}

// secret reports whether the absolute OS path abs lies in one of the
// secret folders (symlinks of the part that exists followed), and
// returns that folder.
func (g configGuard) secret(abs string) (guarded, bool) {
	if len(g.secrets) == 0 || abs == "" {
		return guarded{}, false
	}
	in := func(p string) (guarded, bool) {
		lp := strings.ToLower(filepath.Clean(p))
		for _, f := range g.secrets {
			for _, d := range f.dirs {
				if lp == d || strings.HasPrefix(lp, d+string(filepath.Separator)) {
					return f, true
				}
			}
		}
		return guarded{}, false
	}
	if f, ok := in(abs); ok {
		return f, true
	}
	if real, ok := followLinks("", abs); ok {
		return in(real)
	}
	return guarded{}, false
}
