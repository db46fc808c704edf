package tooltest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/orca-agent/orca/tool"
)

// background is the tool.Background the kit hands a tool whose traits say
// Background, as the runtime does: it runs each task on a goroutine until
// the check ends, then cancels its context, as TaskStop and the runtime's
// Close do, and wants it back within the grace.
type background struct {
	t      testing.TB
	grace  time.Duration
	ctx    context.Context
	cancel context.CancelFunc

	mu    sync.Mutex
	tasks []*task
	over  bool // the check has ended: no more tasks, no more reports
}

type task struct {
	id, kind, input string
	done            chan struct{}
}

// background returns the Background of one check, or nil for a tool whose
// traits do not say Background (the runtime hands it none).
func (k *kit) background(t testing.TB) *background {
	if !tool.TraitsOf(k.tool).Background {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &background{t: t, grace: k.grace, ctx: ctx, cancel: cancel}
}

// Start implements tool.Background.
func (b *background) Start(call *tool.Call, kind, description string, run func(ctx context.Context, out io.Writer) error) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.over {
		return "", errors.New("tooltest: the check has ended")
	}
	if call == nil {
		b.t.Errorf("Background.Start(nil, %q, %q, …): the call is what the task belongs to (its session's)", kind, description)
		return "", errors.New("tooltest: no call")
	}
	if kind == "" {
		b.t.Errorf("Background.Start for input %s: kind is empty; it names what runs (the tool)", show(string(call.Input)))
	}
	tk := &task{id: fmt.Sprintf("tooltest-task-%d", len(b.tasks)+1), kind: kind, input: string(call.Input), done: make(chan struct{})}
	b.tasks = append(b.tasks, tk)
	go func() {
		defer close(tk.done)
		if p, stack := caught(func() { _ = run(b.ctx, io.Discard) }); p != nil {
			b.report("the background task %s that input %s started panicked: %v\n%s", tk.id, show(tk.input), p, stack)
		}
	}()
	return tk.id, nil
}

func (b *background) report(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.over {
		b.t.Errorf(format, args...)
	}
}

// stop cancels the tasks' context, fails the check for every task that
// does not end within the grace, and reports whether all ended. A nil b
// has nothing to stop.
func (b *background) stop() bool {
	if b == nil {
		return true
	}
	b.cancel()
	b.mu.Lock()
	tasks := b.tasks
	b.mu.Unlock()
	timer := time.NewTimer(b.grace)
	defer timer.Stop()
	expired, ended := false, true
	for _, tk := range tasks {
		if !expired {
			select {
			case <-tk.done:
				continue
			case <-timer.C:
				expired = true
			}
		}
		select {
		case <-tk.done:
		default:
			ended = false
			b.report("the background task %s (%s) that input %s started did not end within %v of its context's end: TaskStop and the runtime's Close could not stop it", tk.id, tk.kind, show(tk.input), b.grace)
		}
	}
	b.mu.Lock()
	b.over = true
	b.mu.Unlock()
	return ended
}
