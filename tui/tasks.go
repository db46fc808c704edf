package tui

import (
	"strings"

	"github.com/orca-agent/orca/subagent"
)

// Tasks lists background tasks for people, in one line:
// "task_1 (Bash: Start the server), task_2 (explorer: …)".
func Tasks(ts []subagent.TaskInfo) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		what := t.Agent
		if t.Description != "" {
			what += ": " + OneLine(t.Description, 60)
		}
		s[i] = t.ID + " (" + what + ")"
	}
	return strings.Join(s, ", ")
}
