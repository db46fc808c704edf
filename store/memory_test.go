package store_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"go.uber.org/goleak"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return store.NewMemory() })
}

func TestMemorySchedules(t *testing.T) {
	storetest.RunSchedules(t, func(t *testing.T) store.Schedules { return store.NewMemory() })
	t.Run("Shared", func(t *testing.T) {
		storetest.RunSharedSchedules(t, func(t *testing.T) (a, b store.Schedules) {
			m := store.NewMemory()
			return m, m
		})
	})
}

// idleSessionHeap provisions n sessions in a new memory store, each with
// the three records of a short exchange (a prompt, a tool call, its
// result; strings of their own, as a model's reply would have), and
// returns the live heap the store holds per session after a collection.
func idleSessionHeap(tb testing.TB, n int) float64 {
	tb.Helper()
	ctx := context.Background()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := store.NewMemory()
	for i := range n {
		id := fmt.Sprint("session-", i)
		if _, err := s.Provision(ctx, store.Session{ID: id, RuntimeID: "r1", Workspace: "/home/me/project", Agent: "coder"}); err != nil {
			tb.Fatal(err)
		}
		turn := fmt.Sprint("turn-", i)
		if _, err := s.Append(ctx, id,
			store.Record{Kind: store.KindMessage, TurnID: turn, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(fmt.Sprintf("Why does the test in pkg%d fail?", i))}}},
			store.Record{Kind: store.KindMessage, TurnID: turn, Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
				llm.TextBlock("Let me read it."),
				llm.ToolUseBlock(fmt.Sprint("toolu_", i), "Read", []byte(fmt.Sprintf(`{"file_path":"pkg%d/x_test.go"}`, i))),
			}}},
			store.Record{Kind: store.KindMessage, TurnID: turn, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock(fmt.Sprint("toolu_", i), fmt.Sprintf("package pkg%d\n\nfunc TestX(t *testing.T) { t.Fatal(%d) }\n", i, i), false)}}},
		); err != nil {
			tb.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(s)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

// BenchmarkIdleSessionHeap reports the live heap of an idle session (three
// records) in the memory store, as B/session.
func BenchmarkIdleSessionHeap(b *testing.B) {
	var per float64
	for b.Loop() {
		per = idleSessionHeap(b, 2000)
	}
	b.ReportMetric(per, "B/session")
}

// An idle session costs the memory store a few records' worth of heap, not
// a preallocated transcript: many idle sessions fit in one process.
func TestIdleSessionHeap(t *testing.T) {
	const limit = 3 << 10
	if per := idleSessionHeap(t, 500); per > limit {
		t.Errorf("an idle session of three records holds %.0f bytes of heap, want at most %d", per, limit)
	}
}
