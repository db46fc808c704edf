package observe_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/observe"
	"github.com/orca-agent/orca/orcatest"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func run(t *testing.T, st store.Store, timeline bool) (*orcatest.Node, []string, string) {
	t.Helper()
	svc := agent.NewServices(nil)
	defer svc.Close()
	n := orcatest.NewNode(t, orcatest.WithServices(svc), orcatest.WithStore(st))
	rows, err := observe.NewRows(svc.Bus, st.(store.Observations), nil)
	if err != nil {
		t.Fatal(err)
	}
	var tl *observe.Timeline
	if timeline {
		if tl, err = observe.NewTimeline(svc.Bus, n.Root, "run-1"); err != nil {
			t.Fatal(err)
		}
	}
	n.Script("s", script.Call("Write", map[string]string{"file_path": "a.txt", "content": "x"}), script.Text("done"))
	n.Open("s").Run(t.Context(), "go")
	svc.Bus.Flush(t.Context())
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	path := ""
	if tl != nil {
		path = tl.Path()
		if err := tl.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, e := range n.Events() {
		names = append(names, string(e.Name))
	}
	return n, names, path
}

func rowNames(t *testing.T, st store.Store) ([]string, []json.RawMessage) {
	obs, err := st.(store.Observations).Observations(t.Context(), store.ObservationFilter{SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var data []json.RawMessage
	for _, o := range obs {
		names = append(names, o.Name)
		data = append(data, o.Data)
	}
	return names, data
}

// withoutDeltas drops the llm_delta events, which are no rows.
func withoutDeltas(names []string) []string {
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == string(event.LLMDelta) })
}

// Rows exist without any timeline, one per event but the deltas, in
// order.
func TestRowsWithoutTimeline(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "orca.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n, events, _ := run(t, st, false)
	got, _ := rowNames(t, st)
	if len(got) == 0 || !slices.Equal(got, withoutDeltas(events)) || len(got) == len(events) {
		t.Errorf("rows %v\nevents %v", got, events)
	}
	if _, err := os.Stat(filepath.Join(n.Root, observe.RunsDir)); !os.IsNotExist(err) {
		t.Errorf("a timeline was written without being enabled: %v", err)
	}
}

// With the timeline enabled, the jsonl holds the same events as the rows,
// in the same order, and the deltas besides.
func TestTimelineMatchesRows(t *testing.T) {
	st := store.NewMemory()
	defer st.Close()
	_, _, path := run(t, st, true)
	_, data := rowNames(t, st)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	deltas := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), `{"name":"llm_delta"`) {
			deltas++
			continue
		}
		lines = append(lines, sc.Text())
	}
	if len(lines) != len(data) || len(lines) == 0 || deltas == 0 {
		t.Fatalf("timeline has %d lines, store %d rows", len(lines), len(data))
	}
	for i := range lines {
		if lines[i] != string(data[i]) {
			t.Errorf("line %d differs:\n%s\n%s", i, lines[i], data[i])
		}
	}
}

// observe.FindRun finds a run's timeline by id, folder or file, and the newest
// without one; observe.ReadTimeline reads its events and names a line that is not
// one.
func TestFindAndReadRuns(t *testing.T) {
	ws := t.TempDir()
	if _, err := observe.FindRun(ws, ""); err == nil || !strings.Contains(err.Error(), "no runs yet") {
		t.Errorf("no runs: %v", err)
	}
	write := func(run, body string) string {
		p := filepath.Join(ws, observe.RunsDir, run, observe.TimelineFile)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	old := write("run_20260101-000000_aaaa", `{"name":"turn_started"}`+"\n")
	os.Chtimes(old, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour))
	newest := write("run_20260102-000000_bbbb", `{"name":"turn_started"}`+"\n\n"+`{"name":"turn_completed"}`+"\n")
	for _, tc := range []struct{ run, want string }{
		{"", newest},
		{"run_20260101-000000_aaaa", old},
		{filepath.Dir(old), old},
		{newest, newest},
	} {
		if got, err := observe.FindRun(ws, tc.run); err != nil || got != tc.want {
			t.Errorf("observe.FindRun(%q) = %q, %v; want %q", tc.run, got, err, tc.want)
		}
	}
	if _, err := observe.FindRun(ws, "run_nope"); err == nil || !strings.Contains(err.Error(), "has no run run_nope") {
		t.Errorf("unknown run: %v", err)
	}
	lines, err := observe.ReadTimeline(newest)
	if err != nil || len(lines) != 2 {
		t.Errorf("observe.ReadTimeline: %d lines, %v", len(lines), err)
	}
	bad := write("run_bad", `{"name":"turn_started"}`+"\nnot json\n")
	if _, err := observe.ReadTimeline(bad); err == nil || !strings.Contains(err.Error(), bad+":2: not a JSON event") {
		t.Errorf("bad line: %v", err)
	}
}

