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
	"syscall"

	"github.com/charlievieth/fastwalk"
)

// Local is a FileSystem confined to one folder with os.Root.
type Local struct {
	root   *os.Root
	dir    string // absolute path as given (cleaned)
	real   string // dir with symlinks resolved
	guard  func(rel string) error
	closed atomic.Bool
	held   heldRoot // the root as a descriptor, for OpenDir
}

// LocalOption configures OpenLocal.
type LocalOption func(*Local)

// WriteGuard makes every WriteFile ask guard about the path the write
// really reaches — workspace-relative and slash-separated, its symbolic
// links followed at the moment of writing, from the folder the write has
// open — and refuse the write with guard's error. The check and the write
// are one operation: a link swapped in between cannot lead the write
// elsewhere (on Linux; elsewhere the check resolves the path by name).
func WriteGuard(guard func(rel string) error) LocalOption {
	return func(l *Local) { l.guard = guard }
}

// OpenLocal opens the folder dir as a workspace. The folder must exist.
func OpenLocal(dir string, opts ...LocalOption) (*Local, error) {
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
	l := &Local{root: r, dir: abs, real: real}
	for _, o := range opts {
		o(l)
	}
	return l, nil
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
		op := pe.Op
		if o, ok := rootOps[op]; ok {
			op = o
		}
		return &fs.PathError{Op: op, Path: name, Err: pe.Err}
	}
	return err
}

// rootOps are os.Root's names of the calls it makes ("statat"), by the
// name of what the caller asked for: errors say what the caller did.
var rootOps = map[string]string{
	"statat": "stat", "lstatat": "lstat", "openat": "open", "mkdirat": "mkdir", "removeat": "remove",
	"renameat": "rename", "readlinkat": "readlink", "linkat": "link", "symlinkat": "symlink",
	"chmodat": "chmod", "chownat": "chown", "lchownat": "lchown", "chtimesat": "chtimes",
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
// contents intact. An existing file keeps its permissions. A symlink is
// written through, as a shell's "> link" does: its target (which must lie
// inside the root) is replaced, and a dangling link's target created.
//
// The folder the file goes into is opened first and everything after is
// done relative to it: where the write lands is the folder's real place at
// that moment, which the WriteGuard is asked about.
func (l *Local) WriteFile(name string, data []byte, perm fs.FileMode) error {
	if strings.HasSuffix(name, "/") || strings.HasSuffix(name, string(filepath.Separator)) {
		// As the system's open refuses it: not a file of that name
		// without the slash.
		return &fs.PathError{Op: "write", Path: name, Err: errors.New("the name ends in a slash, so it names a folder, not a file")}
	}
	rel, err := l.Resolve(name)
	if err != nil {
		return err
	}
	for hops := 0; ; hops++ {
		if rel == "." {
			return fmt.Errorf("write %q: is the workspace root", name)
		}
		if hops > maxLinks {
			return &fs.PathError{Op: "write", Path: name, Err: syscall.ELOOP}
		}
		dirRel, base := path.Split(rel)
		dirRel = strings.TrimSuffix(dirRel, "/")
		if dirRel == "" {
			dirRel = "."
		} else if err := l.root.MkdirAll(dirRel, 0o755); err != nil {
			return l.wrap(name, err)
		}
		dir, err := l.root.OpenRoot(dirRel)
		if err != nil {
			return l.wrap(name, err)
		}
		next, err := l.writeIn(dir, dirRel, name, base, data, perm)
		dir.Close()
		if err != nil || next == "" {
			return err
		}
		rel = next // a link: write where it leads
	}
}

// maxLinks bounds the links a write follows (the kernel's ELOOP limit).
const maxLinks = 40

// writeIn writes base in the open folder dir (opened by that name), or returns the
// workspace-relative path a symlink named base leads to.
func (l *Local) writeIn(dir *os.Root, opened, name, base string, data []byte, perm fs.FileMode) (link string, err error) {
	dirAbs, err := realPath(dir, filepath.Join(l.real, filepath.FromSlash(opened)))
	if err != nil {
		return "", fmt.Errorf("write %q: %w", name, err)
	}
	dirRel, ok := within(l.real, dirAbs)
	if !ok {
		return "", fmt.Errorf("%w: %q leads out through a symlink (workspace root is %s)", ErrOutside, name, l.real)
	}
	dirRel = filepath.ToSlash(dirRel)
	fi, err := dir.Lstat(base)
	switch {
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		dest, err := dir.Readlink(base)
		if err != nil {
			return "", l.wrap(name, err)
		}
		next := path.Join(dirRel, filepath.ToSlash(dest))
		if filepath.IsAbs(dest) {
			r, ok := within(l.real, filepath.Clean(dest))
			if !ok {
				return "", fmt.Errorf("%w: %q leads out through a symlink (workspace root is %s)", ErrOutside, name, l.real)
			}
			next = filepath.ToSlash(r)
		}
		if next == ".." || strings.HasPrefix(next, "../") {
			return "", fmt.Errorf("%w: %q leads out through a symlink (workspace root is %s)", ErrOutside, name, l.real)
		}
		return next, nil
	case err == nil && fi.IsDir():
		return "", fmt.Errorf("write %q: is a directory", name)
	case err == nil:
		perm = fi.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return "", l.wrap(name, err)
	}
	if l.guard != nil {
		if err := l.guard(path.Join(dirRel, base)); err != nil {
			return "", err
		}
	}
	tmp := fmt.Sprintf("%s.orca-tmp-%d-%d", base, os.Getpid(), tmpCounter.Add(1))
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return "", l.wrap(name, err)
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = dir.Rename(tmp, base)
	}
	if werr != nil {
		_ = dir.Remove(tmp)
		return "", l.wrap(name, werr)
	}
	return "", nil
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
	// fn runs on the walk's goroutines: a panic in it would end the
	// process. It ends the walk instead, and goes on on the caller's
	// goroutine, where a tool's panic becomes its call's error.
	var panicked atomic.Pointer[any]
	call := func(p string, d fs.DirEntry) (err error) {
		defer func() {
			if v := recover(); v != nil {
				panicked.CompareAndSwap(nil, &v)
				err = fs.SkipAll
			}
		}()
		return fn(p, d)
	}
	defer func() {
		if p := panicked.Load(); p != nil {
			panic(*p)
		}
	}()
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
		return call(filepath.ToSlash(p[prefix:]), d)
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
	l.held.close()
	return l.root.Close()
}

// Closed reports whether Close has been called.
func (l *Local) Closed() bool { return l.closed.Load() }
