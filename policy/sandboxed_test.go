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

// WithSandboxedCommandsIf asks whether the sandbox is there only when a
// command is decided — not when the policy is made, nor for other tools —
// and approves nothing while it is not.
func TestSandboxedCommandsAskWhenACommandIs(t *testing.T) {
	ws := openWorkspace(t)
	asked, there := 0, false
	p := mustNew(t, ModeDefault, nil, nil, nil, WithSandboxedCommandsIf(func() bool { asked++; return there }, nil))
	if asked != 0 {
		t.Fatalf("the sandbox was asked about %d times when the policy was made", asked)
	}
	p.Decide(declared(Request{ToolName: "Read", Input: input(t, "file_path", "a.txt"), FS: ws}))
	if asked != 0 {
		t.Errorf("the sandbox was asked about for a Read")
	}
	bash := declared(Request{ToolName: "Bash", Input: input(t, "command", "npm test"), FS: ws})
	if v := p.Decide(bash); v.Decision != Ask || asked != 1 {
		t.Errorf("without the sandbox: %s by %q, asked %d times, want ask, once", v.Decision, v.Rule, asked)
	}
	there = true
	if v := p.Decide(bash); v.Decision != Allow || v.Rule != "sandbox" {
		t.Errorf("with the sandbox: %s by %q", v.Decision, v.Rule)
	}
}
