package command_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/hook/command"
	"github.com/orca-agent/orca/internal/proctest"
	"github.com/orca-agent/orca/scope"
)

func common() hook.Common {
	return hook.Common{HookName: "x", Scope: scope.Scope{RuntimeID: "rt-1", SessionID: "s-1", TurnID: "t-1"}, Cwd: "/ws"}
}

func elicitation(server string) *hook.ElicitationPayload {
	return &hook.ElicitationPayload{Common: common(), Question: hook.Question{ID: "el_1", Server: server, Mode: "form", Message: "Your name?",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)}, Content: map[string]any{"name": "Ada"}}
}

func preToolUse(tool, args string) *hook.PreToolUsePayload {
	return &hook.PreToolUsePayload{Common: common(), ToolCall: hook.ToolCall{ToolName: tool, ToolUseID: "u-1", Arguments: json.RawMessage(args)}}
}

func aliased(p *hook.PreToolUsePayload, aliases ...string) *hook.PreToolUsePayload {
	p.Aliases = aliases
	return p
}

func TestInputUsesClaudeCodesNames(t *testing.T) {
	for _, tc := range []struct {
		p    hook.Payload
		want map[string]any
	}{
		{preToolUse("Bash", `{"command":"ls"}`), map[string]any{
			"hook_event_name": "PreToolUse", "hook": "PRE_TOOL_USE", "version": 1.0, "transcript_path": "",
			"session_id": "s-1", "runtime_id": "rt-1", "turn_id": "t-1", "cwd": "/ws",
			"tool_name": "Bash", "tool_use_id": "u-1", "tool_input": map[string]any{"command": "ls"},
		}},
		{&hook.PostToolUsePayload{Common: common(), ToolCall: hook.ToolCall{ToolName: "Read", ToolUseID: "u-2", Arguments: json.RawMessage(`{}`)}, Output: "text"}, map[string]any{
			"hook_event_name": "PostToolUse", "tool_name": "Read", "tool_use_id": "u-2", "tool_input": map[string]any{}, "tool_response": "text",
		}},
		{&hook.PostToolUseFailurePayload{Common: common(), ToolCall: hook.ToolCall{ToolName: "Bash", Arguments: json.RawMessage(`{}`)}, Error: "exit code: 1"}, map[string]any{
			"hook_event_name": "PostToolUseFailure", "tool_input": map[string]any{}, "error": "exit code: 1",
		}},
		{&hook.PermissionRequestPayload{Common: common(), ToolCall: hook.ToolCall{ToolName: "Bash", Arguments: json.RawMessage(`{"command":"x"}`)}, Reason: "why", Suggestion: "Bash(x:*)"}, map[string]any{
			"hook_event_name": "PermissionRequest", "tool_input": map[string]any{"command": "x"}, "reason": "why", "suggestion": "Bash(x:*)",
		}},
		{&hook.UserPromptSubmitPayload{Common: common(), Prompt: "fix it"}, map[string]any{"hook_event_name": "UserPromptSubmit", "prompt": "fix it"}},
		{&hook.StopPayload{Common: common(), Answer: "done", Iterations: 3}, map[string]any{"hook_event_name": "Stop", "stop_hook_active": false, "answer": "done", "iterations": 3.0}},
		{&hook.PreCompactPayload{Common: common(), Trigger: "manual", Instructions: "keep the plan"}, map[string]any{"hook_event_name": "PreCompact", "trigger": "manual", "custom_instructions": "keep the plan"}},
		{&hook.SessionStartPayload{Common: common(), Source: "resumed"}, map[string]any{"hook_event_name": "SessionStart", "source": "resume"}},
		{&hook.SubagentStopPayload{Common: common(), Agent: "explorer", Answer: "found"}, map[string]any{"hook_event_name": "SubagentStop", "agent": "explorer", "agent_type": "explorer", "stop_hook_active": false}},
		// What Claude Code's hooks read besides.
		{&hook.StopPayload{Common: common(), Answer: "done", Continued: 1}, map[string]any{"stop_hook_active": true, "last_assistant_message": "done", "permission_mode": "bypassPermissions"}},
		{&hook.SubagentStopPayload{Common: common(), Agent: "explorer", AgentID: "exec_9", AgentTranscriptPath: "/t/agent.jsonl", Continued: 2}, map[string]any{
			"agent_id": "exec_9", "agent_transcript_path": "/t/agent.jsonl", "stop_hook_active": true,
		}},
		{&hook.SubagentStartPayload{Common: common(), Agent: "explorer", AgentID: "exec_9"}, map[string]any{"agent_id": "exec_9", "agent_type": "explorer"}},
		{&hook.PreToolUsePayload{Common: hook.Common{Scope: scope.Scope{SessionID: "s", ExecutionID: "exec_3", Depth: 1}, PermissionMode: "accept-edits", TranscriptPath: "/t/s.jsonl", Agent: "reviewer"}, ToolCall: hook.ToolCall{ToolName: "Read", Arguments: json.RawMessage(`{}`)}}, map[string]any{
			"permission_mode": "acceptEdits", "transcript_path": "/t/s.jsonl", "agent_type": "reviewer", "agent_id": "exec_3",
		}},
		{&hook.PostToolUsePayload{Common: common(), ToolCall: hook.ToolCall{ToolName: "Write", Arguments: json.RawMessage(`{}`)}, Output: "Created a.go", Response: json.RawMessage(`{"type":"create","filePath":"/ws/a.go"}`)}, map[string]any{
			"tool_response": map[string]any{"type": "create", "filePath": "/ws/a.go"},
		}},
		{&hook.PostToolUseFailurePayload{Common: common(), ToolCall: hook.ToolCall{ToolName: "Bash", Arguments: json.RawMessage(`{}`)}, Error: "cancelled", Interrupted: true}, map[string]any{"is_interrupt": true}},
		{&hook.SessionEndPayload{Common: common(), Reason: "prompt_input_exit"}, map[string]any{"reason": "prompt_input_exit"}},
		{&hook.SessionEndPayload{Common: common(), Reason: "closed"}, map[string]any{"reason": "other"}},
		{&hook.PostVerifyPayload{Common: common(), Answer: "a", Verification: &hook.Verification{Command: "go test", Passed: true}}, map[string]any{"hook_event_name": "PostVerify", "verification": map[string]any{"command": "go test", "passed": true, "output": ""}}},
		// Claude Code's Elicitation fields: mcp_server_name, message,
		// mode, requested_schema; url and elicitation_id for a URL; action
		// and content once answered.
		{elicitation("everything"), map[string]any{
			"hook_event_name": "Elicitation", "mcp_server_name": "everything", "message": "Your name?", "mode": "form",
			"content": map[string]any{"name": "Ada"}, "id": "el_1",
			"requested_schema": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
		}},
		{&hook.ElicitationResultPayload{Common: common(), Question: hook.Question{Server: "auth", Mode: "url", Message: "Sign in", URL: "https://a.example/x", ElicitationID: "e-9"},
			Action: "accept", By: "user"}, map[string]any{
			"hook_event_name": "ElicitationResult", "mcp_server_name": "auth", "mode": "url", "url": "https://a.example/x", "elicitation_id": "e-9", "action": "accept", "answered_by": "user",
		}},
	} {
		raw, err := command.Input(tc.p)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		for k, v := range tc.want {
			if !reflect.DeepEqual(got[k], v) {
				t.Errorf("%s: %s = %#v, want %#v", tc.p.Hook(), k, got[k], v)
			}
		}
		for _, k := range []string{"arguments", "output", "instructions", "response", "server"} {
			if _, object := got["tool_response"].(map[string]any); k == "output" && object {
				continue // the observation, beside the tool's own object
			}
			if _, ok := got[k]; ok {
				t.Errorf("%s: orca's field %q is still there under its own name: %s", tc.p.Hook(), k, raw)
			}
		}
	}
}

