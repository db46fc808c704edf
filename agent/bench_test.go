package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/middleware"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/toolset"
	"github.com/orca-agent/orca/workspace"
)

type noop struct{}

func (noop) Name() string        { return "Noop" }
func (noop) Description() string { return "Does nothing." }
func (noop) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)
}
func (noop) Execute(ctx context.Context, call *tool.Call) tool.Result {
	return tool.Result{Content: "ok"}
}

// noopCalls are the responses of steps steps, each a call of Noop with an
// id of its own, as a provider's calls have (orca renames a call whose id
// the conversation has already used).
func noopCalls(steps int) []*llm.Response {
	rs := make([]*llm.Response, steps)
	for s := range rs {
		rs[s] = &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.ToolUseBlock(fmt.Sprint("call_", s), "Noop", json.RawMessage(`{"n":1}`)),
		}}, StopReason: llm.StopToolUse}
	}
	return rs
}

// BenchmarkLoop measures the agent loop with a model that answers at once
// from prepared responses: each turn runs `steps` iterations that each ask
// for K no-op tool calls, then an answer. Schema validation, the full
// default registry and event emission to a listener are all on the path.
// ns/step and allocs/step are per iteration (one model call and K tool
// calls).
func BenchmarkLoop(b *testing.B) {
	const steps = 100
	for _, k := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("K=%d", k), func(b *testing.B) {
			// Each step's calls have ids of their own, as a provider's do.
			toolResps := make([]*llm.Response, steps)
			for s := range toolResps {
				calls := llm.Message{Role: llm.RoleAssistant}
				for i := range k {
					calls.Content = append(calls.Content, llm.ToolUseBlock(fmt.Sprint("call_", s, "_", i), "Noop", json.RawMessage(`{"n":1}`)))
				}
				toolResps[s] = &llm.Response{Message: calls, StopReason: llm.StopToolUse}
			}
			answer := &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("done")}}, StopReason: llm.StopEndTurn}
			client := llm.ClientFunc(func(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
				if len(req.Messages) >= 2*steps+1 {
					return answer, nil
				}
				return toolResps[len(req.Messages)/2], nil
			})
			fs, err := workspace.OpenLocal(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer fs.Close()
			providers := append(toolset.Default(), tool.Static("noop", noop{}))
			rt, err := agent.New(agent.Definition{Name: "bench", MaxIterations: steps + 1, ToolProviders: providers}, agent.Collaborators{Client: client, FS: fs})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			ex := agent.NewExecutor()
			var events int
			req := agent.Request{SessionID: "bench", Input: "go", OnEvent: func(event.Event) { events++ }}
			ctx := context.Background()

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res, err := ex.Execute(ctx, rt, req)
				if err != nil || res.ToolCalls != steps*k {
					b.Fatalf("turn: %+v, %v", res, err)
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			n := float64(b.N * steps)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/step")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/step")
		})
	}
}

// BenchmarkPipeline measures one iteration with one tool call through the
// whole pipeline: with nothing registered, and with 5 hooks (PRE_TOOL_USE
// ×3, POST_TOOL_USE ×2, all continuing) and 4 middleware (one per chain,
// all passing through) on shared services.
func BenchmarkPipeline(b *testing.B) {
	const steps = 100
	for _, loaded := range []bool{false, true} {
		name := "bare"
		if loaded {
			name = "hooks=5,middleware=4"
		}
		b.Run(name, func(b *testing.B) {
			toolResps := noopCalls(steps)
			answer := &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("done")}}, StopReason: llm.StopEndTurn}
			client := llm.ClientFunc(func(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
				if len(req.Messages) >= 2*steps+1 {
					return answer, nil
				}
				return toolResps[len(req.Messages)/2], nil
			})
			svc := agent.NewServices(nil)
			defer svc.Close()
			if loaded {
				cont := hook.HandlerFunc(func(context.Context, hook.Payload) (*hook.Decision, error) { return nil, nil })
				for i, n := range []hook.Name{hook.PreToolUse, hook.PreToolUse, hook.PreToolUse, hook.PostToolUse, hook.PostToolUse} {
					svc.Hooks.Register(n, fmt.Sprint("h", i), cont)
				}
				svc.Middleware.RegisterToolRequest("tr", func(ctx context.Context, c *tool.Call) (*tool.Call, error) { return c, nil })
				svc.Middleware.RegisterToolExecution("te", func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
					return next(ctx, c)
				})
				svc.Middleware.RegisterLLMRequest("lr", func(ctx context.Context, r *llm.Request) (*llm.Request, error) { return r, nil })
				svc.Middleware.RegisterLLMExecution("le", func(ctx context.Context, r *llm.Request, next middleware.LLMNext) (*llm.Response, error) {
					return next(ctx, r)
				})
			}
			fs, err := workspace.OpenLocal(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer fs.Close()
			rt, err := agent.New(agent.Definition{Name: "bench", MaxIterations: steps + 1, ToolProviders: []tool.Provider{tool.Static("noop", noop{})}},
				agent.Collaborators{Client: client, FS: fs, Services: svc})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			ex := agent.NewExecutor()
			req := agent.Request{SessionID: "bench", Input: "go"}
			ctx := context.Background()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if res, err := ex.Execute(ctx, rt, req); err != nil || res.ToolCalls != steps {
					b.Fatalf("turn: %+v, %v", res, err)
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			n := float64(b.N * steps)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/step")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/step")
		})
	}
}

