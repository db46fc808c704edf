package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/postgres"
	"github.com/orca-agent/orca/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var ctx = context.Background()

// serverDSN returns the test server's DSN (ORCA_TEST_POSTGRES), or skips
// the test without one; with ORCA_TEST_POSTGRES_REQUIRED=1 a missing
// server fails it instead.
func serverDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("ORCA_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("ORCA_TEST_POSTGRES_REQUIRED") == "1" {
			t.Fatal("ORCA_TEST_POSTGRES is not set, and ORCA_TEST_POSTGRES_REQUIRED=1")
		}
		t.Skip("no PostgreSQL server: set ORCA_TEST_POSTGRES to a DSN (.ci/postgres starts one)")
	}
	return dsn
}

var schemas atomic.Int64

// freshSchema creates a schema of its own for t, dropped when t ends, and
// returns a DSN whose connections use it: tests never see each other's
// rows.
func freshSchema(t testing.TB) string {
	t.Helper()
	dsn := serverDSN(t)
	name := fmt.Sprintf("orca_test_%d_%d", os.Getpid(), schemas.Add(1))
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to the test server: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("create schema %s: %v", name, err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("connect to drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return withSearchPath(t, dsn, name)
}

// withSearchPath adds search_path=schema to a URL or key=value DSN.
func withSearchPath(t testing.TB, dsn, schema string) string {
	t.Helper()
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("ORCA_TEST_POSTGRES: %v", err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " search_path=" + schema
}

func open(t testing.TB, dsn string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	serverDSN(t)
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, freshSchema(t)) })
}

func TestSchedules(t *testing.T) {
	serverDSN(t)
	storetest.RunSchedules(t, func(t *testing.T) store.Schedules { return open(t, freshSchema(t)) })
	// Two stores on one database, as two processes (two machines) open it.
	t.Run("Shared", func(t *testing.T) {
		storetest.RunSharedSchedules(t, func(t *testing.T) (a, b store.Schedules) {
			dsn := freshSchema(t)
			return open(t, dsn), open(t, dsn)
		})
	})
}

// Deleting a schedule deletes its fires' rows, not only what the
// contract shows of them.
func TestDeleteScheduleDeletesFires(t *testing.T) {
	dsn := freshSchema(t)
	s := open(t, dsn)
	defer s.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	storetest.RunDeleteScheduleDeletesFires(t, s, func(id string) (n int, err error) {
		err = conn.QueryRow(ctx, "SELECT count(*) FROM schedule_fires WHERE schedule_id = $1", id).Scan(&n)
		return n, err
	})
}

func TestDurable(t *testing.T) {
	serverDSN(t)
	// RunDurable names a file; here each path is a schema, created on
	// its first opening.
	var mu sync.Mutex
	dsns := map[string]string{}
	storetest.RunDurable(t, func(t *testing.T, path string) store.Store {
		mu.Lock()
		dsn, ok := dsns[path]
		if !ok {
			dsn = freshSchema(t)
			dsns[path] = dsn
		}
		mu.Unlock()
		return open(t, dsn)
	})
}

// Processes that open a new database at once apply each migration once:
// every one of them opens it, and the schema has each version once.
func TestConcurrentMigrators(t *testing.T) {
	dsn := freshSchema(t)
	const n = 6
	stores := make([]*postgres.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = postgres.Open(ctx, dsn) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("Open %d: %v", i, errs[i])
			continue
		}
		defer stores[i].Close()
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var versions, distinct int
	if err := conn.QueryRow(ctx, "SELECT count(*), count(DISTINCT version) FROM schema_migrations").Scan(&versions, &distinct); err != nil {
		t.Fatal(err)
	}
	if versions != distinct || versions == 0 {
		t.Errorf("schema_migrations has %d rows for %d versions", versions, distinct)
	}
}

// A database written by a newer orca is refused, not misread.
func TestNewerSchemaRefused(t *testing.T) {
	dsn := freshSchema(t)
	open(t, dsn).Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "INSERT INTO schema_migrations (version, applied_at) VALUES (999, 0)"); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.Open(ctx, dsn)
	if err == nil {
		s.Close()
		t.Fatal("Open of a schema at version 999 succeeded")
	}
	if !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open: %v, want it to say the schema is newer", err)
	}
}

