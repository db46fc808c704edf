package tui_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/tui"
)

func ev(name event.Name, turn string, depth int) event.Event {
	return event.Event{Name: name, Scope: scope.Scope{TurnID: turn, Depth: depth}}
}

// TurnView shows one turn and its forks' events, never the session's own
// start and end, nothing of a fork still running after the turn, and what
// a SessionEnd hook says — through AfterTurn when one is set.
func TestTurnView(t *testing.T) {
	feed := []event.Event{
		ev(event.SessionStarted, "", 0),
		ev(event.TurnStarted, "t1", 0),
		ev(event.ToolExecStarted, "t1", 0),
		ev(event.TurnStarted, "t1", 1),
		ev(event.TurnCompleted, "t1", 1), // a fork's end is not the turn's
		ev(event.LLMCallCompleted, "t1", 0),
		ev(event.TurnCompleted, "t1", 0),
		ev(event.ToolExecStarted, "t1", 1), // a background fork after the turn
		ev(event.HookMessage, "t1", 1),
		ev(event.HookMessage, "", 0), // SessionEnd's systemMessage
		ev(event.HookFailed, "", 0),  // a SessionEnd hook that failed
		ev(event.SessionEnded, "", 0),
	}
	key := func(ev event.Event) string { return fmt.Sprintf("%s/%s/%d", ev.Name, ev.TurnID, ev.Depth) }
	var shown, after []string
	v := &tui.TurnView{Show: func(ev event.Event) { shown = append(shown, key(ev)) }}
	for _, ev := range feed {
		v.Feed(ev)
	}
	want := []string{"turn_started/t1/0", "tool_exec_started/t1/0", "turn_started/t1/1", "turn_completed/t1/1",
		"llm_call_completed/t1/0", "turn_completed/t1/0", "hook_message//0", "hook_failed//0"}
	if !slices.Equal(shown, want) {
		t.Errorf("shown %q\nwant  %q", shown, want)
	}

	shown = nil
	v = &tui.TurnView{Show: func(ev event.Event) { shown = append(shown, key(ev)) }, AfterTurn: func(ev event.Event) { after = append(after, key(ev)) }}
	v.Feed(feed[1])
	v.Stop() // the turn failed before its turn_completed reached the view
	for _, ev := range feed[2:] {
		v.Feed(ev)
	}
	if !slices.Equal(shown, []string{"turn_started/t1/0"}) || !slices.Equal(after, []string{"hook_message//0", "hook_failed//0"}) {
		t.Errorf("after Stop: shown %q, after the turn %q", shown, after)
	}
}
