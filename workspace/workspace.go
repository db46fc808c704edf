// Package workspace gives tools a file system confined to one folder.
//
// FileSystem is the interface tools use; Local is the implementation backed
// by an os.Root, so that "..", absolute paths outside the root and symlinks
// that lead out are refused by the operating system, not by string checks
// alone. Every path a tool receives from a model goes through Resolve first,
// and every refusal names the path it refused. A caller that reads many
// files of one folder can hold the folder open through DirOpener (Local
// implements it) and open each file relative to it.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
)

// ErrOutside is wrapped by every error that refuses a path because it leads
// out of the workspace.
var ErrOutside = errors.New("path is outside the workspace")

// ErrProtected is wrapped by the errors of a write guard (WriteGuard) that
// refuses a write.
var ErrProtected = errors.New("the write is refused")

// WalkFunc is called by FileSystem.Walk for every entry below the walked
// folder. path is slash-separated and relative to the workspace root. It may
// be called from several goroutines at once. Returning fs.SkipDir for a
// folder skips it; returning fs.SkipAll or any other error stops the walk
// (the other error is returned by Walk).
type WalkFunc func(path string, d fs.DirEntry) error

// FileSystem is the workspace tools read and write. Every name may be
// relative to the root or absolute (it must then lie inside the root).
// Implementations must be safe for concurrent use.
type FileSystem interface {
	// Root returns the absolute OS path of the workspace root, or "" when
	// the file system is not a local folder (tools that need a real folder,
	// such as Bash, refuse to work then).
	Root() string
	// Resolve returns name as a clean slash-separated path relative to the
	// root ("." for the root itself), or an error wrapping ErrOutside.
	Resolve(name string) (string, error)
	// Open opens a file or folder for reading.
	Open(name string) (fs.File, error)
	// Stat returns information about name, following symlinks inside the root.
	Stat(name string) (fs.FileInfo, error)
	// ReadFile returns the contents of name.
	ReadFile(name string) ([]byte, error)
	// WriteFile replaces the contents of name, creating missing parent
	// folders. The old contents survive a failed write.
	WriteFile(name string, data []byte, perm fs.FileMode) error
	// Walk calls fn for every entry below dir (not for dir itself), folders
	// before their contents, possibly concurrently. Symlinks are reported
	// as entries but not followed.
	Walk(ctx context.Context, dir string, fn WalkFunc) error
	// Close releases the file system.
	Close() error
}

func outside(name, root string) error {
	return fmt.Errorf("%w: %q (workspace root is %s)", ErrOutside, name, root)
}
