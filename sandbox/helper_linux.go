package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// init makes any program that links this package able to be its own
// sandboxed child: started by helperCommand with the spec in helperEnv,
// it sets the sandbox up, runs the command and exits with its status,
// before main runs. In every other start it does nothing.
func init() {
	raw, ok := os.LookupEnv(helperEnv)
	if !ok {
		return
	}
	os.Exit(child(raw))
}

// child is the sandboxed command's parent: PID 1 of its namespace, so
// that when it exits every process the command started is killed.
func child(raw string) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "orca sandbox: "+format+"\n", args...)
		return 126
	}
	// The status pipe is this process's alone: the command may not write
	// its own verdict on it.
	syscall.CloseOnExec(statusFD)
	var s spec
	if err := json.Unmarshal([]byte(raw), &s); err != nil || len(s.Argv) == 0 {
		return fail("bad spec: %v", err)
	}
	if !s.Open {
		// Nothing mounted here may reach orca's own namespace.
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return fail("private mounts: %v", err)
		}
		for _, p := range s.Reserved {
			// A link there could lead the command (and orca) to a folder
			// it may write: orca's state must be a real folder.
			if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				return fail("%s is a symbolic link; it must be a real folder (remove the link): commands are not run while it is one", p)
			}
			// Made before the walls go up, so that the command finds it
			// read-only rather than free to create.
			if _, err := os.Stat(filepath.Dir(p)); err == nil {
				if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
					return fail("reserve %s: %v", p, err)
				}
			}
		}
		protected := slices.Concat(s.ReadOnly, s.Reserved)
		if err := pin(s.Writable, protected); err != nil {
			return fail("%v", err)
		}
		for _, p := range protected {
			if err := bindReadOnly(p); err != nil {
				return fail("read-only %s: %v", p, err)
			}
		}
		for _, p := range s.Hidden {
			if err := hide(p); err != nil {
				return fail("hide %s: %v", p, err)
			}
		}
	}
	// A /proc of the command's own PID namespace: it sees (and signals)
	// only what it started. Best effort: the namespace is what counts.
	_ = unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	if !s.Network {
		if err := loopbackUp(); err != nil {
			return fail("loopback: %v", err)
		}
	}
	if !s.Open {
		writable := landlock.RWDirs(s.Writable...).WithRefer().IgnoreIfMissing()
		devices := landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx").IgnoreIfMissing()
		shared := landlock.RWDirs("/dev/pts", "/dev/shm").IgnoreIfMissing()
		if err := landlock.V7.BestEffort().RestrictPaths(landlock.RODirs("/"), writable, devices, shared); err != nil {
			return fail("landlock: %v", err)
		}
	}

	// This process stays PID 1 of the namespace, the command its child:
	// signals the command sends itself ($$) work as they do outside, and
	// when this process exits every process the command started is
	// killed.
	cmd := exec.Command(s.Argv[0], s.Argv[1:]...)
	cmd.Dir, cmd.Env = s.Dir, s.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	if err := cmd.Start(); err != nil {
		return fail("%v", err)
	}
	go func() {
		for sig := range sigs {
			cmd.Process.Signal(sig)
		}
	}()
	cmd.Wait()
	// How the command ended, exactly, for Cmd.Status: PID 1 cannot die
	// of a signal to pass it on.
	status := os.NewFile(statusFD, "status")
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		fmt.Fprintf(status, "signal %d\n", int(ws.Signal()))
		return 128 + int(ws.Signal())
	}
	fmt.Fprintf(status, "exit %d\n", ws.ExitStatus())
	return ws.ExitStatus()
}

// pin makes each Writable folder, and every folder between one and a
// protected path below it, a mount point of its own: the kernel refuses
// to rename or remove a mount point, so a protected path cannot be moved
// aside with its folder (mv .git .old) and replaced by one the command
// writes.
func pin(writable, protected []string) error {
	done := map[string]bool{}
	bind := func(dir string) error {
		if done[dir] {
			return nil
		}
		done[dir] = true
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() {
			return nil // nothing there to move aside
		}
		if err := unix.Mount(dir, dir, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("pin %s: %w", dir, err)
		}
		return nil
	}
	for _, w := range writable {
		if err := bind(w); err != nil {
			return err
		}
	}
	for _, p := range protected {
		for _, w := range writable {
			rel, err := filepath.Rel(w, filepath.Dir(p))
			if err != nil || rel == "." || !filepath.IsLocal(rel) {
				continue
			}
			dir := w
			for _, part := range strings.Split(rel, string(filepath.Separator)) {
				dir = filepath.Join(dir, part)
				if err := bind(dir); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// bindReadOnly makes p read-only in this mount namespace. A path that does
// not exist is left alone (there is nothing to protect yet).
func bindReadOnly(p string) error {
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	// A remount must keep the flags the kernel locked on the mount
	// below (a user namespace may not clear them).
	return unix.Mount("", p, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|lockedFlags(p), "")
}

func lockedFlags(p string) uintptr {
	var st unix.Statfs_t
	if unix.Statfs(p, &st) != nil {
		return 0
	}
	var f uintptr
	for _, m := range []struct{ st, ms int64 }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if st.Flags&m.st != 0 {
			f |= uintptr(m.ms)
		}
	}
	return f
}

// hide covers p: a folder with an empty read-only one, a file with an
// empty file.
func hide(p string) error {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.IsDir():
		return unix.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0555")
	}
	return unix.Mount("/dev/null", p, "", unix.MS_BIND, "")
}

// loopbackUp brings up the loopback interface of a new network
// namespace, which starts down: servers a command starts for itself (a
// test's) still work.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