// Many batches: each row is its own event, whole, after the writer has
// reused its buffers from batch to batch.
func TestRowsAcrossBatches(t *testing.T) {
	st := store.NewMemory()
	defer st.Close()
	bus := event.NewBus(nil)
	defer bus.Close()
	rows, err := observe.NewRows(bus, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3*observe.BatchSize + 17
	for i := range n {
		bus.Publish(event.Event{Name: event.ToolExecCompleted, Time: time.Unix(int64(i), 0).UTC(),
			Data: &event.ToolData{Iteration: i, ToolUseID: strings.Repeat("x", i%40), Output: "row " + strconv.Itoa(i)}})
		if i%100 == 0 {
			if err := rows.Flush(t.Context(), bus); err != nil {
				t.Fatal(err)
			}
		}
	}
	bus.Flush(t.Context())
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := st.Observations(t.Context(), store.ObservationFilter{})
	if err != nil || len(got) != n {
		t.Fatalf("%d rows, %v", len(got), err)
	}
	for i, o := range got {
		ev, err := event.Decode(o.Data)
		d, ok := ev.Data.(*event.ToolData)
		if err != nil || !ok || d.Iteration != i || d.Output != "row "+strconv.Itoa(i) || d.ToolUseID != strings.Repeat("x", i%40) || !ev.Time.Equal(time.Unix(int64(i), 0)) {
			t.Fatalf("row %d: %s (%v)", i, o.Data, err)
		}
	}
}

// newRows starts a row writer of a bus's events into st; both end with
// the test (the writer first).
func newRows(t *testing.T, st store.Observations) (*event.Bus, *observe.Rows) {
	t.Helper()
	bus := event.NewBus(nil)
	t.Cleanup(func() { bus.Close() })
	rows, err := observe.NewRows(bus, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rows.Close() })
	return bus, rows
}

// A reader of one session's rows is woken by a batch with rows of that
// session (a fork's rows are its session's), not by the other sessions'.
func TestWrittenForWakesOnlyItsSession(t *testing.T) {
	st := store.NewMemory()
	t.Cleanup(func() { st.Close() }) // after the writer's last write
	bus, rows := newRows(t, st)
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	write := func(s scope.Scope) {
		t.Helper()
		bus.Publish(event.Event{Name: event.ToolExecCompleted, Scope: s, Data: &event.ToolData{ToolUseID: "c"}})
		if err := rows.Flush(t.Context(), bus); err != nil {
			t.Fatal(err)
		}
	}
	a, a2, all := rows.WrittenFor("a"), rows.WrittenFor("a"), rows.Written()
	write(scope.Scope{SessionID: "b"})
	if closed(a) || closed(a2) || !closed(all) {
		t.Fatalf("after a batch of session b: a woken %v %v, Written %v; want false false true", closed(a), closed(a2), closed(all))
	}
	write(scope.Scope{SessionID: "a", Depth: 1, ParentExecutionID: "x1"}) // a fork of a
	if !closed(a) || !closed(a2) {
		t.Fatal("a batch with a fork's row of session a did not wake a's readers")
	}
	// Once woken, a reader waits for the next batch of its session.
	if next := rows.WrittenFor("a"); closed(next) {
		t.Fatal("a new wait of session a is closed before any batch")
	}
}

