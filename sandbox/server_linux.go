package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/orca-agent/orca/protect"
)

// init makes any program that links this package able to be a sandbox
// server: started by startServer with the spec in helperEnv, it sets the
// walls up and serves commands until it is stopped, before main runs. In
// every other start it does nothing.
func init() {
	raw, ok := os.LookupEnv(helperEnv)
	if !ok {
		return
	}
	os.Exit(serve(raw))
}

// idleExit is how long a server without commands waits for one before it
// ends.
const idleExit = time.Minute

// serve is the server: PID 1 of its namespace (so that when it ends,
// every process its commands started is killed), with the walls of its
// spec up, starting each command it is handed.
func serve(raw string) int {
	// The control socket is the server's alone: no command inherits it.
	syscall.CloseOnExec(ctlFD)
	// Nor may a command look inside the server (ptrace, /proc/1/mem): its
	// other threads are not restricted.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	reply := func(msg string) { unix.Sendmsg(ctlFD, []byte(msg), nil, nil, 0) }
	var s spec
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		reply("error: bad spec: " + err.Error())
		return 126
	}
	w := &walls{spec: s, done: map[string]bool{}}
	if err := w.setup(); err != nil {
		reply(replyOf(err))
		return 126
	}
	rp := newReaper()
	l, err := startLauncher(s, rp)
	if err != nil {
		reply("error: " + err.Error())
		return 126
	}
	reply("ready")

	var mu sync.Mutex
	active, closed, last := 0, false, time.Now()
	end := func() { // with mu held: a server that is done ends
		if active == 0 && closed {
			os.Exit(0)
		}
	}
	go func() {
		for range time.Tick(time.Second) {
			mu.Lock()
			if active == 0 && time.Since(last) > idleExit {
				os.Exit(0)
			}
			mu.Unlock()
		}
	}()
	buf, oob := make([]byte, 16), make([]byte, unix.CmsgSpace(4*4))
	for {
		// Close-on-exec: a command forked while another's streams are
		// here must not inherit them (it would hold the other's pipes
		// open, and could read them).
		n, oobn, _, _, err := unix.Recvmsg(ctlFD, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			mu.Lock()
			closed = true
			end()
			mu.Unlock()
			select {} // the last command to end ends the server
		}
		fds := rights(oob[:oobn])
		if len(fds) != 4 {
			for _, fd := range fds {
				unix.Close(fd)
			}
			continue
		}
		mu.Lock()
		active++
		mu.Unlock()
		go func() {
			handle(w, l, rp, fds)
			mu.Lock()
			active--
			last = time.Now()
			end()
			mu.Unlock()
		}()
	}
}

// replyOf is how the server says err: "refused: …" for a refusal (see
// refusal), "error: …" for the rest.
func replyOf(err error) string {
	var r refusal
	if errors.As(err, &r) {
		return "refused: " + r.msg
	}
	return "error: " + err.Error()
}

// rights returns the file descriptors of a control message.
func rights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if fs, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, fs...)
		}
	}
	return fds
}

// handle runs one command: fds are its standard streams and its socket.
func handle(w *walls, l *launcher, rp *reaper, fds []int) {
	sock := os.NewFile(uintptr(fds[3]), "command")
	defer sock.Close()
	r := bufio.NewReader(sock)
	line, err := r.ReadBytes('\n')
	var req request
	if err == nil {
		err = json.Unmarshal(line, &req)
	}
	if err == nil && len(req.Argv) == 0 {
		err = errors.New("no command")
	}
	if err == nil {
		err = w.refresh()
	}
	var pid int
	var status <-chan syscall.WaitStatus
	if err == nil {
		pid, status, err = l.start(req, fds[:3])
	}
	for _, fd := range fds[:3] {
		unix.Close(fd) // the command has its own
	}
	if err != nil {
		fmt.Fprintf(sock, "%s\n", replyOf(err))
		return
	}
	io.WriteString(sock, "started\n")
	go func() {
		// "kill", or orca gone: the command's namespace goes.
		r.ReadString('\n')
		unix.Kill(pid, unix.SIGKILL)
	}()
	ws := <-status
	if ws.Signaled() {
		fmt.Fprintf(sock, "signal %d\n", int(ws.Signal()))
		return
	}
	fmt.Fprintf(sock, "exit %d\n", ws.ExitStatus())
}

