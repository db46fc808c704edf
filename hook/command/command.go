// Package command runs Claude Code–style command hooks: a shell command
// that answers one of orca's hooks the way Claude Code's command hooks
// answer its events — the event as JSON on stdin, exit code 2 to block with
// stderr as the reason, or a JSON decision on stdout — so that scripts
// written for Claude Code work unchanged (see Command) — and Claude Code's
// http and prompt hooks, which take the same input and give the same
// decisions (NewHTTP, NewPrompt). Settings files declare them (package
// config reads them into Specs); Register puts them on a hook registry.
package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/sandbox"
)

// Limits of a command hook's run.
const (
	// maxOutput bounds what is kept of each of stdout and stderr.
	maxOutput = 1 << 20
	// waitDelay bounds how long a run waits for its output pipes to close
	// once the shell has exited or been killed.
	waitDelay = 2 * time.Second
)

// envPassed are the variables a command hook inherits from orca's
// environment; everything else is left out, so that secrets in orca's
// environment (API keys) do not reach hook scripts.
var envPassed = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ",
	"LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TERM", "COLORTERM", "NO_COLOR",
}

// Command is a command hook: a shell command that answers one hook the way
// Claude Code's command hooks answer its events, so that their scripts work
// unchanged.
//
// The command runs with sh -c in Dir (the workspace root), in a process
// group of its own that is killed, with everything it started, when the run
// times out or its context is cancelled. Its environment is scrubbed: PATH,
// HOME, the locale and terminal variables, and CLAUDE_PROJECT_DIR and
// ORCA_PROJECT_DIR, both set to Dir.
//
// Standard input is the payload as one JSON object with Claude Code's field
// names and values — session_id, transcript_path (the conversation as a
// JSONL file in Claude Code's transcript shape when the runtime keeps one,
// else empty), cwd, permission_mode (default, acceptEdits, plan,
// bypassPermissions), hook_event_name, tool_name, tool_input, tool_use_id,
// tool_response (PostToolUse: the tool's object, {filePath, …} or {stdout,
// stderr, interrupted, …} for the built-in tools, else the output), prompt,
// stop_hook_active (Stop, SubagentStop: true once a hook already sent the
// agent back), last_assistant_message, trigger and custom_instructions
// (PreCompact), source (SessionStart: startup or resume), reason
// (SessionEnd: clear, logout, prompt_input_exit or other), agent_id and
// agent_type (subagent hooks, and every hook inside a subagent),
// agent_transcript_path (SubagentStop), is_interrupt (PostToolUseFailure),
// mcp_server_name, message, mode, requested_schema, url and
// elicitation_id (Elicitation, ElicitationResult), action and content
// (ElicitationResult) — and orca's own fields under their own names where Claude Code has
// none (hook, version, runtime_id, turn_id, suggestion, error, agent,
// answer, output, …).
//
// The exit status says what the command decided:
//
//   - 0: stdout, if it is a JSON object, is the decision (below). Plain
//     stdout is context for UserPromptSubmit, SessionStart and TurnStart,
//     and ignored otherwise.
//   - 2: block, with stderr as the reason the model sees. For
//     PermissionRequest it denies; for Stop, SubagentStop and PostVerify it
//     sends the agent back to work with stderr as the instruction; for
//     Elicitation and ElicitationResult it declines the server's question,
//     with stderr as the reason the server gets.
//   - anything else: the hook failed; the run goes on (a hook_failed
//     event reports it, with stderr).
//
// The JSON decision's fields, all optional:
//
//   - continue: false (with stopReason): the turn ends once the hook ran
//     (hook.Decision.EndTurn), whatever else the decision says; the tool
//     call, prompt or fork it was about does not go ahead.
//   - systemMessage: shown to the user (a hook_message event), not to the
//     model. suppressOutput is accepted; orca never shows a hook's stdout.
//   - decision: "block" with reason: block (UserPromptSubmit, PreToolUse,
//     PostToolUse, PreCompact, SubagentStart); for Stop, SubagentStop and
//     PostVerify, keep working with reason as the instruction. "approve"
//     allows (PreToolUse, PermissionRequest) or accepts (PostVerify).
//   - hookSpecificOutput.permissionDecision "allow", "deny", "ask" or
//     "defer", with permissionDecisionReason (PreToolUse): allow (which
//     answers an ask as an approval would, and never beats a deny rule or
//     built-in protection), block, ask the user, or park the call for a
//     person (the turn stops awaiting approval). "deny" from a hook that
//     has no permission decision but can block (PostToolUse) blocks.
//   - hookSpecificOutput.updatedInput (PreToolUse), or
//     hookSpecificOutput.decision.updatedInput with behavior "allow"
//     (PermissionRequest): the tool's new input, which replaces the
//     model's and is validated, and decided by the policy, again.
//   - hookSpecificOutput.updatedToolOutput, or Claude Code's
//     updatedMCPToolOutput (PostToolUse): the observation the model sees
//     instead of the tool's (a string, or MCP text content blocks) — a
//     hook that redacts secrets from output, say.
//   - hookSpecificOutput.decision {behavior: "allow"|"deny", message,
//     interrupt} (PermissionRequest); interrupt with deny ends the turn.
//   - hookSpecificOutput.action "accept", "decline" or "cancel", with
//     hookSpecificOutput.content (Elicitation, ElicitationResult): the
//     answer to the MCP server's question — for Elicitation before anyone
//     is asked, for ElicitationResult in place of the answer given;
//     content alone (no action) fills in the form the person is shown
//     (Elicitation), or changes what an accept sends (ElicitationResult).
//     decision "block" declines.
//   - hookSpecificOutput.additionalContext or additionalContext: context
//     for the model.
//
// A decision that the hook's contract (hook.ContractOf) does not allow is
// an error describing the mismatch, reported as a hook failure.
//
// Create a Command with New; its fields say what it was created
// with, and changing them afterwards has no effect on the matcher or the
// hook it answers.
type Command struct {
	// Event is the settings event name, such as "PreToolUse".
	Event string
	// Matcher selects the payloads the command runs for: "" or "*" all of
	// them, otherwise a regular expression that must match the whole
	// subject ("Bash", "Write|Edit", "mcp__.*"). The subject is the tool
	// name for tool hooks, the trigger for PreCompact, the source for
	// SessionStart, the reason for SessionEnd, the agent for subagent
	// hooks and the MCP server for the elicitation hooks; other hooks
	// ignore the matcher.
	Matcher string
	// Command is the shell command.
	Command string
	// Dir is the workspace root: the command's working directory.
	Dir string
	// Timeout bounds one run (hook.DefaultTimeout if zero).
	Timeout time.Duration
	// If, when set, must report true for a tool call for the command to
	// run for it (the settings' "if" rule).
	If func(hook.ToolCall) bool
	// Env are more NAME=value variables for the command, after the
	// scrubbed ones (the settings' "env" block, CLAUDE_PLUGIN_ROOT).
	Env []string
	// Async is Claude Code's "async": true — a hook that cannot decide:
	// it runs in order like any other (orca does not leave it running in
	// the background), and only its context and message count; a block,
	// a rewrite or an end of the turn from it is ignored.
	Async bool

	hook  hook.Name
	match matcher
	shell string
	// http and prompt make it Claude Code's http or prompt hook.
	http   *httpTarget
	prompt *promptTarget
}

