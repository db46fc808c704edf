package policy

import (
	"strings"
	"testing"
)

// A read-only tool that reaches the network (WebFetch) is asked about in
// the modes that ask before changes, unless a rule allows it, and runs in
// plan mode as far as its rules let it: each mode, with and without a rule.
func TestNetworkTools(t *testing.T) {
	fetch := func(u string) Request { return declared(Request{ToolName: "WebFetch", Input: input(t, "url", u)}) }
	for _, c := range []struct {
		mode  Mode
		allow []string
		want  Decision
		rule  string
	}{
		{ModeDefault, nil, Ask, "mode:default"},
		{ModeAcceptEdits, nil, Ask, "mode:accept-edits"},
		{ModePlan, nil, Ask, "mode:plan"},
		{ModeDontAsk, nil, Deny, "mode:dont-ask"},
		{ModeBypass, nil, Allow, "mode:bypass"},
		{ModeDefault, []string{"WebFetch(domain:go.dev)"}, Allow, "WebFetch(domain:go.dev)"},
		{ModePlan, []string{"WebFetch(domain:go.dev)"}, Allow, "WebFetch(domain:go.dev)"},
		{ModeDontAsk, []string{"WebFetch(domain:*.go.dev)"}, Allow, "WebFetch(domain:*.go.dev)"},
		{ModeDefault, []string{"WebFetch(domain:example.com)"}, Ask, "mode:default"},
	} {
		v := mustNew(t, c.mode, c.allow, nil, nil).Decide(fetch("https://go.dev/doc/"))
		if v.Decision != c.want || v.Rule != c.rule {
			t.Errorf("%s, allow %v: %s by %q (%s), want %s by %q", c.mode, c.allow, v.Decision, v.Rule, v.Reason, c.want, c.rule)
		}
		if v.Decision != Allow && (v.Suggest != "WebFetch(domain:go.dev)" || !strings.Contains(v.Reason, "reaching the network")) {
			t.Errorf("%s: suggest %q, %s", c.mode, v.Suggest, v.Reason)
		}
	}
	// A tool that only reads and reaches nothing is still allowed by the
	// mode: the trait, not the name, decides.
	if v := mustNew(t, ModeDefault, nil, nil, nil).Decide(declared(Request{ToolName: "Read", Input: input(t, "file_path", "a.go")})); v.Decision != Allow {
		t.Errorf("Read: %s", v.Decision)
	}
}
