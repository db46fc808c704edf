package command

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/orca-agent/orca/hook"
)

// Event pairs an event name of settings files with the hook it stands for.
type Event struct {
	Name string
	Hook hook.Name
}

// Events are the event names of settings files (Claude Code's, plus
// TurnStart and PostVerify, which Claude Code does not have) with orca's
// hooks, in the order a run meets them.
var Events = []Event{
	{"SessionStart", hook.SessionStart},
	{"SessionEnd", hook.SessionEnd},
	{"UserPromptSubmit", hook.UserPromptSubmit},
	{"TurnStart", hook.TurnStart},
	{"PreToolUse", hook.PreToolUse},
	{"PermissionRequest", hook.PermissionRequest},
	{"Elicitation", hook.Elicitation},
	{"ElicitationResult", hook.ElicitationResult},
	{"PostToolUse", hook.PostToolUse},
	{"PostToolUseFailure", hook.PostToolUseFailure},
	{"PreCompact", hook.PreCompact},
	{"SubagentStart", hook.SubagentStart},
	{"SubagentStop", hook.SubagentStop},
	{"Stop", hook.Stop},
	{"PostVerify", hook.PostVerify},
}

// HookOf returns the hook that the settings event name (such as
// "PreToolUse") stands for.
func HookOf(event string) (hook.Name, bool) {
	for _, e := range Events {
		if e.Name == event {
			return e.Hook, true
		}
	}
	return "", false
}

// EventOf returns the settings event name of hook n ("PreToolUse" for
// hook.PreToolUse): the hook_event_name command hooks receive.
func EventOf(n hook.Name) string {
	for _, e := range Events {
		if e.Hook == n {
			return e.Name
		}
	}
	return ""
}

// EventNames lists the settings event names, comma-separated.
func EventNames() string {
	s := make([]string, len(Events))
	for i, e := range Events {
		s[i] = e.Name
	}
	return strings.Join(s, ", ")
}

// CheckMatcher reports what is wrong with the matcher m, if anything.
func CheckMatcher(m string) error {
	_, err := compileMatcher(m)
	return err
}

// matcher selects the payloads a command hook runs for. What it is matched
// against depends on the hook, as in Claude Code: the tool name for tool
// hooks, the trigger for PreCompact, the source for SessionStart, the
// reason for SessionEnd, the agent for subagent hooks, the MCP server for
// the elicitation hooks; the other hooks ignore it.
type matcher struct {
	re *regexp.Regexp // nil: everything
}

// compileMatcher compiles a settings matcher: empty or "*" matches
// everything; anything else is a regular expression that must match the
// whole subject, so that "Bash" matches Bash and not BashOutput, and
// "Write|Edit" matches either.
func compileMatcher(s string) (matcher, error) {
	if s == "" || s == "*" {
		return matcher{}, nil
	}
	re, err := regexp.Compile(`^(?:` + s + `)$`)
	if err != nil {
		return matcher{}, fmt.Errorf("matcher %q is not a valid regular expression: %v", s, err)
	}
	return matcher{re: re}, nil
}

// matches reports whether the hook should run for p.
func (m matcher) matches(p hook.Payload) bool {
	if m.re == nil {
		return true
	}
	subj := subjects(p)
	for _, s := range subj {
		if m.re.MatchString(s) {
			return true
		}
	}
	return len(subj) == 0
}

// matchesSubject reports whether the matcher selects subject s.
func (m matcher) matchesSubject(s string) bool { return m.re == nil || m.re.MatchString(s) }

// subjects returns what a matcher is matched against for p; none means
// the hook ignores matchers.
func subjects(p hook.Payload) []string {
	if tc, ok := toolCallOf(p); ok {
		return append([]string{tc.ToolName}, tc.Aliases...)
	}
	switch p := p.(type) {
	case *hook.PreCompactPayload:
		return triggerSubjects(p.Trigger)
	case *hook.SessionStartPayload:
		// Claude Code's names first, so that its matchers work unchanged.
		return []string{ccSource(p.Source), p.Source}
	case *hook.SessionEndPayload:
		return []string{p.Reason}
	case *hook.SubagentStartPayload:
		return []string{p.Agent}
	case *hook.SubagentStopPayload:
		return []string{p.Agent}
	case *hook.ElicitationPayload:
		return []string{p.Server}
	case *hook.ElicitationResultPayload:
		return []string{p.Server}
	}
	return nil
}

// triggerSubjects are what a compaction's matchers (PreCompact's,
// PostCompact's) are matched against: its trigger, and recovery — the
// compaction a prompt too long for the model forces — as Claude Code's
// auto too, so that its matchers work unchanged.
func triggerSubjects(trigger string) []string {
	if trigger == "recovery" {
		return []string{"auto", trigger}
	}
	return []string{trigger}
}

// ccSource is Claude Code's name for a session's source.
func ccSource(s string) string {
	switch s {
	case "new":
		return "startup"
	case "resumed":
		return "resume"
	}
	return s
}

// toolCallOf returns the tool call of a tool hook's payload.
func toolCallOf(p hook.Payload) (hook.ToolCall, bool) {
	switch p := p.(type) {
	case *hook.PreToolUsePayload:
		return p.ToolCall, true
	case *hook.PostToolUsePayload:
		return p.ToolCall, true
	case *hook.PostToolUseFailurePayload:
		return p.ToolCall, true
	case *hook.PermissionRequestPayload:
		return p.ToolCall, true
	}
	return hook.ToolCall{}, false
}
