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