// initScript is PID 1 of each command's own PID namespace: it runs the
// command as its child — so that the command's signals to itself work as
// they do outside — waits for it and exits as it did (128 plus the signal
// for one a signal ended). When it exits, every process the command
// started is killed. The command gets the shell's standard input through
// fd 3: sh gives an asynchronous command /dev/null as its input before
// its redirections, so `<&0` alone would hand it /dev/null (and a
// long-lived command that reads its input, an MCP server, nothing).
const initScript = `exec 3<&0; "$@" <&3 3<&- & exec 3<&-; wait $!`

// launcher starts the commands, from one OS thread that Landlock
// restricts: the commands inherit its restriction, and the server's other
// threads stay free to add mounts (walls.refresh).
type launcher struct{ reqs chan launch }

type launch struct {
	req   request
	files []int
	res   chan launched
}

type launched struct {
	pid    int
	status <-chan syscall.WaitStatus
	err    error
}

func startLauncher(s spec, rp *reaper) (*launcher, error) {
	fd, flags := -1, uint32(0)
	if !s.Open {
		writable := landlock.RWDirs(s.Writable...).WithRefer().IgnoreIfMissing()
		devices := landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx").IgnoreIfMissing()
		shared := landlock.RWDirs("/dev/pts", "/dev/shm").IgnoreIfMissing()
		var err error
		// The file system only: the network is the network namespace's.
		fsOnly := landlock.Config{HandledAccessFS: landlock.V7.HandledAccessFS}.BestEffort()
		if fd, flags, err = fsOnly.NewRulesetFD(landlock.RODirs("/"), writable, devices, shared); err != nil {
			return nil, err
		}
	}
	l := &launcher{reqs: make(chan launch)}
	ready := make(chan error, 1)
	go func() {
		// Never unlocked: the thread stays restricted, and runs nothing
		// but this goroutine.
		runtime.LockOSThread()
		if fd >= 0 {
			err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
			if err == nil {
				err = llsys.LandlockRestrictSelf(fd, flags)
			}
			unix.Close(fd)
			if err != nil {
				ready <- fmt.Errorf("landlock: %w", err)
				return
			}
		}
		if err := dropCapabilities(); err != nil {
			ready <- fmt.Errorf("capabilities: %w", err)
			return
		}
		if !s.Open && !s.UnixSockets {
			if err := restrictSockets(); err != nil {
				ready <- fmt.Errorf("seccomp: %w", err)
				return
			}
		}
		ready <- nil
		for x := range l.reqs {
			argv := append([]string{"/bin/sh", "-c", initScript, "orca-sandbox"}, x.req.Argv...)
			attr := &syscall.ProcAttr{Dir: x.req.Dir, Env: x.req.Env, Files: []uintptr{uintptr(x.files[0]), uintptr(x.files[1]), uintptr(x.files[2])},
				Sys: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL, Cloneflags: syscall.CLONE_NEWPID}}
			var res launched
			rp.mu.Lock() // the reaper must find the command registered
			res.pid, res.err = syscall.ForkExec(argv[0], argv, attr)
			if res.err == nil {
				ch := make(chan syscall.WaitStatus, 1)
				rp.waiting[res.pid] = ch
				res.status = ch
			}
			rp.mu.Unlock()
			x.res <- res
		}
	}()
	return l, <-ready
}

func (l *launcher) start(req request, files []int) (int, <-chan syscall.WaitStatus, error) {
	res := make(chan launched, 1)
	l.reqs <- launch{req: req, files: files, res: res}
	r := <-res
	return r.pid, r.status, r.err
}