// run runs command as a hook for event on p, in dir.
func run(t *testing.T, dir, event, matcher, cmdline string, p hook.Payload) (*hook.Decision, error) {
	t.Helper()
	c, err := command.New(event, matcher, cmdline, dir, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if c.Hook() != p.Hook() {
		t.Fatalf("%s command for a %s payload", event, p.Hook())
	}
	return c.Handle(t.Context(), p)
}

func TestCommandDecisions(t *testing.T) {
	dir := t.TempDir()
	pre := preToolUse("Bash", `{"command":"rm -rf /"}`)
	post := &hook.PostToolUsePayload{Common: common(), ToolCall: hook.ToolCall{ToolName: "Bash", Arguments: json.RawMessage(`{}`)}, Output: "ok"}
	perm := &hook.PermissionRequestPayload{Common: common(), ToolCall: hook.ToolCall{ToolName: "Bash", Arguments: json.RawMessage(`{}`)}}
	prompt := &hook.UserPromptSubmitPayload{Common: common(), Prompt: "hi"}
	stop := &hook.StopPayload{Common: common(), Answer: "done"}
	start := &hook.SessionStartPayload{Common: common(), Source: "new"}
	failure := &hook.PostToolUseFailurePayload{Common: common(), ToolCall: hook.ToolCall{ToolName: "Bash", Arguments: json.RawMessage(`{}`)}}
	verify := &hook.PostVerifyPayload{Common: common(), Answer: "a"}
	compact := &hook.PreCompactPayload{Common: common(), Trigger: "auto"}
	elicit := elicitation("everything")
	result := &hook.ElicitationResultPayload{Common: common(), Question: elicit.Question, Action: "accept", Content: map[string]any{"name": "Ada"}, By: "user"}

	for _, tc := range []struct {
		name    string
		p       hook.Payload
		command string
		want    *hook.Decision
		err     string
	}{
		// exit status 2
		{"2 blocks a tool call", pre, `cat >/dev/null; echo "rm is not allowed" >&2; exit 2`, &hook.Decision{Action: hook.Block, Reason: "rm is not allowed"}, ""},
		{"2 denies a permission request", perm, `echo no >&2; exit 2`, &hook.Decision{Action: hook.Deny, Reason: "no"}, ""},
		{"2 revises a stop", stop, `echo "run the tests first" >&2; exit 2`, &hook.Decision{Action: hook.Revise, Reason: "run the tests first", Instruction: "run the tests first"}, ""},
		{"2 revises a verification", verify, `echo again >&2; exit 2`, &hook.Decision{Action: hook.Revise, Reason: "again", Instruction: "again"}, ""},
		{"2 blocks a prompt", prompt, `echo "no secrets" >&2; exit 2`, &hook.Decision{Action: hook.Block, Reason: "no secrets"}, ""},
		{"2 without stderr", pre, `exit 2`, &hook.Decision{Action: hook.Block, Reason: `the PreToolUse hook "exit 2" exited with status 2`}, ""},
		{"2 where nothing can block", start, `echo hm >&2; exit 2`, nil, "exit status 2 blocks, but SessionStart hooks cannot block: hm"},
		{"2 ignores stdout", pre, `echo '{"decision": "approve"}'; echo stop >&2; exit 2`, &hook.Decision{Action: hook.Block, Reason: "stop"}, ""},
		{"2 declines an MCP server's question", elicit, `echo "not in CI" >&2; exit 2`, &hook.Decision{Action: hook.Decline, Reason: "not in CI"}, ""},
		{"2 declines the answer", result, `exit 2`, &hook.Decision{Action: hook.Decline, Reason: `the ElicitationResult hook "exit 2" exited with status 2`}, ""},
		// other exit statuses fail
		{"1 fails", pre, `echo broken >&2; exit 1`, nil, `command "echo broken >&2; exit 1" exited with status 1: broken`},
		{"not found", pre, `./no-such-script.sh`, nil, "exited with status 127"},
		// exit status 0, plain stdout
		{"plain stdout is context for prompts", prompt, `echo "ticket ORC-7"`, &hook.Decision{Context: "ticket ORC-7"}, ""},
		{"plain stdout is context for session start", start, `echo "branch main"`, &hook.Decision{Context: "branch main"}, ""},
		{"plain stdout is only output elsewhere", pre, `echo "checked"`, nil, ""},
		{"nothing", pre, `true`, nil, ""},
		// exit status 0, JSON
		{"permissionDecision deny", pre, `echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "not here"}}'`,
			&hook.Decision{Action: hook.Block, Reason: "not here"}, ""},
		{"permissionDecision ask", pre, `echo '{"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "risky"}}'`,
			&hook.Decision{Action: hook.RequestPermission, Reason: "risky"}, ""},
		{"permissionDecision allow with updatedInput", pre, `echo '{"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"command": "ls"}}}'`,
			&hook.Decision{Action: hook.Allow, Updates: map[string]any{"arguments": json.RawMessage(`{"command": "ls"}`)}}, ""},
		{"legacy decision approve", pre, `echo '{"decision": "approve", "reason": "fine"}'`, &hook.Decision{Action: hook.Allow, Reason: "fine"}, ""},
		{"decision block on PostToolUse", post, `echo '{"decision": "block", "reason": "lint failed"}'`, &hook.Decision{Action: hook.Block, Reason: "lint failed"}, ""},
		{"decision block on Stop revises", stop, `echo '{"decision": "block", "reason": "add a test"}'`, &hook.Decision{Action: hook.Revise, Reason: "add a test", Instruction: "add a test"}, ""},
		{"decision block on Stop needs a reason", stop, `echo '{"decision": "block"}'`, nil, "needs a reason"},
		{"continue false ends the turn", pre, `echo '{"continue": false, "stopReason": "halt", "decision": "approve"}'`, &hook.Decision{EndTurn: "halt"}, ""},
		{"continue false wins over a Stop block", stop, `echo '{"continue": false, "decision": "block", "reason": "x"}'`, &hook.Decision{EndTurn: "x"}, ""},
		{"continue false after a tool", post, `echo '{"continue": false, "stopReason": "tests are red", "systemMessage": "stopping"}'`, &hook.Decision{EndTurn: "tests are red", Message: "stopping"}, ""},
		{"continue false only in a turn", start, `echo '{"continue": false}'`, nil, "SessionStart hooks run outside one"},
		{"permissionDecision defer", pre, `echo '{"hookSpecificOutput": {"permissionDecision": "defer", "permissionDecisionReason": "ask ops"}}'`, &hook.Decision{Action: hook.Defer, Reason: "ask ops"}, ""},
		{"PreToolUse additionalContext", pre, `echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "this repo uses pnpm"}}'`, &hook.Decision{Context: "this repo uses pnpm"}, ""},
		{"PostToolUse permissionDecision deny blocks", post, `echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "permissionDecision": "deny", "permissionDecisionReason": "secret in output"}, "additionalContext": "rotate it"}'`,
			&hook.Decision{Action: hook.Block, Reason: "secret in output", Context: "rotate it"}, ""},
		{"PostToolUse permissionDecision allow is nothing", post, `echo '{"hookSpecificOutput": {"permissionDecision": "allow"}}'`, nil, ""},
		{"PermissionRequest allow with updatedInput", perm, `echo '{"hookSpecificOutput": {"decision": {"behavior": "allow", "updatedInput": {"command": "ls -la"}}}}'`,
			&hook.Decision{Action: hook.Allow, Updates: map[string]any{"arguments": json.RawMessage(`{"command": "ls -la"}`)}}, ""},
		{"PermissionRequest deny and interrupt", perm, `echo '{"hookSpecificOutput": {"decision": {"behavior": "deny", "message": "never", "interrupt": true}}}'`,
			&hook.Decision{Action: hook.Deny, Reason: "never", EndTurn: "never"}, ""},
		// PostToolUse replaces the observation (a redaction).
		{"updatedToolOutput", post, `echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": "[redacted]"}}'`,
			&hook.Decision{Updates: map[string]any{"output": "[redacted]"}}, ""},
		{"updatedMCPToolOutput text blocks", post, `echo '{"hookSpecificOutput": {"updatedMCPToolOutput": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}'`,
			&hook.Decision{Updates: map[string]any{"output": "a\nb"}}, ""},
		{"updatedMCPToolOutput a result object", post, `echo '{"hookSpecificOutput": {"updatedMCPToolOutput": {"content": [{"type": "text", "text": "clean"}]}}}'`,
			&hook.Decision{Updates: map[string]any{"output": "clean"}}, ""},
		{"updatedToolOutput JSON", post, `echo '{"hookSpecificOutput": {"updatedToolOutput": {"ok": true}}}'`,
			&hook.Decision{Updates: map[string]any{"output": `{"ok": true}`}}, ""},
		{"updatedToolOutput beats updatedMCPToolOutput", post, `echo '{"hookSpecificOutput": {"updatedToolOutput": "x", "updatedMCPToolOutput": "y"}}'`,
			&hook.Decision{Updates: map[string]any{"output": "x"}}, ""},
		{"updatedToolOutput outside PostToolUse", pre, `echo '{"hookSpecificOutput": {"updatedToolOutput": "x"}}'`, nil, "updatedToolOutput and updatedMCPToolOutput are for PostToolUse hooks, not PreToolUse"},
		{"updatedMCPToolOutput with an image", post, `echo '{"hookSpecificOutput": {"updatedMCPToolOutput": [{"type": "image", "data": "x"}]}}'`, nil, `has a "image" block`},
		{"systemMessage is for the user", pre, `echo '{"suppressOutput": true, "systemMessage": "hi"}'`, &hook.Decision{Message: "hi"}, ""},
		{"additionalContext", post, `echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "run gofmt"}}'`, &hook.Decision{Context: "run gofmt"}, ""},
		{"top-level additionalContext", prompt, `echo '{"additionalContext": "a", "hookSpecificOutput": {"additionalContext": "b"}}'`, &hook.Decision{Context: "a\n\nb"}, ""},
		{"PermissionRequest behavior", perm, `echo '{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow", "message": "ok"}}}'`, &hook.Decision{Action: hook.Allow, Reason: "ok"}, ""},
		{"PermissionRequest deny", perm, `echo '{"hookSpecificOutput": {"decision": {"behavior": "deny", "message": "never"}}}'`, &hook.Decision{Action: hook.Deny, Reason: "never"}, ""},
		{"PostVerify approve accepts", verify, `echo '{"decision": "approve"}'`, &hook.Decision{Action: hook.Accept}, ""},
		{"PreCompact block", compact, `echo '{"decision": "block", "reason": "not now"}'`, &hook.Decision{Action: hook.Block, Reason: "not now"}, ""},
		// An MCP server's question, answered.
		{"Elicitation accept with content", elicit, `echo '{"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept", "content": {"name": "Grace"}}}'`,
			&hook.Decision{Action: hook.Accept, Updates: map[string]any{"content": json.RawMessage(`{"name": "Grace"}`)}}, ""},
		{"Elicitation accept alone", elicit, `echo '{"hookSpecificOutput": {"action": "accept"}}'`, &hook.Decision{Action: hook.Accept}, ""},
		{"Elicitation decline with a reason", elicit, `echo '{"hookSpecificOutput": {"action": "decline"}, "reason": "not this server"}'`, &hook.Decision{Action: hook.Decline, Reason: "not this server"}, ""},
		{"Elicitation decline without one", elicit, `echo '{"hookSpecificOutput": {"action": "decline"}}'`, &hook.Decision{Action: hook.Decline, Reason: `the Elicitation hook "echo '{\"hookSpecificOutput\": {\"action\": \"decline\"}}'" said decline`}, ""},
		{"Elicitation cancel", elicit, `echo '{"hookSpecificOutput": {"action": "cancel"}}'`, &hook.Decision{Action: hook.Cancel}, ""},
		{"Elicitation content alone fills the form in", elicit, `echo '{"hookSpecificOutput": {"content": {"name": "Linus"}}}'`, &hook.Decision{Updates: map[string]any{"content": json.RawMessage(`{"name": "Linus"}`)}}, ""},
		{"Elicitation decision block declines", elicit, `echo '{"decision": "block", "reason": "no"}'`, &hook.Decision{Action: hook.Decline, Reason: "no"}, ""},
		{"ElicitationResult changes the answer", result, `echo '{"hookSpecificOutput": {"hookEventName": "ElicitationResult", "action": "decline"}, "reason": "audit says no"}'`,
			&hook.Decision{Action: hook.Decline, Reason: "audit says no"}, ""},
		{"Elicitation unknown action", elicit, `echo '{"hookSpecificOutput": {"action": "maybe"}}'`, nil, `action "maybe" is not accept, decline or cancel`},
		{"Elicitation content not an object", elicit, `echo '{"hookSpecificOutput": {"action": "accept", "content": ["Ada"]}}'`, nil, "content must be a JSON object"},
		{"Elicitation content with a decline", elicit, `echo '{"hookSpecificOutput": {"action": "decline", "content": {}}}'`, nil, `goes with action "accept"`},
		{"action outside the elicitation hooks", pre, `echo '{"hookSpecificOutput": {"action": "accept"}}'`, nil, "for Elicitation and ElicitationResult hooks, not PreToolUse"},
		{"unknown fields are ignored", pre, `echo '{"suppressOutput": true, "futureField": {"x": 1}}'`, nil, ""},
		// mismatches
		{"context where the contract has none", perm, `echo '{"hookSpecificOutput": {"additionalContext": "x"}}'`, nil, "PermissionRequest hooks cannot add context"},
		{"block where the contract has none", failure, `echo '{"decision": "block", "reason": "x"}'`, nil, "PostToolUseFailure hooks cannot block"},
		{"updatedInput outside PreToolUse", post, `echo '{"hookSpecificOutput": {"updatedInput": {}}}'`, nil, "updatedInput is for PreToolUse and PermissionRequest hooks, not PostToolUse"},
		{"updatedInput with a PermissionRequest deny", perm, `echo '{"hookSpecificOutput": {"decision": {"behavior": "deny", "updatedInput": {}}}}'`, nil, `goes with behavior "allow"`},
		{"updatedInput not an object", pre, `echo '{"hookSpecificOutput": {"updatedInput": "ls"}}'`, nil, `updatedInput must be a JSON object, not "ls"`},
		{"wrong hookEventName", pre, `echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse"}}'`, nil, `hookEventName is "PostToolUse", but the hook is PreToolUse`},
		{"unknown permissionDecision", pre, `echo '{"hookSpecificOutput": {"permissionDecision": "maybe"}}'`, nil, `permissionDecision "maybe" is not allow, deny, ask or defer`},
		{"unknown decision", post, `echo '{"decision": "veto"}'`, nil, `decision "veto" is not "block" or "approve"`},
		{"broken JSON", pre, `echo '{"decision": '`, nil, "stdout starts with { but is not a JSON decision"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			event := command.EventOf(tc.p.Hook())
			d, err := run(t, dir, event, "", tc.command, tc.p)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := show(d), show(tc.want); got != want {
				t.Errorf("decision:\n got %s\nwant %s", got, want)
			}
			// What the command decides, the registry accepts.
			if d != nil {
				reg := hook.NewRegistry()
				reg.Register(tc.p.Hook(), "c", hook.HandlerFunc(func(context.Context, hook.Payload) (*hook.Decision, error) { return d, nil }))
				if out := reg.Run(t.Context(), tc.p); len(out.Failures) > 0 {
					t.Errorf("the registry refuses the decision: %v", out.Failures[0].Err)
				}
			}
		})
	}
}

