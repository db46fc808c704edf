package tui

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/tool"
)

// WriteTimeline writes a run's events (their JSON lines: observation rows'
// data, a timeline file's lines) as orca timeline does, for people: a
// title line with the count, then a table — offset from the first event,
// name (a fork's indented under a │), what it is about. llm_delta events
// are counted, not listed; a line that is not an event is skipped.
func WriteTimeline(out io.Writer, title string, lines []json.RawMessage) error {
	var b strings.Builder
	evs := make([]event.Event, 0, len(lines))
	deltas := 0
	for _, l := range lines {
		ev, err := event.Decode(l)
		if err != nil {
			continue // not an event: --json shows the line as it is
		}
		if ev.Name == event.LLMDelta {
			deltas++
			continue
		}
		evs = append(evs, ev)
	}
	fmt.Fprintf(&b, "%s · %s", title, Plural(len(lines), "event"))
	if deltas > 0 {
		fmt.Fprintf(&b, " (%s not listed)", Plural(deltas, "llm_delta event"))
	}
	b.WriteString("\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	starts := map[string]*event.ToolStartedData{} // a call's start, by tool use id: how its end is shown
	for _, ev := range evs {
		if d, ok := ev.Data.(*event.ToolStartedData); ok {
			starts[d.ToolUseID] = d
		}
		name := strings.Repeat("│ ", ev.Depth) + string(ev.Name)
		fmt.Fprintf(tw, "  +%.3fs\t%s\t%s\n", ev.Time.Sub(evs[0].Time).Seconds(), name, eventSummary(ev, starts))
	}
	tw.Flush()
	_, err := io.WriteString(out, b.String())
	return err
}

// eventSummary says in a line what a timeline event is about; starts are
// the tool calls started so far, whose display their ends share.
func eventSummary(ev event.Event, starts map[string]*event.ToolStartedData) string {
	var s string
	switch d := ev.Data.(type) {
	case *event.SessionData:
		s = cmp.Or(d.Source, d.Reason)
	case *event.TurnStartedData:
		s = "❯ " + d.Input + attachmentLabels(d.Attachments)
	case *event.IterationStartedData:
		s = fmt.Sprintf("iteration %d", d.Iteration)
	case *event.LLMCallStartedData:
		s = callLine(d.Iteration, d.Attempt)
	case *event.LLMCallData:
		parts := []string{callLine(d.Iteration, d.Attempt)}
		if d.StopReason != "" {
			parts = append(parts, string(d.StopReason))
		}
		if d.Error != "" {
			parts = append(parts, "✗ "+d.Error)
		}
		s = strings.Join(parts, " · ")
	case *event.ToolStartedData:
		s = ToolLine(d.ToolName, d.Input, tool.Display{Summary: d.Summary, Detail: d.Detail})
	case *event.ToolData:
		var shown tool.Display
		if st, ok := starts[d.ToolUseID]; ok {
			shown = tool.Display{Summary: st.Summary, Detail: st.Detail}
		}
		mark := "→ "
		if d.IsError {
			mark = "✗ "
		}
		out, _, _ := strings.Cut(strings.TrimSpace(d.Output), "\n")
		if a := attachmentLabels(d.Attachments); a != "" {
			// What it showed first: the line is cut to the terminal.
			out = strings.TrimSpace(a) + " " + out
		}
		s = ToolLine(d.ToolName, d.Input, shown) + " " + mark + out
	case *event.ToolBlockedData:
		s = d.ToolName + ": " + d.Reason
	case *event.ApprovalData:
		s = d.ToolName + ": " + d.Reason
		if ev.Name == event.ApprovalResolved {
			s = d.ToolName + ": not allowed" // denied, or parked for later (the reason says)
			if d.Allowed {
				s = d.ToolName + ": allowed " + cmp.Or(d.Scope, "once")
			}
			if d.By != "" {
				s += " by " + d.By
			}
			if d.Reason != "" {
				s += " · " + d.Reason
			}
		}
	case *event.ElicitationData:
		s = ElicitationLine(d)
		if ev.Name == event.ElicitationResolved {
			s += " · " + ElicitationAnswer(d)
		}
	case *event.UserMessageData:
		s = "❯ " + strings.Join(d.Messages, " · ")
	case *event.OutputRejectedData:
		s = fmt.Sprintf("correction %d · %s", d.Correction, d.Error)
	case *event.ConfigWarningData:
		s = d.File + ": " + d.Message
	case *event.MiddlewareFailedData:
		s = d.Chain + " " + d.Middleware + ": " + d.Error
	case *event.VerificationData:
		s = "✓ " + d.Command
		if !d.Passed {
			s = "✗ " + d.Command
		}
	case *event.ToolProgressData:
		s = d.ToolName + " · " + ProgressText(d)
	case *event.MCPLogData:
		s = d.Server + " · " + d.Level + ": " + d.Message
		if d.Dropped > 0 {
			s += fmt.Sprintf(" (%s dropped before)", Plural(d.Dropped, "message"))
		}
	case *event.MCPServerData:
		s = d.Server + " · " + d.State
		if d.Error != "" {
			s += " · " + d.Error
		}
	case *event.HookFailedData:
		s = d.Handler + ": " + d.Error
	case *event.HookMessageData:
		s = d.Handler + ": " + d.Message
	case *event.CompactionData:
		s = d.Trigger
		if d.Error != "" {
			s += " ✗ " + d.Error
		}
	case *event.SubagentData:
		s = d.Agent
		if d.StopReason != "" {
			s += " · " + d.StopReason
		}
		if d.TaskID != "" {
			s += " · " + d.TaskID
		}
	case *event.TurnCompletedData:
		s = fmt.Sprintf("%s · %s · %s", d.StopReason, Plural(d.Iterations, "iteration"), Plural(d.ToolCalls, "tool call"))
		if d.Error != "" {
			s += " · " + d.Error
		}
	}
	return OneLine(s, MaxSummaryRunes)
}

// callLine says which model call of the turn an event is about.
func callLine(iteration, attempt int) string {
	if attempt > 1 {
		return fmt.Sprintf("iteration %d · attempt %d", iteration, attempt)
	}
	return fmt.Sprintf("iteration %d", iteration)
}

// attachmentLabels names what an event's attachments are (MediaLabel),
// after a space; "" for none.
func attachmentLabels(as []llm.Attachment) string {
	var b strings.Builder
	for _, a := range as {
		b.WriteString(" " + MediaLabel(&llm.Media{MediaType: a.MediaType, Size: a.Size, Name: a.Name, Width: a.Width, Height: a.Height}))
	}
	return b.String()
}
