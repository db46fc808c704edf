package agent

import (
	"context"
	"sync"
	"time"

	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/tool"
)

// progress makes what a running call reports (tool.Report) its
// tool_progress events. Reports come on the tool's goroutines (an MCP
// server's notifications, read by the SDK), not the turn's, so the events
// go where the events of other goroutines go: the bus and
// Request.OnBackgroundEvent, which a live session serialises with the
// rest of its feed. end closes it before the call's end is told: no
// report reaches anyone after tool_exec_completed.
type progress struct {
	t     *turn
	scope scope.Scope
	iter  int
	id    string
	name  string

	mu    sync.Mutex
	ended bool
}

// withProgress returns ctx with a reporter for call, and the function
// that closes it; ctx itself when no one watches the turn's events.
func (t *turn) withProgress(ctx context.Context, call *tool.Call) (context.Context, func()) {
	if !t.observed() {
		return ctx, func() {}
	}
	p := &progress{t: t, scope: t.res.Scope, iter: t.res.Iterations, id: call.ID, name: call.Name}
	return tool.WithProgress(ctx, p.report), p.end
}

func (p *progress) report(r tool.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	now := time.Now()
	if p.t.e.Now != nil {
		now = p.t.e.Now()
	}
	e := event.Event{Name: event.ToolProgress, Time: now, Scope: p.scope, Data: &event.ToolProgressData{
		Iteration: p.iter, ToolUseID: p.id, ToolName: p.name, Progress: r.Progress, Total: r.Total, Message: r.Message,
	}}
	if p.t.rt.bus.Watched() {
		p.t.rt.bus.Publish(e)
	}
	if f := p.t.req.OnBackgroundEvent; f != nil {
		f(e)
	}
}

// end drops the reports that come after it, and waits for one being told.
func (p *progress) end() {
	p.mu.Lock()
	p.ended = true
	p.mu.Unlock()
}
