package command

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/orca-agent/orca/hook"
)

// decideBlock turns exit status 2 into the hook's blocking decision, with
// stderr as its reason.
func (c *Command) decideBlock(stderr string) (*hook.Decision, error) {
	reason := strings.TrimSpace(stderr)
	if reason == "" {
		reason = fmt.Sprintf("the %s hook %q exited with status 2", c.Event, clip(c.Command))
	}
	switch {
	case c.hook == hook.PermissionRequest:
		return &hook.Decision{Action: hook.Deny, Reason: reason}, nil
	case elicits(c.hook):
		return &hook.Decision{Action: hook.Decline, Reason: reason}, nil
	case revises(c.hook):
		return &hook.Decision{Action: hook.Revise, Reason: reason, Instruction: reason}, nil
	case allows(c.hook, hook.Block):
		return &hook.Decision{Action: hook.Block, Reason: reason}, nil
	}
	return nil, fmt.Errorf("exit status 2 blocks, but %s hooks cannot block%s", c.Event, detail(stderr))
}

// revises reports whether a block of hook n means: keep working.
func revises(n hook.Name) bool {
	return n == hook.Stop || n == hook.SubagentStop || n == hook.PostVerify
}

// elicits reports whether n answers an MCP server's question.
func elicits(n hook.Name) bool {
	return n == hook.Elicitation || n == hook.ElicitationResult
}

func allows(n hook.Name, a hook.Action) bool {
	c, _ := hook.ContractOf(n)
	return slices.Contains(c.Actions, a)
}

