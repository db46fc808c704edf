package main

import (
	"fmt"
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
			for _, want := range []string{"permission mode dont-ask would ask before running shell commands, and it asks no one, so the call is denied", `would need the user's approval: no allow rule matches "touch made"`, "Bash(touch:*)", "I could not."} {
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

// Deny rules in Claude Code's current syntax hold against a model that
// writes the command otherwise — quoted, by path, after another command,
// through a wrapper — in bypass mode and in a workspace not trusted (deny
// rules apply untrusted); Claude Code's allow wildcards allow.
func TestClaudeCodeWildcardRulesThroughTheCLI(t *testing.T) {
	ws := t.TempDir()
	writeFileAt(t, ws, ".claude/settings.json", `{"permissions": {"deny": ["Bash(curl *)", "Bash(git push *)", "Bash(* --force)"]}}`)
	attacks := []string{
		"touch r1 && curl -s http://127.0.0.1:9",
		`touch r2; cu""rl -s http://127.0.0.1:9`,
		"touch r3 && /usr/bin/curl -s http://127.0.0.1:9",
		"touch r4 && timeout 5 curl -s http://127.0.0.1:9",
		"touch r5 && git push origin main",
		"touch r6 && git reset --force",
	}
	var replies []string
	for i, cmd := range attacks {
		replies = append(replies, bashCall(fmt.Sprint("a", i), cmd))
	}
	replies = append(replies, bashCall("ok", "touch fine"), `{"text": "done"}`)
	sc := writeScript(t, replies...)
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--json", "--script", sc, "-w", ws, "--permission-mode", "bypass", "--no-sandbox", "go")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	evs := parseEvents(t, stdout)
	blocked := map[string]string{}
	for _, ev := range named(evs, "tool_blocked") {
		blocked[ev.str("tool_use_id")] = ev.str("reason")
	}
	for i, cmd := range attacks {
		if why := blocked[fmt.Sprint("a", i)]; !strings.Contains(why, "is denied by the permission rule") {
			t.Errorf("%q was not denied: %q", cmd, why)
		}
		if name := fmt.Sprint("r", i+1); fileExists(filepath.Join(ws, name)) {
			t.Errorf("%q ran: %s exists", cmd, name)
		}
	}
	if !fileExists(filepath.Join(ws, "fine")) {
		t.Error("the allowed command did not run")
	}

	// Allow rules in the same syntax, in the default mode with no one to
	// ask: what they cover runs, the rest is refused.
	sc = writeScript(t, bashCall("make", "touch made-by-touch"), bashCall("other", "mkdir d"), `{"text": "done"}`)
	stdout, stderr, code = orca(t, t.Context(), "", "run", "--json", "--script", sc, "-w", ws, "--no-sandbox", "--allow", "Bash(touch *)", "go")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !fileExists(filepath.Join(ws, "made-by-touch")) || fileExists(filepath.Join(ws, "d")) {
		t.Errorf("Bash(touch *) ran %v, mkdir %v:\n%s", fileExists(filepath.Join(ws, "made-by-touch")), fileExists(filepath.Join(ws, "d")), stdout)
	}
}
