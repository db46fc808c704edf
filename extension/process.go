package extension

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/internal/tailbuf"
	"github.com/orca-agent/orca/sandbox"
)

// Limits of a handler process.
const (
	// maxAnswer bounds one answer line.
	maxAnswer = 1 << 20
	// stopGrace is how long a stopping handler has, once its stdin is
	// closed, to exit on its own (and flush what it keeps) before its
	// process group is killed.
	stopGrace = 2 * time.Second
	// exitGrace is how long a handler that closed its stdout has to exit
	// before it is killed.
	exitGrace = time.Second
	// readGrace is how long the output of a handler that is gone may
	// take to be read to its end.
	readGrace = 100 * time.Millisecond
	// groupGrace bounds the wait for a killed process group to be gone
	// (its members may stay zombies for as long as their new parent does
	// not reap them).
	groupGrace = 200 * time.Millisecond
	// stderrTail is how much of the handler's stderr is kept for error
	// messages: the end, which says why it failed.
	stderrTail = 4 << 10
)

// errStopped is the failure of a request to a handler that was stopped.
var errStopped = errors.New("the extension was unregistered")

// request is one line orca writes to a handler.
type request struct {
	ID      uint64          `json:"id"`
	Kind    string          `json:"kind"`
	Event   json.RawMessage `json:"event,omitempty"`
	Hook    hook.Name       `json:"hook,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// answer is one line a handler writes.
type answer struct {
	ID       *uint64   `json:"id"`
	Decision *decision `json:"decision"`
	Error    string    `json:"error"`
}

// decision is a handler's hook decision.
type decision struct {
	Action      hook.Action                `json:"action"`
	Reason      string                     `json:"reason"`
	Updates     map[string]json.RawMessage `json:"updates"`
	Context     string                     `json:"context"`
	Instruction string                     `json:"instruction"`
}

var actions = []hook.Action{hook.Continue, hook.Block, hook.RequestPermission, hook.Allow, hook.Deny, hook.Revise, hook.Accept}

// hookDecision converts d; the registry holds it to the hook's contract.
func (d *decision) hookDecision() (*hook.Decision, error) {
	if d.Action != "" && !slices.Contains(actions, d.Action) {
		return nil, fmt.Errorf("unknown action %q in the decision", d.Action)
	}
	out := &hook.Decision{Action: d.Action, Reason: d.Reason, Context: d.Context, Instruction: d.Instruction}
	if len(d.Updates) > 0 {
		out.Updates = make(map[string]any, len(d.Updates))
		for k, v := range d.Updates {
			out.Updates[k] = v
		}
	}
	return out, nil
}

// parseAnswer decodes the answer line raw to request id: one JSON object,
// no unknown field, the request's id.
func parseAnswer(raw []byte, id uint64) (*answer, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var a answer
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("%s is not an answer: %v", quote(raw), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s is not one JSON answer: something follows it", quote(raw))
	}
	if a.ID == nil {
		return nil, fmt.Errorf("%s has no id", quote(raw))
	}
	if *a.ID != id {
		return nil, fmt.Errorf("%s answers request %d, but the request was %d", quote(raw), *a.ID, id)
	}
	return &a, nil
}

// quote shows a handler's line in a message, shortened.
func quote(b []byte) string {
	const max = 200
	s := strings.ToValidUTF8(string(b), "�")
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "…"
	}
	return fmt.Sprintf("%q", s)
}

// proc is the handler process of one extension: started on the first
// request, started again on the next request after it died or was killed,
// one request at a time.
type proc struct {
	path    string
	dir     string
	env     []string
	timeout time.Duration

	sem      chan struct{} // holds the right to talk to the process
	stop     chan struct{} // closed by close
	stopOnce sync.Once

	mu       sync.Mutex
	cur      *instance // nil: not running
	started  bool
	draining bool
	stopped  bool

	next uint64 // the last request id; guarded by sem
}

func newProc(x *Extension) *proc {
	env := make([]string, 0, 8)
	for _, k := range []string{"PATH", "HOME", "LANG"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	if _, ok := os.LookupEnv("PATH"); !ok {
		env = append(env, "PATH=/usr/local/bin:/usr/bin:/bin")
	}
	ports := make([]string, len(x.Ports))
	for i, c := range x.Ports {
		ports[i] = string(c)
	}
	env = append(env, "ORCA_EXTENSION_NAME="+x.Manifest.Name, "ORCA_EXTENSION_PORTS="+strings.Join(ports, ","))
	for _, k := range x.Resources {
		env = append(env, ResourceEnv(k)+"="+x.value(k))
	}
	return &proc{
		path: x.Handler, dir: x.Dir, env: env, timeout: x.Manifest.Timeout,
		sem: make(chan struct{}, 1), stop: make(chan struct{}),
	}
}

// call sends req and returns the handler's answer.
func (p *proc) call(ctx context.Context, req request) (*answer, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("not sent within %v: an earlier request was still being answered", p.timeout)
		}
		return nil, fmt.Errorf("the request was cancelled before it was sent: %w", ctx.Err())
	case <-p.stop:
		return nil, errStopped
	}
	defer func() { <-p.sem }()
	in, err := p.instance()
	if err != nil {
		return nil, err
	}
	p.next++
	req.ID = p.next
	line, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	line = append(line, '\n')
	deadline, _ := ctx.Deadline()
	_ = in.stdin.SetWriteDeadline(deadline)
	if _, err := in.stdin.Write(line); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			p.discard(in)
			select {
			case <-p.stop:
				return nil, errStopped
			default:
			}
			return nil, p.ctxErr(ctx, "(it did not read its input)")
		}
		return nil, p.died(in, "stopped without answering")
	}
	select {
	case raw, ok := <-in.lines:
		if !ok {
			if in.readErr != nil {
				p.discard(in)
				return nil, fmt.Errorf("the handler's answer cannot be read, and the handler was killed: %v%s", in.readErr, stderrDetail(in.stderr))
			}
			return nil, p.died(in, "stopped without answering")
		}
		a, err := parseAnswer(raw, req.ID)
		if err != nil {
			p.discard(in)
			return nil, fmt.Errorf("the handler answered garbage and was killed: %v%s", err, stderrDetail(in.stderr))
		}
		return a, nil
	case <-ctx.Done():
		p.discard(in)
		return nil, p.ctxErr(ctx, "")
	case <-p.stop:
		return nil, errStopped
	}
}

// ctxErr describes a request that ran out of time or was cancelled with
// the handler at work on it, which was therefore killed.
func (p *proc) ctxErr(ctx context.Context, note string) error {
	if note != "" {
		note = " " + note
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %v%s; the handler was killed, with the processes it started", p.timeout, note)
	}
	return fmt.Errorf("the request was cancelled%s, and the handler was killed: %w", note, ctx.Err())
}

// died reports the end of in, which stopped talking: its exit status and
// the end of its stderr.
func (p *proc) died(in *instance, what string) error {
	t := time.NewTimer(exitGrace)
	select {
	case <-in.exited:
	case <-t.C:
	}
	t.Stop()
	p.discard(in)
	return fmt.Errorf("the handler %s: %s%s", what, in.status(), stderrDetail(in.stderr))
}

// instance returns the running process, starting it if there is none
// (or the last one died).
func (p *proc) instance() (*instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return nil, errStopped
	}
	if in := p.cur; in != nil {
		select {
		case <-in.exited:
			p.cur = nil
			in.teardown(0)
		default:
			return in, nil
		}
	}
	if p.draining && p.started {
		// Delivering what was queued before the unregistration goes on
		// with the running process, not a new one.
		return nil, errors.New("the extension is being unregistered and its handler is gone")
	}
	in, err := p.start()
	if err != nil {
		return nil, err
	}
	p.cur, p.started = in, true
	return in, nil
}

// discard kills in and forgets it; the sem is held.
func (p *proc) discard(in *instance) {
	p.mu.Lock()
	if p.cur == in {
		p.cur = nil
	}
	p.mu.Unlock()
	in.teardown(0)
}

// drain stops restarts: what remains to be delivered goes to the running
// process or fails.
func (p *proc) drain() {
	p.mu.Lock()
	p.draining = true
	p.mu.Unlock()
}

// close stops the process: requests in flight fail, the handler gets EOF
// on stdin and stopGrace to exit, then its process group is killed.
func (p *proc) close() {
	p.stopOnce.Do(func() { close(p.stop) })
	p.mu.Lock()
	if p.cur != nil {
		// A request stuck writing to a handler that does not read gives
		// up now rather than at its timeout.
		_ = p.cur.stdin.SetWriteDeadline(time.Unix(1, 0))
	}
	p.mu.Unlock()
	p.sem <- struct{}{}
	defer func() { <-p.sem }()
	p.mu.Lock()
	p.stopped = true
	in := p.cur
	p.cur = nil
	p.mu.Unlock()
	if in != nil {
		in.teardown(stopGrace)
	}
}

// instance is one run of a handler process.
type instance struct {
	cmd    *sandbox.Cmd
	stdin  *os.File // orca's ends of the pipes
	stdout *os.File
	errOut *os.File
	stderr *tailbuf.Buffer

	lines   chan []byte   // answer lines; closed at the end of stdout
	readErr error         // why lines was closed early; set before
	quit    chan struct{} // closed by teardown: the readers stop
	exited  chan struct{} // closed once the process is reaped
	readers sync.WaitGroup
}

// start starts the handler in its own process group, with pipes of orca's
// own for its stdin, stdout and stderr (so that no copying goroutine of
// os/exec outlives it).
func (p *proc) start() (*instance, error) {
	var files [6]*os.File // in r/w, out r/w, err r/w
	closeAll := func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}
	for i := 0; i < 6; i += 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("cannot start the handler: %w", err)
		}
		files[i], files[i+1] = r, w
	}
	// The user's handler, run as them: a process group of its own, which
	// teardown, and the handler's end, kill as one.
	runner := sandbox.Runner{Plain: true, Env: p.env}
	cmd, err := runner.Command(context.Background(), p.dir, p.path)
	if err == nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = files[0], files[3], files[5]
		err = cmd.Start()
	}
	// The child's ends are the child's now.
	files[0].Close()
	files[3].Close()
	files[5].Close()
	if err != nil {
		files[1].Close()
		files[2].Close()
		files[4].Close()
		return nil, fmt.Errorf("cannot start the handler %s: %w", p.path, err)
	}
	in := &instance{
		cmd:   cmd,
		stdin: files[1], stdout: files[2], errOut: files[4], stderr: &tailbuf.Buffer{Max: stderrTail},
		lines: make(chan []byte), quit: make(chan struct{}), exited: make(chan struct{}),
	}
	in.readers.Add(2)
	go in.readLines()
	go func() {
		defer in.readers.Done()
		_, _ = io.Copy(in.stderr, in.errOut)
	}()
	go func() {
		// What the handler started goes with it.
		_ = cmd.Wait()
		close(in.exited)
	}()
	return in, nil
}

// readLines passes the handler's non-blank stdout lines to in.lines.
func (in *instance) readLines() {
	defer in.readers.Done()
	defer close(in.lines)
	r := bufio.NewReader(in.stdout)
	for {
		line, err := readLine(r)
		if len(bytes.TrimSpace(line)) > 0 {
			select {
			case in.lines <- line:
			case <-in.quit:
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				in.readErr = err
			}
			return
		}
	}
}

// readLine reads one line of at most maxAnswer bytes, without its end.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > maxAnswer+1 {
			return nil, fmt.Errorf("an answer is longer than %d bytes", maxAnswer)
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), err
	}
}

// teardown ends the process: EOF on its stdin, grace to exit on its own,
// then its group is killed; then the readers are stopped. The proc's sem
// is held, so that no request uses in meanwhile.
func (in *instance) teardown(grace time.Duration) {
	in.stdin.Close()
	if grace > 0 {
		t := time.NewTimer(grace)
		select {
		case <-in.exited:
		case <-t.C:
		}
		t.Stop()
	}
	select {
	case <-in.exited: // reaped, and its group killed
	default:
		_ = in.cmd.Kill()
		<-in.exited
	}
	// SIGKILL is delivered asynchronously: wait, briefly, until the
	// processes the handler started are gone too.
	for deadline := time.Now().Add(groupGrace); in.cmd.Alive() && time.Now().Before(deadline); {
		time.Sleep(2 * time.Millisecond)
	}
	close(in.quit)
	// The readers end at EOF, having read what the handler wrote last
	// (its stderr says why it failed). Closing orca's ends stops them
	// anyway, if a process that left the group holds the other ends.
	done := make(chan struct{})
	go func() {
		in.readers.Wait()
		close(done)
	}()
	t := time.NewTimer(readGrace)
	select {
	case <-done:
	case <-t.C:
	}
	t.Stop()
	in.stdout.Close()
	in.errOut.Close()
	<-done
}

// status describes how the process ended (after exited is closed), or
// that it is still running.
func (in *instance) status() string {
	select {
	case <-in.exited:
	default:
		return "it was still running, and was killed"
	}
	if !in.cmd.Exited() {
		return "it could not be waited for"
	}
	code, sig := in.cmd.Status()
	if sig != 0 {
		return fmt.Sprintf("it was killed by signal %v", sig)
	}
	return fmt.Sprintf("it exited with status %d", code)
}

// stderrDetail returns "; stderr: …" with the end of what a handler
// wrote on stderr, or "".
func stderrDetail(b *tailbuf.Buffer) string {
	s, dropped := b.Tail()
	s = strings.TrimSpace(strings.ToValidUTF8(s, "�"))
	if s == "" {
		return ""
	}
	if dropped > 0 {
		s = "…" + s
	}
	return "; stderr: " + s
}
