package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// helperEnv marks a sandbox server (see init in server_linux.go); its
// value is the server's spec, as JSON. Commands never see it.
const helperEnv = "_ORCA_SANDBOX_SPEC"

// ctlFD is the server's end of its control socket.
const ctlFD = 3

// maxServers bounds the servers kept running: the least recently used one
// is stopped to make room (its running commands finish first).
const maxServers = 8

// A server is orca's own executable, run again in new user, mount and PID
// namespaces (and a network one unless its spec allows the network), with
// the walls of its spec up — the read-only mounts, Landlock — ready to
// start commands. Starting it costs a process start; starting a command
// through it, a fork. Servers are shared by the commands of one spec, and
// stop by themselves once idle for a minute; orca's death stops them and
// their commands.
type server struct {
	key  string
	proc *os.Process
	ctl  int // the SEQPACKET socket, orca's end

	mu   sync.Mutex // sends on ctl
	dead bool
	used time.Time
}

var pool struct {
	sync.Mutex
	servers map[string]*server
	// stopped are the servers told to stop, not reaped yet: they are
	// reaped without waiting, whenever a server is looked for (a
	// goroutine waiting for each would outlive the program's work).
	stopped []*os.Process
}

// reapStopped reaps the stopped servers that have ended. The pool's lock
// is held.
func reapStopped() {
	keep := pool.stopped[:0]
	for _, p := range pool.stopped {
		var ws syscall.WaitStatus
		if pid, err := syscall.Wait4(p.Pid, &ws, syscall.WNOHANG, nil); pid == p.Pid || err != nil {
			p.Release()
			continue
		}
		keep = append(keep, p)
	}
	pool.stopped = keep
}

// getServer returns the running server of s, starting one if needed.
func getServer(s spec) (*server, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	key := string(b)
	pool.Lock()
	defer pool.Unlock()
	if pool.servers == nil {
		pool.servers = map[string]*server{}
	}
	reapStopped()
	if srv := pool.servers[key]; srv != nil {
		if !srv.isDead() {
			srv.used = time.Now()
			return srv, nil
		}
		srv.stop()
		delete(pool.servers, key)
	}
	for len(pool.servers) >= maxServers {
		var oldest *server
		for _, s := range pool.servers {
			if oldest == nil || s.used.Before(oldest.used) {
				oldest = s
			}
		}
		oldest.stop()
		delete(pool.servers, oldest.key)
	}
	srv, err := startServer(key)
	if err != nil {
		return nil, err
	}
	if !s.Open {
		walledUp.Store(true)
	}
	pool.servers[key] = srv
	return srv, nil
}

// walledUp is set once a server has put its walls up: the sandbox is
// available here, and Available need not start a server to say so.
var walledUp atomic.Bool

// ready starts the server of s if none is running, and returns the error
// that says the sandbox is unavailable, if it is. A refusal (ErrRefused)
// is not returned: the command's start says it. Where the sandbox cannot
// be set up at all (Available, asked only then), that is remembered: the
// next commands fail at once, starting no server.
func ready(s spec) error {
	if err := landlockErr(); err != nil {
		return err
	}
	if probed.Load() && probeErr != nil && !walledUp.Load() {
		return probeErr
	}
	if _, err := getServer(s); errors.Is(err, ErrUnavailable) {
		if perr := Available(); perr != nil {
			return perr
		}
		return err // this policy's walls, not the sandbox
	}
	return nil
}

func (s *server) isDead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dead
}

// stop closes the control socket: the server ends once its running
// commands have (at once if it is idle). The pool's lock is held.
func (s *server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dead {
		s.dead = true
		unix.Close(s.ctl)
	}
	pool.stopped = append(pool.stopped, s.proc)
}

// markDead stops a server that failed to start a command: the pool starts
// another one for the spec.
func (s *server) markDead() {
	s.mu.Lock()
	if !s.dead {
		s.dead = true
		unix.Close(s.ctl)
	}
	s.mu.Unlock()
}