// decideJSON reads the decision a command printed on stdout with exit
// status 0.
func (c *Command) decideJSON(stdout string) (*hook.Decision, error) {
	text := strings.TrimSpace(stdout)
	if text == "" {
		return nil, nil
	}
	if text[0] != '{' {
		// Plain text is context where Claude Code takes it as such (and
		// for TurnStart, orca's own context hook); elsewhere it is only
		// output.
		switch c.hook {
		case hook.UserPromptSubmit, hook.SessionStart, hook.TurnStart:
			return &hook.Decision{Context: text}, nil
		}
		return nil, nil
	}
	var o output
	if err := json.Unmarshal([]byte(text), &o); err != nil {
		return nil, fmt.Errorf("stdout starts with { but is not a JSON decision: %v", err)
	}
	sp := o.Specific
	if sp == nil {
		sp = &specific{}
	}
	if sp.HookEventName != "" && sp.HookEventName != c.Event {
		return nil, fmt.Errorf("hookSpecificOutput.hookEventName is %q, but the hook is %s", sp.HookEventName, c.Event)
	}

	d := &hook.Decision{Message: strings.TrimSpace(o.SystemMessage)}
	if o.Continue != nil && !*o.Continue {
		// Claude Code's "stop everything": it wins over the decision.
		if !canEnd(c.hook) {
			return nil, fmt.Errorf("continue: false ends a turn, and %s hooks run outside one", c.Event)
		}
		d.EndTurn = firstOf(o.StopReason, o.Reason, fmt.Sprintf("the %s hook %q stopped it (continue: false)", c.Event, clip(c.Command)))
		return d, nil
	}

	if pd := sp.PermissionDecision; pd != "" {
		reason := sp.PermissionDecisionReason
		switch {
		case c.hook == hook.PreToolUse:
			switch pd {
			case "allow":
				d.Action = hook.Allow
			case "deny":
				d.Action = hook.Block
			case "ask":
				d.Action = hook.RequestPermission
			case "defer":
				d.Action = hook.Defer
			default:
				return nil, fmt.Errorf("hookSpecificOutput.permissionDecision %q is not allow, deny, ask or defer", pd)
			}
			d.Reason = reason
		case pd == "deny" && allows(c.hook, hook.Block):
			// A deny where Claude Code has no permission decision (a
			// PostToolUse hook's): what it means is clear, and dropping
			// it would fail open.
			d.Action, d.Reason = hook.Block, firstOf(reason, o.Reason)
		case pd == "deny" && allows(c.hook, hook.Deny):
			d.Action, d.Reason = hook.Deny, firstOf(reason, o.Reason)
		}
	}
	if sp.Action != "" || len(bytes.TrimSpace(sp.Content)) > 0 && string(bytes.TrimSpace(sp.Content)) != "null" {
		if !elicits(c.hook) {
			return nil, fmt.Errorf("hookSpecificOutput.action and content answer an MCP server's question: they are for Elicitation and ElicitationResult hooks, not %s", c.Event)
		}
		if err := elicitation(d, sp, o.Reason); err != nil {
			return nil, err
		}
	}
	if sp.Decision != nil {
		if c.hook != hook.PermissionRequest {
			return nil, fmt.Errorf("hookSpecificOutput.decision is for PermissionRequest hooks, not %s", c.Event)
		}
		switch sp.Decision.Behavior {
		case "allow":
			d.Action = hook.Allow
		case "deny":
			d.Action = hook.Deny
			if sp.Decision.Interrupt {
				d.EndTurn = firstOf(sp.Decision.Message, fmt.Sprintf("the %s hook %q denied and interrupted", c.Event, clip(c.Command)))
			}
		default:
			return nil, fmt.Errorf("hookSpecificOutput.decision.behavior %q is not allow or deny", sp.Decision.Behavior)
		}
		d.Reason = sp.Decision.Message
	}
	updated := sp.UpdatedInput
	if sp.Decision != nil && len(bytes.TrimSpace(sp.Decision.UpdatedInput)) > 0 {
		updated = sp.Decision.UpdatedInput
	}
	if in := bytes.TrimSpace(updated); len(in) > 0 && string(in) != "null" {
		switch {
		case c.hook == hook.PermissionRequest && d.Action != hook.Allow:
			return nil, errors.New("hookSpecificOutput.decision.updatedInput goes with behavior \"allow\"")
		case c.hook != hook.PreToolUse && c.hook != hook.PermissionRequest:
			return nil, fmt.Errorf("updatedInput is for PreToolUse and PermissionRequest hooks, not %s", c.Event)
		case in[0] != '{':
			return nil, fmt.Errorf("updatedInput must be a JSON object, not %s", clip(string(in)))
		}
		d.Updates = map[string]any{"arguments": json.RawMessage(in)}
	}
	if out, err := replacedOutput(sp); err != nil {
		return nil, err
	} else if out != nil {
		if c.hook != hook.PostToolUse {
			return nil, fmt.Errorf("updatedToolOutput and updatedMCPToolOutput are for PostToolUse hooks, not %s", c.Event)
		}
		if d.Updates == nil {
			d.Updates = map[string]any{}
		}
		d.Updates["output"] = *out
	}
	if d.Action == "" && o.Decision != "" {
		d.Reason = o.Reason
		switch o.Decision {
		case "block":
			switch {
			case revises(c.hook):
				if strings.TrimSpace(o.Reason) == "" {
					return nil, fmt.Errorf(`decision "block" of a %s hook needs a reason: it is the instruction the agent keeps working on`, c.Event)
				}
				d.Action, d.Instruction = hook.Revise, o.Reason
			case c.hook == hook.PermissionRequest:
				d.Action = hook.Deny
			case elicits(c.hook):
				d.Action = hook.Decline
			default:
				d.Action = hook.Block
			}
		case "approve":
			switch c.hook {
			case hook.PreToolUse, hook.PermissionRequest:
				d.Action = hook.Allow
			case hook.PostVerify:
				d.Action = hook.Accept
			default:
				return nil, fmt.Errorf(`decision "approve" means nothing to %s hooks`, c.Event)
			}
		default:
			return nil, fmt.Errorf(`decision %q is not "block" or "approve"`, o.Decision)
		}
	}
	var ctx []string
	for _, s := range []string{o.AdditionalContext, sp.AdditionalContext} {
		if strings.TrimSpace(s) != "" {
			ctx = append(ctx, s)
		}
	}
	d.Context = strings.Join(ctx, "\n\n")
	if (d.Action == hook.Block || d.Action == hook.Deny || d.Action == hook.Decline) && strings.TrimSpace(d.Reason) == "" {
		d.Reason = fmt.Sprintf("the %s hook %q said %s", c.Event, clip(c.Command), d.Action)
	}
	if d.Action == "" && d.Updates == nil && d.Context == "" && d.Message == "" {
		return nil, nil
	}
	return d, nil
}