// New returns the command hook for the settings event name event (for
// Notification and StopFailure, an entry of a Notifier: no hook, so a hook
// registry refuses it).
func New(event, matcher, command, dir string, timeout time.Duration) (*Command, error) {
	if strings.TrimSpace(command) == "" {
		return nil, errors.New("the command is empty")
	}
	c, err := newHandler(event, matcher, command, timeout)
	if err != nil {
		return nil, err
	}
	c.Dir, c.shell = dir, "/bin/sh"
	if _, err := os.Stat(c.shell); err != nil {
		if c.shell, err = exec.LookPath("sh"); err != nil {
			return nil, fmt.Errorf("no sh to run command hooks with: %w", err)
		}
	}
	return c, nil
}

// newHandler returns the part of a hook every kind has; what names it in
// messages is command.
func newHandler(event, matcher, command string, timeout time.Duration) (*Command, error) {
	n, ok := HookOf(event)
	if !ok && !IsNotifierEvent(event) {
		return nil, fmt.Errorf("unknown hook event %q (the events are %s)", event, EventNames())
	}
	m, err := compileMatcher(matcher)
	if err != nil {
		return nil, err
	}
	if timeout < 0 {
		return nil, fmt.Errorf("timeout %v is negative", timeout)
	}
	return &Command{Event: event, Matcher: matcher, Command: command, Timeout: timeout, hook: n, match: m}, nil
}

