package main

import (
	"path/filepath"
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

// A PostgreSQL DSN that cannot be used is an error naming where it came
// from ($ORCA_STORE_DSN, or the "store" of the user's settings), for the
// commands that run turns and those that read sessions; no workspace file
// is made instead.
func TestBadStoreDSNIsNamed(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	sc := writeScript(t, `{"text": "never"}`)
	env := func(k string) string {
		if k == app.StoreDSNEnv {
			return "not a dsn"
		}
		return ""
	}
	fromEnv := options{configDir: t.TempDir(), getenv: env}
	fromSettings := options{configDir: t.TempDir(), getenv: func(string) string { return "" }}
	writeFileAt(t, fromSettings.configDir, "orca/settings.json", `{"store": "postgres://u@127.0.0.1:1/x?connect_timeout=5"}`)
	for _, tc := range []struct {
		o    options
		want string
	}{
		{fromEnv, "the PostgreSQL database $ORCA_STORE_DSN names"},
		{fromSettings, `the PostgreSQL database the "store" of your settings.json names`},
	} {
		for _, args := range [][]string{{"run", "--script", sc, "-w", ws, "hi"}, {"sessions", "-w", ws}} {
			_, stderr, code := orcaWith(t, t.Context(), tc.o, "", args...)
			if code == 0 || !strings.Contains(stderr, "cannot open the session store, "+tc.want) {
				t.Errorf("%v: exit %d\n%s", args, code, stderr)
			}
		}
	}
	if fileExists(filepath.Join(ws, ".orca", "orca.db")) {
		t.Error("a workspace store was made instead")
	}
}
