package sqlite

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
)

func openTest(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "orca.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, id := range []string{"s1", "s2", "s3"} {
		if _, err := s.Provision(context.Background(), store.Session{ID: id, RuntimeID: "r1"}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// hold occupies the committer until the returned function is called: the
// writes submitted meanwhile queue up and then go in one batch.
func hold(t *testing.T, s *Store) (release func()) {
	t.Helper()
	started, done := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		err := s.write(context.Background(), func(ctx context.Context, tx *writeTx) error {
			close(started)
			<-done
			return nil
		})
		if err != nil {
			t.Errorf("the holding write: %v", err)
		}
	})
	<-started
	return func() {
		close(done)
		wg.Wait()
	}
}

// waitQueued waits until n requests are queued behind the holder.
func waitQueued(t *testing.T, s *Store, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.committer.mu.Lock()
		queued := len(s.committer.queue)
		s.committer.mu.Unlock()
		if queued >= n {
			return
		}
	}
	t.Fatalf("%d requests never queued", n)
}

func note(s string) store.Record {
	return store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(s)}}}
}

type outcome struct {
	recs []store.Record
	err  error
}

// texts returns the texts of a session's records, in Seq order, checking
// that the Seqs are 1, 2, 3…
func texts(t *testing.T, s *Store, id string) []string {
	t.Helper()
	recs, err := s.Records(context.Background(), id, store.RecordFilter{IncludeCompacted: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, r := range recs {
		if r.Seq != int64(i+1) {
			t.Fatalf("%s: record %d has Seq %d", id, i, r.Seq)
		}
		out = append(out, r.Message.Text())
	}
	return out
}

// In one batch, a write that fails (an unknown session, a writer without
// the lease) is undone alone: the writes around it are committed and
// acknowledged, in order, with their Seqs.
func TestBatchFailureIsIsolated(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	if _, err := s.AcquireLease(ctx, "s2", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	release := hold(t, s)
	type call struct {
		name string
		fn   func() outcome
	}
	calls := []call{
		{"s1 a", func() outcome { r, err := s.Append(ctx, "s1", note("a")); return outcome{r, err} }},
		{"unknown", func() outcome { r, err := s.Append(ctx, "nope", note("x")); return outcome{r, err} }},
		{"s1 b c", func() outcome { r, err := s.Append(ctx, "s1", note("b"), note("c")); return outcome{r, err} }},
		{"s2 without the lease", func() outcome {
			r, _, err := s.AppendStep(ctx, "s2", store.Step{Owner: "intruder", Records: []store.Record{note("y")}, Totals: store.Totals{ToolCalls: 1}})
			return outcome{r, err}
		}},
		{"s2 holder", func() outcome {
			r, _, err := s.AppendStep(ctx, "s2", store.Step{Owner: "holder", Records: []store.Record{note("d")}, Totals: store.Totals{ToolCalls: 2}})
			return outcome{r, err}
		}},
		{"s1 e", func() outcome { r, err := s.Append(ctx, "s1", note("e")); return outcome{r, err} }},
	}
	out := make([]outcome, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() { out[i] = c.fn() })
		waitQueued(t, s, i+1) // in this order
	}
	release()
	wg.Wait()

	if !errors.Is(out[1].err, store.ErrNotProvisioned) {
		t.Errorf("append to an unknown session in a batch: %v", out[1].err)
	}
	if !errors.Is(out[3].err, store.ErrLeased) {
		t.Errorf("a step without the lease in a batch: %v", out[3].err)
	}
	for _, i := range []int{0, 2, 4, 5} {
		if out[i].err != nil {
			t.Errorf("%s: %v", calls[i].name, out[i].err)
		}
	}
	if got := fmt.Sprint(texts(t, s, "s1")); got != "[a b c e]" {
		t.Errorf("s1 holds %s, want [a b c e]", got)
	}
	if len(out[5].recs) != 1 || out[5].recs[0].Seq != 4 {
		t.Errorf("the last append to s1 returned %+v, want Seq 4", out[5].recs)
	}
	if got := fmt.Sprint(texts(t, s, "s2")); got != "[d]" {
		t.Errorf("s2 holds %s, want [d]", got)
	}
	if tot, _ := s.Totals(ctx, "s2"); tot.ToolCalls != 2 {
		t.Errorf("s2's totals = %+v, want the holder's step only", tot)
	}
	if n := Guarded(s); n != 1 {
		t.Errorf("the batch was run with savepoints %d times, want once (after its writes failed without)", n)
	}
}

// A batch whose writes all succeed runs once, without a savepoint a
// write, and every write is acknowledged with its Seq.
func TestCleanBatchNeedsNoSavepoints(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	release := hold(t, s)
	batches, _ := Batches(s)
	var wg sync.WaitGroup
	out := make([]outcome, 4)
	for i := range out {
		wg.Go(func() { r, err := s.Append(ctx, "s1", note(fmt.Sprint(i))); out[i] = outcome{r, err} })
		waitQueued(t, s, i+1)
	}
	release()
	wg.Wait()
	for i, o := range out {
		if o.err != nil || len(o.recs) != 1 || o.recs[0].Seq != int64(i+1) {
			t.Errorf("append %d: %+v", i, o)
		}
	}
	if got := fmt.Sprint(texts(t, s, "s1")); got != "[0 1 2 3]" {
		t.Errorf("s1 holds %s", got)
	}
	if b, _ := Batches(s); b != batches+1 {
		t.Errorf("%d batches, want the four writes in one", b-batches)
	}
	if n := Guarded(s); n != 0 {
		t.Errorf("a clean batch was run again with savepoints %d times", n)
	}
}

// A batch that cannot be completed whole — a write that wrecks the
// transaction, or one whose fault shows only at COMMIT — is rolled back and
// each write in it runs again alone: the others are committed, the culprit
// fails, and nothing is acknowledged that is not in the file.
func TestBrokenBatchFallsBackToOneByOne(t *testing.T) {
	for _, tc := range []struct {
		name string
		bad  func(ctx context.Context, tx *writeTx) error
	}{
		{"the transaction ended under it", func(ctx context.Context, tx *writeTx) error {
			_, err := tx.ExecContext(ctx, "ROLLBACK")
			return err
		}},
		{"the commit fails", func(ctx context.Context, tx *writeTx) error {
			// A foreign key checked only at COMMIT.
			if _, err := tx.ExecContext(ctx, "PRAGMA defer_foreign_keys = ON"); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, "INSERT INTO records (session_id, seq, time, kind, message) VALUES ('nope', 1, 0, 'message', '{}')")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t)
			ctx := context.Background()
			release := hold(t, s)
			var wg sync.WaitGroup
			errs := make([]error, 4)
			for i := range errs {
				wg.Go(func() {
					if i == 2 {
						errs[i] = s.write(ctx, tc.bad)
						return
					}
					_, errs[i] = s.Append(ctx, "s1", note(fmt.Sprint(i)))
				})
				waitQueued(t, s, i+1)
			}
			release()
			wg.Wait()
			if errs[2] == nil {
				t.Error("the culprit succeeded")
			}
			for _, i := range []int{0, 1, 3} {
				if errs[i] != nil {
					t.Errorf("append %d: %v", i, errs[i])
				}
			}
			if got := fmt.Sprint(texts(t, s, "s1")); got != "[0 1 3]" {
				t.Errorf("s1 holds %s, want [0 1 3]", got)
			}
			var orphans int
			if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM records WHERE session_id = 'nope'").Scan(&orphans); err != nil || orphans != 0 {
				t.Errorf("%d orphan records (%v)", orphans, err)
			}
		})
	}
}

