package protect

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// nestedDepth is how many folders deep Git looks for repositories nested
// in the workspace (vendor/lib/.git is 2).
const nestedDepth = 6

// Git returns the protected paths of the git repositories of the folder
// root, for the OS sandbox to keep read-only: files — configuration,
// attributes, a worktree's pointers, the .git file of a submodule or
// worktree checkout — and folders — hooks, to be made (empty) where they
// are missing. They are root's own repository (root/.git, a folder, or a
// file naming the repository elsewhere, whose common folder counts too),
// its submodules' (.git/modules/**), its linked worktrees', and every
// repository nested in root's folders down to a few levels (node_modules
// not looked through) — every place from which a later git command, the
// user's own included, would take code to run. Paths that do not exist
// are listed all the same, but for those a gitlink makes impossible.
// complete is false when root holds more folders than the walk looks
// through.
func Git(root string) (files, folders []string, complete bool) {
	g := gitPaths{seen: map[string]bool{}}
	g.checkout(root)
	complete = g.nested(root)
	return g.files, g.folders, complete
}

// Blank reports whether the protected git file p is one that may be made,
// empty, where it is missing, so that the sandbox can hold it read-only
// rather than leave a command free to create it: an empty config.worktree
// or info/attributes means what none does. (An empty commondir or .git
// file would break the repository; those stay what no mount can hold.)
func Blank(p string) bool {
	switch filepath.Base(p) {
	case "config.worktree":
		return true
	case "attributes":
		return filepath.Base(filepath.Dir(p)) == "info"
	}
	return false
}

type gitPaths struct {
	files, folders []string
	seen           map[string]bool
}

// checkout adds the repository of the working folder dir (dir/.git).
func (g *gitPaths) checkout(dir string) {
	dotgit := filepath.Join(dir, ".git")
	fi, err := os.Lstat(dotgit)
	switch {
	case err != nil:
		// None yet: git init may make one, and then its configuration
		// and hooks are protected from the next command on.
		g.repo(dotgit)
	case fi.Mode().IsRegular():
		g.add(&g.files, dotgit)
		if gd := gitdir(dotgit); gd != "" {
			g.repo(gd)
		}
	default:
		g.repo(dotgit)
	}
}

// repo adds the repository folder gd: its configuration and hooks, those
// of its submodules and linked worktrees, and of its common folder.
func (g *gitPaths) repo(gd string) {
	if g.seen[gd] {
		return
	}
	g.seen[gd] = true
	for _, f := range []string{"config", "config.worktree", filepath.Join("info", "attributes"), "commondir"} {
		g.add(&g.files, filepath.Join(gd, f))
	}
	g.add(&g.folders, filepath.Join(gd, "hooks"))
	if b, err := os.ReadFile(filepath.Join(gd, "commondir")); err == nil {
		common := strings.TrimSpace(string(b))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gd, common)
		}
		g.repo(filepath.Clean(common))
	}
	if wts, err := os.ReadDir(filepath.Join(gd, "worktrees")); err == nil {
		for _, wt := range wts {
			if wt.IsDir() {
				for _, f := range []string{"config.worktree", "commondir", "gitdir"} {
					g.add(&g.files, filepath.Join(gd, "worktrees", wt.Name(), f))
				}
			}
		}
	}
	g.modules(filepath.Join(gd, "modules"), 0)
}

// modules adds the submodule repositories below dir (a .git/modules
// folder), which nest: .git/modules/a/modules/b.
func (g *gitPaths) modules(dir string, depth int) {
	if depth > nestedDepth {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(sub, "HEAD")); err == nil {
			g.repo(sub)
			continue
		}
		g.modules(sub, depth+1) // a submodule named a/b
	}
}

// nested adds the repositories nested in root's folders, breadth first.
func (g *gitPaths) nested(root string) bool {
	level, seen := []string{root}, 0
	for depth := 0; depth < nestedDepth && len(level) > 0; depth++ {
		var next []string
		for _, dir := range level {
			entries, err := os.ReadDir(dir)
			if err != nil {
				continue
			}
			for _, e := range entries {
				if !e.IsDir() || e.Type()&os.ModeSymlink != 0 {
					continue
				}
				switch e.Name() {
				case ".git", "node_modules", ".orca":
					continue
				}
				if seen++; seen > maxEntries {
					return false
				}
				sub := filepath.Join(dir, e.Name())
				if _, err := os.Lstat(filepath.Join(sub, ".git")); err == nil {
					g.checkout(sub)
				}
				next = append(next, sub)
			}
		}
		level = next
	}
	return true
}

func (g *gitPaths) add(list *[]string, p string) {
	if !slices.Contains(*list, p) {
		*list = append(*list, p)
	}
}

// gitdir returns the repository folder that a .git file names ("gitdir:
// PATH", relative to the file's folder), or "".
func gitdir(file string) string {
	b, err := os.ReadFile(file)
	if err != nil || len(b) > 4096 {
		return ""
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	p, ok := strings.CutPrefix(strings.TrimSpace(string(line)), "gitdir:")
	if !ok {
		return ""
	}
	p = strings.TrimSpace(p)
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(file), p)
	}
	return filepath.Clean(p)
}
