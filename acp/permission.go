package acp

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/orca-agent/orca/policy"
)

// approver is the Apps' policy.Approver: a call the policy asks about is
// decided by its session's mode (session/set_mode) where the mode alone
// asked, and by the client otherwise (session/request_permission, with
// orca's options: once, always for the suggested rule, reject).
type approver struct{ a *agent }

// The options a person is given, by id.
const (
	optionOnce   = "allow_once"
	optionAlways = "allow_always"
	optionReject = "reject_once"
)

func (p approver) Approve(ctx context.Context, req policy.ApprovalRequest) (policy.Approval, error) {
	s, err := p.a.session(sdk.SessionId(req.SessionID))
	if err != nil {
		return policy.Approval{Allow: false, Scope: policy.ScopeOnce, Reason: "no client to ask: the session is not open in the editor"}, nil
	}
	s.mu.Lock()
	mode := s.mode
	s.mu.Unlock()
	// A rule that asks asks in every mode, as in orca's own modes.
	if strings.HasPrefix(req.Verdict.Rule, "mode:") {
		switch mode {
		case policy.ModeBypass:
			return policy.Approval{Allow: true, Scope: policy.ScopeOnce}, nil
		case policy.ModeAcceptEdits:
			if len(req.Access.Writes) > 0 && req.Access.Command == "" {
				return policy.Approval{Allow: true, Scope: policy.ScopeOnce}, nil
			}
		case policy.ModePlan:
			return policy.Approval{Allow: false, Scope: policy.ScopeOnce, Reason: "The session is in plan mode, which is read-only: make a plan, and the user switches modes to carry it out."}, nil
		case policy.ModeDontAsk:
			return policy.Approval{Allow: false, Scope: policy.ScopeOnce, Reason: policy.HeadlessReason(req)}, nil
		}
	}
	s.announce(ctx, req.ToolUseID, req.ToolName, req.Input, req.Display.Summary, req.Access.Reads, req.Access.Writes)
	options := []sdk.PermissionOption{{OptionId: optionOnce, Name: "Allow once", Kind: sdk.PermissionOptionKindAllowOnce}}
	if rules := suggestions(req.Verdict); len(rules) > 0 {
		options = append(options, sdk.PermissionOption{OptionId: optionAlways, Name: "Always allow " + strings.Join(rules, ", "), Kind: sdk.PermissionOptionKindAllowAlways})
	}
	options = append(options, sdk.PermissionOption{OptionId: optionReject, Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce})
	resp, err := p.a.conn.RequestPermission(ctx, sdk.RequestPermissionRequest{
		SessionId: sdk.SessionId(req.SessionID),
		ToolCall: sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(req.ToolUseID), Title: sdk.Ptr(title(req.ToolName, req.Display.Summary)),
			Kind: sdk.Ptr(kindOf(req.ToolName)), Status: sdk.Ptr(sdk.ToolCallStatusPending), RawInput: rawInput(req.Input),
			Locations: s.locations(req.Access.Reads, req.Access.Writes)},
		Options: options,
	})
	switch {
	case ctx.Err() != nil:
		return policy.Approval{Allow: false, Scope: policy.ScopeOnce, Reason: "The turn was cancelled."}, nil
	case err != nil:
		return policy.Approval{}, fmt.Errorf("asking the editor: %w", err)
	case resp.Outcome.Cancelled != nil || resp.Outcome.Selected == nil:
		return policy.Approval{Allow: false, Scope: policy.ScopeOnce, Reason: "The user cancelled."}, nil
	}
	switch string(resp.Outcome.Selected.OptionId) {
	case optionOnce:
		return policy.Approval{Allow: true, Scope: policy.ScopeOnce}, nil
	case optionAlways:
		return policy.Approval{Allow: true, Scope: policy.ScopeAgent}, nil
	}
	return policy.Approval{Allow: false, Scope: policy.ScopeOnce, Reason: "The user rejected it in the editor."}, nil
}

// suggestions are the rules an "always" allows.
func suggestions(v policy.Verdict) []string {
	if len(v.Suggestions) > 0 {
		return v.Suggestions
	}
	if v.Suggest != "" {
		return []string{v.Suggest}
	}
	return nil
}
