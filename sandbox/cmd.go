package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Cmd is a command a Runner made. Set its standard streams and WaitDelay,
// then Start and Wait it (or Run it); Status says how it ended, Kill ends
// it with every process it started.
type Cmd struct {
	// Stdin, Stdout and Stderr are the command's standard streams, as on
	// an exec.Cmd: nil is the null device; an *os.File is given to the
	// command as it is; anything else is copied through a pipe. Stdout
	// and Stderr may be the same writer: the command then writes both
	// through one pipe, in order.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// WaitDelay bounds how long Wait waits, once the command has ended,
	// for its output to be read: after it, the pipes are closed and Wait
	// returns exec.ErrWaitDelay (unless it has another error). Zero waits
	// for ever — though the processes the command started end with it.
	WaitDelay time.Duration

	ctx   context.Context
	req   request
	spec  spec
	plain bool // no namespaces here: a process group, killed as one

	proc    process
	closers []io.Closer // the parent's ends of the pipes
	copies  sync.WaitGroup
	copyErr error
	copyMu  sync.Mutex
	stop    chan struct{} // closed once the command ended
	done    chan struct{} // closed once Wait returned
	started bool
	waited  bool
	code    int
	signal  syscall.Signal
}

// process is a started command, wherever it runs.
type process interface {
	// wait blocks until the command ended and says how.
	wait() (code int, sig syscall.Signal, err error)
	// kill kills the command and every process it started.
	kill() error
}

// ExitError is the error of a command that did not end with exit code 0.
type ExitError struct {
	// Code is the exit code, -1 if a signal ended the command.
	Code int
	// Signal is the signal that ended it (0 if none).
	Signal syscall.Signal
}

func (e *ExitError) Error() string {
	if e.Signal != 0 {
		return "signal: " + e.Signal.String()
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

// Start starts the command.
func (c *Cmd) Start() error {
	if c.started {
		return errors.New("sandbox: the command was started already")
	}
	c.started = true
	if err := c.ctx.Err(); err != nil {
		return err
	}
	files, err := c.files()
	if err != nil {
		c.closeAll()
		return err
	}
	if c.plain {
		c.proc, err = startPlain(c.req, files)
	} else {
		c.proc, err = startServed(c.spec, c.req, files)
	}
	// The command has its ends of the pipes; these are the parent's copies.
	for _, f := range files {
		if f != nil && !isCallers(f, c) {
			f.Close()
		}
	}
	if err != nil {
		c.closeAll()
		return err
	}
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	go func() {
		select {
		case <-c.ctx.Done():
			c.proc.kill()
		case <-c.stop:
		}
	}()
	return nil
}

// isCallers reports whether f is a stream the caller gave as a file: the
// caller's to close.
func isCallers(f *os.File, c *Cmd) bool {
	return f == c.Stdin || f == c.Stdout || f == c.Stderr
}

// files returns the command's standard streams, starting the copies.
func (c *Cmd) files() ([]*os.File, error) {
	out := make([]*os.File, 3)
	var err error
	if out[0], err = c.input(c.Stdin); err != nil {
		return nil, err
	}
	if out[1], err = c.output(c.Stdout); err != nil {
		return nil, err
	}
	if c.Stderr != nil && c.Stderr == c.Stdout {
		out[2] = out[1]
	} else if out[2], err = c.output(c.Stderr); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *Cmd) input(r io.Reader) (*os.File, error) {
	switch r := r.(type) {
	case nil:
		return os.Open(os.DevNull)
	case *os.File:
		return r, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	c.closers = append(c.closers, pw)
	c.copies.Go(func() {
		_, err := io.Copy(pw, r)
		pw.Close()
		if err != nil && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, os.ErrClosed) {
			c.setCopyErr(err)
		}
	})
	return pr, nil
}

func (c *Cmd) output(w io.Writer) (*os.File, error) {
	switch w := w.(type) {
	case nil:
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	case *os.File:
		return w, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	c.closers = append(c.closers, pr)
	c.copies.Go(func() {
		_, err := io.Copy(w, pr)
		if err != nil && !errors.Is(err, os.ErrClosed) {
			c.setCopyErr(err)
		}
	})
	return pw, nil
}

func (c *Cmd) setCopyErr(err error) {
	c.copyMu.Lock()
	if c.copyErr == nil {
		c.copyErr = err
	}
	c.copyMu.Unlock()
}

func (c *Cmd) closeAll() {
	for _, cl := range c.closers {
		cl.Close()
	}
}

// Run starts the command and waits for it.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

// Wait waits for the command to end and its output to be copied. Its
// error is an *ExitError for a command that failed, the context's error
// for one it killed.
func (c *Cmd) Wait() error {
	if !c.started || c.proc == nil {
		return errors.New("sandbox: the command was not started")
	}
	if c.waited {
		return errors.New("sandbox: Wait was called already")
	}
	c.waited = true
	code, sig, err := c.proc.wait()
	close(c.stop)
	defer close(c.done)
	c.code, c.signal = code, sig

	copied := make(chan struct{})
	go func() { c.copies.Wait(); close(copied) }()
	var delayed bool
	if c.WaitDelay > 0 {
		select {
		case <-copied:
		case <-time.After(c.WaitDelay):
			delayed = true
			c.closeAll()
			<-copied
		}
	} else {
		<-copied
	}
	switch {
	case err != nil:
		return err
	case c.ctx.Err() != nil && (code != 0 || sig != 0):
		return c.ctx.Err()
	case code != 0 || sig != 0:
		return &ExitError{Code: code, Signal: sig}
	case delayed:
		return exec.ErrWaitDelay
	}
	c.copyMu.Lock()
	defer c.copyMu.Unlock()
	return c.copyErr
}

// Status returns how the command ended, after Wait: its exit code, or -1
// and the signal that ended it. A command in the OS sandbox that a
// signal ended reports 128 plus the signal's number, as its shell does.
func (c *Cmd) Status() (code int, sig syscall.Signal) { return c.code, c.signal }

// Exited reports whether the command ran and ended (Wait returned a status
// for it).
func (c *Cmd) Exited() bool { return c.waited && (c.code >= 0 || c.signal != 0) }

// Alive reports whether a process of the command is left: for a plain
// one (Runner.Plain, or a sandbox that cannot make namespaces here), while
// its process group has members, zombies included; for another, until it
// ended — its PID namespace ends with it.
func (c *Cmd) Alive() bool {
	if c.proc == nil {
		return false
	}
	if p, ok := c.proc.(*plainProcess); ok {
		return syscall.Kill(-p.p.Pid, 0) == nil
	}
	select {
	case <-c.stop:
		return false
	default:
		return true
	}
}

// Kill kills the command and every process it started.
func (c *Cmd) Kill() error {
	if c.proc == nil {
		return errors.New("sandbox: the command was not started")
	}
	return c.proc.kill()
}
