package postgres_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
)

// BenchmarkAppendStep is one step of a turn — a message and its totals,
// checked against the writer's lease — on the test server, one writer at
// a time.
func BenchmarkAppendStep(b *testing.B) {
	s := open(b, freshSchema(b))
	defer s.Close()
	if _, err := s.Provision(ctx, store.Session{ID: "s1", RuntimeID: "r"}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.AcquireLease(ctx, "s1", "w", time.Hour); err != nil {
		b.Fatal(err)
	}
	step := store.Step{Owner: "w", Totals: store.Totals{ToolCalls: 1}, Records: []store.Record{
		{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("a tool result of a few words")}}},
	}}
	for b.Loop() {
		if _, _, err := s.AppendStep(ctx, "s1", step); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendStepConcurrent is steps of many sessions at once, each
// session with one writer.
func BenchmarkAppendStepConcurrent(b *testing.B) {
	s := open(b, freshSchema(b))
	defer s.Close()
	var sessions atomic.Int64
	rec := store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("hi")}}}
	b.RunParallel(func(pb *testing.PB) {
		id := fmt.Sprint("s", sessions.Add(1))
		if _, err := s.Provision(ctx, store.Session{ID: id, RuntimeID: "r"}); err != nil {
			b.Error(err)
			return
		}
		for pb.Next() {
			if _, _, err := s.AppendStep(ctx, id, store.Step{Records: []store.Record{rec}, Totals: store.Totals{ToolCalls: 1}}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
