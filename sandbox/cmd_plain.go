package sandbox

import (
	"errors"
	"os"
	"syscall"
)

// plainProcess is a command run without namespaces: the leader of a
// process group of its own, which is killed as one.
type plainProcess struct{ p *os.Process }

func startPlain(req request, files []*os.File) (process, error) {
	p, err := os.StartProcess(req.Argv[0], req.Argv, &os.ProcAttr{Dir: req.Dir, Env: req.Env, Files: files, Sys: plainAttr()})
	if err != nil {
		return nil, err
	}
	return &plainProcess{p}, nil
}

func (p *plainProcess) wait() (int, syscall.Signal, error) {
	st, err := p.p.Wait()
	p.kill() // whatever the command left running in its group goes with it
	if err != nil {
		return -1, 0, err
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal(), nil
	}
	return st.ExitCode(), 0, nil
}

func (p *plainProcess) kill() error {
	err := syscall.Kill(-p.p.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
