package command

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/orca-agent/orca/hook"
)

// FuzzDecision reads what a hook written by others may print — any
// stdout on status 0, any stderr on status 2 — for every event, and runs
// the decision through a registry on a payload of its hook: whatever it
// is, it is a decision, an error, or nothing, never a panic.
func FuzzDecision(f *testing.F) {
	for _, s := range []string{
		``, `plain text`, `{`, `{"decision":"block","reason":"no"}`, `{"decision":"approve"}`,
		`{"continue":false,"stopReason":"done"}`, `{"systemMessage":"m","suppressOutput":true}`,
		`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"r","updatedInput":{"command":"ls"}}}`,
		`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","updatedInput":null}}`,
		`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedInput":{"file_path":"a"},"updatedPermissions":[{"type":"addRules"}]}}}`,
		`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"m","interrupt":true}}}`,
		`{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"c","updatedMCPToolOutput":[{"type":"text","text":"x"}]}}`,
		`{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"c"},"decision":"block"}`,
		`{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":["not","a string"]}}`,
		`{"decision":"block","reason":"","hookSpecificOutput":{}}`, `[1,2]`, `{"continue":"yes"}`,
		`{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"command":{"nested":[1,{"x":null}]}}}}`,
	} {
		for i := range Events {
			f.Add(s, uint8(i), false)
			f.Add(s, uint8(i), true)
		}
	}
	f.Fuzz(func(t *testing.T, out string, event uint8, blocked bool) {
		e := Events[int(event)%len(Events)]
		c, err := New(e.Name, "", "true", ".", 0)
		if err != nil {
			t.Fatal(err)
		}
		var d *hook.Decision
		if blocked {
			d, err = c.decideBlock(out)
		} else {
			d, err = c.decideJSON(out)
		}
		if err == nil {
			err = c.check(d)
		}
		if err != nil || d == nil {
			return
		}
		p := payloadOf(e.Hook)
		if p == nil {
			return
		}
		r := hook.NewRegistry()
		if _, err := r.Register(e.Hook, "fuzz", hook.HandlerFunc(func(context.Context, hook.Payload) (*hook.Decision, error) { return d, nil })); err != nil {
			t.Fatal(err)
		}
		r.Run(context.Background(), p)
	})
}

// payloadOf is a payload of hook n, with a tool call where it has one.
func payloadOf(n hook.Name) hook.Payload {
	call := hook.ToolCall{ToolName: "Bash", ToolUseID: "t1", Arguments: json.RawMessage(`{"command":"ls -la"}`)}
	switch n {
	case hook.PreToolUse:
		return &hook.PreToolUsePayload{ToolCall: call}
	case hook.PermissionRequest:
		return &hook.PermissionRequestPayload{ToolCall: call, Reason: "r"}
	case hook.PostToolUse:
		return &hook.PostToolUsePayload{ToolCall: call, Output: "out", Response: json.RawMessage(`{"stdout":"out"}`)}
	case hook.PostToolUseFailure:
		return &hook.PostToolUseFailurePayload{ToolCall: call, Error: "e"}
	case hook.UserPromptSubmit:
		return &hook.UserPromptSubmitPayload{Prompt: "p"}
	case hook.Stop:
		return &hook.StopPayload{}
	case hook.SessionStart:
		return &hook.SessionStartPayload{Source: "startup"}
	case hook.PreCompact:
		return &hook.PreCompactPayload{Trigger: "auto"}
	}
	return nil
}