// Hook returns the hook the command answers.
func (c *Command) Hook() hook.Name { return c.hook }

func (c *Command) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return hook.DefaultTimeout
}

// Applies reports whether the hook is for p: its matcher selects p, and
// its If (if any) the call (hook.Applier: a hook not for a payload does
// not fire).
func (c *Command) Applies(p hook.Payload) bool {
	if !c.match.matches(p) {
		return false
	}
	if c.If != nil {
		if tc, ok := toolCallOf(p); ok && !c.If(tc) {
			return false
		}
	}
	return true
}

// Handle runs the command for p, if the hook is for p (Applies), and
// returns its decision.
func (c *Command) Handle(ctx context.Context, p hook.Payload) (*hook.Decision, error) {
	if p.Hook() != c.hook {
		return nil, fmt.Errorf("a %s command hook got the payload of %s", c.Event, p.Hook())
	}
	if !c.Applies(p) {
		return nil, nil
	}
	in, err := Input(p)
	if err != nil {
		return nil, err
	}
	var extra []string
	if ss, ok := p.(*hook.SessionStartPayload); ok && ss.EnvFile != "" {
		extra = append(extra, "CLAUDE_ENV_FILE="+ss.EnvFile)
	}
	var r result
	switch {
	case c.http != nil:
		r, err = c.runHTTP(ctx, in)
	case c.prompt != nil:
		r, err = c.runPrompt(ctx, in)
	default:
		r, err = c.run(ctx, in, extra)
	}
	if err != nil {
		return nil, err
	}
	var d *hook.Decision
	switch {
	case r.code == 2 && c.Async:
		return nil, nil
	case r.code == 0:
		d, err = c.decideJSON(r.stdout)
		if err == nil && d != nil && c.Async {
			if d = (&hook.Decision{Context: d.Context, Message: d.Message}); d.Context == "" && d.Message == "" {
				d = nil
			}
		}
	case r.code == 2:
		d, err = c.decideBlock(r.stderr)
	default:
		return nil, fmt.Errorf("command %q exited with status %d%s", clip(c.Command), r.code, detail(r.stderr))
	}
	if err != nil {
		return nil, fmt.Errorf("command %q: %w", clip(c.Command), err)
	}
	if err := c.check(d); err != nil {
		return nil, fmt.Errorf("command %q: %w", clip(c.Command), err)
	}
	return d, nil
}

// result is what a run of the command left.
type result struct {
	code           int
	stdout, stderr string
}

