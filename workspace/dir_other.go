//go:build !linux

package workspace

import (
	"fmt"
	"io/fs"
	"os"
)

// rootDir is a Dir where no bare descriptors are at hand: an os.Root for
// the folder. A file is checked with Lstat before it is opened, so a
// symlink or a FIFO is refused; but the two steps are not one, and a FIFO
// swapped in between them can make OpenFile block (on Linux it cannot).
type rootDir struct {
	r    *os.Root
	path string
}

// heldRoot has nothing to hold where OpenDir goes through os.Root alone.
type heldRoot struct{}

func (heldRoot) close() {}

func (l *Local) openDir(name, rel string) (Dir, error) {
	r, err := l.root.OpenRoot(rel)
	if err != nil {
		return nil, l.wrap(name, err)
	}
	return &rootDir{r: r, path: rel}, nil
}

func (d *rootDir) Path() string { return d.path }

func (d *rootDir) Close() error { return d.r.Close() }

func (d *rootDir) OpenFile(name string) (fs.File, error) {
	if err := checkEntryName(d.path, name); err != nil {
		return nil, err
	}
	p := joinEntry(d.path, name)
	fi, err := d.r.Lstat(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: unwrapPath(err)}
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: p, Err: fmt.Errorf("%w: it is a %v", ErrNotRegular, fi.Mode().Type())}
	}
	f, err := d.r.Open(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: unwrapPath(err)}
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: p, Err: fmt.Errorf("%w: it changed while it was opened", ErrNotRegular)}
	}
	return f, nil
}

// unwrapPath returns the error inside a *fs.PathError, so that the caller
// can name the path its own way.
func unwrapPath(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}
