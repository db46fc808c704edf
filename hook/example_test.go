package hook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/orca-agent/orca/hook"
)

// A guard on PRE_TOOL_USE, registered by its payload type: it asks for
// permission before any deploy, whatever the policy would say.
func ExampleHandle() {
	hooks := hook.NewRegistry()
	hook.Handle(hooks, "require-operator", func(ctx context.Context, p *hook.PreToolUsePayload) (*hook.Decision, error) {
		if p.ToolName == "Bash" && strings.Contains(string(p.Arguments), "deploy") {
			return &hook.Decision{Action: hook.RequestPermission, Reason: "deploys need an operator"}, nil
		}
		return nil, nil // continue
	}, hook.Priority(50), hook.FailClosed())

	for _, cmd := range []string{`{"command": "go test ./..."}`, `{"command": "make deploy"}`} {
		out := hooks.Run(context.Background(), &hook.PreToolUsePayload{ToolCall: hook.ToolCall{ToolName: "Bash", ToolUseID: "t1", Arguments: json.RawMessage(cmd)}})
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%s: %s %s", cmd, out.Action, out.Reason)))
	}
	// Output:
	// {"command": "go test ./..."}: continue
	// {"command": "make deploy"}: request_permission deploys need an operator
}

// Rewrites apply in priority order, and a later handler sees the earlier
// one's; a decision the hook's contract does not allow is a failure,
// reported and ignored whole.
func ExampleRegistry_Register() {
	hooks := hook.NewRegistry()
	hooks.Register(hook.UserPromptSubmit, "sign", hook.HandlerFunc(func(ctx context.Context, p hook.Payload) (*hook.Decision, error) {
		return &hook.Decision{Updates: map[string]any{"prompt": p.(*hook.UserPromptSubmitPayload).Prompt + " (signed)"}}, nil
	}), hook.Priority(20))
	hooks.Register(hook.UserPromptSubmit, "trim", hook.On(func(ctx context.Context, p *hook.UserPromptSubmitPayload) (*hook.Decision, error) {
		return &hook.Decision{Updates: map[string]any{"prompt": strings.TrimSpace(p.Prompt)}}, nil
	}), hook.Priority(10))
	hooks.Register(hook.UserPromptSubmit, "confused", hook.On(func(ctx context.Context, p *hook.UserPromptSubmitPayload) (*hook.Decision, error) {
		return &hook.Decision{Action: hook.Allow}, nil // not an action of this hook
	}), hook.Priority(30))

	out := hooks.Run(context.Background(), &hook.UserPromptSubmitPayload{Prompt: "  fix the test  "})
	fmt.Printf("%q\n", out.Payload.(*hook.UserPromptSubmitPayload).Prompt)
	for _, f := range out.Failures {
		fmt.Println("failed:", f.Handler, f.Violation)
	}
	// Output:
	// "fix the test (signed)"
	// failed: confused true
}

// An ELICITATION handler answers the questions of one MCP server the team
// trusts — accepting with the form's values, which the runtime completes
// with the schema's defaults — and declines the others' before anyone is
// asked.
func ExampleElicitationPayload() {
	hooks := hook.NewRegistry()
	hook.Handle(hooks, "ci-answers", func(ctx context.Context, p *hook.ElicitationPayload) (*hook.Decision, error) {
		if p.Server != "deploy" || p.Mode != "form" {
			return &hook.Decision{Action: hook.Decline, Reason: "only the deploy server is answered in CI"}, nil
		}
		return &hook.Decision{Action: hook.Accept, Updates: map[string]any{"content": map[string]any{"environment": "staging"}}}, nil
	})
	for _, server := range []string{"deploy", "shop"} {
		out := hooks.Run(context.Background(), &hook.ElicitationPayload{Question: hook.Question{Server: server, Mode: "form", Message: "Where to?"}})
		fmt.Println(strings.TrimSpace(fmt.Sprint(server, " ", out.Action, " ", out.Payload.(*hook.ElicitationPayload).Content, " ", out.Reason)))
	}
	// Output:
	// deploy accept map[environment:staging]
	// shop decline map[] only the deploy server is answered in CI
}
