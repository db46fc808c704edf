package workspace

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// fdDir is a Dir on Linux: the folder's descriptor, and one openat(2) per
// file relative to it, with O_NOFOLLOW so a symlink is refused rather than
// followed and O_NONBLOCK so that opening a FIFO cannot block. The files
// are bare descriptors rather than *os.File: an os.File costs three more
// system calls (fcntl, and epoll registration that fails for a regular
// file) and a cleanup, which for a search of thousands of small files is
// as much as the reading.
type fdDir struct {
	f    *os.File // the open folder; its descriptor is used under Control
	rc   syscall.RawConn
	path string
}

// heldRoot is the workspace root as an open descriptor, opened on first
// use, from which OpenDir resolves a folder's whole path in one openat2(2).
type heldRoot struct {
	once  sync.Once
	f     *os.File // nil if it could not be opened
	rc    syscall.RawConn
	noAt2 atomic.Bool // openat2 is missing or forbidden here
}

func (h *heldRoot) close() {
	h.once.Do(func() {}) // none from now on
	if h.f != nil {
		h.f.Close()
	}
}

// beneath opens the folder rel in one openat2(2) call with RESOLVE_BENEATH,
// for which the kernel refuses to resolve a path anywhere but below the
// root, whatever the path or its symlinks say and however they are swapped
// meanwhile. It returns nil whenever that call does not simply succeed:
// the caller then asks os.Root, whose answer (the error, or a folder
// opened by a path openat2 refused, such as through a link that os.Root
// accepts) is the one that counts. So openat2 only makes the common case
// fast; it never changes what is opened or refused.
func (l *Local) beneath(rel string) *os.File {
	h := &l.held
	h.once.Do(func() {
		f, err := l.root.Open(".")
		if err != nil {
			return
		}
		rc, err := f.SyscallConn()
		if err != nil {
			f.Close()
			return
		}
		h.f, h.rc = f, rc
	})
	if h.f == nil || h.noAt2.Load() {
		return nil
	}
	fd, err := -1, error(nil)
	how := unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	}
	cerr := h.rc.Control(func(rootfd uintptr) {
		for {
			fd, err = unix.Openat2(int(rootfd), rel, &how)
			if err != unix.EINTR {
				return
			}
		}
	})
	if cerr == nil && (err == unix.ENOSYS || err == unix.EPERM) {
		h.noAt2.Store(true) // an old kernel, or a seccomp filter
	}
	if cerr != nil || err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), rel)
}

func (l *Local) openDir(name, rel string) (Dir, error) {
	f := l.beneath(rel)
	if f == nil {
		var err error
		if f, err = l.root.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY, 0); err != nil {
			return nil, l.wrap(name, err)
		}
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open %q: %w", name, err)
	}
	return &fdDir{f: f, rc: rc, path: rel}, nil
}

func (d *fdDir) Path() string { return d.path }

func (d *fdDir) Close() error { return d.f.Close() }

func (d *fdDir) OpenFile(name string) (fs.File, error) {
	if err := checkEntryName(d.path, name); err != nil {
		return nil, err
	}
	// The file is made first so that the function Control runs captures
	// it alone: one allocation less per file for a search of thousands.
	f := &fdFile{fd: -1, dir: d.path, name: name}
	cerr := d.rc.Control(func(dirfd uintptr) {
		for {
			f.fd, f.err = syscall.Openat(int(dirfd), f.name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOCTTY, 0)
			if f.err != syscall.EINTR {
				return
			}
		}
	})
	err := f.err
	f.err = nil
	switch {
	case cerr != nil:
		return nil, &fs.PathError{Op: "open", Path: f.path(), Err: cerr}
	case err == syscall.ELOOP:
		return nil, &fs.PathError{Op: "open", Path: f.path(), Err: fmt.Errorf("%w: it is a symbolic link", ErrNotRegular)}
	case err != nil:
		return nil, &fs.PathError{Op: "open", Path: f.path(), Err: err}
	}
	if err := syscall.Fstat(f.fd, &f.st); err != nil {
		syscall.Close(f.fd)
		return nil, &fs.PathError{Op: "stat", Path: f.path(), Err: err}
	}
	if f.st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(f.fd)
		return nil, &fs.PathError{Op: "open", Path: f.path(), Err: fmt.Errorf("%w: it is a %v", ErrNotRegular, fileMode(&f.st).Type())}
	}
	// O_NONBLOCK has no effect on reading a regular file; it stays set.
	return f, nil
}

// fdFile is a regular file opened by fdDir. It is not safe for concurrent
// use, as an fs.File need not be.
type fdFile struct {
	fd   int    // -1 once closed
	dir  string // the fdDir's Path
	name string
	err  error          // of the openat, while OpenFile runs
	st   syscall.Stat_t // at open
	off  int64          // bytes read
}

// path names the file in errors; it is joined only when one needs it.
func (f *fdFile) path() string { return joinEntry(f.dir, f.name) }

// Read implements io.Reader. A read that comes back short once the size
// the file had when it was opened is reached ends the file, with io.EOF
// beside the data, which saves the read that would only say so; a file
// whose size is 0 (as /proc's files say they are) is read to a zero read.
func (f *fdFile) Read(p []byte) (int, error) {
	if f.fd < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.path(), Err: fs.ErrClosed}
	}
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := syscall.Read(f.fd, p)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, &fs.PathError{Op: "read", Path: f.path(), Err: err}
		}
		if n == 0 {
			return 0, io.EOF
		}
		f.off += int64(n)
		if n < len(p) && f.st.Size > 0 && f.off >= f.st.Size {
			return n, io.EOF
		}
		return n, nil
	}
}

// Stat returns what the file was when it was opened.
func (f *fdFile) Stat() (fs.FileInfo, error) {
	if f.fd < 0 {
		return nil, &fs.PathError{Op: "stat", Path: f.path(), Err: fs.ErrClosed}
	}
	return &fdInfo{name: f.name, st: f.st}, nil
}

func (f *fdFile) Close() error {
	if f.fd < 0 {
		return &fs.PathError{Op: "close", Path: f.path(), Err: fs.ErrClosed}
	}
	err := syscall.Close(f.fd)
	f.fd = -1
	if err != nil {
		return &fs.PathError{Op: "close", Path: f.path(), Err: err}
	}
	return nil
}

// fileMode converts a stat(2) mode as os.Stat does.
func fileMode(st *syscall.Stat_t) fs.FileMode {
	m := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		m |= fs.ModeDir
	case syscall.S_IFLNK:
		m |= fs.ModeSymlink
	case syscall.S_IFIFO:
		m |= fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		m |= fs.ModeSocket
	case syscall.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		m |= fs.ModeDevice
	}
	if st.Mode&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if st.Mode&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if st.Mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// fdInfo is an fdFile's fs.FileInfo, as of its opening.
type fdInfo struct {
	name string
	st   syscall.Stat_t
}

func (i *fdInfo) Name() string       { return i.name }
func (i *fdInfo) Size() int64        { return i.st.Size }
func (i *fdInfo) Mode() fs.FileMode  { return fileMode(&i.st) }
func (i *fdInfo) ModTime() time.Time { return time.Unix(i.st.Mtim.Unix()) }
func (i *fdInfo) IsDir() bool        { return false }
func (i *fdInfo) Sys() any           { return &i.st }