// The command runs in the workspace root with a scrubbed environment and
// the payload on stdin.
func TestCommandEnvironment(t *testing.T) {
	ws := t.TempDir()
	t.Setenv("ORCA_TEST_SECRET", "sk-123")
	t.Setenv("LANG", "C.UTF-8")
	writeScript(t, ws, ".orca/hooks/env.sh", `cat > stdin.json; pwd > pwd.txt; env > env.txt`)
	if _, err := run(t, ws, "PreToolUse", "", "./.orca/hooks/env.sh", preToolUse("Bash", `{"command":"ls"}`)); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(ws, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	realWS, _ := filepath.EvalSymlinks(ws)
	if pwd := strings.TrimSpace(read("pwd.txt")); pwd != ws && pwd != realWS {
		t.Errorf("pwd %s, want %s", pwd, ws)
	}
	env := read("env.txt")
	for _, want := range []string{"CLAUDE_PROJECT_DIR=" + ws + "\n", "ORCA_PROJECT_DIR=" + ws + "\n", "LANG=C.UTF-8\n", "PATH="} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %q:\n%s", want, env)
		}
	}
	if strings.Contains(env, "sk-123") {
		t.Errorf("orca's environment leaked into the hook:\n%s", env)
	}
	var in map[string]any
	if err := json.Unmarshal([]byte(read("stdin.json")), &in); err != nil || in["tool_name"] != "Bash" || in["hook_event_name"] != "PreToolUse" {
		t.Errorf("stdin: %v, %v", in, err)
	}
}

