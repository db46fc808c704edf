package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/tool"
)

// Approver is asked about calls the policy decided to ask about. It is
// called before the call runs, and nothing runs until it answers.
// Implementations must be safe for concurrent use and return promptly once
// ctx is done.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Approval, error)
}

// ApproverFunc makes a plain function an Approver.
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (Approval, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (Approval, error) {
	return f(ctx, req)
}

// ApprovalRequest is one call waiting for approval.
type ApprovalRequest struct {
	// Scope is the run asking: the user's session, and for a call of a
	// subagent fork, the fork's execution and depth.
	scope.Scope
	ToolName, ToolUseID string
	Input               json.RawMessage
	// Access is what the call touches, and Display how it is shown, as
	// its tool declares them.
	Access  tool.Access
	Display tool.Display
	// Verdict is the policy's ask, with its reason and suggested rules.
	Verdict Verdict
}

// Scope is how far an approval reaches.
type Scope string

const (
	// ScopeOnce approves this call only.
	ScopeOnce Scope = "once"
	// ScopeSession approves the call's suggested rules for the rest of the
	// session.
	ScopeSession Scope = "session"
	// ScopeAgent approves them for every session of this runtime; never
	// for another runtime.
	ScopeAgent Scope = "agent"
)

// Approval is an approver's answer.
type Approval struct {
	Allow bool
	Scope Scope
	// Reason is shown to the model when the call is refused.
	Reason string
	// Park leaves the call for a person to decide later: the turn stops
	// before it (awaiting approval), and a session keeps it parked
	// (store.ParkedCall) until someone approves or denies it.
	Park bool
}

// Parking is the approver for runs with no one to ask that should wait
// for a person rather than refuse: it parks every call.
type Parking struct{}

// Approve parks the call.
func (Parking) Approve(context.Context, ApprovalRequest) (Approval, error) {
	return Approval{Park: true}, nil
}

// Headless is the approver for runs with no one to ask: it refuses every
// call, with a reason that says how to allow it next time.
type Headless struct{}

// Approve refuses the call.
func (Headless) Approve(_ context.Context, req ApprovalRequest) (Approval, error) {
	return Approval{Allow: false, Scope: ScopeOnce, Reason: HeadlessReason(req)}, nil
}

// HeadlessReason is the message Headless refuses with: the policy's reason,
// and the flag and settings key that would allow the call.
func HeadlessReason(req ApprovalRequest) string {
	v := req.Verdict
	var b strings.Builder
	b.WriteString(strings.TrimSuffix(v.Reason, "."))
	b.WriteString(". No one can approve it in this run, so it was not run.")
	if v.Decision == Deny {
		return b.String()
	}
	rules := v.Suggestions
	if len(rules) == 0 && v.Suggest != "" {
		rules = []string{v.Suggest}
	}
	if len(rules) == 0 {
		// Advice only where no rule asked: an ask rule wants a person.
		switch {
		case !strings.HasPrefix(v.Rule, "mode:"):
		case req.Access.Command != "":
			fmt.Fprintf(&b, ` Rewrite it as plain commands that an allow rule (--allow "RULE" or the settings key permissions.allow) can match; what no pattern can check runs only with --allow %q or --permission-mode bypass.`, req.ToolName)
		default:
			b.WriteString(` To allow such calls, rerun with --allow "RULE" naming a rule that covers it, or add the rule to the settings key permissions.allow.`)
		}
		return b.String()
	}
	flags := make([]string, len(rules))
	quoted := make([]string, len(rules))
	for i, r := range rules {
		flags[i] = fmt.Sprintf("--allow %q", r)
		quoted[i] = fmt.Sprintf("%q", r)
	}
	fmt.Fprintf(&b, " To allow it, rerun with %s or add %s to the settings key permissions.allow", strings.Join(flags, " "), strings.Join(quoted, ", "))
	if len(req.Access.Writes) > 0 && req.Access.Command == "" {
		b.WriteString(", or run with --permission-mode accept-edits")
	}
	b.WriteString(".")
	return b.String()
}
