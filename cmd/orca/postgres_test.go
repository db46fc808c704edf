package main

import (
	"strings"
	"testing"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/store/postgres/pgtest"
)

// With $ORCA_STORE_DSN, orca run keeps its session in PostgreSQL, and the
// commands that read sessions — orca sessions, sessions show, timeline —
// read them from there too, not from a workspace file that does not exist.
func TestCommandsReadThePostgresStore(t *testing.T) {
	dsn := pgtest.DSN(t, "orca_cli_test")
	ws := t.TempDir()
	env := func(k string) string {
		if k == app.StoreDSNEnv {
			return dsn
		}
		return ""
	}
	o := options{configDir: t.TempDir(), getenv: env}
	sc := writeScript(t, `{"text": "kept in postgres"}`)
	if out, errOut, code := orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "--session", "pg1", "hello"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, args := range [][]string{{"sessions", "-w", ws}, {"sessions", "show", "pg1", "-w", ws}, {"timeline", "--session", "pg1", "-w", ws}} {
		out, errOut, code := orcaWith(t, t.Context(), o, "", args...)
		if code != 0 || !strings.Contains(out, "pg1") && !strings.Contains(out, "turn_completed") {
			t.Errorf("%v: exit %d\n%s\n%s", args, code, out, errOut)
		}
	}
	out, _, _ := orcaWith(t, t.Context(), o, "", "sessions", "show", "pg1", "-w", ws)
	if !strings.Contains(out, "kept in postgres") {
		t.Errorf("sessions show:\n%s", out)
	}
}
