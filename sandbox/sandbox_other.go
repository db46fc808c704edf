//go:build !linux

package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// Available reports that this platform has no OS sandbox orca can use
// (yet): commands run only with the sandbox disabled.
func Available() error {
	return fmt.Errorf("%w on %s: orca's sandbox is Linux's (Landlock and namespaces)", ErrUnavailable, runtime.GOOS)
}

func treeErr() error { return Available() }

func ready(spec) error { return Available() }

func startServed(spec, request, []*os.File) (process, error) { return nil, Available() }

func plainAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