// run runs the command with stdin as its input and extra variables.
func (c *Command) run(ctx context.Context, stdin []byte, extra []string) (result, error) {
	timeout := c.timeout()
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return result{}, fmt.Errorf("command %q not run: %w", clip(c.Command), err)
	}
	var stdout, stderr capped
	// The user's command, run as them: a process group of its own, which
	// the timeout, a cancel and the shell's end kill as one — everything
	// the command started, not only the shell.
	runner := sandbox.Runner{Plain: true, Env: append(c.env(), extra...)}
	cmd, err := runner.Command(runCtx, c.Dir, c.shell, "-c", c.Command)
	if err != nil {
		return result{}, fmt.Errorf("command %q: cannot start %s: %w", clip(c.Command), c.shell, err)
	}
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = waitDelay
	if err := cmd.Start(); err != nil {
		return result{}, fmt.Errorf("command %q: cannot start %s: %w", clip(c.Command), c.shell, err)
	}
	waitErr := cmd.Wait()
	code, sig := cmd.Status()
	switch {
	case ctx.Err() != nil:
		return result{}, fmt.Errorf("command %q was cancelled (%w) and killed, with the processes it started", clip(c.Command), ctx.Err())
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return result{}, fmt.Errorf("command %q timed out after %v and was killed, with the processes it started", clip(c.Command), timeout)
	case !cmd.Exited():
		return result{}, fmt.Errorf("command %q failed: %w", clip(c.Command), waitErr)
	case sig != 0:
		return result{}, fmt.Errorf("command %q was killed by signal %v%s", clip(c.Command), sig, detail(stderr.String()))
	}
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}, nil
}

// env is the command's scrubbed environment.
func (c *Command) env() []string {
	var env []string
	for _, k := range envPassed {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	if _, ok := os.LookupEnv("PATH"); !ok {
		env = append(env, "PATH=/usr/local/bin:/usr/bin:/bin")
	}
	env = append(env, "CLAUDE_PROJECT_DIR="+c.Dir, "ORCA_PROJECT_DIR="+c.Dir)
	return append(env, c.Env...)
}

// capped keeps the first maxOutput bytes written to it.
type capped struct {
	mu  sync.Mutex
	buf bytes.Buffer
	cut bool
}

func (w *capped) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := maxOutput - w.buf.Len(); room < len(p) {
		w.buf.Write(p[:max(room, 0)])
		w.cut = true
		return len(p), nil
	}
	return w.buf.Write(p)
}

func (w *capped) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cut {
		return w.buf.String() + "\n[output cut]"
	}
	return w.buf.String()
}

// Input returns what a command hook reads on stdin for p: p's JSON form
// with Claude Code's field names and values where Claude Code has the
// field (tool_input for arguments, tool_response for a PostToolUse's
// output, custom_instructions for PreCompact's instructions, startup and
// resume for SessionStart's source), plus hook_event_name, transcript_path
// and, for Stop, stop_hook_active.
func Input(p hook.Payload) ([]byte, error) {
	m, err := ccFields(p, "the "+string(p.Hook())+" payload")
	if err != nil {
		return nil, err
	}
	rename, set := m.rename, m.set
	set("hook", p.Hook())
	m.common(EventOf(p.Hook()), hook.CommonOf(p))
	switch p := p.(type) {
	case *hook.PreToolUsePayload, *hook.PermissionRequestPayload:
		rename("arguments", "tool_input")
	case *hook.PostToolUseFailurePayload:
		rename("arguments", "tool_input")
		set("is_interrupt", p.Interrupted)
	case *hook.PostToolUsePayload:
		rename("arguments", "tool_input")
		delete(m, "response")
		if len(p.Response) > 0 {
			// The tool's object, as Claude Code's tools give it.
			m["tool_response"] = p.Response
		} else {
			rename("output", "tool_response")
		}
	case *hook.PreCompactPayload:
		rename("instructions", "custom_instructions")
	case *hook.StopPayload:
		set("stop_hook_active", p.Continued > 0)
		set("last_assistant_message", p.Answer)
	case *hook.SessionStartPayload:
		set("source", ccSource(p.Source))
	case *hook.SessionEndPayload:
		set("reason", ccEndReason(p.Reason))
	case *hook.SubagentStartPayload:
		set("agent_type", p.Agent)
		set("agent_id", p.AgentID)
	case *hook.SubagentStopPayload:
		set("agent_type", p.Agent)
		set("agent_id", p.AgentID)
		set("stop_hook_active", p.Continued > 0)
		set("last_assistant_message", p.Answer)
	case *hook.ElicitationPayload, *hook.ElicitationResultPayload:
		rename("server", "mcp_server_name")
	}
	return json.Marshal(m)
}

