package policy

import (
	"encoding/json"
	"testing"

	"github.com/orca-agent/orca/tool"
)

// Claude Code's Tool(param:value) rules match a direct field of the
// call's input: its string value, or the JSON of a number or boolean, *
// a wildcard; a call that leaves the field out is not matched. For a
// command, the legacy "prefix:*" keeps its meaning, and an allow rule of
// this form approves no command or path: those are judged as always.
func TestParamRules(t *testing.T) {
	ws := openWorkspace(t)
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	task := func(in string) Request {
		return Request{ToolName: "Task", Input: raw(in), Traits: tool.Traits{Aliases: []string{"Agent"}}}
	}
	bash := func(in string) Request { return declared(Request{ToolName: "Bash", Input: raw(in), FS: ws}) }
	p := mustNew(t, ModeBypass, nil, []string{"Agent(model:opus)", "Agent(isolation:*)", "Bash(run_in_background:true)", "Bash(timeout:*)"}, nil)
	for _, c := range []struct {
		name string
		req  Request
		want Decision
	}{
		{"opus subagent", task(`{"prompt": "p", "subagent_type": "x", "model": "opus"}`), Deny},
		{"sonnet subagent", task(`{"prompt": "p", "subagent_type": "x", "model": "sonnet"}`), Allow},
		{"no model", task(`{"prompt": "p", "subagent_type": "x"}`), Allow},
		{"isolation given", task(`{"prompt": "p", "isolation": "worktree"}`), Deny},
		{"isolation an object", task(`{"prompt": "p", "isolation": {"kind": "worktree"}}`), Allow},
		{"background command", bash(`{"command": "sleep 1", "run_in_background": true}`), Deny},
		{"foreground command", bash(`{"command": "sleep 1", "run_in_background": false}`), Allow},
		{"command in timeout", bash(`{"command": "timeout 5 make"}`), Deny},
		{"timeout field is not the timeout command", bash(`{"command": "make", "timeout": 1000}`), Allow},
	} {
		if v := p.Decide(c.req); v.Decision != c.want {
			t.Errorf("%s: %s by %q, want %s (%s)", c.name, v.Decision, v.Rule, c.want, v.Reason)
		}
	}

	a := mustNew(t, ModeDefault, []string{"Agent(model:son*)", "Bash(run_in_background:true)"}, nil, nil)
	if v := a.Decide(task(`{"prompt": "p", "model": "sonnet"}`)); v.Decision != Allow || v.Rule != "Agent(model:son*)" {
		t.Errorf("allow Agent(model:son*): %s by %q", v.Decision, v.Rule)
	}
	if v := a.Decide(task(`{"prompt": "p", "model": "opus"}`)); v.Decision != Ask {
		t.Errorf("Agent(model:son*) on opus: %s by %q", v.Decision, v.Rule)
	}
	if v := a.Decide(bash(`{"command": "rm -rf x", "run_in_background": true}`)); v.Decision != Ask {
		t.Errorf("allow Bash(run_in_background:true) approved a command: %s by %q", v.Decision, v.Rule)
	}
}
