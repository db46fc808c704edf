package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/store"
)

// BenchmarkMemoryObservations measures the memory store's observation rows:
// appending a batch of 100 rows of one execution (B/op is what the store
// keeps), and reading a session's rows after a Seq, as serve's event
// streams do.
func BenchmarkMemoryObservations(b *testing.B) {
	m := store.NewMemory()
	defer m.Close()
	ctx := context.Background()
	var rows []store.Observation
	for i := range 10000 {
		rows = append(rows, store.Observation{Name: "tool_exec_completed", Scope: scope.Scope{RuntimeID: "orca-49d5968f2940", SessionID: fmt.Sprint("session_d8075f13d4df73e", i%2), TurnID: "turn_f20d69ba0ecc7b6f", ExecutionID: "exec_b7a096233ae464a0"}, Data: json.RawMessage(`{"name":"tool_exec_completed","x":1}`)})
	}
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.AppendObservations(ctx, rows[:100])
		}
	})
	m2 := store.NewMemory()
	defer m2.Close()
	m2.AppendObservations(ctx, rows)
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m2.Observations(ctx, store.ObservationFilter{SessionID: "session_d8075f13d4df73e0", AfterSeq: 5000})
		}
	})
}
