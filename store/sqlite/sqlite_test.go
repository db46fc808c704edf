package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/internal/wire"
	"github.com/orca-agent/orca/store/sqlite"
	"github.com/orca-agent/orca/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var ctx = context.Background()

func open(t testing.TB, path string, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(path, opts...)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "orca.db"))
	})
}

func TestConformanceNormalDurability(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "orca.db"), sqlite.WithDurability(sqlite.Normal))
	})
}

func TestSchedules(t *testing.T) {
	storetest.RunSchedules(t, func(t *testing.T) store.Schedules {
		return open(t, filepath.Join(t.TempDir(), "orca.db"))
	})
	// Two stores on one file, as two processes open it.
	t.Run("Shared", func(t *testing.T) {
		storetest.RunSharedSchedules(t, func(t *testing.T) (a, b store.Schedules) {
			path := filepath.Join(t.TempDir(), "orca.db")
			return open(t, path), open(t, path)
		})
	})
}

// Deleting a schedule deletes its fires' rows, not only what the
// contract shows of them.
func TestDeleteScheduleDeletesFires(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orca.db")
	s := open(t, path)
	defer s.Close()
	db := rawDB(t, path)
	storetest.RunDeleteScheduleDeletesFires(t, s, func(id string) (n int, err error) {
		err = db.QueryRow("SELECT count(*) FROM schedule_fires WHERE schedule_id = ?", id).Scan(&n)
		return n, err
	})
}

func TestDurable(t *testing.T) {
	storetest.RunDurable(t, func(t *testing.T, path string) store.Store { return open(t, path) })
}

func TestDefaultPath(t *testing.T) {
	ws := filepath.Join("home", "me", "proj")
	if got, want := sqlite.DefaultPath(ws), filepath.Join(ws, ".orca", "orca.db"); got != want {
		t.Errorf("DefaultPath(%q) = %q, want %q", ws, got, want)
	}
}

// rawDB opens the store's file directly, to look at what is on disk.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestOpenCreatesOneFileWithTheSchema(t *testing.T) {
	ws := t.TempDir()
	path := sqlite.DefaultPath(ws)
	s := open(t, path)
	if s.Path() != path {
		t.Errorf("Path() = %q, want %q", s.Path(), path)
	}
	if _, err := s.Provision(ctx, store.Session{ID: "s1", RuntimeID: "r1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(ws, ".orca"))
	if err != nil || !info.IsDir() || info.Mode().Perm() != 0o700 {
		t.Fatalf(".orca: %v, %v; want a folder with mode 0700", info.Mode(), err)
	}
	db := rawDB(t, path)
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal (it is a property of the file)", mode, err)
	}
	rows, err := db.Query("SELECT version FROM schema_migrations ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	var versions []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	rows.Close()
	if fmt.Sprint(versions) != "[1 2 3 4 5 6 7 8 9 10 11 12 13 14]" {
		t.Errorf("schema_migrations = %v, want [1 2 3 4 5 6 7 8 9 10 11 12 13 14]", versions)
	}
	for _, table := range []string{"sessions", "records", "totals", "budgets", "approvals", "observations", "leases", "snapshot_chunks", "parked", "attachments", "attachment_refs", "windows", "schedules", "schedule_fires"} {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?", table).Scan(&n); err != nil || n != 1 {
			t.Errorf("table %s: %d, %v", table, n, err)
		}
	}
	var id, runtimeID string
	if err := db.QueryRow("SELECT id, runtime_id FROM sessions").Scan(&id, &runtimeID); err != nil || id != "s1" || runtimeID != "r1" {
		t.Errorf("sessions row = %q %q, %v", id, runtimeID, err)
	}
}

func TestConnectionSettings(t *testing.T) {
	for _, tc := range []struct {
		opts []sqlite.Option
		sync int // PRAGMA synchronous: 1 NORMAL, 2 FULL
	}{
		{nil, 2},
		{[]sqlite.Option{sqlite.WithDurability(sqlite.Normal)}, 1},
		{[]sqlite.Option{sqlite.WithDurability(sqlite.Full)}, 2},
	} {
		s := open(t, filepath.Join(t.TempDir(), "orca.db"), tc.opts...)
		db := sqlite.DB(s)
		// Every pooled connection carries the settings: hold several at once.
		var conns []*sql.Conn
		for range 3 {
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		for i, c := range conns {
			var sync, fk, busy int
			if err := c.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
				t.Fatal(err)
			}
			if err := c.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil {
				t.Fatal(err)
			}
			if err := c.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy); err != nil {
				t.Fatal(err)
			}
			if sync != tc.sync || fk != 1 || busy != 5000 {
				t.Errorf("connection %d: synchronous=%d foreign_keys=%d busy_timeout=%d; want %d, 1, 5000", i, sync, fk, busy, tc.sync)
			}
			c.Close()
		}
		s.Close()
	}
	if _, err := sqlite.Open(filepath.Join(t.TempDir(), "x.db"), sqlite.WithDurability(7)); err == nil {
		t.Error("Open with an unknown durability succeeded")
	}
}

func TestOddPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "we?ird #dir %20 ü", "file name?.db")
	s := open(t, path)
	if _, err := s.Provision(ctx, store.Session{ID: "s1", RuntimeID: "r1"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the database is not at the path given: %v", err)
	}
	s = open(t, path)
	defer s.Close()
	if _, err := s.Session(ctx, "s1"); err != nil {
		t.Errorf("reopened: %v", err)
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orca.db")
	open(t, path).Close()
	db := rawDB(t, path)
	if _, err := db.Exec("INSERT INTO schema_migrations (version, applied_at) VALUES (99, 0)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err := sqlite.Open(path)
	if err == nil || !strings.Contains(err.Error(), "99") || !strings.Contains(err.Error(), path) {
		t.Errorf("Open of a file at schema version 99: err = %v, want one naming the version and the file", err)
	}
}

// A file of an earlier version is brought up to date, with what it holds.
func TestMigrationFromVersion6(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orca.db")
	db := rawDB(t, path)
	if _, err := db.Exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT"); err != nil {
		t.Fatal(err)
	}
	for v, m := range sqlite.Migrations[:6] {
		if _, err := db.Exec(m); err != nil {
			t.Fatalf("migration %d: %v", v+1, err)
		}
		if _, err := db.Exec("INSERT INTO schema_migrations VALUES (?, 0)", v+1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec("INSERT INTO sessions (id, runtime_id, workspace, created_at, updated_at) VALUES ('s1', 'r1', '/ws', 1, 1), ('s2', 'r1', '/ws', 2, 2); INSERT INTO totals (session_id) VALUES ('s1'), ('s2')"); err != nil {
		t.Fatal(err)
	}
	// s2 has three records, and a version-5 snapshot of the first two.
	var snap []wire.SnapRecord
	for i := 1; i <= 3; i++ {
		m := llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(fmt.Sprint("m", i))}}
		data, err := wire.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec("INSERT INTO records (session_id, seq, time, kind, message) VALUES ('s2', ?, ?, 'message', ?)", i, i, string(data)); err != nil {
			t.Fatal(err)
		}
		if i <= 2 {
			snap = append(snap, wire.SnapRecord{Seq: int64(i), Time: time.Unix(0, int64(i)).UTC(), Kind: "message", Message: m})
		}
	}
	if _, err := db.Exec("INSERT INTO snapshots (session_id, through_seq, data) VALUES ('s2', 2, ?)", wire.EncodeSnapshot(snap)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s := open(t, path)
	defer s.Close()
	if _, err := s.Append(ctx, "s1", store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser}}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []store.Filter{{}, {RuntimeID: "r1"}, {Workspace: "/ws"}} {
		ss, err := s.Sessions(ctx, f)
		if err != nil || len(ss) != 2 || ss[0].ID != "s1" || ss[1].ID != "s2" {
			t.Errorf("Sessions(%+v) after the migration = %+v, %v; want s1 (just written to), s2", f, ss, err)
		}
	}
	recs, err := s.Records(ctx, "s2", store.RecordFilter{})
	if err != nil || len(recs) != 3 || recs[0].Message.Text() != "m1" || recs[2].Message.Text() != "m3" {
		t.Errorf("Records of s2 after the migration = %+v, %v", recs, err)
	}
	var through int64
	if err := sqlite.DB(s).QueryRowContext(ctx, "SELECT through_seq FROM snapshot_chunks WHERE session_id = 's2'").Scan(&through); err != nil || through != 2 {
		t.Errorf("the version-5 snapshot became a chunk through %d (%v), want 2", through, err)
	}
}

// A file of version 11 keeps its attachments: the sessions that showed
// them read them back by digest (with the type the bytes were kept
// with), and deleting the session deletes them.
func TestMigrationKeepsAttachments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orca.db")
	db := rawDB(t, path)
	if _, err := db.Exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT"); err != nil {
		t.Fatal(err)
	}
	for v, m := range sqlite.Migrations[:11] {
		if _, err := db.Exec(m); err != nil {
			t.Fatalf("migration %d: %v", v+1, err)
		}
		if _, err := db.Exec("INSERT INTO schema_migrations VALUES (?, 0)", v+1); err != nil {
			t.Fatal(err)
		}
	}
	data := []byte("\x89PNG\r\n\x1a\nbefore")
	digest := llm.DigestOf(data)
	if _, err := db.Exec("INSERT INTO sessions (id, runtime_id, workspace, created_at, updated_at) VALUES ('s1', 'r1', '/ws', 1, 1); INSERT INTO totals (session_id) VALUES ('s1')"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO attachments (digest, media_type, size, data, created_at) VALUES (?, 'image/png', ?, ?, 1)", digest, len(data), data); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO attachment_refs (session_id, digest) VALUES ('s1', ?)", digest); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s := open(t, path)
	defer s.Close()
	got, err := s.Attachment(ctx, "s1", digest)
	if err != nil || got.MediaType != llm.MediaPNG || string(got.Data) != string(data) || got.Size != int64(len(data)) {
		t.Fatalf("the attachment after the migration: %+v, %v", got, err)
	}
	if err := s.DeleteSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := sqlite.DB(s).QueryRowContext(ctx, "SELECT (SELECT count(*) FROM attachments) + (SELECT count(*) FROM attachment_refs)").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d attachment rows left after deleting the session (%v)", n, err)
	}
}

