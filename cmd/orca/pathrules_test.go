package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/sandbox"
)

// Claude Code's four kinds of path in Read and Edit rules mean what its
// docs say: "~/.aws/**" the home folder's, "//etc/…" the filesystem's,
// "/private/**" the project's, "docs/**" the workspace's. Read deny rules
// refuse the file tools and, in the OS sandbox, hide the files from
// commands too.
func TestClaudeCodePathRules(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	writeFileAt(t, home, ".aws/credentials", "AWS-SECRET\n")
	ws := t.TempDir()
	writeFileAt(t, ws, "private/key", "PROJECT-SECRET\n")
	writeFileAt(t, ws, "docs/a.md", "A\n")
	writeFileAt(t, ws, ".claude/settings.json", `{"permissions": {"deny": ["Read(~/.aws/**)", "Read(/private/**)", "Edit(/docs/**)"]}}`)
	sc := writeScript(t,
		calls([3]any{"key", "Read", map[string]any{"file_path": "private/key"}}),
		calls([3]any{"doc", "Edit", map[string]any{"file_path": "docs/a.md", "old_string": "A", "new_string": "B"}}),
		bashCall("cat", "cat ~/.aws/credentials private/key; echo done"),
		`{"text": "done"}`)
	args := []string{"run", "--json", "--script", sc, "-w", ws, "--permission-mode", "bypass", "go"}
	sandboxed := sandbox.Available() == nil
	if !sandboxed {
		args = append(args, "--no-sandbox")
	}
	stdout, stderr, code := orca(t, t.Context(), "", args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	evs := parseEvents(t, stdout)
	for id, rule := range map[string]string{"key": "Read(/private/**)", "doc": "Edit(/docs/**)"} {
		if out := toolEventOf(t, evs, id).str("output"); !strings.Contains(out, "denied by the permission rule "+rule) {
			t.Errorf("%s: %q, want it denied by %s", id, out, rule)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "docs/a.md")); string(b) != "A\n" {
		t.Errorf("docs/a.md = %q", b)
	}
	if !sandboxed {
		t.Log("no OS sandbox here: commands are not kept from the files")
		return
	}
	out := toolEventOf(t, evs, "cat").str("output")
	if strings.Contains(out, "SECRET") || !strings.Contains(out, "done") {
		t.Errorf("a sandboxed command read a file a Read deny rule names:\n%s", out)
	}
}
