package policy

import (
	"strings"
	"testing"
)

// Permission mode dont-ask runs what default runs unasked, and denies —
// never asks about — the rest: a call default would ask about, and one an
// ask rule asks about. The reason says what would allow it.
func TestDontAsk(t *testing.T) {
	ws := openWorkspace(t)
	p := mustNew(t, ModeDontAsk, []string{"Bash(go test:*)"}, nil, []string{"Bash(git push:*)"})
	for _, c := range []struct {
		call tcall
		want Decision
		rule string
		says []string
	}{
		{tcall{tool: "Read", kv: []string{"file_path", "src/a.go"}}, Allow, "mode:dont-ask", nil},
		{tcall{tool: "Bash", kv: []string{"command", "go test ./..."}}, Allow, "Bash(go test:*)", nil},
		{tcall{tool: "Bash", kv: []string{"command", "npm test"}}, Deny, "mode:dont-ask",
			[]string{`no allow rule matches "npm test"`, "permission mode dont-ask would ask before running shell commands, and it asks no one, so the call is denied", "Bash(npm test:*)"}},
		{tcall{tool: "Bash", kv: []string{"command", "git push origin main"}}, Deny, "Bash(git push:*)", []string{"ask rule", "dont-ask"}},
		{tcall{tool: "Write", kv: []string{"file_path", "src/a.go"}}, Deny, "mode:dont-ask", []string{"permission mode dont-ask would ask before changing files, and it asks no one"}},
	} {
		v := p.Decide(declared(Request{ToolName: c.call.tool, Input: input(t, c.call.kv...), FS: ws}))
		if v.Decision != c.want || v.Rule != c.rule {
			t.Errorf("%s = %s by %q, want %s by %q (%s)", c.call, v.Decision, v.Rule, c.want, c.rule, v.Reason)
		}
		for _, s := range c.says {
			if !strings.Contains(v.Reason, s) {
				t.Errorf("%s: reason %q lacks %q", c.call, v.Reason, s)
			}
		}
	}
	// One mode in a reason: the one in force.
	v := p.Decide(declared(Request{ToolName: "Bash", Input: input(t, "command", "npm test"), FS: ws}))
	if strings.Contains(v.Reason, "mode default") {
		t.Errorf("the reason names another mode: %s", v.Reason)
	}
	if m, err := ParseMode("dontAsk"); err != nil || m != ModeDontAsk {
		t.Errorf("ParseMode(dontAsk) = %q, %v", m, err)
	}
}
