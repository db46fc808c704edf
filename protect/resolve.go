package protect

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// A Target is a path outside protected state that decides what runs all
// the same — where a link in protected state leads, or a script that a
// trusted command runs — and is protected as protected state is.
type Target struct {
	// Path is absolute and cleaned, as the link or the command names it:
	// links in it are not resolved, so that a link on the way that could
	// be replaced is seen as one (package sandbox refuses commands then).
	Path string
	// By says what leads to it, for messages: "the link
	// /ws/.claude/settings.local.json", "the command of a hook".
	By string
}

// Limits of a walk through protected state: a folder of more entries, or
// nested deeper, is not looked through further (Resolve says so).
const (
	maxEntries = 20000
	maxDepth   = 32
)

// Resolve follows every symbolic link at and below the protected paths
// given (absolute; folders are walked) and below the folders they lead
// to, and returns where they lead, each target once, in the order found.
// A target inside one of paths is protected already and is left out, but
// for the links in it. skip names folders not to walk (orca's records:
// OrcaData). complete is false when the walk stopped at its limits.
func Resolve(paths []string, skip func(path string) bool) (targets []Target, complete bool) {
	r := resolver{roots: clean(paths), skip: skip, seen: map[string]bool{}, complete: true}
	for _, p := range r.roots {
		r.visit(p, 0)
	}
	return r.targets, r.complete
}

type resolver struct {
	roots    []string
	skip     func(string) bool
	seen     map[string]bool // real folders walked, targets added
	targets  []Target
	entries  int
	complete bool
}

func (r *resolver) visit(p string, depth int) {
	if r.skip != nil && r.skip(p) {
		return
	}
	if r.entries++; r.entries > maxEntries || depth > maxDepth {
		r.complete = false
		return
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if r.seen["l:"+p] {
			return // a loop
		}
		r.seen["l:"+p] = true
		dest, err := os.Readlink(p)
		if err != nil {
			return
		}
		// The kernel resolves a relative link from the folder it is in,
		// as that folder really is.
		dir := filepath.Dir(p)
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		to := dest
		if !filepath.IsAbs(to) {
			to = filepath.Join(dir, to)
		}
		to = filepath.Clean(to)
		if !r.inRoots(to) && !r.seen["t:"+to] {
			r.seen["t:"+to] = true
			r.targets = append(r.targets, Target{Path: to, By: "the link " + p})
		}
		r.visit(to, depth+1)
		return
	}
	if !fi.IsDir() {
		return
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil || r.seen["d:"+real] {
		return
	}
	r.seen["d:"+real] = true
	entries, err := os.ReadDir(p)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink == 0 && !e.IsDir() {
			continue // a plain file leads nowhere
		}
		r.visit(filepath.Join(p, e.Name()), depth+1)
	}
}

// inRoots reports whether p lies in one of the protected paths, as
// written or as it really is.
func (r *resolver) inRoots(p string) bool {
	real, err := filepath.EvalSymlinks(p)
	for _, root := range r.roots {
		if Within(root, p) || err == nil && Within(root, real) {
			return true
		}
	}
	return false
}

// Within reports whether the absolute path p is root or lies below it.
func Within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && filepath.IsLocal(rel) || rel == "."
}

func clean(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		p = filepath.Clean(p)
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// Skip returns a skip function for Resolve that skips the named folders
// of the folder dir (OrcaData in .orca).
func Skip(dir string, names ...string) func(string) bool {
	return func(p string) bool {
		rel, err := filepath.Rel(dir, p)
		return err == nil && slices.Contains(names, rel)
	}
}
