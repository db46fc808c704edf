package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/orca-agent/orca/scope"
)

func TestHeadlessRefusesAndSaysHowToAllow(t *testing.T) {
	p := mustNew(t, ModeDefault, []string{"Bash(ls:*)"}, []string{"Bash(rm:*)"}, []string{"Bash(git push:*)"})
	ctx := context.Background()
	for _, c := range []struct {
		tool, key, val string
		want, not      []string
	}{
		{tool: "Bash", key: "command", val: "ls && go test ./... && make",
			want: []string{`Bash command "ls && go test ./... && make"`, `--allow "Bash(go test:*)" --allow "Bash(make:*)"`, `"Bash(go test:*)", "Bash(make:*)"`, "permissions.allow", "not run"},
			not:  []string{"accept-edits"}},
		{tool: "Edit", key: "file_path", val: "src/a.go",
			want: []string{`Edit of "src/a.go"`, `--allow "Edit(src/**)"`, "permissions.allow", "--permission-mode accept-edits"}},
		{tool: "Write", key: "file_path", val: "a.txt",
			want: []string{`--allow "Edit(a.txt)"`, "--permission-mode accept-edits"}},
		{tool: "Bash", key: "command", val: "eval \"$X\"",
			want: []string{"eval runs its arguments as shell code", `--allow "RULE"`, "permissions.allow", "--permission-mode bypass"}},
		{tool: "Bash", key: "command", val: "git push",
			want: []string{"ask rule Bash(git push:*)"}, not: []string{"--allow"}},
	} {
		req := declared(Request{ToolName: c.tool, Input: input(t, c.key, c.val)})
		v := p.Decide(req)
		if v.Decision != Ask {
			t.Fatalf("%s %q = %s, want ask", c.tool, c.val, v.Decision)
		}
		a, err := Headless{}.Approve(ctx, ApprovalRequest{Scope: scope.Scope{SessionID: "s"}, ToolName: c.tool, ToolUseID: "t1", Input: req.Input, Access: req.Access, Verdict: v})
		if err != nil {
			t.Fatal(err)
		}
		if a.Allow || a.Scope != ScopeOnce {
			t.Errorf("%s %q: Headless = %+v, want a refusal for this call", c.tool, c.val, a)
		}
		for _, w := range c.want {
			if !strings.Contains(a.Reason, w) {
				t.Errorf("%s %q: reason %q lacks %q", c.tool, c.val, a.Reason, w)
			}
		}
		for _, w := range c.not {
			if strings.Contains(a.Reason, w) {
				t.Errorf("%s %q: reason %q has %q", c.tool, c.val, a.Reason, w)
			}
		}
	}
}

func TestApproverFunc(t *testing.T) {
	var got ApprovalRequest
	var ap Approver = ApproverFunc(func(_ context.Context, req ApprovalRequest) (Approval, error) {
		got = req
		return Approval{Allow: true, Scope: ScopeSession}, nil
	})
	a, err := ap.Approve(context.Background(), ApprovalRequest{ToolName: "Bash", ToolUseID: "t1"})
	if err != nil || !a.Allow || a.Scope != ScopeSession || got.ToolUseID != "t1" {
		t.Errorf("ApproverFunc = %+v, %v (saw %+v)", a, err, got)
	}
}
