// Package pgtest gives tests a PostgreSQL schema of their own on the test
// server that $ORCA_TEST_POSTGRES names (.ci/postgres starts one).
package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
)

// ServerEnv names the test server; RequiredEnv=1 makes its absence a
// failure instead of a skip.
const (
	ServerEnv   = "ORCA_TEST_POSTGRES"
	RequiredEnv = "ORCA_TEST_POSTGRES_REQUIRED"
)

var schemas atomic.Int64

// DSN returns a DSN of a new schema on the test server, dropped when t
// ends; without a server the test is skipped (or fails, with
// RequiredEnv=1).
func DSN(t testing.TB, prefix string) string {
	t.Helper()
	server := os.Getenv(ServerEnv)
	if server == "" {
		if os.Getenv(RequiredEnv) == "1" {
			t.Fatalf("%s is not set, and %s=1", ServerEnv, RequiredEnv)
		}
		t.Skipf("no PostgreSQL server: set %s to a DSN (.ci/postgres starts one)", ServerEnv)
	}
	u, err := url.Parse(server)
	if err != nil || !strings.HasPrefix(u.Scheme, "postgres") {
		t.Fatalf("%s: want a postgres:// URL: %v", ServerEnv, err)
	}
	schema := fmt.Sprintf("%s_%d_%d", prefix, os.Getpid(), schemas.Add(1))
	exec := func(sql string) {
		// Not t.Context(): the schema is dropped after it ends.
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, server)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	exec("CREATE SCHEMA " + schema)
	t.Cleanup(func() { exec("DROP SCHEMA " + schema + " CASCADE") })
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
