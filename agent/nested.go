package agent

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/orca-agent/orca/tool"
)

// maxNestedMemory bounds what one nested memory file adds.
const maxNestedMemory = 64 << 10

// nestedMemory loads the memory files of the workspace's subfolders
// (Collaborators.NestedMemory: CLAUDE.md, AGENTS.md) when the agent first
// works in them, as Claude Code loads a subtree's CLAUDE.md when it reads
// files there: a tool call that reads or writes a path under folder d
// adds, to its observation, each of those files in d and in the folders
// between d and the workspace root that this execution has not seen yet
// (the root's own are in the system prompt). Imports (@path) in them are
// not followed.
type nestedMemory struct {
	names []string
	rules []PathRule
	mu    sync.Mutex
	seen  map[string]map[string]bool // by execution state key: files added
}

func newNestedMemory(names []string, rules []PathRule) *nestedMemory {
	if len(names) == 0 && len(rules) == 0 {
		return nil
	}
	return &nestedMemory{names: names, rules: rules, seen: map[string]map[string]bool{}}
}

// PathRule is an instruction for the files its globs match
// (Collaborators.PathRules).
type PathRule struct {
	// File names the rule for the model (".claude/rules/api.md").
	File string
	// Paths are doublestar globs over workspace-relative, slash-separated
	// paths ("src/api/**/*.ts", "**/*.go").
	Paths []string
	// Text is the instruction.
	Text string
}

// matches reports whether the rule covers the workspace path rel.
func (r *PathRule) matches(rel string) bool {
	for _, g := range r.Paths {
		if ok, _ := doublestar.Match(strings.TrimPrefix(g, "./"), rel); ok {
			return true
		}
	}
	return false
}

// nestedMemoryFor returns what the call adds of the subfolders' memory files, or "".
func (t *turn) nestedMemoryFor(tl tool.Tool, call *tool.Call) string {
	nm := t.rt.nested
	if nm == nil {
		return ""
	}
	a := tool.AccessOf(tl, call.Input)
	if len(a.Reads)+len(a.Writes) == 0 {
		return ""
	}
	root := t.rt.fs.Root()
	key := t.res.StateKey()
	var b strings.Builder
	for _, p := range append(append([]string(nil), a.Reads...), a.Writes...) {
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
			if r.matches(filepath.ToSlash(rel)) && nm.first(key, "rule\x00"+r.File) {
				fmt.Fprintf(&b, "\n\n<memory file=%q what=\"the project's rule for files matching %s, such as %s, which you are working on\">\n%s\n</memory>",
					r.File, strings.Join(r.Paths, ", "), filepath.ToSlash(rel), strings.TrimSpace(r.Text))
			}
		}
		dir := rel
		if fi, err := t.rt.fs.Stat(rel); err != nil || !fi.IsDir() {
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
				data, err := t.rt.fs.ReadFile(file)
				if err != nil || len(strings.TrimSpace(string(data))) == 0 {
					continue
				}
				text := string(data)
				if len(text) > maxNestedMemory {
					text = strings.ToValidUTF8(text[:maxNestedMemory], "") + "\n[cut: the file is longer]"
				}
				fmt.Fprintf(&b, "\n\n<memory file=%q what=\"the instructions of the folder %s, which you are working in\">\n%s\n</memory>", filepath.ToSlash(file), filepath.ToSlash(d), strings.TrimSpace(text))
			}
		}
	}
	return b.String()
}

// first reports whether file is new to the execution key, and marks it.
func (nm *nestedMemory) first(key, file string) bool {
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