// A turn's end is written at once (not at the next 200 ms tick), by the
// writer's loop: the events that come meanwhile are not held up.
func TestTurnEndWrittenAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := store.NewMemory()
		t.Cleanup(func() { st.Close() }) // after the writer's last write
		bus, _ := newRows(t, st)
		start := time.Now()
		sc := scope.Scope{SessionID: "s", TurnID: "t"}
		bus.Publish(event.Event{Name: event.ToolExecCompleted, Scope: sc, Data: &event.ToolData{ToolUseID: "c"}})
		bus.Publish(event.Event{Name: event.TurnCompleted, Scope: sc, Data: &event.TurnCompletedData{StopReason: "answered"}})
		synctest.Wait()
		got, err := st.Observations(t.Context(), store.ObservationFilter{SessionID: "s"})
		if err != nil || len(got) != 2 || time.Since(start) != 0 {
			t.Fatalf("%d rows after %v (%v); want 2 at once", len(got), time.Since(start), err)
		}
	})
}

// slowRows holds its first write until released, counting the writes.
type slowRows struct {
	*store.Memory
	release chan struct{}
	writes  atomic.Int64
}

func (s *slowRows) AppendObservations(ctx context.Context, rows []store.Observation) error {
	if s.writes.Add(1) == 1 {
		<-s.release
	}
	return s.Memory.AppendObservations(ctx, rows)
}

// Turns that end while a batch is being written go in the next batch
// together, not a write each: the writer takes events meanwhile.
func TestTurnsEndingDuringAWriteShareTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &slowRows{Memory: store.NewMemory(), release: make(chan struct{})}
		t.Cleanup(func() { st.Close() }) // after the writer's last write
		bus, _ := newRows(t, st)
		end := func(turn string) {
			sc := scope.Scope{SessionID: "s", TurnID: turn}
			bus.Publish(event.Event{Name: event.ToolExecCompleted, Scope: sc, Data: &event.ToolData{ToolUseID: "c"}})
			bus.Publish(event.Event{Name: event.TurnCompleted, Scope: sc, Data: &event.TurnCompletedData{StopReason: "answered"}})
		}
		end("t1")
		synctest.Wait() // t1's batch is being written
		end("t2")
		end("t3")
		end("t4")
		synctest.Wait()
		close(st.release)
		synctest.Wait()
		got, _ := st.Observations(t.Context(), store.ObservationFilter{SessionID: "s"})
		if n := st.writes.Load(); n != 2 || len(got) != 8 {
			t.Fatalf("%d writes, %d rows; want 2 writes (t1's, then t2–t4's together) of 8 rows", n, len(got))
		}
	})
}

