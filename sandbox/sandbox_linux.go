package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"unsafe"
)

// helperEnv marks the sandboxed child (see init in helper_linux.go); its
// value is the spec, as JSON. The command never sees it.
const helperEnv = "_ORCA_SANDBOX_SPEC"

// statusFD is the child's end of the status pipe (ExtraFiles[0]).
const statusFD = 3

// helperCommand returns orca's own executable, started as the sandboxed
// child of s: in new user, mount and PID namespaces (and a network one
// unless s.Network), the leader of a process group of its own, killed if
// orca dies.
func helperCommand(ctx context.Context, s spec) (*Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("%w: orca's executable cannot be found to run the sandboxed command: %v", ErrUnavailable, err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	cmd := exec.CommandContext(ctx, self)
	cmd.Args = []string{"orca-sandbox"}
	cmd.Dir = s.Dir
	cmd.Env = []string{helperEnv + "=" + string(b)}
	flags := syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID
	if !s.Network {
		flags |= syscall.CLONE_NEWNET
	}
	uid, gid := os.Getuid(), os.Getgid()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:                    true,
		Pdeathsig:                  syscall.SIGKILL,
		Cloneflags:                 uintptr(flags),
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	cmd.ExtraFiles = []*os.File{w}
	return &Cmd{Cmd: cmd, status: r, statusW: w}, nil
}

var (
	probeOnce sync.Once
	probeErr  error
	treeOnce  sync.Once
	treeE     error
)

// Available reports whether commands can run in the OS sandbox here: an
// error wrapping ErrUnavailable says why not (no Landlock, no user
// namespaces) and how to opt out. It tries once, by running a sandboxed
// command, and remembers the answer.
func Available() error {
	probeOnce.Do(func() {
		if v := landlockABI(); v < 1 {
			probeErr = fmt.Errorf("%w: the kernel has no Landlock (Linux 5.13 or newer, with landlock among its LSMs, is needed)", ErrUnavailable)
			return
		}
		probeErr = probe(spec{Argv: []string{"/bin/sh", "-c", "exit 0"}, Dir: "/", Writable: []string{os.TempDir()}})
	})
	return probeErr
}

// treeErr reports whether a PID namespace (and the user namespace it
// needs) can be made here.
func treeErr() error {
	treeOnce.Do(func() {
		treeE = probe(spec{Argv: []string{"/bin/sh", "-c", "exit 0"}, Dir: "/", Open: true, Network: true})
	})
	return treeE
}

func probe(s spec) error {
	cmd, err := helperCommand(context.Background(), s)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		why := err.Error()
		if out.Len() > 0 {
			why = out.String()
		}
		return fmt.Errorf("%w: a sandboxed command could not start (%s); unprivileged user namespaces and Landlock are needed", ErrUnavailable, bytes.TrimSpace([]byte(why)))
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
