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
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sessions", "-w", ws}, "pg1"},
		{[]string{"sessions", "show", "pg1", "-w", ws}, "kept in postgres"},
		{[]string{"timeline", "--session", "pg1", "-w", ws}, "turn_completed"},
	} {
		out, errOut, code := orcaWith(t, t.Context(), o, "", tc.args...)
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, want %q in:\n%s\n%s", tc.args, code, tc.want, out, errOut)
		}
	}
}