// Opening a file that is up to date reads; it does not wait for the write
// lock that another process (here, another connection) holds.
func TestOpenWhileAnotherWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orca.db")
	open(t, path).Close()
	db := rawDB(t, path)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx, "ROLLBACK")
	s, err := sqlite.Open(path, sqlite.WithBusyTimeout(50*time.Millisecond))
	if err != nil {
		t.Fatalf("Open while another connection holds the write lock: %v", err)
	}
	s.Close()
}

func TestMigrationIsAllOrNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orca.db")
	// A file where migration 1 cannot run to the end: a table of that name
	// is in the way of its last statements.
	db := rawDB(t, path)
	if _, err := db.Exec("CREATE TABLE approvals (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := sqlite.Open(path); err == nil {
		t.Fatal("Open succeeded over a conflicting table")
	}
	db = rawDB(t, path)
	var n int
	if err := db.QueryRow("SELECT count(*) FROM sqlite_schema WHERE name IN ('sessions', 'records', 'schema_migrations')").Scan(&n); err != nil || n != 0 {
		t.Errorf("a failed migration left %d of its tables behind (%v)", n, err)
	}
}

func TestErrorsNameSessionAndOperation(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "orca.db"))
	defer s.Close()
	_, err := s.Append(ctx, "nope", store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser}})
	if !errors.Is(err, store.ErrNotProvisioned) || !strings.Contains(err.Error(), `append to session "nope"`) {
		t.Errorf("err = %v", err)
	}
}

// Two stores on one file stand for two processes (the CLI next to a
// server): BEGIN IMMEDIATE and the busy timeout keep their appends whole
// and in order.
func TestTwoStoresOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orca.db")
	a, b := open(t, path), open(t, path)
	defer a.Close()
	defer b.Close()
	if _, err := a.Provision(ctx, store.Session{ID: "s1", RuntimeID: "r1"}); err != nil {
		t.Fatal(err)
	}
	const each = 40
	var wg sync.WaitGroup
	for _, s := range []*sqlite.Store{a, b} {
		for range 2 {
			wg.Go(func() {
				for i := range each {
					if _, err := s.Append(ctx, "s1", store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(fmt.Sprint(i))}}}); err != nil {
						t.Errorf("Append: %v", err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	recs, err := b.Records(ctx, "s1", store.RecordFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4*each {
		t.Fatalf("%d records, want %d", len(recs), 4*each)
	}
	for i, r := range recs {
		if r.Seq != int64(i+1) {
			t.Fatalf("record %d has Seq %d", i, r.Seq)
		}
	}
}

// The committer checkpoints the write-ahead log every CheckpointPages
// pages, not at SQLite's default of 1,000: after 1,500 one-page commits the
// log still holds them all (at the default it would have been copied into
// the database and begun again at 1,000), and every record reads back.
func TestCheckpointInterval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orca.db")
	s := open(t, path, sqlite.WithDurability(sqlite.Normal))
	defer s.Close()
	if _, err := s.Provision(ctx, store.Session{ID: "s1", RuntimeID: "r1"}); err != nil {
		t.Fatal(err)
	}
	const n = 1500
	big := strings.Repeat("x", 3000) // a page of its own
	for i := range n {
		rec := store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(fmt.Sprint(i, big))}}}
		if _, err := s.Append(ctx, "s1", rec); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if pages := fi.Size() / 4096; pages < n || pages > sqlite.CheckpointPages+n/10 {
		t.Errorf("the log holds %d pages after %d one-page commits; want them all (a checkpoint every %d)", pages, n, sqlite.CheckpointPages)
	}
	recs, err := s.Records(ctx, "s1", store.RecordFilter{})
	if err != nil || len(recs) != n || !strings.HasPrefix(recs[n-1].Message.Text(), fmt.Sprint(n-1, "x")) {
		t.Fatalf("%d records read back, %v", len(recs), err)
	}
}

func TestAttachmentsGoWithTheirSessions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orca.db")
	s := open(t, path)
	defer s.Close()
	db := rawDB(t, path)
	storetest.RunAttachmentsDeleted(t, s, func() int {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM attachments").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	})
}
