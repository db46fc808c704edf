package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// eventsExtension writes the extension x into ws: an events extension
// whose handler appends the name of every event it gets to seen.log in
// its folder, and returns that file.
func eventsExtension(t *testing.T, ws string) string {
	t.Helper()
	writeFileAt(t, ws, ".orca/hooks/x/hook.yaml", "name: x\nevents: [turn_started, turn_completed]\nhandler: handler\ncapabilities: [events]\ntimeout: 10s\n")
	writeFileAt(t, ws, ".orca/hooks/x/handler", `#!/bin/sh
while IFS= read -r line; do
  id=${line#'{"id":'}; id=${id%%,*}
  printf '%s\n' "$line" | sed -n 's/.*"event":{"name":"\([a-z_]*\)".*/\1/p' >> seen.log
  printf '{"id":%s}\n' "$id"
done
`)
	return filepath.Join(ws, ".orca", "hooks", "x", "seen.log")
}

func TestExtensionRunsOnlyWhenGranted(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	seen := eventsExtension(t, ws)
	sc := writeScript(t, `{"text": "hello"}`, `{"text": "again"}`)
	o := options{configDir: t.TempDir()}
	real, _ := filepath.EvalSymlinks(ws)

	_, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "--json", "hi")
	if code != 0 {
		t.Fatalf("untrusted run: exit %d\n%s", code, stderr)
	}
	if fileExists(seen) {
		t.Error("the untrusted extension ran")
	}
	for _, want := range []string{"extension x (.orca/hooks/x/hook.yaml) not run", "the grant hook:x is not in the trust policy", "orca trust hook:x " + real} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Count(stderr, "orca trust hook:x") != 1 {
		t.Errorf("the hint is not printed once:\n%s", stderr)
	}

	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "trust", "hook:x", ws)
	if code != 0 || !strings.Contains(stdout, "Granted hook:x in "+real) || !strings.Contains(stdout, "events        turn_started, turn_completed") ||
		!strings.Contains(stdout, "It runs with: events") || stderr != "" {
		t.Fatalf("trust hook:x: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if stdout, _, _ := orcaWith(t, t.Context(), o, "", "trust", "--list"); stdout != real+" (not trusted: extension grants only)\n  hook:x\n" {
		t.Errorf("--list: %q", stdout)
	}

	_, stderr, code = orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "--json", "hi")
	if code != 0 || strings.Contains(stderr, "hook:x") {
		t.Fatalf("granted run: exit %d\n%s", code, stderr)
	}
	if b, err := os.ReadFile(seen); err != nil || string(b) != "turn_started\nturn_completed\n" {
		t.Errorf("the granted extension saw %q (%v)", b, err)
	}

	stdout, _, code = orcaWith(t, t.Context(), o, "", "trust", "--revoke", "hook:x", ws)
	if code != 0 || !strings.Contains(stdout, "Revoked hook:x in "+real) {
		t.Errorf("--revoke hook:x: %d %s", code, stdout)
	}
	if _, stderr, _ := orcaWith(t, t.Context(), o, "", "trust", "--list"); !strings.Contains(stderr, "no workspace is trusted") {
		t.Errorf("--list after --revoke: %s", stderr)
	}
}

func TestTrustGrantErrors(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	o := options{configDir: t.TempDir()}
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "trust", "hook:nope", ws)
	if code != 0 || !strings.Contains(stdout, "Granted hook:nope") || !strings.Contains(stderr, "has no extension nope (.orca/hooks/nope/hook.yaml)") {
		t.Errorf("grant of a missing extension: %d\n%s\n%s", code, stdout, stderr)
	}
	if _, stderr, code := orcaWith(t, t.Context(), o, "", "trust", "hook:Bad_Name", ws); code != exitUsage || !strings.Contains(stderr, "is not an extension name") {
		t.Errorf("bad grant: %d %s", code, stderr)
	}
	if stdout, _, code := orcaWith(t, t.Context(), o, "", "trust", "--revoke", "hook:other", ws); code != 0 || !strings.Contains(stdout, "hook:other was not granted") {
		t.Errorf("revoke of a missing grant: %d %s", code, stdout)
	}
}

func TestRunBadManifest(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeFileAt(t, ws, ".orca/hooks/x/hook.yaml", "name: x\nevents: [tool_exploded]\nhandler: handler\ncapabilities: [events]\n")
	writeFileAt(t, ws, ".orca/hooks/x/handler", "#!/bin/sh\n")
	sc := writeScript(t, `{"text": "hello"}`)
	_, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "hi")
	if code != exitUsage || !strings.Contains(stderr, ".orca/hooks/x/hook.yaml: events[0]:") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
}

// orca chat runs granted extensions, writes observation rows and, with
// --timeline, a timeline, like orca run.
func TestChatExtensionAndTimeline(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	seen := eventsExtension(t, ws)
	o := options{configDir: t.TempDir()}
	if _, stderr, code := orcaWith(t, t.Context(), o, "", "trust", "hook:x", ws); code != 0 {
		t.Fatalf("trust: %s", stderr)
	}
	sc := writeScript(t, `{"text": "One."}`, `{"text": "Two."}`)
	stdout, stderr, code := orcaWith(t, t.Context(), o, "one\ntwo\n", "chat", "--script", sc, "-w", ws, "--session", "c", "--timeline")
	if code != 0 || !strings.Contains(stdout, "Two.") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "timeline is in ") || strings.Contains(stderr, "hook:x") {
		t.Errorf("stderr: %s", stderr)
	}
	if b, _ := os.ReadFile(seen); string(b) != strings.Repeat("turn_started\nturn_completed\n", 2) {
		t.Errorf("the extension saw %q", b)
	}
	timeline, _, _ := orcaWith(t, t.Context(), o, "", "timeline", "-w", ws, "--json")
	rows, _, _ := orcaWith(t, t.Context(), o, "", "timeline", "-w", ws, "--session", "c", "--json")
	if names := eventNames(t, timeline); len(names) == 0 || !slices.Equal(names, eventNames(t, rows)) {
		t.Errorf("timeline:\n%s\nrows:\n%s", timeline, rows)
	}
}
