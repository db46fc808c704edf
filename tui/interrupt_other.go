//go:build !unix

package tui

import "os"

// interrupt sends the process the interrupt that Ctrl-C would have sent,
// had the terminal not been in raw mode.
func interrupt() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Signal(os.Interrupt)
	}
}