// startServer starts the server of the spec key and waits until it is
// ready, or says why it could not get ready.
func startServer(key string) (*server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("%w: orca's executable cannot be found to run the sandbox: %v", ErrUnavailable, err)
	}
	var s spec
	json.Unmarshal([]byte(key), &s)
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	theirs := os.NewFile(uintptr(fds[1]), "sandbox-control")
	defer theirs.Close()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		unix.Close(fds[0])
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	defer null.Close()
	flags := syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID
	if !s.Network {
		flags |= syscall.CLONE_NEWNET
	}
	uid, gid := os.Getuid(), os.Getgid()
	proc, err := os.StartProcess(self, []string{"orca-sandbox"}, &os.ProcAttr{
		Dir:   "/",
		Env:   []string{helperEnv + "=" + key},
		Files: []*os.File{null, null, null, theirs},
		Sys: &syscall.SysProcAttr{
			Setsid:                     true,
			Pdeathsig:                  syscall.SIGKILL,
			Cloneflags:                 uintptr(flags),
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			GidMappingsEnableSetgroups: false,
			// The server runs as the user, not as root of its namespace
			// (files keep their owner, tools do not see root): it keeps the
			// capabilities it needs there across its start — to mount, to
			// bring up loopback, to make PID namespaces — as ambient ones,
			// which it drops for its commands.
			AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN},
		},
	})
	if err != nil {
		unix.Close(fds[0])
		return nil, fmt.Errorf("%w: the sandbox could not start (%v); unprivileged user namespaces are needed", ErrUnavailable, err)
	}
	theirs.Close()
	buf := make([]byte, 4096)
	n, _, _, _, err := unix.Recvmsg(fds[0], buf, nil, 0)
	msg := string(buf[:max(n, 0)])
	if err != nil || msg != "ready" {
		unix.Close(fds[0])
		proc.Kill()
		st, _ := proc.Wait()
		if why, ok := strings.CutPrefix(msg, "refused: "); ok {
			return nil, fmt.Errorf("%w: %s", ErrRefused, why)
		}
		why := strings.TrimPrefix(msg, "error: ")
		if why == "" {
			why = fmt.Sprintf("it ended (%v) before it was ready", st)
		}
		return nil, fmt.Errorf("%w: the sandbox could not be set up: %s", ErrUnavailable, why)
	}
	return &server{key: key, proc: proc, ctl: fds[0], used: time.Now()}, nil
}

// errRetry marks a start that failed because the server was gone: another
// server may start the command.
var errRetry = errors.New("the sandbox server is gone")

// start hands the server a command: its standard streams and a socket of
// its own, on which the request goes, "started" (or the error) comes back,
// and later how the command ended.
func (s *server) start(req request, files []*os.File) (process, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "sandbox-command"), os.NewFile(uintptr(fds[1]), "sandbox-command")
	rights := unix.UnixRights(int(files[0].Fd()), int(files[1].Fd()), int(files[2].Fd()), int(theirs.Fd()))
	s.mu.Lock()
	if s.dead {
		err = errRetry
	} else if err = unix.Sendmsg(s.ctl, []byte{'c'}, rights, nil, 0); err != nil {
		err = fmt.Errorf("%w: %v", errRetry, err)
	}
	s.mu.Unlock()
	theirs.Close()
	if err != nil {
		mine.Close()
		return nil, err
	}
	b, err := json.Marshal(req)
	if err == nil {
		_, err = mine.Write(append(b, '\n'))
	}
	r := bufio.NewReader(mine)
	line, rerr := r.ReadString('\n')
	switch {
	case err != nil || rerr != nil:
		mine.Close()
		return nil, errRetry // the server died before it started the command
	case line == "started\n":
		return &servedProcess{sock: mine, r: r}, nil
	}
	mine.Close()
	if why, ok := strings.CutPrefix(line, "refused: "); ok {
		return nil, fmt.Errorf("%w: %s", ErrRefused, strings.TrimSpace(why))
	}
	return nil, fmt.Errorf("sandbox: %s", strings.TrimSpace(strings.TrimPrefix(line, "error: ")))
}