// reaper reaps every child of the server — its commands and the orphans
// that come to PID 1 — and hands the commands' statuses on.
type reaper struct {
	mu      sync.Mutex
	waiting map[int]chan syscall.WaitStatus
}

func newReaper() *reaper {
	rp := &reaper{waiting: map[int]chan syscall.WaitStatus{}}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGCHLD)
	go func() {
		for range sigs {
			for {
				var ws syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
				rp.mu.Lock()
				if ch, ok := rp.waiting[pid]; ok {
					ch <- ws
					delete(rp.waiting, pid)
				}
				rp.mu.Unlock()
			}
		}
	}()
	return rp
}

// walls are the mounts of a spec: set up once, and completed before each
// command for protected paths that appeared since (a .git made by git
// init).
type walls struct {
	spec
	mu    sync.Mutex
	done  map[string]bool // the paths mounted
	blank []string        // git files made empty where missing (protect.Blank)
}

func (w *walls) setup() error {
	// A /proc of the server's PID namespace: commands see (and signal)
	// only the processes of this server's commands.
	defer unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	if !w.Network {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("loopback: %v", err)
		}
	}
	if w.Open {
		return nil
	}
	// Nothing mounted here may reach orca's own namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("private mounts: %v", err)
	}
	// Shared memory of the server's own: what commands leave there
	// neither reaches the host nor outlives the server.
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
			return fmt.Errorf("a private /dev/shm: %v", err)
		}
	}
	for _, repo := range w.Repos {
		files, folders, _ := protect.Git(repo)
		w.ReadOnly = append(w.ReadOnly, files...)
		w.Reserved = append(w.Reserved, folders...)
		for _, f := range files {
			if protect.Blank(f) {
				w.blank = append(w.blank, f)
			}
		}
	}
	return w.refresh()
}

// refusal is an error of protection: the command is refused (ErrRefused),
// not the sandbox unavailable.
type refusal struct{ msg string }

func (r refusal) Error() string { return r.msg }

func refuse(format string, args ...any) error { return refusal{fmt.Sprintf(format, args...)} }

// protectedPaths are the paths the walls keep read-only.
func (w *walls) protectedPaths() []string {
	ps := slices.Concat(w.ReadOnly, w.Reserved)
	for _, t := range w.Targets {
		ps = append(ps, t.Path)
	}
	return ps
}

// writable returns the Writable folder that p lies in — the innermost —
// or "".
func (w *walls) writable(p string) string {
	in := ""
	for _, d := range w.Writable {
		if protect.Within(d, p) && len(d) > len(in) {
			in = d
		}
	}
	return in
}

// held reports whether the folder dir is one a command cannot change: in
// no Writable folder, or in a protected one.
func (w *walls) held(dir string) bool {
	if w.writable(dir) == "" {
		return true
	}
	for _, p := range w.protectedPaths() {
		if protect.Within(p, dir) {
			return true
		}
	}
	return false
}

// check refuses commands while a command could change where a protected
// path leads: a link on the way to it in a folder commands may write,
// which one could replace (it is the link that decides, not where it
// leads today); or a target that does not exist where one could create
// it.
func (w *walls) check() error {
	for _, p := range w.protectedPaths() {
		base := w.writable(p)
		if base == "" || base == p {
			continue
		}
		rel, err := filepath.Rel(base, p)
		if err != nil {
			continue
		}
		cur := base
		for _, part := range strings.Split(rel, string(filepath.Separator)) {
			next := filepath.Join(cur, part)
			fi, err := os.Lstat(next)
			if err != nil {
				break // the rest does not exist (yet)
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				if !w.held(cur) {
					dest, _ := os.Readlink(next)
					if next == p {
						return refuse("%s, which commands may not change, is a symbolic link (to %s) in a folder they may write: a command could put a link of its own in its place; make it a real file or folder, or remove the link — commands are not run while it is one", p, dest)
					}
					return refuse("%s is a symbolic link (to %s) on the way to %s, which commands may not change, in a folder they may write: a command could put a link of its own in its place; make it a real folder, or remove the link — commands are not run while it is one", next, dest, p)
				}
				break // held: the kernel follows it when mounting
			}
			cur = next
		}
	}
	for _, t := range w.Targets {
		if _, err := os.Lstat(t.Path); errors.Is(err, os.ErrNotExist) && !w.held(filepath.Dir(t.Path)) {
			return refuse("%s leads to %s, which does not exist: a command could create it, and what it holds would decide what runs; create it, or remove the link — commands are not run until then", t.By, t.Path)
		}
	}
	return nil
}

