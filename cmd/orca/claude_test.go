package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Through the CLI: a plugin's guard named by --plugin-dir blocks with its
// script found through ${CLAUDE_PLUGIN_ROOT}; a SessionEnd hook's
// systemMessage is shown after the turn; --no-claude runs none of
// .claude's hooks; continue: false ends the turn as blocked.
func TestRunClaudeCodeHooks(t *testing.T) {
	t.Parallel()
	ws, plugin := t.TempDir(), filepath.Join(t.TempDir(), "guard")
	writeFileAt(t, plugin, ".claude-plugin/plugin.json", `{"name": "guard"}`)
	writeFileAt(t, plugin, "hooks/hooks.json", `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "sh \"${CLAUDE_PLUGIN_ROOT}/scripts/no-touch.sh\""}]}]}}`)
	writeFileAt(t, plugin, "scripts/no-touch.sh", "case \"$(cat)\" in *touch*) echo 'touching files is off' >&2; exit 2;; esac\n")
	writeFileAt(t, ws, ".claude/settings.json", `{"hooks": {
		"SessionEnd": [{"hooks": [{"type": "command", "command": "printf '{\"systemMessage\": \"session %s ended\"}' \"$(sed -n 's/.*\"reason\":\"\\([a-z_]*\\)\".*/\\1/p')\""}]}],
		"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "case \"$(cat)\" in *halt*) echo '{\"continue\": false, \"stopReason\": \"halted by policy\"}';; esac"}]}]}}`)
	sc := writeScript(t, bashCall("b", "touch ran.txt"), `{"text": "ok"}`)
	o := options{configDir: t.TempDir()}

	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "--trust", "--permission-mode", "bypass", "--plugin-dir", plugin, "go")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if fileExists(filepath.Join(ws, "ran.txt")) || !strings.Contains(stdout, "touching files is off") {
		t.Errorf("the plugin's guard did not block:\n%s", stdout)
	}
	if !strings.Contains(stdout, "session other ended") {
		t.Errorf("SessionEnd's systemMessage is not shown:\n%s", stdout)
	}

	// --no-claude: .claude's hooks are not read (the plugin was named, so
	// it still runs).
	stdout, _, _ = orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "--trust", "--permission-mode", "bypass", "--no-claude", "go")
	if strings.Contains(stdout, "ended") {
		t.Errorf("--no-claude ran .claude's hooks:\n%s", stdout)
	}

	// continue: false from UserPromptSubmit: the model is never asked.
	stdout, stderr, code = orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "--trust", "--json", "please halt")
	if !strings.Contains(stderr, "session other ended") {
		t.Errorf("with --json, SessionEnd's systemMessage is not on stderr:\n%s", stderr)
	}
	var stop jsonEvent
	for _, ev := range parseEvents(t, stdout) {
		if ev.str("name") == "turn_completed" {
			stop = ev
		}
		if ev.str("name") == "llm_call_started" {
			t.Errorf("the model was called after continue: false")
		}
	}
	if stop.str("stop_reason") != "blocked" || !strings.Contains(stop.str("reason"), "halted by policy") || code == 0 {
		t.Errorf("turn_completed %v, exit %d; want blocked, halted by policy", stop, code)
	}
}