// elicitation reads an elicitation hook's answer into d:
// hookSpecificOutput.action (accept, decline or cancel; none: the content
// alone) and content, an object; reason, the top-level one, says why.
func elicitation(d *hook.Decision, sp *specific, reason string) error {
	switch sp.Action {
	case "":
	case "accept":
		d.Action = hook.Accept
	case "decline":
		d.Action = hook.Decline
	case "cancel":
		d.Action = hook.Cancel
	default:
		return fmt.Errorf("hookSpecificOutput.action %q is not accept, decline or cancel", sp.Action)
	}
	d.Reason = reason
	content := bytes.TrimSpace(sp.Content)
	if len(content) == 0 || string(content) == "null" {
		return nil
	}
	if content[0] != '{' {
		return fmt.Errorf("hookSpecificOutput.content must be a JSON object of the form's fields, not %s", clip(string(content)))
	}
	if d.Action == hook.Decline || d.Action == hook.Cancel {
		return fmt.Errorf("hookSpecificOutput.content goes with action \"accept\", not %q", sp.Action)
	}
	d.Updates = map[string]any{"content": json.RawMessage(content)}
	return nil
}

// replacedOutput reads the observation a PostToolUse hook puts in place
// of the tool's: hookSpecificOutput.updatedToolOutput, else Claude Code's
// updatedMCPToolOutput. A string is the text; MCP content blocks
// ([{"type": "text", "text": …}], or {"content": [...]}) give their texts;
// any other JSON value is the observation as JSON. nil: none.
func replacedOutput(sp *specific) (*string, error) {
	raw := bytes.TrimSpace(sp.UpdatedToolOutput)
	if len(raw) == 0 || string(raw) == "null" {
		raw = bytes.TrimSpace(sp.UpdatedMCPToolOutput)
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return &s, nil
	}
	var wrapped struct {
		Content json.RawMessage `json:"content"`
	}
	blocks := raw
	if raw[0] == '{' && json.Unmarshal(raw, &wrapped) == nil && len(wrapped.Content) > 0 {
		blocks = wrapped.Content
	}
	var content []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if json.Unmarshal(blocks, &content) == nil && len(content) > 0 {
		var texts []string
		for _, b := range content {
			if b.Type != "text" || b.Text == nil {
				return nil, fmt.Errorf("the replaced tool output has a %q block: only text blocks can be an observation", b.Type)
			}
			texts = append(texts, *b.Text)
		}
		s = strings.Join(texts, "\n")
		return &s, nil
	}
	s = string(raw)
	return &s, nil
}

// canEnd reports whether hook n may end the turn.
func canEnd(n hook.Name) bool {
	c, _ := hook.ContractOf(n)
	return c.CanEnd
}

// check refuses a decision that the hook's contract does not allow, so
// that the mismatch is reported as what it is rather than as a violation
// the registry cannot explain in the command's terms.
func (c *Command) check(d *hook.Decision) error {
	if d == nil {
		return nil
	}
	ct, _ := hook.ContractOf(c.hook)
	if d.Action != "" && d.Action != hook.Continue && !slices.Contains(ct.Actions, d.Action) {
		return fmt.Errorf("%s hooks cannot %s", c.Event, strings.ReplaceAll(string(d.Action), "_", " "))
	}
	if d.Context != "" && !ct.AddContext {
		return fmt.Errorf("%s hooks cannot add context (additionalContext)", c.Event)
	}
	if d.EndTurn != "" && !ct.CanEnd {
		return fmt.Errorf("%s hooks cannot end the turn", c.Event)
	}
	for k := range d.Updates {
		if !slices.Contains(ct.Rewritable, k) {
			return fmt.Errorf("%s hooks cannot rewrite %s", c.Event, k)
		}
	}
	return nil
}

func firstOf(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

// clip shortens a command for messages.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const max = 80
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return string([]rune(s)[:max-1]) + "…"
}

// detail returns ": " and stderr, trimmed and shortened, or "" if empty.
func detail(stderr string) string {
	s := strings.TrimSpace(stderr)
	if s == "" {
		return ""
	}
	const max = 2000
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "…"
	}
	return ": " + s
}
