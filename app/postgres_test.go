package app_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/postgres"
	"github.com/orca-agent/orca/store/postgres/pgtest"
	"github.com/orca-agent/orca/store/sqlite"
)

func postgresDSN(t *testing.T) string { return pgtest.DSN(t, "orca_app_test") }

// With a DSN, Open keeps the sessions in PostgreSQL, not in the
// workspace: the turn's session, transcript and observation rows are in
// the database, and the workspace has no SQLite file.
func TestOpenWithPostgres(t *testing.T) {
	dsn := postgresDSN(t)
	ws := t.TempDir()
	script := write(t, t.TempDir(), "script.json", `{"responses": [{"text": "done"}]}`)
	a, err := app.Open(t.Context(), app.Config{Workspace: ws, ConfigDir: "-", Model: app.ModelConfig{Script: script}, StoreDSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Store().(*postgres.Store); !ok {
		t.Errorf("Store() is a %T, want *postgres.Store", a.Store())
	}
	s, err := a.Session(t.Context(), app.SessionOptions{ID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := s.Run(t.Context(), "say done"); err != nil || res.StopReason != agent.StopAnswered {
		t.Fatalf("turn: %+v, %v", res, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sqlite.DefaultPath(ws)); err == nil {
		t.Errorf("the workspace has a SQLite store %s too", sqlite.DefaultPath(ws))
	}

	pg, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	ss, err := pg.Session(t.Context(), "s1")
	if err != nil || ss.Turns != 1 || ss.LastPrompt != "say done" {
		t.Errorf("the session in PostgreSQL: %+v, %v; want one turn of the prompt", ss, err)
	}
	recs, err := pg.Records(t.Context(), "s1", store.RecordFilter{})
	if err != nil || len(recs) < 2 || recs[len(recs)-1].Message.Text() != "done" {
		t.Errorf("the transcript in PostgreSQL: %d records, %v; want the prompt and the answer", len(recs), err)
	}
	rows, err := pg.Observations(t.Context(), store.ObservationFilter{SessionID: "s1"})
	if err != nil || len(rows) == 0 {
		t.Errorf("observation rows in PostgreSQL: %d, %v", len(rows), err)
	}
}

// ORCA_STORE_DSN and the user's "store" choose PostgreSQL too; a
// project's "store" does not.
func TestStoreDSNFromEnvironmentAndSettings(t *testing.T) {
	dsn := postgresDSN(t)
	script := write(t, t.TempDir(), "script.json", `{"responses": [{"text": "done"}]}`)
	for _, tc := range []struct {
		name     string
		env      string
		user     string
		project  string
		postgres bool
	}{
		{name: "environment", env: dsn, postgres: true},
		{name: "user settings", user: dsn, postgres: true},
		{name: "project settings", project: dsn, postgres: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, cfgDir := t.TempDir(), t.TempDir()
			if tc.user != "" {
				write(t, cfgDir, "orca/settings.json", `{"store": "`+tc.user+`"}`)
			}
			if tc.project != "" {
				write(t, ws, ".orca/settings.json", `{"store": "`+tc.project+`"}`)
			}
			getenv := func(k string) string {
				if k == app.StoreDSNEnv {
					return tc.env
				}
				return ""
			}
			a, err := app.Open(t.Context(), app.Config{Workspace: ws, ConfigDir: cfgDir, Model: app.ModelConfig{Script: script}, Getenv: getenv})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			_, isPG := a.Store().(*postgres.Store)
			if isPG != tc.postgres {
				t.Errorf("Store() is a %T, want PostgreSQL: %v", a.Store(), tc.postgres)
			}
			_, err = os.Stat(filepath.Join(ws, ".orca", "orca.db"))
			if hasFile := err == nil; hasFile == tc.postgres {
				t.Errorf("the workspace's SQLite file exists: %v, want %v", hasFile, !tc.postgres)
			}
		})
	}
}
