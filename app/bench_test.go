package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/toolset"
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

// BenchmarkCLIStep is one loop step (a model call and a no-op tool call)
// wired the way `orca run` wires a turn, through app.Open: services and
// bus, every event written as an observation row, a policy (default mode,
// an allow rule for the tool), approvals in the store, the session's feed
// to an OnEvent, the full default tool set. Only the model is a function
// that answers at once. ns/step and allocs/step are per iteration.
//
// Each turn opens its session and closes it inside the timed part, as
// `orca run` does. The timer is never stopped: StopTimer and StartTimer
// each stop the world to read the memory statistics, and four of those a
// turn made the steps after them slower (by about 350 ns/step on the
// 2-vCPU CI machine) than opening and closing the session costs.
func BenchmarkCLIStep(b *testing.B) { benchCLIStep(b, app.Config{}) }

// BenchmarkCLIStepLanguageServers is BenchmarkCLIStep with language
// servers installed (a gopls on the PATH, which no step's call starts:
// the calls change no Go file), as orca run has them: what the
// diagnostics middleware costs a step that does not use it.
func BenchmarkCLIStepLanguageServers(b *testing.B) {
	bin := b.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "gopls"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	benchCLIStep(b, app.Config{LanguageServers: true, Getenv: func(k string) string {
		if k == "PATH" {
			return bin
		}
		return ""
	}})
}

// stepsClient answers a turn's requests with a call of tool name with
// input for each of its steps, then "done". Each call has an id of its
// own, as a provider's calls have.
func stepsClient(steps int, name string, input json.RawMessage) llm.Client {
	calls := make([]*llm.Response, steps)
	for i := range calls {
		calls[i] = &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock(fmt.Sprint("call_", i), name, input)}}, StopReason: llm.StopToolUse}
	}
	answer := &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("done")}}, StopReason: llm.StopEndTurn}
	return llm.ClientFunc(func(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
		if len(req.Messages) >= 2*steps+1 {
			return answer, nil
		}
		return calls[len(req.Messages)/2], nil
	})
}

// benchCLIStep runs turns of 100 steps on an App of cfg's LanguageServers
// and Getenv.
func benchCLIStep(b *testing.B, cfg app.Config) {
	const steps = 100
	client := stepsClient(steps, "Noop", json.RawMessage(`{"n":1}`))
	st := store.NewMemory()
	defer st.Close()
	a, err := app.Open(context.Background(), app.Config{
		Workspace: b.TempDir(), ConfigDir: "-", Client: client, Store: st, MaxIterations: steps + 1,
		ToolProviders: append(toolset.Default(), tool.Static("noop", noop{})), Allow: []string{"Noop"},
		LanguageServers: cfg.LanguageServers, Getenv: cfg.Getenv,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	bus := a.Services().Bus
	var events int
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s, err := a.Session(context.Background(), app.SessionOptions{OnEvent: func(event.Event) { events++ }})
		if err != nil {
			b.Fatal(err)
		}
		res, err := s.Run(context.Background(), "go")
		if err != nil || res.ToolCalls != steps {
			b.Fatalf("turn: %+v, %v", res, err)
		}
		// The turn's rows are handed to the store before the next turn
		// starts, as orca run's are before it exits: the step's cost
		// includes writing its rows, and a turn never runs ahead of the
		// rows of the turns before it.
		if err := bus.Flush(context.Background()); err != nil {
			b.Fatal(err)
		}
		s.Close(context.Background())
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	n := float64(b.N * steps)
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/step")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/step")
	if events == 0 {
		b.Fatal("no events reached the feed")
	}
	// No event may be dropped to make a step cheaper: the bus drops only
	// when a listener's buffer is full.
	if st := bus.Stats(); st.Dropped > 0 || st.Failed > 0 {
		b.Fatalf("the bus dropped %d events and %d listeners failed", st.Dropped, st.Failed)
	}
}

// BenchmarkCLIBashStep is what a Bash call costs over the command itself:
// steps of a turn wired as BenchmarkCLIStep's (the memory store, the
// default tool set), each a Bash call of `true` in the OS sandbox (its
// server started before the timer, as an earlier call would have), beside
// a Noop step and a bare exec of the command line Bash runs (`bash -c
// true`), measured in the same run. ns/step is per step; the command's
// own exec is the exec sub-benchmark's ns/op.
func BenchmarkCLIBashStep(b *testing.B) {
	b.Run("exec", func(b *testing.B) {
		shell, err := exec.LookPath("bash")
		if err != nil {
			shell = "/bin/sh"
		}
		for b.Loop() {
			if err := exec.Command(shell, "-c", "true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, name := range []string{"Noop", "Bash"} {
		b.Run(name, func(b *testing.B) {
			const steps = 20
			input := json.RawMessage(`{"n":1}`)
			if name == "Bash" {
				input = json.RawMessage(`{"command":"true"}`)
			}
			client := stepsClient(steps, name, input)
			st := store.NewMemory()
			defer st.Close()
			a, err := app.Open(context.Background(), app.Config{
				Workspace: b.TempDir(), ConfigDir: "-", Client: client, Store: st, MaxIterations: steps + 1,
				ToolProviders: append(toolset.Default(), tool.Static("noop", noop{})), Allow: []string{"Noop", "Bash"},
			})
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			if err := a.SandboxError(); err != nil {
				b.Skip(err)
			}
			for b.Loop() {
				s, err := a.Session(context.Background(), app.SessionOptions{})
				if err != nil {
					b.Fatal(err)
				}
				res, err := s.Run(context.Background(), "go")
				if err != nil || res.ToolCalls != steps {
					b.Fatalf("turn: %+v, %v", res, err)
				}
				s.Close(context.Background())
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*steps), "ns/step")
		})
	}
}