// A reader woken by the writer finds the rows it wrote in Recent, as the
// store has them, once it has asked: the first ask turns the writer's
// memory of them on. Rows another writer put between two of its batches,
// or a reader behind what it holds, send the reader to the store.
func TestRecentRowsAreTheStores(t *testing.T) {
	st := store.NewMemory()
	t.Cleanup(func() { st.Close() }) // after the writer's last write
	bus, rows := newRows(t, st)
	write := func(sc ...scope.Scope) {
		t.Helper()
		for _, s := range sc {
			bus.Publish(event.Event{Name: event.ToolExecCompleted, Scope: s, Data: &event.ToolData{ToolUseID: "c"}})
		}
		if err := rows.Flush(t.Context(), bus); err != nil {
			t.Fatal(err)
		}
	}
	a, a2, b := scope.Scope{SessionID: "a", TurnID: "t1"}, scope.Scope{SessionID: "a", TurnID: "t2"}, scope.Scope{SessionID: "b", TurnID: "t3"}
	write(a)
	if _, _, ok := rows.Recent(store.ObservationFilter{}); ok {
		t.Fatal("Recent answered before any reader asked")
	}
	write(a, b, a2)
	write(b, a2)
	for _, f := range []store.ObservationFilter{
		{AfterSeq: 1}, {AfterSeq: 2}, {SessionID: "a", AfterSeq: 1}, {SessionID: "a", AfterSeq: 3},
		{TurnID: "t2", AfterSeq: 1}, {SessionID: "b", AfterSeq: 1, Limit: 1}, {SessionID: "a", AfterSeq: 6},
	} {
		got, through, ok := rows.Recent(f)
		want, err := st.Observations(t.Context(), f)
		if !ok || through != 6 || err != nil || !sameRows(got, want) {
			t.Errorf("Recent(%+v) = %v through %d %v, the store's %v (%v)", f, seqs(got), through, ok, seqs(want), err)
		}
	}
	// Row 1 was written before anyone asked: not held.
	if _, _, ok := rows.Recent(store.ObservationFilter{SessionID: "a"}); ok {
		t.Error("Recent answered for rows it does not hold")
	}
	// Another writer's row, then this writer's: what came before it is no
	// longer the store's whole.
	if err := st.AppendObservations(t.Context(), []store.Observation{{Name: "x", Scope: a, Data: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	write(a)
	if _, _, ok := rows.Recent(store.ObservationFilter{SessionID: "a", AfterSeq: 6}); ok {
		t.Error("Recent answered across another writer's row")
	}
	if got, _, ok := rows.Recent(store.ObservationFilter{SessionID: "a", AfterSeq: 7}); !ok || len(got) != 1 || got[0].Seq != 8 {
		t.Errorf("Recent after the other writer's row = %v %v; want [8] true", seqs(got), ok)
	}
	// It holds about the last RecentRows rows.
	many := make([]scope.Scope, observe.BatchSize-1)
	for i := range many {
		many[i] = b
	}
	for range 2 * observe.RecentRows / len(many) {
		write(many...)
	}
	last := int64(8 + 2*observe.RecentRows/len(many)*len(many))
	if _, _, ok := rows.Recent(store.ObservationFilter{AfterSeq: 8}); ok {
		t.Error("Recent holds every row written")
	}
	after := last - observe.RecentRows + 1
	if got, through, ok := rows.Recent(store.ObservationFilter{AfterSeq: after}); !ok || len(got) != observe.RecentRows-1 || through != last || rows.LastSeq() != last {
		t.Errorf("Recent after %d: %d rows %v; want the last %d", after, len(got), ok, observe.RecentRows-1)
	}
}

func seqs(rows []store.Observation) []int64 {
	var out []int64
	for _, r := range rows {
		out = append(out, r.Seq)
	}
	return out
}

func sameRows(a, b []store.Observation) bool {
	return slices.EqualFunc(a, b, func(x, y store.Observation) bool {
		return x.Seq == y.Seq && x.Name == y.Name && x.Scope == y.Scope && x.Time.Equal(y.Time) && string(x.Data) == string(y.Data)
	})
}

// Flush returns once the rows of the events published before it are in
// the store — here behind a write that is held — and no sooner; it asks
// the loop for the write, which takes the rows of every flusher waiting.
func TestFlushWaitsForItsRows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &slowRows{Memory: store.NewMemory(), release: make(chan struct{})}
		t.Cleanup(func() { st.Close() }) // after the writer's last write
		bus, rows := newRows(t, st)
		sc := scope.Scope{SessionID: "s", TurnID: "t"}
		bus.Publish(event.Event{Name: event.TurnCompleted, Scope: sc, Data: &event.TurnCompletedData{StopReason: "answered"}})
		synctest.Wait() // its batch is being written, and held
		var flushed atomic.Int64
		for range 3 {
			bus.Publish(event.Event{Name: event.ToolExecCompleted, Scope: sc, Data: &event.ToolData{ToolUseID: "c"}})
			go func() {
				if err := rows.Flush(t.Context(), bus); err != nil {
					t.Error(err)
				}
				flushed.Add(1)
			}()
		}
		synctest.Wait()
		if n := flushed.Load(); n != 0 {
			t.Fatalf("%d flushes returned before their rows were written", n)
		}
		close(st.release)
		synctest.Wait()
		got, _ := st.Observations(t.Context(), store.ObservationFilter{SessionID: "s"})
		if n := flushed.Load(); n != 3 || len(got) != 4 || st.writes.Load() != 2 {
			t.Fatalf("%d flushes returned, %d rows in %d writes; want 3, 4 rows in 2 writes (the held one, then the flushers')", n, len(got), st.writes.Load())
		}
	})
}
