package subagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/orca-agent/orca/internal/tailbuf"
)

// Status is where a background task is in its life.
type Status string

// Task statuses.
const (
	Running   Status = "running"
	Completed Status = "completed"
	Failed    Status = "failed"
	Stopped   Status = "stopped"
)

// TaskInfo is what a task's owner may learn of it.
type TaskInfo struct {
	// Agent is the fork's agent, or what else runs (StartOutput's kind:
	// "Bash").
	ID, Agent, Description string
	Status                 Status
	// Output is the fork's answer once it completed, or what a
	// StartOutput task has written so far, running or not (its last
	// OutputMax bytes); Error why it failed.
	Output, Error     string
	Started, Finished time.Time
	// Streams: the task's Output is what it writes (StartOutput), not an
	// answer.
	Streams bool
}

type task struct {
	info   TaskInfo
	owner  string
	cancel context.CancelFunc
	done   chan struct{}
	out    *tailbuf.Buffer // StartOutput's; nil for Start's
}

// Manager runs background tasks and keeps them for their owners. By
// default every runtime of a process shares one Manager (as production
// does), so the ownership check is what keeps one session out of
// another's tasks: anyone but the owner is told there is no such task.
// The runtime that created a Manager closes it.
type Manager struct {
	mu     sync.Mutex
	tasks  map[string]*task
	seq    int
	wg     sync.WaitGroup
	closed bool
}

// NewManager returns an empty manager.
func NewManager() *Manager { return &Manager{tasks: make(map[string]*task)} }

// ErrClosed is returned by Start on a closed manager.
var ErrClosed = errors.New("subagent: the task manager is closed")

// Start runs fn in the background for owner and returns the task's id at
// once. fn's context is cancelled by Stop and by Close.
func (m *Manager) Start(owner, agent, description string, fn func(ctx context.Context) (string, error)) (string, error) {
	return m.start(owner, agent, description, nil, fn)
}

// OutputMax is how much of a StartOutput task's output is kept: its last
// bytes.
const OutputMax = 30000

// StartOutput runs fn in the background for owner, as Start does, and
// keeps what fn writes to out as the task's Output, readable while it
// runs: a command's (Bash's run_in_background). kind names what runs.
func (m *Manager) StartOutput(owner, kind, description string, fn func(ctx context.Context, out io.Writer) error) (string, error) {
	buf := &tailbuf.Buffer{Max: OutputMax}
	return m.start(owner, kind, description, buf, func(ctx context.Context) (string, error) {
		return "", fn(ctx, buf)
	})
}

func (m *Manager) start(owner, agent, description string, buf *tailbuf.Buffer, fn func(ctx context.Context) (string, error)) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return "", ErrClosed
	}
	// Ids are sequential per manager: predictable, so a script can name
	// them, and safe, because only the owner ever learns a task exists.
	m.seq++
	id := fmt.Sprintf("task_%d", m.seq)
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), taskKey{}, id))
	t := &task{owner: owner, cancel: cancel, done: make(chan struct{}), out: buf,
		info: TaskInfo{ID: id, Agent: agent, Description: description, Status: Running, Started: time.Now(), Streams: buf != nil}}
	m.tasks[id] = t
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer cancel()
		out, err := fn(ctx)
		m.mu.Lock()
		t.info.Finished = time.Now()
		switch {
		case t.info.Status == Stopped:
		case err != nil:
			t.info.Status, t.info.Error = Failed, err.Error()
		default:
			t.info.Status, t.info.Output = Completed, out
		}
		m.mu.Unlock()
		close(t.done)
	}()
	return id, nil
}

// output is what a command has written, as far as it is kept: its last
// OutputMax bytes, after a line saying how many came before.
func output(b *tailbuf.Buffer) string {
	s, dropped := b.Tail()
	if dropped > 0 {
		return fmt.Sprintf("[… the first %d bytes are not kept]\n%s", dropped, s)
	}
	return s
}

type taskKey struct{}

// TaskIDFrom returns the id of the background task whose function runs
// with ctx, or "".
func TaskIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(taskKey{}).(string)
	return id
}

func (m *Manager) get(owner, id string) (*task, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[id]
	if !ok || t.owner != owner {
		return nil, false
	}
	return t, true
}

// Get returns task id if owner owns it; otherwise false, exactly as for a
// task that does not exist.
func (m *Manager) Get(owner, id string) (TaskInfo, bool) {
	t, ok := m.get(owner, id)
	if !ok {
		return TaskInfo{}, false
	}
	m.mu.Lock()
	info := t.info
	m.mu.Unlock()
	if t.out != nil {
		info.Output = output(t.out)
	}
	return info, true
}

// Wait waits until task id is over or ctx is done, then returns it (for
// its owner only).
func (m *Manager) Wait(ctx context.Context, owner, id string) (TaskInfo, bool) {
	t, ok := m.get(owner, id)
	if !ok {
		return TaskInfo{}, false
	}
	select {
	case <-t.done:
	case <-ctx.Done():
	}
	return m.Get(owner, id)
}

// Stop stops task id for its owner: its context is cancelled and its
// goroutines released. It reports false for anyone else, and for a task
// already over.
func (m *Manager) Stop(owner, id string) bool {
	t, ok := m.get(owner, id)
	if !ok {
		return false
	}
	m.mu.Lock()
	if t.info.Status != Running {
		m.mu.Unlock()
		return false
	}
	t.info.Status = Stopped
	m.mu.Unlock()
	t.cancel()
	<-t.done
	return true
}

// StopOwner stops every running task of owner and waits for them: what a
// program does when it leaves a session (orca chat's /clear), since tasks
// outlive a session's handles. It returns the tasks it stopped, in the
// order they started.
func (m *Manager) StopOwner(owner string) []TaskInfo {
	m.mu.Lock()
	var stopped []*task
	for _, t := range m.tasks {
		if t.owner == owner && t.info.Status == Running {
			t.info.Status = Stopped
			stopped = append(stopped, t)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(stopped, func(a, b *task) int { return a.info.Started.Compare(b.info.Started) })
	infos := make([]TaskInfo, len(stopped))
	for i, t := range stopped {
		t.cancel()
		<-t.done
		m.mu.Lock()
		infos[i] = t.info
		m.mu.Unlock()
	}
	return infos
}

// Close stops every running task and waits for their goroutines.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	for _, t := range m.tasks {
		if t.info.Status == Running {
			t.info.Status = Stopped
		}
		t.cancel()
	}
	m.mu.Unlock()
	m.wg.Wait()
	return nil
}