// A write canceled while it waits for its turn stores nothing and says
// so; one canceled after the committer began it is committed, and its
// caller is told so — never a failure for a write that is in the file.
func TestCanceledWrite(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()

	release := hold(t, s)
	waiting, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() {
		_, err := s.Append(waiting, "s1", note("withdrawn"))
		done <- err
	}()
	waitQueued(t, s, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("an Append canceled in the queue: %v, want context.Canceled", err)
	}
	release()
	if got := texts(t, s, "s1"); len(got) != 0 {
		t.Errorf("a withdrawn Append stored %v", got)
	}

	// Canceled while its transaction runs: the caller waits, and is told
	// of the commit.
	running, cancel := context.WithCancel(ctx)
	started, proceed := make(chan struct{}), make(chan struct{})
	go func() {
		done <- s.write(running, func(ctx context.Context, tx *writeTx) error {
			close(started)
			<-proceed
			_, err := tx.ExecContext(ctx, `INSERT INTO records (session_id, seq, time, kind, message) VALUES ('s2', 1, 0, 'message', '{"role":"user","content":[{"type":"text","text":"committed"}]}')`)
			return err
		})
	}()
	<-started
	cancel()
	select {
	case err := <-done:
		t.Fatalf("a write canceled while it ran returned (%v) before it was done", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(proceed)
	if err := <-done; err != nil {
		t.Errorf("a write canceled while it ran, then committed: %v, want nil", err)
	}
	if got := fmt.Sprint(texts(t, s, "s2")); got != "[committed]" {
		t.Errorf("s2 holds %s, want [committed]", got)
	}
}

// Close while writes wait: each is committed and acknowledged before Close
// returns, and a write after Close began is refused.
func TestCloseCommitsPendingWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orca.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Provision(ctx, store.Session{ID: "s1", RuntimeID: "r1"}); err != nil {
		t.Fatal(err)
	}
	release := hold(t, s)
	const n = 5
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { _, errs[i] = s.Append(ctx, "s1", note(fmt.Sprint(i))) })
	}
	waitQueued(t, s, n)
	closed := make(chan error)
	go func() { closed <- s.Close() }()
	for !s.closed.Load() {
		time.Sleep(time.Millisecond)
	}
	if _, err := s.Append(ctx, "s1", note("late")); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Append after Close began: %v, want ErrClosed", err)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while writes were waiting", err)
	case <-time.After(20 * time.Millisecond):
	}
	release()
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("pending Append %d: %v", i, err)
		}
	}
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := len(texts(t, s, "s1")); got != n {
		t.Errorf("%d records after reopening, want the %d acknowledged", got, n)
	}
}

