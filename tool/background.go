package tool

import (
	"context"
	"io"
)

// Background runs work a call starts that goes on after the call has
// returned — Bash's run_in_background — as a background task of the
// call's owner (its session): AgentOutput reads its output, running or
// not, TaskStop stops it, and the runtime's Close stops what still runs.
// The runtime hands it to the tools whose Traits say Background, through
// their call's context (BackgroundFrom).
type Background interface {
	// Start runs run on a goroutine of its own and returns the task's id
	// at once. run's context is cancelled by TaskStop and by the
	// runtime's Close; what it writes to out is the task's output (its
	// end is kept when it is long); its error, if any, fails the task.
	// kind names what runs (the tool: "Bash"), description what it does.
	Start(call *Call, kind, description string, run func(ctx context.Context, out io.Writer) error) (id string, err error)
}

type backgroundKey struct{}

// WithBackground returns a context carrying b.
func WithBackground(ctx context.Context, b Background) context.Context {
	return context.WithValue(ctx, backgroundKey{}, b)
}

// BackgroundFrom returns the Background carried by ctx, or nil.
func BackgroundFrom(ctx context.Context) Background {
	b, _ := ctx.Value(backgroundKey{}).(Background)
	return b
}
