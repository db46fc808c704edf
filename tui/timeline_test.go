package tui

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/event"
)

// Each event of a timeline says what it is about: an approval, who
// decided it and how; an injected message, a correction, a warning, a
// failed middleware, a verification, an MCP server's change.
func TestTimelineSaysWhatEachEventIsAbout(t *testing.T) {
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	in := json.RawMessage(`{"command":"make"}`)
	for _, c := range []struct {
		name event.Name
		data any
		want string
	}{
		{event.ApprovalRequested, &event.ApprovalData{ToolName: "Bash", Input: in, Reason: "no allow rule matches"}, "Bash: no allow rule matches"},
		{event.ApprovalResolved, &event.ApprovalData{ToolName: "Bash", Input: in, Allowed: true, Scope: "session", By: "approver"}, "Bash: allowed session by approver"},
		{event.ApprovalResolved, &event.ApprovalData{ToolName: "Bash", Input: in, By: "approver", Reason: "parked: a person decides later"}, "Bash: not allowed by approver · parked: a person decides later"},
		{event.UserMessageInjected, &event.UserMessageData{Iteration: 2, Messages: []string{"also tests", "and docs"}}, "❯ also tests · and docs"},
		{event.OutputRejected, &event.OutputRejectedData{Iteration: 2, Correction: 1, Error: "at /city: want string"}, "correction 1 · at /city: want string"},
		{event.ConfigWarning, &event.ConfigWarningData{File: ".claude/settings.json", Message: `hooks: "Setup" skipped`}, `.claude/settings.json: hooks: "Setup" skipped`},
		{event.MiddlewareFailed, &event.MiddlewareFailedData{Chain: "tool_execution", Middleware: "audit", Error: "late"}, "tool_execution audit: late"},
		{event.VerificationCompleted, &event.VerificationData{Command: "go test ./...", Passed: false}, "✗ go test ./..."},
		{event.MCPServerDropped, &event.MCPServerData{Server: "api", Type: "http", State: "down", Error: "EOF"}, "api · down · EOF"},
	} {
		line, err := event.Event{Name: c.name, Time: at, Data: c.data}.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		if err := WriteTimeline(&out, "t", []json.RawMessage{line}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), string(c.name)+"  "+c.want) {
			t.Errorf("%s: timeline\n%s\nwant a line saying %q", c.name, out.String(), c.want)
		}
	}
}
