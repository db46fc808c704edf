package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A misspelt settings key is a warning naming the file, the key and the
// key meant, and the rest of the file applies; Claude Code's own keys,
// which orca does not read, are not warned about on a run but listed by
// orca doctor — which opens nothing in the workspace.
func TestMisspelledSettingsAndDoctor(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	settings := writeFileAt(t, ws, ".claude/settings.json", `{"permisions": {"allow": ["Bash"]}, "permissions": {"alow": ["Bash"], "deny": ["Bash(touch:*)"]},
		"modle": "x", "theme": "dark", "statusLine": {"type": "command", "command": "x"}, "sandbox": {"network": {"httpProxyPort": 8080}}}`)
	sc := writeScript(t, bashCall("b", "touch ran.txt"), `{"text": "done"}`)
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--json", "--permission-mode", "bypass", "go")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{
		settings + `: permisions: not a setting orca or Claude Code reads; it is ignored (did you mean "permissions"?)`,
		settings + `: permissions.alow: not a setting orca or Claude Code reads; it is ignored (did you mean "permissions.allow"?)`,
		settings + `: modle: not a setting orca or Claude Code reads; it is ignored (did you mean "model"?)`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	for _, quiet := range []string{"theme", "statusLine", "httpProxyPort"} {
		if strings.Contains(stderr, quiet) {
			t.Errorf("a run warns about Claude Code's %s:\n%s", quiet, stderr)
		}
	}
	// The rest of the file applies: its deny rule held in bypass.
	if ev := toolEventOf(t, parseEvents(t, stdout), "b"); ev["is_error"] != true || fileExists(filepath.Join(ws, "ran.txt")) {
		t.Errorf("the deny rule of the file did not apply: %v", ev)
	}

	fresh := t.TempDir()
	writeFileAt(t, fresh, ".claude/settings.json", `{"modle": "x", "theme": "dark", "statusLine": {"type": "command", "command": "x"}}`)
	out, errOut, code := orca(t, t.Context(), "", "doctor", "-w", fresh)
	if code != 0 {
		t.Fatalf("doctor: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"workspace  " + fresh, "not trusted", `modle: not a setting orca or Claude Code reads; it is ignored (did you mean "model"?)`,
		"ignored    " + filepath.Join(fresh, ".claude", "settings.json") + ": statusLine, theme", "model      none usable: no model provider chosen", "sandbox    "} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Lstat(filepath.Join(fresh, ".orca")); err == nil {
		t.Error("doctor made .orca in the workspace")
	}
	out, _, code = orca(t, t.Context(), "", "doctor", "-w", fresh, "--json", "--script", sc)
	var d struct {
		Provider string `json:"provider"`
		Ignored  []struct {
			Keys []string `json:"keys"`
		} `json:"ignored"`
		Warnings []struct{ Message string } `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil || code != 0 {
		t.Fatalf("doctor --json: exit %d, %v\n%s", code, err, out)
	}
	if d.Provider != "script" || len(d.Ignored) != 1 || strings.Join(d.Ignored[0].Keys, ",") != "statusLine,theme" || len(d.Warnings) != 1 {
		t.Errorf("doctor --json: %+v", d)
	}
}

// The first run in a git repository says once that .orca/.gitignore is
// meant to be committed; the next run says nothing of it.
func TestFirstRunSaysToCommitTheStateIgnore(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	gitAs(t, ws, "init", "-q")
	hi := writeScript(t, `{"text": "hi"}`)
	const says = "commit .orca/.gitignore"
	_, stderr, code := orca(t, t.Context(), "", "run", "--script", hi, "-w", ws, "x")
	if code != 0 || strings.Count(stderr, says) != 1 || !fileExists(filepath.Join(ws, ".orca", ".gitignore")) {
		t.Errorf("first run: exit %d\n%s", code, stderr)
	}
	if _, stderr, _ := orca(t, t.Context(), "", "run", "--script", hi, "-w", ws, "x"); strings.Contains(stderr, says) {
		t.Errorf("second run says it again:\n%s", stderr)
	}
}
