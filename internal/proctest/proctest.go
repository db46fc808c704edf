// Package proctest helps tests prove that the processes orca starts end:
// it reads the process ids scripts write and waits for those processes to
// be gone. (Tests only; it is internal.)
package proctest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Alive reports whether pid is a process that has not exited yet (a zombie
// waiting for its parent counts as exited). Without /proc (macOS) it asks
// kill(pid, 0).
func Alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !os.IsNotExist(err)
	}
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// RequireGone fails the test if a process of pids is still running a few
// seconds on (a kill is delivered asynchronously), and kills it.
func RequireGone(t testing.TB, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for Alive(pid) {
			if time.Now().After(deadline) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("process %d is still running", pid)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// PIDs reads the process ids a script wrote, one per file of dir named
// names (each ends with a newline when complete), waiting a few seconds
// for them to be written.
func PIDs(t testing.TB, dir string, names ...string) []int {
	t.Helper()
	var out []int
	for _, n := range names {
		var b []byte
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			b, _ = os.ReadFile(filepath.Join(dir, n))
			if strings.HasSuffix(string(b), "\n") || time.Now().After(deadline) {
				break
			}
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("%s: %q", n, b)
		}
		out = append(out, pid)
	}
	return out
}

// Holder is a FIFO a test gives a command, so that the processes the
// command starts can prove they are gone: a process that opens it for
// writing (`sleep 1000 3>hold.fifo &`) holds it until it dies, and no PID
// is needed — the PIDs a sandboxed command sees are its namespace's.
type Holder struct {
	t      testing.TB
	path   string
	opened chan struct{} // closed once a process holds it
	closed chan struct{} // closed once no process holds it any more
}

// NewHolder makes the FIFO name in dir and starts waiting for holders.
func NewHolder(t testing.TB, dir, name string) *Holder {
	t.Helper()
	h := &Holder{t: t, path: filepath.Join(dir, name), opened: make(chan struct{}), closed: make(chan struct{})}
	if err := syscall.Mkfifo(h.path, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(h.closed)
		f, err := os.OpenFile(h.path, os.O_RDONLY, 0) // until a writer opens it
		close(h.opened)
		if err != nil {
			return
		}
		os.WriteFile(h.path+".opened", nil, 0o644) // for Await
		defer f.Close()
		buf := make([]byte, 64)
		for {
			if _, err := f.Read(buf); err != nil {
				return // EOF: every writer closed it
			}
		}
	}()
	return h
}

// Await is a shell command that waits until a process holds the FIFO, for
// a command that must not end before its background process has opened
// it (a process killed first would prove nothing).
func (h *Holder) Await() string {
	return fmt.Sprintf("until [ -e %s.opened ]; do sleep 0.01; done", filepath.Base(h.path))
}

// Opened waits until a process holds the FIFO (the command is running),
// failing the test after a few seconds.
func (h *Holder) Opened() {
	h.t.Helper()
	select {
	case <-h.opened:
	case <-time.After(10 * time.Second):
		h.release()
		h.t.Fatalf("no process opened %s", h.path)
	}
}

// RequireGone fails the test unless every process that held the FIFO is
// gone within a few seconds.
func (h *Holder) RequireGone() {
	h.t.Helper()
	select {
	case <-h.closed:
	case <-time.After(10 * time.Second):
		h.release()
		h.t.Errorf("a process the command started still holds %s", h.path)
	}
}

// release unblocks the waiting reader (a writer that opens and closes);
// it does not wait for a process that still holds the FIFO, which is what
// the failing test reports.
func (h *Holder) release() {
	if f, err := os.OpenFile(h.path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		f.Close()
	}
	select {
	case <-h.closed:
	case <-time.After(time.Second):
	}
}

// lockFiles keeps the files Lock locked open (and so locked) for as long
// as the process lives.
var lockFiles []*os.File

// Lock is called by a process a test started, in that process: it locks
// a new file in dir and holds the lock until the process ends, so that
// the test can count the processes that started (Locks) and require them
// gone (RequireUnlocked) whatever PID namespace they run in.
func Lock(dir string) error {
	f, err := os.CreateTemp(dir, "lock-")
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return err
	}
	lockFiles = append(lockFiles, f)
	return nil
}

// Locks returns the files of dir that Lock made: one per process.
func Locks(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "lock-") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// RequireUnlocked fails the test unless every process that called Lock
// with dir is gone within a few seconds.
func RequireUnlocked(t testing.TB, dir string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, name := range Locks(dir) {
		f, err := os.Open(name)
		if err != nil {
			t.Error(err)
			continue
		}
		for syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			if time.Now().After(deadline) {
				t.Errorf("the process that locked %s is still running", name)
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		f.Close()
	}
}

// Children returns the process ids of the children of the process pid
// whose first argument is argv0 ("orca-sandbox": the sandbox's servers).
// It needs Linux's /proc/PID/task/TID/children; elsewhere it returns none.
func Children(pid int, argv0 string) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, task := range tasks {
		b, _ := os.ReadFile(task)
		for _, f := range strings.Fields(string(b)) {
			child, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", child))
			if first, _, _ := bytes.Cut(cmdline, []byte{0}); string(first) == argv0 {
				out = append(out, child)
			}
		}
	}
	return out
}