// The committer remembers the last Seq of the sessions it appended to; a
// write to the file by another connection (another process) makes it
// forget them, so an append after one still gets the next Seq.
func TestAnotherWriterInvalidatesKnownSeqs(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	if got, err := s.Append(ctx, "s1", note("ours")); err != nil || got[0].Seq != 1 {
		t.Fatalf("Append = %+v, %v", got, err)
	}
	other, err := Open(s.path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := other.Append(ctx, "s1", note("theirs")); err != nil || got[0].Seq != 2 {
		t.Fatalf("the other store's Append = %+v, %v", got, err)
	}
	other.Close()
	for _, want := range []int64{3, 4} {
		if got, err := s.Append(ctx, "s1", note("ours again")); err != nil || got[0].Seq != want {
			t.Fatalf("Append after another writer = %+v, %v; want Seq %d", got, err, want)
		}
	}
	if got := fmt.Sprint(texts(t, s, "s1")); got != "[ours theirs ours again ours again]" {
		t.Errorf("s1 holds %s", got)
	}
}

// The committer remembers the totals a step left, so that the next step
// need not read them back (see addTotals). What a step returns must still
// be the row's totals whatever changed them in between: another
// connection, the end of a turn, a deleted session provisioned again, a
// write of the same batch that failed after adding, a sum the table
// refuses.
func TestKnownTotalsAreTheRows(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	step := func(d store.Totals) store.Totals {
		t.Helper()
		_, sum, err := s.AppendStep(ctx, "s1", store.Step{Records: []store.Record{note("step")}, Totals: d})
		if err != nil {
			t.Fatalf("AppendStep: %v", err)
		}
		row, err := s.Totals(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		if sum != row {
			t.Fatalf("AppendStep returned %+v; the row holds %+v", sum, row)
		}
		return sum
	}
	one := store.Totals{Usage: llm.Usage{InputTokens: 100, OutputTokens: 10, CacheReadTokens: 3, CacheWriteTokens: 4}, CostUSD: 0.1, ToolCalls: 1, WallTime: time.Millisecond}
	step(one)
	if got := step(one); got.ToolCalls != 2 || got.Usage.InputTokens != 200 || got.CostUSD != 0.1+0.1 {
		t.Fatalf("two steps: %+v", got)
	}
	if _, err := s.AddTotals(ctx, "s1", store.Totals{CostUSD: 0.7, Turns: 1}); err != nil {
		t.Fatal(err)
	}
	if got := step(one); got.Turns != 1 || got.ToolCalls != 3 {
		t.Fatalf("a step after AddTotals: %+v", got)
	}

	// Another connection (another process) adds to the totals.
	other, err := Open(s.path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := other.AppendStep(ctx, "s1", store.Step{Records: []store.Record{note("theirs")}, Totals: store.Totals{ToolCalls: 10}}); err != nil {
		t.Fatal(err)
	}
	other.Close()
	if got := step(one); got.ToolCalls != 14 {
		t.Fatalf("a step after another writer's: %+v", got)
	}

	// The end of a turn counts it.
	if err := s.FinishTurn(ctx, "s1", "turn-2", "go"); err != nil {
		t.Fatal(err)
	}
	if got := step(one); got.Turns != 2 {
		t.Fatalf("a step after FinishTurn: %+v", got)
	}

	// In one batch: a write that adds, then fails, is undone alone; the
	// steps around it see only each other.
	release := hold(t, s)
	var wg sync.WaitGroup
	var first, last store.Totals
	var failed error
	wg.Go(func() {
		_, first, _ = s.AppendStep(ctx, "s1", store.Step{Records: []store.Record{note("a")}, Totals: store.Totals{ToolCalls: 100}})
	})
	waitQueued(t, s, 1)
	wg.Go(func() {
		failed = s.write(ctx, func(ctx context.Context, tx *writeTx) error {
			if _, err := s.addTotals(ctx, tx, "s1", store.Totals{ToolCalls: 1000}); err != nil {
				return err
			}
			return errors.New("fails after adding")
		})
	})
	waitQueued(t, s, 2)
	wg.Go(func() {
		_, last, _ = s.AppendStep(ctx, "s1", store.Step{Records: []store.Record{note("b")}, Totals: store.Totals{ToolCalls: 100}})
	})
	waitQueued(t, s, 3)
	release()
	wg.Wait()
	if failed == nil || first.ToolCalls != 115 || last.ToolCalls != 215 {
		t.Fatalf("in a batch: first %d, last %d tool calls (want 115, 215); the failing write: %v", first.ToolCalls, last.ToolCalls, failed)
	}
	if got := step(one); got.ToolCalls != 216 {
		t.Fatalf("after the batch: %+v", got)
	}

	// A sum the table refuses is refused, cached totals or not, and
	// changes nothing.
	before := step(store.Totals{})
	if _, _, err := s.AppendStep(ctx, "s1", store.Step{Records: []store.Record{note("x")}, Totals: store.Totals{Usage: llm.Usage{InputTokens: math.MaxInt64}}}); err == nil {
		t.Fatal("a step that overflows the input tokens was accepted")
	}
	if got := step(store.Totals{}); got != before {
		t.Fatalf("a refused step changed the totals: %+v, want %+v", got, before)
	}

	// Money that is not finite: SQLite keeps an infinity, and refuses
	// what would make it NaN.
	if _, err := s.AddTotals(ctx, "s1", store.Totals{CostUSD: math.Inf(1)}); err != nil {
		t.Fatal(err)
	}
	if got := step(one); !math.IsInf(got.CostUSD, 1) {
		t.Fatalf("a step after an infinite cost: %+v", got)
	}
	if _, err := s.AddTotals(ctx, "s1", store.Totals{CostUSD: math.Inf(-1)}); err == nil {
		t.Fatal("adding -Inf to +Inf was accepted")
	}
	if got := step(one); !math.IsInf(got.CostUSD, 1) {
		t.Fatalf("a step after a refused NaN: %+v", got)
	}

	// Deleted and provisioned again, the session starts from nothing.
	if err := s.DeleteSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Provision(ctx, store.Session{ID: "s1", RuntimeID: "r1"}); err != nil {
		t.Fatal(err)
	}
	if got := step(one); got != one {
		t.Fatalf("the first step of a session provisioned again: %+v, want %+v", got, one)
	}
}