func TestCommandMatchers(t *testing.T) {
	ws := t.TempDir()
	marker := filepath.Join(ws, "ran")
	for _, tc := range []struct {
		matcher string
		p       hook.Payload
		runs    bool
	}{
		{"", preToolUse("Read", `{}`), true},
		{"*", preToolUse("Read", `{}`), true},
		{"Bash", preToolUse("Bash", `{}`), true},
		{"Bash", preToolUse("BashOutput", `{}`), false},
		{"Write|Edit", preToolUse("Edit", `{}`), true},
		{"Write|Edit", preToolUse("Read", `{}`), false},
		{"mcp__github__.*", preToolUse("mcp__github__create_issue", `{}`), true},
		// A matcher may name a tool by an alias it declares (the runtime
		// puts them on the payload): Agent is Claude Code's current name
		// of the subagent tool, TaskOutput of AgentOutput.
		{"Agent", aliased(preToolUse("Task", `{}`), "Agent"), true},
		{"Task", aliased(preToolUse("Task", `{}`), "Agent"), true},
		{"TaskOutput", aliased(preToolUse("AgentOutput", `{}`), "TaskOutput", "BashOutput"), true},
		{"Agent", preToolUse("Task", `{}`), false}, // a tool that declares no alias
		{"Bash", aliased(preToolUse("AgentOutput", `{}`), "TaskOutput", "BashOutput"), false},
		{"Agent", preToolUse("Read", `{}`), false},
		{"manual", &hook.PreCompactPayload{Common: common(), Trigger: "auto"}, false},
		{"auto", &hook.PreCompactPayload{Common: common(), Trigger: "auto"}, true},
		// The compaction a prompt too long for the model forces is
		// Claude Code's auto; orca's own name matches too.
		{"auto", &hook.PreCompactPayload{Common: common(), Trigger: "recovery"}, true},
		{"recovery", &hook.PreCompactPayload{Common: common(), Trigger: "recovery"}, true},
		{"manual", &hook.PreCompactPayload{Common: common(), Trigger: "recovery"}, false},
		{"startup", &hook.SessionStartPayload{Common: common(), Source: "new"}, true},
		{"resume", &hook.SessionStartPayload{Common: common(), Source: "new"}, false},
		{"compact", &hook.SessionStartPayload{Common: common(), Source: "compact"}, true},
		{"clear", &hook.SessionStartPayload{Common: common(), Source: "clear"}, true},
		{"startup", &hook.SessionStartPayload{Common: common(), Source: "clear"}, false},
		{"Nothing", &hook.StopPayload{Common: common()}, true}, // Stop ignores matchers
		// The elicitation hooks match the MCP server's name.
		{"everything", elicitation("everything"), true},
		{"github|linear", elicitation("everything"), false},
		{"everything", &hook.ElicitationResultPayload{Common: common(), Question: hook.Question{Server: "everything"}}, true},
		{"other", &hook.ElicitationResultPayload{Common: common(), Question: hook.Question{Server: "everything"}}, false},
	} {
		os.Remove(marker)
		if _, err := run(t, ws, command.EventOf(tc.p.Hook()), tc.matcher, "touch ran", tc.p); err != nil {
			t.Fatal(err)
		}
		if exists(marker) != tc.runs {
			t.Errorf("matcher %q on %s %v: ran = %v", tc.matcher, tc.p.Hook(), subject(tc.p), exists(marker))
		}
	}
}

