package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestObservation(t *testing.T) {
	long := strings.Repeat("x", 500)
	lines := make([]string, 20)
	for i := range lines {
		lines[i] = "line"
	}
	for _, tc := range []struct {
		name, out string
		isError   bool
		want      string
	}{
		{"empty", "", false, "  ⎿  (no output)\n"},
		{"one line", "ok\n", false, "  ⎿  ok\n"},
		{"error", "no such file: a.txt", true, "  ✗  no such file: a.txt\n"},
		{"long line", long, false, "  ⎿  " + strings.Repeat("x", maxLineRunes-1) + "…\n"},
		{"many lines", strings.Join(lines, "\n"), false,
			"  ⎿  line\n" + strings.Repeat("     line\n", maxObservationLines-1) + "     … +12 lines\n"},
		{"control characters", "a\x1b[31mred\r\n", false, "  ⎿  a[31mred\n"},
	} {
		if got := observation(tc.out, tc.isError); got != tc.want {
			t.Errorf("%s: got\n%q\nwant\n%q", tc.name, got, tc.want)
		}
	}
}

func TestToolHeader(t *testing.T) {
	for _, tc := range []struct {
		name, input, want string
	}{
		{"Read", `{"file_path": "a.go", "offset": 10, "limit": 5}`, "● Read a.go from line 10 (5 lines)\n"},
		{"Edit", `{"file_path": "a.go", "old_string": "a", "new_string": "b", "replace_all": true}`, "● Edit a.go (all occurrences)\n"},
		{"Grep", `{"pattern": "func Sum", "path": "pkg", "glob": "*.go"}`, "● Grep \"func Sum\" in pkg (*.go)\n"},
		{"Glob", `{"pattern": "**/*.go"}`, "● Glob **/*.go\n"},
		{"Bash", `{"command": "go test ./...\necho done"}`, "● Bash go test ./... …\n"},
		{"TodoWrite", `{"todos": [{"content": "a", "status": "completed", "activeForm": "A"}, {"content": "b", "status": "in_progress", "activeForm": "B"}, {"content": "c", "status": "pending", "activeForm": "C"}]}`,
			"● TodoWrite\n  ☒ a\n  ◐ b\n  ☐ c\n"},
		{"Other", `{"x": 1}`, "● Other {\"x\":1}\n"},
		{"Other", `{}`, "● Other\n"},
		{"Read", `{"file_path": `, "● Read (arguments are not valid JSON: {\"file_path\":)\n"},
	} {
		if got := toolHeader(tc.name, json.RawMessage(tc.input)); got != tc.want {
			t.Errorf("%s %s: got %q, want %q", tc.name, tc.input, got, tc.want)
		}
	}
}
