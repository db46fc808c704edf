package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/charlievieth/fastwalk"
)

// Local is a FileSystem confined to one folder with os.Root.
type Local struct {
	root   *os.Root
	dir    string // absolute path as given (cleaned)
	real   string // dir with symlinks resolved
	closed atomic.Bool
}

// OpenLocal opens the folder dir as a workspace. The folder must exist.
func OpenLocal(dir string) (*Local, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", dir, err)
	}
	r, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", dir, err)
	}
	return &Local{root: r, dir: abs, real: real}, nil
}

// Root returns the absolute path of the workspace folder.
func (l *Local) Root() string { return l.real }

// Resolve implements FileSystem.
func (l *Local) Resolve(name string) (string, error) {
	if name == "" {
		return "", errors.New("empty path")
	}
	if strings.IndexByte(name, 0) >= 0 {
		return "", fmt.Errorf("path %q contains a NUL byte", name)
	}
	p := filepath.FromSlash(name)
	if filepath.IsAbs(p) {
		p = filepath.Clean(p)
		rel, ok := within(l.real, p)
		if !ok {
			rel, ok = within(l.dir, p)
		}
		if !ok {
			return "", outside(name, l.real)
		}
		return filepath.ToSlash(rel), nil
	}
	p = filepath.Clean(p)
	if p == ".." || strings.HasPrefix(p, ".."+string(filepath.Separator)) {
		return "", outside(name, l.real)
	}
	return filepath.ToSlash(p), nil
}

func within(root, p string) (string, bool) {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// wrap names the path in an os.Root error, and marks escapes (symlinks that
// lead out of the root) as ErrOutside.
func (l *Local) wrap(name string, err error) error {
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), "path escapes from parent") {
		return fmt.Errorf("%w: %q leads out through a symlink (workspace root is %s)", ErrOutside, name, l.real)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: name, Err: pe.Err}
	}
	return err
}

// Open implements FileSystem.
func (l *Local) Open(name string) (fs.File, error) {
	rel, err := l.Resolve(name)
	if err != nil {
		return nil, err
	}
	f, err := l.root.Open(rel)
	if err != nil {
		return nil, l.wrap(name, err)
	}
	return f, nil
}

// Stat implements FileSystem.
func (l *Local) Stat(name string) (fs.FileInfo, error) {
	rel, err := l.Resolve(name)
	if err != nil {
		return nil, err
	}
	fi, err := l.root.Stat(rel)
	return fi, l.wrap(name, err)
}

// ReadFile implements FileSystem.
func (l *Local) ReadFile(name string) ([]byte, error) {
	rel, err := l.Resolve(name)
	if err != nil {
		return nil, err
	}
	b, err := l.root.ReadFile(rel)
	return b, l.wrap(name, err)
}

var tmpCounter atomic.Uint64

// WriteFile implements FileSystem. It writes a temporary file beside name
// and renames it into place, so a failed write (a full disk) leaves the old
// contents intact. An existing file keeps its permissions.
func (l *Local) WriteFile(name string, data []byte, perm fs.FileMode) error {
	rel, err := l.Resolve(name)
	if err != nil {
		return err
	}
	if rel == "." {
		return fmt.Errorf("write %q: is the workspace root", name)
	}
	if dir := path.Dir(rel); dir != "." {
		if err := l.root.MkdirAll(dir, 0o755); err != nil {
			return l.wrap(name, err)
		}
	}
	if fi, err := l.root.Lstat(rel); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// Renaming over a symlink would replace the link with a file; write
		// its target instead (as a shell's "> link" does). The target must
		// lie inside the root.
		real, err := filepath.EvalSymlinks(filepath.Join(l.real, filepath.FromSlash(rel)))
		if err != nil {
			// A dangling link: create its target through the root, which
			// refuses one outside.
			return l.writeInPlace(name, rel, data)
		}
		target, ok := within(l.real, real)
		if !ok {
			return fmt.Errorf("%w: %q leads out through a symlink (workspace root is %s)", ErrOutside, name, l.real)
		}
		rel = filepath.ToSlash(target)
	}
	if fi, err := l.root.Stat(rel); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("write %q: is a directory", name)
		}
		perm = fi.Mode().Perm()
	}
	tmp := fmt.Sprintf("%s.orca-tmp-%d-%d", rel, os.Getpid(), tmpCounter.Add(1))
	f, err := l.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return l.wrap(name, err)
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = l.root.Rename(tmp, rel)
	}
	if werr != nil {
		_ = l.root.Remove(tmp)
		return l.wrap(name, werr)
	}
	return nil
}

func (l *Local) writeInPlace(name, rel string, data []byte) error {
	fi, err := l.root.Stat(rel)
	if err == nil && fi.IsDir() {
		return fmt.Errorf("write %q: is a directory", name)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return l.wrap(name, err)
	}
	f, err := l.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return l.wrap(name, err)
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return l.wrap(name, werr)
}

// Walk implements FileSystem with a parallel walker.
func (l *Local) Walk(ctx context.Context, dir string, fn WalkFunc) error {
	rel, err := l.Resolve(dir)
	if err != nil {
		return err
	}
	// Stat through the root first, so that a folder reached through a
	// symlink that leads out is refused like any other path.
	fi, err := l.root.Stat(rel)
	if err != nil {
		return l.wrap(dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("walk %q: not a directory", dir)
	}
	start := filepath.Join(l.real, filepath.FromSlash(rel))
	if real, err := filepath.EvalSymlinks(start); err == nil {
		start = real
	}
	if _, ok := within(l.real, start); !ok {
		return outside(dir, l.real)
	}
	prefix := len(l.real) + 1
	conf := fastwalk.Config{Follow: false}
	err = fastwalk.Walk(&conf, start, func(p string, d fs.DirEntry, err error) error {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if err != nil {
			// An unreadable folder is skipped, not fatal to the walk.
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if p == start {
			return nil
		}
		if len(p) < prefix {
			return nil
		}
		return fn(filepath.ToSlash(p[prefix:]), d)
	})
	if errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

// Close releases the root.
func (l *Local) Close() error {
	if l.closed.Swap(true) {
		return nil
	}
	return l.root.Close()
}

// Closed reports whether Close has been called.
func (l *Local) Closed() bool { return l.closed.Load() }
