package sqlite_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/sqlite"
)

// benchMessage returns the i-th message of a plausible transcript: a user
// prompt, an assistant tool call, a tool result, in turn.
func benchMessage(i int) store.Record {
	var m llm.Message
	switch i % 3 {
	case 0:
		m = llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(fmt.Sprintf("Please look at internal/pkg%d/file.go and fix the failing test; keep the public API as it is.", i))}}
	case 1:
		m = llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.TextBlock("I'll read the file first."),
			llm.ToolUseBlock(fmt.Sprint("toolu_", i), "Read", []byte(fmt.Sprintf(`{"file_path": "internal/pkg%d/file.go", "limit": 200}`, i))),
		}}
	default:
		m = llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock(fmt.Sprint("toolu_", i-1), strings.Repeat("func F() error { return nil }\n", 16), false)}}
	}
	return store.Record{Kind: store.KindMessage, TurnID: fmt.Sprint("turn-", i/3), Message: m}
}

// BenchmarkAppend appends one record per transaction. sync=FULL is the
// default durability; sync=NORMAL is WithDurability(Normal).
func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct {
		name string
		d    sqlite.Durability
	}{{"FULL", sqlite.Full}, {"NORMAL", sqlite.Normal}} {
		b.Run("sync="+bc.name, func(b *testing.B) {
			s := open(b, filepath.Join(b.TempDir(), "orca.db"), sqlite.WithDurability(bc.d))
			defer s.Close()
			if _, err := s.Provision(ctx, store.Session{ID: "s1", RuntimeID: "r1"}); err != nil {
				b.Fatal(err)
			}
			rec := benchMessage(1)
			for b.Loop() {
				if _, err := s.Append(ctx, "s1", rec); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
		})
	}
}

// BenchmarkResume10k opens the file and loads the live records of a
// 10,100-message session: what resuming a long session costs.
//
//   - snapshot: turns ended now and then, so the snapshot holds the first
//     10,000 and 100 records follow it (the usual case);
//   - rows: no turn ever ended (a writer that crashed mid-turn, or one
//     that never calls FinishTurn): every row is decoded;
//   - compacted: the first 10,000 were compacted into a summary; the live
//     records are the summary and the last 100.
func BenchmarkResume10k(b *testing.B) {
	const n = 10_000
	for _, bc := range []struct {
		name           string
		turns, compact bool
	}{{"snapshot", true, false}, {"rows", false, false}, {"compacted", true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "orca.db")
			s := open(b, path, sqlite.WithDurability(sqlite.Normal))
			if _, err := s.Provision(ctx, store.Session{ID: "s1", RuntimeID: "r1"}); err != nil {
				b.Fatal(err)
			}
			for i := 0; i < n; i += 500 {
				batch := make([]store.Record, 500)
				for j := range batch {
					batch[j] = benchMessage(i + j)
				}
				if _, err := s.Append(ctx, "s1", batch...); err != nil {
					b.Fatal(err)
				}
				// A turn ends now and then, as in a session: the
				// snapshot follows.
				if bc.turns {
					if err := s.FinishTurn(ctx, "s1", "", "go"); err != nil {
						b.Fatal(err)
					}
				}
			}
			want := n + 100
			if bc.compact {
				summary := store.Record{Kind: store.KindSummary, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Summary: the first 10,000 messages.")}}}
				if _, err := s.Append(ctx, "s1", summary); err != nil {
					b.Fatal(err)
				}
				if err := s.MarkCompacted(ctx, "s1", n); err != nil {
					b.Fatal(err)
				}
				want = 1 + 100
			}
			// The newest turn's records come after the snapshot.
			for j := range 100 {
				if _, err := s.Append(ctx, "s1", benchMessage(n+j)); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				s := open(b, path)
				recs, err := s.Records(ctx, "s1", store.RecordFilter{})
				if err != nil || len(recs) != want {
					b.Fatalf("Records = %d, %v; want %d", len(recs), err, want)
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(want*b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkAppendConcurrent is many live sessions writing at once: 64
// goroutines, each appending single records to a session of its own, each
// append waiting for its commit. The appends/s metric is what the store
// acknowledges across all of them, writes/commit how many appends group
// commit put in each transaction. op=AppendStep is what a session's loop
// writes instead: AppendStep with the writer's lease checked and the
// step's spending added.
func BenchmarkAppendConcurrent(b *testing.B) {
	const writers = 64
	for _, bc := range []struct {
		name string
		d    sqlite.Durability
		step bool
	}{{"op=Append/sync=FULL", sqlite.Full, false}, {"op=Append/sync=NORMAL", sqlite.Normal, false}, {"op=AppendStep/sync=FULL", sqlite.Full, true}} {
		b.Run(bc.name, func(b *testing.B) {
			s := open(b, filepath.Join(b.TempDir(), "orca.db"), sqlite.WithDurability(bc.d))
			defer s.Close()
			for w := range writers {
				id := fmt.Sprint("s", w)
				if _, err := s.Provision(ctx, store.Session{ID: id, RuntimeID: "r1"}); err != nil {
					b.Fatal(err)
				}
				if _, err := s.AcquireLease(ctx, id, "writer-"+id, time.Hour); err != nil {
					b.Fatal(err)
				}
			}
			rec := benchMessage(1)
			spent := store.Totals{Usage: llm.Usage{InputTokens: 1200, OutputTokens: 80}, CostUSD: 0.004, ToolCalls: 1}
			var next atomic.Int64
			var wg sync.WaitGroup
			batches0, writes0 := sqlite.Batches(s)
			b.ResetTimer()
			for w := range writers {
				wg.Go(func() {
					id := fmt.Sprint("s", w)
					step := store.Step{Owner: "writer-" + id, Records: []store.Record{rec}, Totals: spent}
					for next.Add(1) <= int64(b.N) {
						var err error
						if bc.step {
							_, _, err = s.AppendStep(ctx, id, step)
						} else {
							_, err = s.Append(ctx, id, rec)
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
			batches, writes := sqlite.Batches(s)
			b.ReportMetric(float64(writes-writes0)/float64(batches-batches0), "writes/commit")
		})
	}
}

// BenchmarkSessions lists the sessions of a store of 5,000 (ten runtimes
// of 500): all of them, and the most recent one of a runtime (what a
// program resuming its last session asks).
func BenchmarkSessions(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "orca.db"), sqlite.WithDurability(sqlite.Normal))
	defer s.Close()
	for i := range 5000 {
		if _, err := s.Provision(ctx, store.Session{ID: fmt.Sprint("s", i), RuntimeID: fmt.Sprint("r", i%10), Workspace: fmt.Sprint("/ws/", i%10)}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("all", func(b *testing.B) {
		for b.Loop() {
			if ss, err := s.Sessions(ctx, store.Filter{}); err != nil || len(ss) != 5000 {
				b.Fatal(len(ss), err)
			}
		}
	})
	b.Run("latest-of-runtime", func(b *testing.B) {
		for b.Loop() {
			if ss, err := s.Sessions(ctx, store.Filter{RuntimeID: "r3", Limit: 1}); err != nil || len(ss) != 1 || ss[0].ID != "s4993" {
				b.Fatal(ss, err)
			}
		}
	})
}
