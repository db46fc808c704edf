package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orca-agent/orca/app"
)

// The first run in a workspace creates .orca/orca.db and, with it,
// .orca/.gitignore: the store, its WAL files, the workspace id, timelines,
// transcripts and spilled results are not the repository's, so neither git nor the
// file tools (which honour .gitignore files) see them; the files meant to
// be committed (settings.json) still show.
func TestFirstRunIgnoresTheStateItKeeps(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".orca"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A Stop hook: the transcripts hooks read are kept too.
	settings := `{"permissions": {"deny": ["Bash(rm:*)"]}, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}`
	if err := os.WriteFile(filepath.Join(ws, ".orca", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	glob := writeScript(t, `{"tool_calls": [{"name": "Glob", "input": {"pattern": "**/*"}}]}`, `{"text": "done"}`)
	run := func() []jsonEvent {
		t.Helper()
		stdout, stderr, code := orcaWith(t, t.Context(), options{configDir: t.TempDir(), getenv: noEnv}, "", "run", "--script", glob, "-w", ws, "--trust", "--timeline", "--json", "look")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		return parseEvents(t, stdout)
	}
	run()
	got, err := os.ReadFile(filepath.Join(ws, ".orca", ".gitignore"))
	if err != nil || string(got) != app.StateIgnore {
		t.Fatalf(".orca/.gitignore after the first run: %q, %v", got, err)
	}
	for _, f := range []string{"orca.db", "workspace-id", "runs", "transcripts"} {
		if _, err := os.Stat(filepath.Join(ws, ".orca", f)); err != nil {
			t.Fatalf("the first run made no .orca/%s (the test would prove nothing): %v", f, err)
		}
	}

	// The next run's Glob lists what a user would commit, and nothing of
	// the state.
	evs := run()
	listed := strings.Split(toolEventOf(t, evs, "call_1_1").str("output"), "\n")
	slices.Sort(listed)
	if want := []string{".orca/.gitignore", ".orca/settings.json"}; !slices.Equal(listed, want) {
		t.Errorf("Glob **/* lists %q, want %q", listed, want)
	}

	if _, err := exec.LookPath("git"); err != nil {
		t.Log("no git here: git status not checked")
		return
	}
	if out, err := exec.Command("git", "-C", ws, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	out, err := exec.Command("git", "-C", ws, "status", "--porcelain", "--untracked-files=all").CombinedOutput()
	if err != nil {
		t.Fatalf("git status: %v\n%s", err, out)
	}
	if got, want := string(out), "?? .orca/.gitignore\n?? .orca/settings.json\n"; got != want {
		t.Errorf("git status --porcelain:\n%s\nwant:\n%s", got, want)
	}
}

// orca writes .orca/.gitignore only when it creates the store: one the
// user wrote is left as it is, and one the user deleted from a workspace
// whose store exists is not written again.
func TestStateIgnoreIsTheUsers(t *testing.T) {
	t.Parallel()
	answer := writeScript(t, `{"text": "done"}`)
	run := func(ws string) {
		t.Helper()
		if _, stderr, code := orcaWith(t, t.Context(), options{configDir: t.TempDir(), getenv: noEnv}, "", "run", "--script", answer, "-w", ws, "hi"); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	}

	ws := t.TempDir()
	mine := filepath.Join(ws, ".orca", ".gitignore")
	if err := os.MkdirAll(filepath.Dir(mine), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mine, []byte("*\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(ws)
	if got, _ := os.ReadFile(mine); string(got) != "*\n" {
		t.Errorf("the user's .orca/.gitignore became %q", got)
	}

	ws = t.TempDir()
	run(ws)
	written := filepath.Join(ws, ".orca", ".gitignore")
	if err := os.Remove(written); err != nil {
		t.Fatalf("the first run wrote no .orca/.gitignore: %v", err)
	}
	run(ws)
	if _, err := os.Stat(written); !os.IsNotExist(err) {
		t.Errorf("a run over an existing store wrote .orca/.gitignore again (%v)", err)
	}
}
