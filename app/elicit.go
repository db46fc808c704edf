package app

import (
	"context"
	"sync/atomic"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/elicit"
)

// runtimeElicitor asks the runtime (agent.Runtime.Elicitor: its hooks, then
// Config.Elicitor) the questions MCP servers ask outside any call, once
// the runtime is built; one asked while it is being built (a server's
// start) is declined.
type runtimeElicitor struct {
	rt atomic.Pointer[agent.Runtime]
}

// Elicit implements elicit.Elicitor.
func (e *runtimeElicitor) Elicit(ctx context.Context, req elicit.Request) (elicit.Answer, error) {
	if rt := e.rt.Load(); rt != nil {
		return rt.Elicitor().Elicit(ctx, req)
	}
	return elicit.Headless{}.Elicit(ctx, req)
}
