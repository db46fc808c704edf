package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/sandbox"
)

// "sandbox": {"autoAllowBashIfSandboxed": true} in the user's settings
// runs the model's commands unasked when they run in the OS sandbox —
// and only then: not with --no-sandbox, not for what a deny rule names,
// and not when a workspace that is not trusted says it of itself.
func TestAutoAllowBashIfSandboxed(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skipf("no OS sandbox here: %v", err)
	}
	run := func(t *testing.T, o options, ws string, extra ...string) []jsonEvent {
		t.Helper()
		sc := writeScript(t, bashCall("make", "touch made"), bashCall("curl", "curl -s http://127.0.0.1:9"), `{"text": "done"}`)
		args := append([]string{"run", "--json", "--script", sc, "-w", ws, "go"}, extra...)
		stdout, stderr, code := orcaWith(t, t.Context(), o, "", args...)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		return parseEvents(t, stdout)
	}

	o := options{configDir: t.TempDir(), getenv: noEnv}
	writeFileAt(t, o.configDir, "orca/settings.json", `{"sandbox": {"autoAllowBashIfSandboxed": true}, "permissions": {"deny": ["Bash(curl *)"]}}`)
	ws := t.TempDir()
	evs := run(t, o, ws)
	if !fileExists(filepath.Join(ws, "made")) {
		t.Errorf("the sandboxed command did not run: %s", toolEventOf(t, evs, "make").str("output"))
	}
	if out := toolEventOf(t, evs, "curl").str("output"); !strings.Contains(out, "denied by the permission rule Bash(curl *)") {
		t.Errorf("the deny rule did not hold: %q", out)
	}

	ws = t.TempDir()
	evs = run(t, o, ws, "--no-sandbox")
	if fileExists(filepath.Join(ws, "made")) {
		t.Error("with --no-sandbox the command ran unasked")
	}
	if out := toolEventOf(t, evs, "make").str("output"); !strings.Contains(out, "needs the user's approval") {
		t.Errorf("with --no-sandbox: %q", out)
	}

	// The workspace cannot approve its own commands.
	o = options{configDir: t.TempDir(), getenv: noEnv}
	ws = t.TempDir()
	writeFileAt(t, ws, ".claude/settings.json", `{"sandbox": {"autoAllowBashIfSandboxed": true}}`)
	evs = run(t, o, ws)
	if fileExists(filepath.Join(ws, "made")) || !strings.Contains(toolEventOf(t, evs, "make").str("output"), "needs the user's approval") {
		t.Errorf("an untrusted workspace's autoAllowBashIfSandboxed ran the command: %q", toolEventOf(t, evs, "make").str("output"))
	}
}
