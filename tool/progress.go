package tool

import (
	"context"
	"math"
)

// Progress is how far a running call has come, as the tool says it
// (Report).
type Progress struct {
	// Progress is how much is done, of Total if the tool knows it (0: it
	// does not).
	Progress, Total float64
	// Message says what the call is doing.
	Message string
}

type progressKey struct{}

// WithProgress returns a context whose tool call reports its progress to
// f: the runtime hands one to each call of a tool that reports
// (Traits.Reports) it runs while someone watches its events, and makes
// each report a tool_progress event of the call. f may
// be called from any goroutine while the call runs.
func WithProgress(ctx context.Context, f func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

// Report tells whoever watches the call of ctx how far it has come (an
// MCP server's notifications/progress, say); it does nothing when no one
// does. A report whose numbers are not finite is dropped.
func Report(ctx context.Context, p Progress) {
	f, _ := ctx.Value(progressKey{}).(func(Progress))
	if f == nil || !finite(p.Progress) || !finite(p.Total) {
		return
	}
	f(p)
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