// A follower of the observation rows (AfterSeq, the last Seq it saw) never
// skips a row while many writers append at once: it sees every row, in
// Seq order, with no gaps.
func TestObservationFollowerSkipsNothing(t *testing.T) {
	dsn := freshSchema(t)
	s := open(t, dsn)
	defer s.Close()
	other := open(t, dsn) // another process's pool
	defer other.Close()
	const writers, each = 8, 40
	var wg sync.WaitGroup
	for w := range writers {
		o := store.Observations(s)
		if w%2 == 1 {
			o = other
		}
		wg.Go(func() {
			for i := range each {
				row := store.Observation{Name: "tick", Data: json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))}
				row.SessionID = fmt.Sprint("s", w)
				if err := o.AppendObservations(ctx, []store.Observation{row, row}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var seen []int64
	finished := false
	for !finished {
		select {
		case <-done:
			finished = true // one more read after the last write
		default:
		}
		after := int64(0)
		if len(seen) > 0 {
			after = seen[len(seen)-1]
		}
		rows, err := s.Observations(ctx, store.ObservationFilter{AfterSeq: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			seen = append(seen, r.Seq)
		}
	}
	if want := writers * each * 2; len(seen) != want {
		t.Errorf("the follower saw %d rows, want %d", len(seen), want)
	}
	for i, seq := range seen {
		if seq != int64(i+1) {
			t.Fatalf("row %d the follower saw has Seq %d, want %d (a row was skipped)", i, seq, i+1)
		}
	}
}

// Two processes' stores on one database share the sessions: one writes,
// the other reads the same transcript, and the lease of one refuses the
// other's step.
func TestTwoStoresShareSessions(t *testing.T) {
	dsn := freshSchema(t)
	a, b := open(t, dsn), open(t, dsn)
	defer a.Close()
	defer b.Close()
	if _, err := a.Provision(ctx, store.Session{ID: "s1", RuntimeID: "r1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AcquireLease(ctx, "s1", "worker a", time.Minute); err != nil {
		t.Fatal(err)
	}
	rec := store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("hi")}}}
	if _, _, err := a.AppendStep(ctx, "s1", store.Step{Owner: "worker a", Records: []store.Record{rec}, Totals: store.Totals{ToolCalls: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.AppendStep(ctx, "s1", store.Step{Owner: "worker b", Records: []store.Record{rec}}); err == nil {
		t.Error("a step of worker b while worker a holds the lease succeeded")
	}
	recs, err := b.Records(ctx, "s1", store.RecordFilter{})
	if err != nil || len(recs) != 1 || recs[0].Message.Text() != "hi" {
		t.Errorf("the other store reads %+v, %v; want the one record", recs, err)
	}
	if tot, err := b.Totals(ctx, "s1"); err != nil || tot.ToolCalls != 1 {
		t.Errorf("the other store's totals = %+v, %v; want ToolCalls 1", tot, err)
	}
}

func TestOpenBadDSN(t *testing.T) {
	_, err := postgres.Open(ctx, "postgres://u:secret@127.0.0.1:1/db?connect_timeout=1")
	if err == nil {
		t.Fatal("Open of a server that is not there succeeded")
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("the error shows the password: %v", err)
	}
	if !strings.Contains(err.Error(), "127.0.0.1:1/db") {
		t.Errorf("the error does not name the database: %v", err)
	}
}

// A schema of version 3, whose strings were TEXT, migrates to BYTEA with
// its strings as they were; then the strings TEXT refused are kept too.
func TestMigrateTextToBytes(t *testing.T) {
	dsn := freshSchema(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	for v, m := range postgres.Migrations[:3] {
		if _, err := conn.Exec(ctx, m); err != nil {
			t.Fatalf("version %d: %v", v+1, err)
		}
		if _, err := conn.Exec(ctx, "INSERT INTO schema_migrations VALUES ($1, 0)", v+1); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{
		`INSERT INTO sessions (id, runtime_id, workspace, agent, created_at, updated_at, turns, last_prompt) VALUES ('s1', 'r1', '/home/é', 'coder', 1, 2, 1, '두 번째 — fix')`,
		`INSERT INTO totals (session_id) VALUES ('s1')`,
		`INSERT INTO approvals (runtime_id, session_id, rule, created_at) VALUES ('r1', 's1', 'Bash(go test:*)', 3)`,
		`INSERT INTO parked (id, session_id, tool_use_id, tool_name, input, reason, status, decided_by, note, created_at) VALUES ('park_1', 's1', 'toolu_1', 'Bash', '\x7b7d', 'asks ☃', 'denied', 'ana', 'no', 4)`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s := open(t, dsn)
	defer s.Close()
	got, err := s.Session(ctx, "s1")
	if err != nil || got.Workspace != "/home/é" || got.Agent != "coder" || got.LastPrompt != "두 번째 — fix" {
		t.Errorf("session after the migration: %+v, %v", got, err)
	}
	if as, err := s.Approvals(ctx, "r1", "s1"); err != nil || len(as) != 1 || as[0].Rule != "Bash(go test:*)" {
		t.Errorf("approvals after the migration: %+v, %v", as, err)
	}
	if ps, err := s.ParkedCalls(ctx, store.ParkFilter{}); err != nil || len(ps) != 1 || ps[0].Reason != "asks ☃" || ps[0].DecidedBy != "ana" || ps[0].Note != "no" || string(ps[0].Input) != "{}" {
		t.Errorf("parked calls after the migration: %+v, %v", ps, err)
	}
	if err := s.FinishTurn(ctx, "s1", "t2", "caf\xe9\x00"); err != nil {
		t.Fatalf("FinishTurn after the migration: %v", err)
	}
	if got, _ := s.Session(ctx, "s1"); got.LastPrompt != "caf\xe9\x00" || got.Turns != 2 {
		t.Errorf("after a turn: %+v", got)
	}
}

// A schema of version 5 keeps its attachments: the sessions that showed
// them read them back by digest (with the type the bytes were kept
// with), and deleting the session deletes them.
func TestMigrationKeepsAttachments(t *testing.T) {
	dsn := freshSchema(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	for v, m := range postgres.Migrations[:5] {
		if _, err := conn.Exec(ctx, m); err != nil {
			t.Fatalf("version %d: %v", v+1, err)
		}
		if _, err := conn.Exec(ctx, "INSERT INTO schema_migrations VALUES ($1, 0)", v+1); err != nil {
			t.Fatal(err)
		}
	}
	data := []byte("\x89PNG\r\n\x1a\nbefore")
	digest := llm.DigestOf(data)
	for _, q := range []string{
		`INSERT INTO sessions (id, runtime_id, workspace, agent, created_at, updated_at) VALUES ('s1', 'r1', '/ws', 'coder', 1, 1)`,
		`INSERT INTO totals (session_id) VALUES ('s1')`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := conn.Exec(ctx, "INSERT INTO attachments (digest, media_type, size, data, created_at) VALUES ($1, 'image/png', $2, $3, 1)", digest, len(data), data); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO attachment_refs (session_id, digest) VALUES ('s1', $1)", digest); err != nil {
		t.Fatal(err)
	}
	s := open(t, dsn)
	defer s.Close()
	got, err := s.Attachment(ctx, "s1", digest)
	if err != nil || got.MediaType != llm.MediaPNG || string(got.Data) != string(data) || got.Size != int64(len(data)) {
		t.Fatalf("the attachment after the migration: %+v, %v", got, err)
	}
	if err := s.DeleteSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT (SELECT count(*) FROM attachments) + (SELECT count(*) FROM attachment_refs)").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d attachment rows left after deleting the session (%v)", n, err)
	}
}

func TestAttachmentsGoWithTheirSessions(t *testing.T) {
	dsn := freshSchema(t)
	s := open(t, dsn)
	defer s.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	storetest.RunAttachmentsDeleted(t, s, func() int {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM attachments").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	})
}
