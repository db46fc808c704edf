package sandbox

import (
	"fmt"
	"syscall"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// restrictSockets loads, on the calling thread (which passes it on to the
// processes it starts), the seccomp filters that keep a command from the
// host's Unix sockets — the Docker daemon's, D-Bus, ssh-agent — which
// neither Landlock nor the network namespace covers: socket(AF_UNIX) and
// io_uring (which could create one past the filter) fail with EPERM, and
// so does every system call made through another architecture's entry
// (int 0x80 on x86-64), which a filter for one architecture does not see.
func restrictSockets() error {
	native, err := arch.GetInfo("")
	if err != nil {
		return err
	}
	filter := seccomp.Filter{
		NoNewPrivs: true,
		Policy: seccomp.Policy{
			DefaultAction: seccomp.ActionAllow,
			Syscalls: []seccomp.SyscallGroup{{
				Action: seccomp.ActionErrno,
				Names:  []string{"io_uring_setup"},
				NamesWithCondtions: []seccomp.NameWithConditions{{
					Name:       "socket",
					Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_UNIX}},
				}},
			}},
		},
	}
	if err := seccomp.LoadFilter(filter); err != nil {
		return err
	}
	// The foreign architectures, with a filter of their own (filters
	// stack: the strictest answer wins).
	const archOffset = 4 // struct seccomp_data: nr, then arch
	prog, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: archOffset, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(native.ID), SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
	})
	if err != nil {
		return err
	}
	filters := make([]syscall.SockFilter, len(prog))
	for i, in := range prog {
		filters[i] = syscall.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := syscall.SockFprog{Len: uint16(len(filters)), Filter: &filters[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("the architecture filter: %w", err)
	}
	return nil
}
