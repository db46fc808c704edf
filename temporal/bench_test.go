package temporal_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm/anthropic"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/temporal"
)

// BenchmarkServerTurns runs b.N turns, 8 sessions at once, each turn four
// Read calls and an answer from the HTTP model, on the workspace's SQLite
// store: "local" runs them in this process (session.LiveSession.Run),
// "durable" asks a Temporal dev server for them, run by a worker in this
// process with the same App (and its own task queue, as orca-temporal
// worker runs). What durable costs more is the engine's: the update's
// round trip, an activity per model call (the Reads its answer asks for
// run in it) — a workflow task, history, a dispatch where the server does
// not execute it eagerly — the session opened per turn (its lease).
//
//	go test ./temporal -run '^$' -bench ServerTurns -benchtime 200x
func BenchmarkServerTurns(b *testing.B) {
	const steps = 4
	concurrent := 8
	if n, err := strconv.Atoi(os.Getenv("ORCA_BENCH_CONCURRENT")); err == nil && n > 0 {
		concurrent = n
	}
	model := newFakeModel(b, func(step int) (string, []fakeCall) {
		if step%(steps+1) < steps {
			return "", []fakeCall{{"Read", map[string]string{"file_path": "data.txt"}}}
		}
		return "done", nil
	})
	model.setPerTurn(true)
	for _, engine := range []string{"local", "durable"} {
		b.Run(engine, func(b *testing.B) {
			ws := b.TempDir()
			if err := os.WriteFile(filepath.Join(ws, "data.txt"), []byte("data\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			llmc, err := anthropic.New(anthropic.APIKey("bench"), anthropic.BaseURL(model.URL))
			if err != nil {
				b.Fatal(err)
			}
			a, err := app.Open(b.Context(), app.Config{Workspace: ws, ConfigDir: "-", ClaudeDir: "-", NoMCP: true, Client: llmc,
				Mode: policy.ModeBypass, Logger: quietLogger()})
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			var run func(ctx context.Context, sessionID, turnID string) error
			switch engine {
			case "local":
				run = func(ctx context.Context, sessionID, turnID string) error {
					ls, err := a.Session(ctx, app.SessionOptions{ID: sessionID, Wait: time.Minute})
					if err != nil {
						return err
					}
					defer ls.Close(ctx)
					_, err = ls.Run(ctx, "read", session.WithTurnID(turnID))
					return err
				}
			case "durable":
				tc, err := client.Dial(client.Options{HostPort: server(b), Logger: log.NewStructuredLogger(quietLogger())})
				if err != nil {
					b.Skip(err)
				}
				defer tc.Close()
				queue := fmt.Sprintf("orca-bench-%d", time.Now().UnixNano())
				acts := &temporal.Activities{App: a, Queue: queue + "/worker/1"}
				defer acts.Close()
				w := worker.New(tc, queue, worker.Options{})
				temporal.Register(w, acts)
				own := worker.New(tc, acts.Queue, worker.Options{})
				temporal.RegisterOwn(own, acts)
				for _, w := range []worker.Worker{w, own} {
					if err := w.Start(); err != nil {
						b.Fatal(err)
					}
					defer w.Stop()
				}
				c := &temporal.Client{Temporal: tc, TaskQueue: queue}
				run = func(ctx context.Context, sessionID, turnID string) error {
					_, err := c.Turn(ctx, sessionID, temporal.TurnRequest{TurnID: turnID, Input: "read"})
					return err
				}
			}
			var next atomic.Int64
			var mu sync.Mutex
			var lat []time.Duration
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for s := range concurrent {
				wg.Go(func() {
					for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
						t0 := time.Now()
						if err := run(b.Context(), fmt.Sprintf("s%d", s), fmt.Sprintf("t%d", i)); err != nil {
							b.Error(err)
							return
						}
						mu.Lock()
						lat = append(lat, time.Since(t0))
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			slices.Sort(lat)
			if len(lat) > 0 {
				b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "turns/s")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms/turn")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms/turn")
				// A turn's steps: its model calls (steps+1) and tool calls.
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000/float64(2*steps+1), "p50-ms/step")
			}
		})
	}
}

// BenchmarkActivityRoundTrip is the floor a durable step stands on: one
// workflow running b.N activities that do nothing, one after another, on
// the same dev server as BenchmarkServerTurns. Its ns/op is an activity's
// round trip: scheduled in the history, dispatched to a worker, run,
// completed, and the workflow task that goes on from it.
//
//	go test ./temporal -run '^$' -bench 'ActivityRoundTrip|ServerTurns' -benchtime 200x
func BenchmarkActivityRoundTrip(b *testing.B) {
	tc, err := client.Dial(client.Options{HostPort: server(b), Logger: log.NewStructuredLogger(quietLogger())})
	if err != nil {
		b.Skip(err)
	}
	defer tc.Close()
	queue := fmt.Sprintf("orca-bench-rt-%d", time.Now().UnixNano())
	w := worker.New(tc, queue, worker.Options{})
	noop := func(context.Context) error { return nil }
	w.RegisterActivityWithOptions(noop, activity.RegisterOptions{Name: "noop"})
	w.RegisterWorkflowWithOptions(func(ctx workflow.Context, n int) error {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
		for range n {
			if err := workflow.ExecuteActivity(ctx, "noop").Get(ctx, nil); err != nil {
				return err
			}
		}
		return nil
	}, workflow.RegisterOptions{Name: "roundTrips"})
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	b.ResetTimer()
	run, err := tc.ExecuteWorkflow(b.Context(), client.StartWorkflowOptions{TaskQueue: queue}, "roundTrips", b.N)
	if err != nil {
		b.Fatal(err)
	}
	if err := run.Get(b.Context(), nil); err != nil {
		b.Fatal(err)
	}
}