// refresh mounts what is not mounted yet.
func (w *walls) refresh() error {
	if w.Open {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// A link there could lead the command (and orca) to what it may
	// write.
	if err := w.check(); err != nil {
		return err
	}
	for _, p := range w.Reserved {
		// Made before the walls go up, so that the command finds it
		// read-only rather than free to create — in a folder that is
		// one (a .git file names its repository elsewhere).
		if fi, err := os.Stat(filepath.Dir(p)); err == nil && fi.IsDir() {
			if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("reserve %s: %v", p, err)
			}
		}
	}
	for _, p := range w.blank {
		// The same for git files that an empty one leaves as none does
		// (a worktree's config.worktree, which git reads once the
		// repository's extensions.worktreeConfig is on, as sparse
		// checkouts turn it on).
		if fi, err := os.Stat(filepath.Dir(p)); err == nil && fi.IsDir() {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err == nil {
				f.Close()
			} else if !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("reserve %s: %v", p, err)
			}
		}
	}
	protected := w.protectedPaths()
	if err := pin(w.Writable, protected, w.done); err != nil {
		return err
	}
	for _, p := range protected {
		if w.done["ro:"+p] {
			continue
		}
		ok, err := bindReadOnly(p)
		if err != nil {
			return fmt.Errorf("read-only %s: %v", p, err)
		}
		w.done["ro:"+p] = ok
	}
	for _, p := range w.Hidden {
		if w.done["hide:"+p] {
			continue
		}
		ok, err := hide(p)
		if err != nil {
			return fmt.Errorf("hide %s: %v", p, err)
		}
		w.done["hide:"+p] = ok
	}
	return nil
}

// pin makes each Writable folder, and every folder between one and a
// protected path below it, a mount point of its own: the kernel refuses
// to rename or remove a mount point, so a protected path cannot be moved
// aside with its folder (mv .git .old) and replaced by one the command
// writes.
func pin(writable, protected []string, done map[string]bool) error {
	bind := func(dir string) error {
		if done["pin:"+dir] {
			return nil
		}
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() {
			return nil // nothing there to move aside (yet)
		}
		done["pin:"+dir] = true
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

// bindReadOnly makes p read-only in this mount namespace and reports
// whether it did: a path that does not exist is left alone (there is
// nothing to protect yet).
func bindReadOnly(p string) (bool, error) {
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return false, err
	}
	// A remount must keep the flags the kernel locked on the mount
	// below (a user namespace may not clear them).
	return true, unix.Mount("", p, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|lockedFlags(p), "")
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

// hide covers p — a folder with an empty read-only one, a file with an
// empty file — and reports whether it did (a path that does not exist is
// left alone).
func hide(p string) (bool, error) {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case fi.IsDir():
		return true, unix.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0555")
	}
	return true, unix.Mount("/dev/null", p, "", unix.MS_BIND, "")
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

// dropCapabilities makes sure the commands this thread starts have no
// capability in the namespace: no ambient ones (the server's), and, where
// the user is root, none regained at exec.
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return err
	}
	// No inheritable ones either (the thread keeps its own, to make the
	// commands' PID namespaces).
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return err
	}
	if os.Getuid() == 0 {
		const noRoot, noRootLocked = 1 << 0, 1 << 1 // SECBIT_NOROOT, SECBIT_NOROOT_LOCKED
		return unix.Prctl(unix.PR_SET_SECUREBITS, noRoot|noRootLocked, 0, 0, 0)
	}
	return nil
}