// BenchmarkPeerStyle is the comparison other runtimes' benchmarks make: a
// fresh conversation per iteration, with N no-op tool steps before the
// answer (N = 0, 1, 8, 32). The per-step cost is (T32 − T0)/32 of the
// ns/op figures, the setup of a turn is T0.
func BenchmarkPeerStyle(b *testing.B) {
	for _, n := range []int{0, 1, 8, 32} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			calls := noopCalls(n)
			answer := &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("done")}}, StopReason: llm.StopEndTurn}
			client := llm.ClientFunc(func(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
				if len(req.Messages) >= 2*n+1 {
					return answer, nil
				}
				return calls[len(req.Messages)/2], nil
			})
			fs, err := workspace.OpenLocal(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer fs.Close()
			rt, err := agent.New(agent.Definition{Name: "bench", MaxIterations: n + 1, ToolProviders: []tool.Provider{tool.Static("noop", noop{})}},
				agent.Collaborators{Client: client, FS: fs})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			ex := agent.NewExecutor()
			req := agent.Request{SessionID: "bench", Input: "go"}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if res, err := ex.Execute(ctx, rt, req); err != nil || res.ToolCalls != n {
					b.Fatalf("turn: %+v, %v", res, err)
				}
			}
		})
	}
}

// readOnlyNoop is noop declared read-only: its calls run at once.
type readOnlyNoop struct{ noop }

func (readOnlyNoop) Traits() tool.Traits { return tool.Traits{ReadOnly: true} }

// BenchmarkParallelTools measures one response of 8 calls, run one after
// another (MaxParallelTools 1) and at once (the default):
//
//   - noop: read-only no-op tools, so the figure is the concurrent path's
//     own cost per call (ns/call);
//   - read-cold: the Read tool on 8 files of 4 MiB each, dropped from the
//     page cache (posix_fadvise DONTNEED) before each turn, so that every
//     read waits for the disk.
func BenchmarkParallelTools(b *testing.B) {
	const k = 8
	for _, kind := range []string{"noop", "read-cold"} {
		for _, limit := range []int{1, 0} {
			name := kind + "/parallel"
			if limit == 1 {
				name = kind + "/sequential"
			}
			b.Run(name, func(b *testing.B) {
				dir := b.TempDir()
				calls := llm.Message{Role: llm.RoleAssistant}
				var files []string
				for i := range k {
					input := json.RawMessage(`{"n":1}`)
					name := "Noop"
					if kind == "read-cold" {
						p := filepath.Join(dir, fmt.Sprintf("f%d.txt", i))
						line := strings.Repeat("x", 99) + "\n"
						if err := os.WriteFile(p, []byte(strings.Repeat(line, 4<<20/len(line))), 0o644); err != nil {
							b.Fatal(err)
						}
						files = append(files, p)
						name, input = "Read", json.RawMessage(fmt.Sprintf(`{"file_path":%q,"limit":100000}`, p))
					}
					calls.Content = append(calls.Content, llm.ToolUseBlock(fmt.Sprint("call_", i), name, input))
				}
				toolResp := &llm.Response{Message: calls, StopReason: llm.StopToolUse}
				answer := &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("done")}}, StopReason: llm.StopEndTurn}
				client := llm.ClientFunc(func(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
					if len(req.Messages) >= 3 {
						return answer, nil
					}
					return toolResp, nil
				})
				fs, err := workspace.OpenLocal(dir)
				if err != nil {
					b.Fatal(err)
				}
				defer fs.Close()
				providers := append(toolset.Default(), tool.Static("noop", readOnlyNoop{}))
				rt, err := agent.New(agent.Definition{Name: "bench", MaxParallelTools: limit, MaxResultChars: 1 << 30, ToolProviders: providers}, agent.Collaborators{Client: client, FS: fs})
				if err != nil {
					b.Fatal(err)
				}
				defer rt.Close()
				ex := agent.NewExecutor()
				req := agent.Request{SessionID: "bench", Input: "go"}
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					if kind == "read-cold" {
						b.StopTimer()
						for _, p := range files {
							dropCache(b, p)
						}
						b.StartTimer()
					}
					if res, err := ex.Execute(ctx, rt, req); err != nil || res.ToolCalls != k {
						b.Fatalf("turn: %+v, %v", res, err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*k), "ns/call")
			})
		}
	}
}

// dropCache asks the kernel to drop path's pages from the page cache.
func dropCache(b *testing.B, path string) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		b.Fatal(err)
	}
}
