package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Permission mode dont-ask asks no one, even at a terminal: what the
// default mode would ask about is refused at once with the rule that
// would allow it, and the turn goes on; Claude Code's "defaultMode":
// "dontAsk" in a workspace's settings chooses it, trusted or not (it only
// takes away).
func TestDontAskAtATerminal(t *testing.T) {
	for _, how := range []string{"flag", "claude settings"} {
		t.Run(how, func(t *testing.T) {
			ws := t.TempDir()
			sc := writeScript(t, bashCall("t", "touch made"), `{"text": "I could not."}`)
			args := []string{"run", "--script", sc, "-w", ws, "--no-sandbox", "go"}
			if how == "flag" {
				args = append(args, "--permission-mode", "dont-ask")
			} else {
				writeFileAt(t, ws, ".claude/settings.json", `{"permissions": {"defaultMode": "dontAsk"}}`)
			}
			s := start(t, true, args...)
			if code := s.wait(); code != exitOK {
				t.Fatalf("exit %d\n%s\n%s", code, s.out.String(), s.errOut.String())
			}
			out := s.out.String() + s.errOut.String()
			if strings.Contains(out, "? Allow") {
				t.Errorf("orca asked:\n%s", out)
			}
			for _, want := range []string{"Permission mode dont-ask asks no one, so it is denied", `would need the user's approval: no allow rule matches "touch made"`, "Bash(touch made:*)", "I could not."} {
				if !strings.Contains(out, want) {
					t.Errorf("the output lacks %q:\n%s", want, out)
				}
			}
			if fileExists(filepath.Join(ws, "made")) {
				t.Error("the refused command ran")
			}
		})
	}
}
