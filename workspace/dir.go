package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// ErrNotRegular is wrapped by the error of Dir.OpenFile for a name that is
// not a regular file: a folder, a symlink, a FIFO, a device or a socket.
var ErrNotRegular = errors.New("not a regular file")

// DirOpener is implemented by a FileSystem that can hold a folder open, so
// that a caller reading many files of one folder pays for resolving the
// folder's path once. Local implements it. Callers that use it fall back
// to FileSystem.Open for a file system that does not.
type DirOpener interface {
	// OpenDir opens the folder name (relative to the root or absolute, as
	// for FileSystem.Open), following symlinks inside the root and refusing,
	// with an error wrapping ErrOutside, those that lead out.
	OpenDir(name string) (Dir, error)
}

// Dir is a folder of the workspace held open. The files OpenFile opens are
// entries of that folder, found from the open folder itself rather than
// from its path: renaming the folder, or swapping a symlink in place of
// it or of one of its parents, after OpenDir returned cannot make OpenFile
// reach anything outside it. A Dir is safe for concurrent use; it must be
// closed.
type Dir interface {
	// Path returns the folder's path relative to the workspace root, as
	// OpenDir resolved it ("." for the root).
	Path() string
	// OpenFile opens the regular file name for reading. name is one path
	// element, an entry of the folder: not "", "." or "..", and without a
	// slash. A symlink is not followed, and neither it nor any other entry
	// that is not a regular file is opened: the error wraps ErrNotRegular
	// and opening never blocks, not even on a FIFO. Errors are
	// *fs.PathError values naming Path()/name.
	OpenFile(name string) (fs.File, error)
	// Close releases the folder. Files opened from it stay usable.
	Close() error
}

// OpenDir implements DirOpener.
func (l *Local) OpenDir(name string) (Dir, error) {
	rel, err := l.Resolve(name)
	if err != nil {
		return nil, err
	}
	return l.openDir(name, rel)
}

// checkEntryName refuses a name that is not a single entry of a folder.
func checkEntryName(dir, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00"+string(filepath.Separator)) {
		return &fs.PathError{Op: "open", Path: joinEntry(dir, name), Err: fmt.Errorf("%w: %q is not a name in the folder", fs.ErrInvalid, name)}
	}
	return nil
}

// joinEntry joins a folder's workspace-relative path and an entry's name
// without cleaning, so that an error names what was asked for.
func joinEntry(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}