// ccInput is a command's input being built: v's JSON fields, which
// Input and notificationInput rename and add to.
type ccInput map[string]json.RawMessage

// ccFields returns the JSON fields of v (what names it in errors).
func ccFields(v any, what string) (ccInput, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", what, err)
	}
	var m ccInput
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("encoding %s: %w", what, err)
	}
	return m, nil
}

func (m ccInput) set(k string, v any) {
	b, _ := json.Marshal(v)
	m[k] = b
}

func (m ccInput) rename(from, to string) {
	if v, ok := m[from]; ok {
		delete(m, from)
		m[to] = v
	}
}

// common sets the fields every input has, from c, for Claude Code's
// event: its name, the payload version, the transcript, the permission
// mode in Claude Code's words and, inside a subagent, the agent.
func (m ccInput) common(event string, c *hook.Common) {
	m.set("version", hook.Version)
	m.set("hook_event_name", event)
	m.set("transcript_path", c.TranscriptPath)
	m.set("permission_mode", ccMode(c.PermissionMode))
	if c.Agent != "" {
		// Inside a subagent, as Claude Code marks its hooks there.
		m.set("agent_type", c.Agent)
		m.set("agent_id", c.ExecutionID)
	}
}

// ccMode is Claude Code's name of the permission mode m (orca's); without
// a policy every call runs, as in Claude Code's bypassPermissions.
func ccMode(m string) string {
	switch m {
	case "accept-edits":
		return "acceptEdits"
	case "bypass", "":
		return "bypassPermissions"
	case "dont-ask":
		return "dontAsk"
	}
	return m
}

// ccEndReason is the SessionEnd reason in Claude Code's vocabulary (clear,
// logout, prompt_input_exit, bypass_permissions_disabled, other).
func ccEndReason(r string) string {
	switch r {
	case "clear", "logout", "prompt_input_exit", "bypass_permissions_disabled":
		return r
	}
	return "other"
}

// output is the JSON a command may print on stdout.
type output struct {
	Continue   *bool  `json:"continue"`
	StopReason string `json:"stopReason"`
	// SystemMessage is shown to the user. SuppressOutput hides the
	// command's stdout from Claude Code's transcript view; orca never
	// shows a hook's stdout, so it changes nothing.
	SystemMessage     string    `json:"systemMessage"`
	SuppressOutput    bool      `json:"suppressOutput"`
	Decision          string    `json:"decision"`
	Reason            string    `json:"reason"`
	AdditionalContext string    `json:"additionalContext"`
	Specific          *specific `json:"hookSpecificOutput"`
}

// specific is hookSpecificOutput.
type specific struct {
	HookEventName            string          `json:"hookEventName"`
	PermissionDecision       string          `json:"permissionDecision"`
	PermissionDecisionReason string          `json:"permissionDecisionReason"`
	UpdatedInput             json.RawMessage `json:"updatedInput"`
	UpdatedToolOutput        json.RawMessage `json:"updatedToolOutput"`
	UpdatedMCPToolOutput     json.RawMessage `json:"updatedMCPToolOutput"`
	AdditionalContext        string          `json:"additionalContext"`
	// Action and Content answer an MCP server's question (Elicitation,
	// ElicitationResult).
	Action   string          `json:"action"`
	Content  json.RawMessage `json:"content"`
	Decision *struct {
		Behavior     string          `json:"behavior"`
		Message      string          `json:"message"`
		UpdatedInput json.RawMessage `json:"updatedInput"`
		Interrupt    bool            `json:"interrupt"`
	} `json:"decision"`
}