// show writes a decision as comparable JSON.
func show(d *hook.Decision) string {
	b, _ := json.Marshal(d)
	return string(b)
}

func subject(p hook.Payload) string {
	if p, ok := p.(*hook.PreToolUsePayload); ok {
		return p.ToolName
	}
	return ""
}

// A command that outlives its timeout is killed with every process it
// started.
func TestCommandTimeoutKillsTheGroup(t *testing.T) {
	ws := t.TempDir()
	writeScript(t, ws, "slow.sh", `echo $$ > shell.pid; sleep 30 & echo $! > sleep.pid; wait`)
	c, err := command.New("PreToolUse", "", "./slow.sh", ws, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d, err := c.Handle(t.Context(), preToolUse("Bash", `{}`))
	if d != nil || err == nil || !strings.Contains(err.Error(), "timed out after 300ms and was killed") {
		t.Errorf("Handle = %v, %v", d, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v", took)
	}
	proctest.RequireGone(t, proctest.PIDs(t, ws, "shell.pid", "sleep.pid")...)
}

func TestCommandCancelKillsTheGroup(t *testing.T) {
	ws := t.TempDir()
	writeScript(t, ws, "slow.sh", `sleep 30 & echo $! > sleep.pid; wait`)
	c, err := command.New("Stop", "", "./slow.sh", ws, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.Handle(ctx, &hook.StopPayload{Common: common()})
		done <- err
	}()
	ps := proctest.PIDs(t, ws, "sleep.pid")
	cancel()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "cancelled") {
		t.Errorf("Handle = %v", err)
	}
	proctest.RequireGone(t, ps...)
}

func TestNewCommandRefuses(t *testing.T) {
	for _, tc := range []struct {
		event, matcher, command string
		timeout                 time.Duration
		want                    string
	}{
		{"Setup", "", "x", 0, `unknown hook event "Setup"`},
		{"PreToolUse", "(", "x", 0, "not a valid regular expression"},
		{"PreToolUse", "", "  ", 0, "empty"},
		{"PreToolUse", "", "x", -time.Second, "negative"},
	} {
		if _, err := command.New(tc.event, tc.matcher, tc.command, "/", tc.timeout); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewCommand(%q, %q, %q, %v) = %v, want %q", tc.event, tc.matcher, tc.command, tc.timeout, err, tc.want)
		}
	}
}

// An async hook cannot decide: its block, its exit status 2 and its end of
// the turn are ignored; its context and message count.
func TestAsyncHookCannotDecide(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		cmdline string
		want    string
	}{
		{`echo '{"decision": "block", "reason": "no", "continue": false}'`, "null"},
		{`echo nope >&2; exit 2`, "null"},
		{`echo '{"systemMessage": "logged", "hookSpecificOutput": {"additionalContext": "ctx", "permissionDecision": "deny"}}'`, `{"Action":"","Reason":"","Updates":null,"Context":"ctx","Instruction":"","EndTurn":"","Message":"logged"}`},
	} {
		c, err := command.New("PostToolUse", "", tc.cmdline, dir, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.Async = true
		d, err := c.Handle(t.Context(), &hook.PostToolUsePayload{Common: common(), ToolCall: hook.ToolCall{ToolName: "Write", Arguments: json.RawMessage(`{}`)}})
		if err != nil || show(d) != tc.want {
			t.Errorf("%s: %s, %v; want %s", tc.cmdline, show(d), err, tc.want)
		}
	}
}
