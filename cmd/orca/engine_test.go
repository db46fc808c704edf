package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeEngine is an orca-temporal that logs its arguments and its stdin and
// ends with code.
func fakeEngine(t *testing.T, code string) (options, string) {
	t.Helper()
	dir := t.TempDir()
	logf := filepath.Join(dir, "args")
	bin := filepath.Join(dir, "orca-temporal")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> " + logf + "; done\necho engine says hi\necho engine complains >&2\nexit " + code + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{engineEnv: bin}
	return options{configDir: t.TempDir(), getenv: func(k string) string { return env[k] }}, logf
}

func readArgs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// orca worker and orca run --engine temporal run orca-temporal with the
// flags that are its, its output and exit code orca's; the flags that are
// the worker's are refused, naming where they go.
func TestEngineCommands(t *testing.T) {
	o, logf := fakeEngine(t, "3")
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--engine", "temporal", "--session", "s1", "--turn-id", "t9", "--json", "--task-queue", "q", "--", "fix", "--it")
	if code != 3 || stdout != "engine says hi\n" || stderr != "engine complains\n" {
		t.Fatalf("run --engine temporal: exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}
	want := []string{"run", "--session", "s1", "--json", "--turn-id", "t9", "--task-queue", "q", "--", "fix", "--it"}
	if got := readArgs(t, logf); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("orca-temporal got %q, want %q", got, want)
	}
	os.Remove(logf)
	if _, _, code := orcaWith(t, t.Context(), o, "", "worker", "-w", "/ws", "--provider", "anthropic"); code != 3 {
		t.Errorf("worker: exit %d", code)
	}
	if got := readArgs(t, logf); strings.Join(got, " ") != "worker -w /ws --provider anthropic" {
		t.Errorf("orca-temporal worker got %q", got)
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"run", "--engine", "temporal", "--session", "s", "--provider", "openai", "hi"}, "--provider is not for --engine temporal"},
		{[]string{"run", "--engine", "temporal", "--session", "s", "--output-schema", "/nonexistent/schema.json", "hi"}, "--output-schema: stat /nonexistent/schema.json:"},
		{[]string{"run", "--engine", "temporal", "hi"}, "--engine temporal needs --session ID"},
		{[]string{"run", "--engine", "warp", "hi"}, "--engine warp: want local or temporal"},
		{[]string{"run", "--turn-id", "t", "--script", "x.json", "hi"}, "--turn-id is for --engine temporal"},
	} {
		if _, stderr, code := orcaWith(t, t.Context(), o, "", tc.args...); code != exitUsage || !strings.Contains(stderr, tc.says) {
			t.Errorf("%v: exit %d\n%s", tc.args, code, stderr)
		}
	}
	os.Remove(logf)
	schema := filepath.Join(t.TempDir(), "answer.json")
	os.WriteFile(schema, []byte(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`), 0o644)
	if _, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--engine", "temporal", "--session", "s1", "--output-schema", schema, "count"); code != 3 {
		t.Errorf("run --output-schema: exit %d\n%s", code, stderr)
	}
	if got := readArgs(t, logf); strings.Join(got, " ") != "run --session s1 --output-schema "+schema+" -- count" {
		t.Errorf("orca-temporal got %q", got)
	}
	missing := options{configDir: t.TempDir(), getenv: func(k string) string {
		if k == engineEnv {
			return filepath.Join(t.TempDir(), "none")
		}
		return ""
	}}
	if _, stderr, code := orcaWith(t, t.Context(), missing, "", "worker"); code != exitUsage || !strings.Contains(stderr, engineEnv+"=") {
		t.Errorf("a missing orca-temporal: exit %d\n%s", code, stderr)
	}
	// Its help is orca's own then: what it is and how to install it.
	if stdout, stderr, code := orcaWith(t, t.Context(), missing, "", "worker", "--help"); code != 0 || !strings.Contains(stdout, engineInstall) {
		t.Errorf("orca worker --help without orca-temporal: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
