package hook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/orca-agent/orca/hook"
)

// BenchmarkRun measures one run of a hook point with N in-process
// handlers that all continue: the cost the control plane adds to a tool
// call per PRE_TOOL_USE handler.
func BenchmarkRun(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("handlers=%d", n), func(b *testing.B) {
			r := hook.NewRegistry()
			cont := hook.HandlerFunc(func(context.Context, hook.Payload) (*hook.Decision, error) { return nil, nil })
			for i := range n {
				r.Register(hook.PreToolUse, fmt.Sprint("h", i), cont)
			}
			ctx := context.Background()
			p := &hook.PreToolUsePayload{ToolCall: hook.ToolCall{ToolName: "Bash", ToolUseID: "t1", Arguments: json.RawMessage(`{"command":"ls"}`)}}
			var f hook.Frame
			b.ReportAllocs()
			for b.Loop() {
				f = hook.Frame{}
				if out := r.RunIn(ctx, &f, p); out.Action != hook.Continue {
					b.Fatalf("outcome %+v", out)
				}
			}
		})
	}
}