// startServed starts the command req of the spec's server.
func startServed(s spec, req request, files []*os.File) (process, error) {
	for attempt := 0; ; attempt++ {
		srv, err := getServer(s)
		if err != nil {
			return nil, err
		}
		p, err := srv.start(req, files)
		if !errors.Is(err, errRetry) || attempt == 2 {
			return p, err
		}
		srv.markDead()
	}
}

// servedProcess is a command a server started.
type servedProcess struct {
	sock *os.File
	r    *bufio.Reader
	once sync.Once
}

func (p *servedProcess) wait() (int, syscall.Signal, error) {
	defer p.sock.Close()
	line, err := p.r.ReadString('\n')
	if err != nil {
		return -1, syscall.SIGKILL, fmt.Errorf("sandbox: the sandbox server ended before the command: %w", err)
	}
	what, num, _ := strings.Cut(strings.TrimSpace(line), " ")
	n, err := strconv.Atoi(num)
	if err != nil {
		return -1, 0, fmt.Errorf("sandbox: the server said %q", line)
	}
	if what == "signal" {
		return -1, syscall.Signal(n), nil
	}
	return n, 0, nil
}

func (p *servedProcess) kill() error {
	var err error
	p.once.Do(func() { _, err = io.WriteString(p.sock, "kill\n") })
	if errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EPIPE) {
		return nil // it ended already
	}
	return err
}

var (
	probeOnce sync.Once
	probeErr  error       // set once, before probed
	probed    atomic.Bool // probeErr is set
	treeOnce  sync.Once
	treeE     error
)

// Available reports whether commands can run in the OS sandbox here: an
// error wrapping ErrUnavailable says why not (no Landlock, no user
// namespaces). Unless a sandbox server has already started (a command
// ran, or Runner.Available asked), it tries once, by running a sandboxed
// command, and remembers the answer. A runtime asks its Runner instead,
// whose server is then the one its commands run on.
func Available() error {
	if walledUp.Load() {
		return nil
	}
	probeOnce.Do(func() {
		if probeErr = landlockErr(); probeErr == nil {
			probeErr = probe(spec{Writable: TempDirs()})
		}
		probed.Store(true)
	})
	if walledUp.Load() {
		return nil
	}
	return probeErr
}

// landlockErr says that the kernel has no Landlock; nil if it has.
var landlockErr = sync.OnceValue(func() error {
	if landlockABI() < 1 {
		return fmt.Errorf("%w: the kernel has no Landlock (Linux 5.13 or newer, with landlock among its LSMs, is needed)", ErrUnavailable)
	}
	return nil
})

// treeErr reports whether a PID namespace (and the user namespace it
// needs) can be made here.
func treeErr() error {
	treeOnce.Do(func() { treeE = probe(spec{Open: true, Network: true}) })
	return treeE
}

func probe(s spec) error {
	c := &Cmd{ctx: context.Background(), req: request{Argv: []string{"/bin/sh", "-c", "exit 0"}, Dir: "/", Env: []string{}}, spec: s, code: -1}
	if err := c.Run(); err != nil {
		if errors.Is(err, ErrUnavailable) {
			return err
		}
		return fmt.Errorf("%w: a sandboxed command could not run (%v); unprivileged user namespaces and Landlock are needed", ErrUnavailable, err)
	}
	return nil
}

// landlockABI returns the kernel's Landlock ABI version, 0 without one.
func landlockABI() int {
	const sysLandlockCreateRuleset = 444
	const createRulesetVersion = 1
	v, _, errno := syscall.Syscall(sysLandlockCreateRuleset, uintptr(unsafe.Pointer(nil)), 0, createRulesetVersion)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// plainAttr is the process attributes of a command outside the sandbox:
// its own process group, killed if orca dies.
func plainAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
