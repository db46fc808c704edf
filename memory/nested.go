package memory

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/orca-agent/orca/workspace"
)

// maxNested bounds what one nested memory file adds.
const maxNested = 64 << 10

// PathRule is an instruction for the files its globs match (Claude Code's
// .claude/rules files with "paths").
type PathRule struct {
	// File names the rule for the model (".claude/rules/api.md").
	File string
	// Paths are doublestar globs over workspace-relative, slash-separated
	// paths ("src/api/**/*.ts", "**/*.go").
	Paths []string
	// Text is the instruction.
	Text string
}

// Matches reports whether the rule covers the workspace path rel
// (slash-separated).
func (r *PathRule) Matches(rel string) bool {
	for _, g := range r.Paths {
		if ok, _ := doublestar.Match(strings.TrimPrefix(g, "./"), rel); ok {
			return true
		}
	}
	return false
}

// Nested loads the memory files of the workspace's subfolders (CLAUDE.md,
// AGENTS.md) when the agent first works in them, as Claude Code loads a
// subtree's CLAUDE.md when it reads files there, and the rules for the
// files it works on: a tool call that reads or writes a path under folder
// d adds, to its observation, each of those files in d and in the folders
// between d and the workspace root, and each rule that matches the path,
// that the execution has not seen yet (the root's own files are in the
// system prompt). Imports (@path) in them are not followed. It is safe for
// concurrent use.
type Nested struct {
	names []string
	rules []PathRule
	mu    sync.Mutex
	seen  map[string]map[string]bool // by execution: files added
}

// NewNested returns the loader of the memory files named names and of
// rules; nil, which loads nothing, if there are neither.
func NewNested(names []string, rules []PathRule) *Nested {
	if len(names) == 0 && len(rules) == 0 {
		return nil
	}
	return &Nested{names: names, rules: rules, seen: map[string]map[string]bool{}}
}

// For returns what a call of the execution key that reads or writes paths
// (workspace-relative, or absolute) in fsys adds to its observation, or "".
func (nm *Nested) For(fsys workspace.FileSystem, key string, paths []string) string {
	if nm == nil {
		return ""
	}
	root := fsys.Root()
	var b strings.Builder
	for _, p := range paths {
		rel := p
		if filepath.IsAbs(p) {
			r, err := filepath.Rel(root, p)
			if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
				continue
			}
			rel = r
		}
		rel = filepath.Clean(rel)
		for i := range nm.rules {
			r := &nm.rules[i]
			if r.Matches(filepath.ToSlash(rel)) && nm.first(key, "rule\x00"+r.File) {
				fmt.Fprintf(&b, "\n\n<memory file=%q what=\"the project's rule for files matching %s, such as %s, which you are working on\">\n%s\n</memory>",
					r.File, strings.Join(r.Paths, ", "), filepath.ToSlash(rel), strings.TrimSpace(r.Text))
			}
		}
		dir := rel
		if fi, err := fsys.Stat(rel); err != nil || !fi.IsDir() {
			dir = filepath.Dir(rel)
		}
		// The folders from the root down to dir, the root left out.
		var chain []string
		for d := dir; d != "." && d != string(filepath.Separator) && d != ""; d = filepath.Dir(d) {
			chain = append([]string{d}, chain...)
		}
		for _, d := range chain {
			for _, name := range nm.names {
				file := filepath.Join(d, name)
				if !nm.first(key, file) {
					continue
				}
				data, err := fsys.ReadFile(file)
				if err != nil || len(strings.TrimSpace(string(data))) == 0 {
					continue
				}
				text := string(data)
				if len(text) > maxNested {
					text = strings.ToValidUTF8(text[:maxNested], "") + "\n[cut: the file is longer]"
				}
				fmt.Fprintf(&b, "\n\n<memory file=%q what=\"the instructions of the folder %s, which you are working in\">\n%s\n</memory>", filepath.ToSlash(file), filepath.ToSlash(d), strings.TrimSpace(text))
			}
		}
	}
	return b.String()
}

// first reports whether file is new to the execution key, and marks it.
func (nm *Nested) first(key, file string) bool {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	s := nm.seen[key]
	if s == nil {
		s = map[string]bool{}
		nm.seen[key] = s
	}
	if s[file] {
		return false
	}
	s[file] = true
	return true
}
