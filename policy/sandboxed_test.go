package policy

import (
	"strings"
	"testing"
)

// WithSandboxedCommands approves the commands that run in the sandbox, in
// every mode but plan; deny and ask rules, protection, and the commands
// the sandbox excludes are decided as before.
func TestSandboxedCommandsRunUnasked(t *testing.T) {
	ws := openWorkspace(t)
	p := mustNew(t, ModeDefault, nil, []string{"Bash(curl *)"}, []string{"Bash(git push *)"}, WithSandboxedCommands([]string{"docker"}))
	for cmd, want := range map[string]Decision{
		"npm test":                Allow,
		"rm -rf build && make":    Allow,
		"curl https://x.example":  Deny,
		"git push origin main":    Ask,
		"docker ps":               Ask,   // runs without the sandbox
		"docker ps && ls":         Allow, // not all excluded: it runs sandboxed
		"cat .orca/settings.json": Deny,  // protection
	} {
		v := p.Decide(declared(Request{ToolName: "Bash", Input: input(t, "command", cmd), FS: ws}))
		if v.Decision != want {
			t.Errorf("%q: %s by %q, want %s (%s)", cmd, v.Decision, v.Rule, want, v.Reason)
		}
		if want == Allow && (v.Rule != "sandbox" || !strings.Contains(v.Reason, "autoAllowBashIfSandboxed")) {
			t.Errorf("%q: allowed by %q: %s", cmd, v.Rule, v.Reason)
		}
	}
	plan, err := p.WithMode(ModePlan)
	if err != nil {
		t.Fatal(err)
	}
	if v := plan.Decide(declared(Request{ToolName: "Bash", Input: input(t, "command", "npm test"), FS: ws})); v.Decision != Deny {
		t.Errorf("plan mode: %s by %q", v.Decision, v.Rule)
	}
	if v := mustNew(t, ModeDefault, nil, nil, nil).Decide(declared(Request{ToolName: "Bash", Input: input(t, "command", "npm test"), FS: ws})); v.Decision != Ask {
		t.Errorf("without the option: %s by %q", v.Decision, v.Rule)
	}
}
