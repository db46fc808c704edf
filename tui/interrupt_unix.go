//go:build unix

package tui

import "syscall"

// interrupt sends the process the SIGINT that Ctrl-C would have sent,
// had the terminal not been in raw mode.
func interrupt() { syscall.Kill(syscall.Getpid(), syscall.SIGINT) }
