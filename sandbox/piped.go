package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"
)

// Piped is a command that speaks a protocol on its standard streams — an
// MCP server, a language server — started by StartPiped: it lives until
// it exits or is killed, not as long as some context.
type Piped struct {
	// Stdin is the command's standard input, Stdout its standard output.
	Stdin  io.WriteCloser
	Stdout io.ReadCloser
	// Done is closed once the command ended and was reaped.
	Done <-chan struct{}

	cmd    *Cmd
	cancel context.CancelFunc
	mu     sync.Mutex
	err    error // what Wait returned
}

// StartPiped starts argv in dir under r — argv[0] found on the PATH —
// with env's variables after the runner's environment (in the order of
// their names), its standard error written to stderr (nil: discarded),
// and pipes to its standard input and output. Once it has ended, Stdout
// reads to its end and Err says how.
func (r *Runner) StartPiped(dir string, env map[string]string, stderr io.Writer, argv ...string) (*Piped, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("sandbox: no command")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("command %q: %w", argv[0], err)
	}
	if path, err = filepath.Abs(path); err != nil {
		return nil, err
	}
	rr := *r
	if len(env) > 0 {
		all := rr.Env
		if all == nil {
			all = DefaultEnv()
		}
		all = slices.Clone(all)
		keys := make([]string, 0, len(env))
		for k := range env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			all = append(all, k+"="+env[k])
		}
		rr.Env = all
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd, err := rr.Command(ctx, dir, append([]string{path}, argv[1:]...)...)
	if err != nil {
		cancel()
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		cancel()
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		cancel()
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, stderr
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("not started: %w", err)
	}
	// The command has its ends.
	inR.Close()
	outW.Close()
	done := make(chan struct{})
	p := &Piped{Stdin: inW, Stdout: outR, Done: done, cmd: cmd, cancel: cancel}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	return p, nil
}

// Kill kills the command and every process it started; Done is closed
// once they are reaped.
func (p *Piped) Kill() { p.cancel() }

// Err is how the command ended (what Cmd.Wait returned), once Done is
// closed; nil before.
func (p *Piped) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}
