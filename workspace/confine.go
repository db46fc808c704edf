package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Confine returns the absolute path of rel (relative, slash-separated) in
// the folder root, for a program's own files that something other than a
// Local writes: a database, a log, a folder of transcripts. The parts of
// rel that exist are followed as the operating system would follow them,
// and a symlink among them that leads out of root (or nowhere) is refused
// with an error wrapping ErrOutside: a cloned repository's .orca -> ~/x
// does not make orca write in ~/x. The path returned has its links
// resolved; the parts that do not exist yet are the caller's to create,
// as folders and files, not links.
func Confine(root, rel string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("workspace %q: %w", root, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("workspace %q: %w", root, err)
	}
	clean := filepath.Clean(filepath.FromSlash(rel))
	if rel == "" || filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", outside(rel, real)
	}
	cur := real
	parts := strings.Split(clean, string(filepath.Separator))
	hops := 0
	for i, part := range parts {
		next, exists, err := follow(cur, part, &hops)
		if err != nil {
			return "", fmt.Errorf("%q: %w", rel, err)
		}
		if !exists {
			next = filepath.Join(append([]string{next}, parts[i+1:]...)...)
		}
		if _, ok := within(real, next); !ok {
			return "", fmt.Errorf("%w: %q leads out through a symlink, to %s (workspace root is %s)", ErrOutside, filepath.ToSlash(filepath.Join(parts[:i+1]...)), next, real)
		}
		if !exists {
			return next, nil
		}
		cur = next
	}
	return cur, nil
}

// follow returns the path part names in the folder dir (a path without
// links): part itself, its parent for "..", where it leads for a link
// (followed as the operating system follows it, link after link), and
// whether that exists. What does not exist is joined as it stands.
func follow(dir, part string, hops *int) (string, bool, error) {
	switch part {
	case ".":
		return dir, true, nil
	case "..":
		return filepath.Dir(dir), true, nil
	}
	next := filepath.Join(dir, part)
	fi, err := os.Lstat(next)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return next, false, nil
	case err != nil:
		return "", false, err
	case fi.Mode()&fs.ModeSymlink == 0:
		return next, true, nil
	}
	if *hops++; *hops > maxLinks {
		return "", false, fmt.Errorf("too many links (%d) to follow", maxLinks)
	}
	dest, err := os.Readlink(next)
	if err != nil {
		return "", false, err
	}
	at := dir
	if filepath.IsAbs(dest) {
		at = string(filepath.Separator)
	}
	steps := strings.Split(filepath.ToSlash(dest), "/")
	for i, step := range steps {
		if step == "" {
			continue
		}
		var exists bool
		if at, exists, err = follow(at, filepath.FromSlash(step), hops); err != nil || !exists {
			return filepath.Join(append([]string{at}, steps[i+1:]...)...), false, err
		}
	}
	return at, true, nil
}
