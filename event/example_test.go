package event_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/scope"
)

// Listeners run on goroutines of their own behind bounded buffers: a slow
// one drops (and counts) events rather than stall a run. Flush waits for
// what was published to be delivered.
func ExampleBus_Subscribe() {
	bus := event.NewBus(nil)
	defer bus.Close()
	var mu sync.Mutex
	failed := 0
	bus.Subscribe("metrics", event.ToolExecFailed, func(e event.Event) error {
		mu.Lock()
		defer mu.Unlock()
		failed++
		return nil
	}, event.Priority(10))
	bus.SubscribePrefix("audit", "tool_exec_", func(e event.Event) error {
		switch d := e.Data.(type) {
		case *event.ToolStartedData: // tool_exec_started
			fmt.Println("audit:", e.Name, d.ToolName, d.Summary)
		case *event.ToolData: // tool_exec_completed, tool_exec_failed
			fmt.Println("audit:", e.Name, d.ToolName, d.Output)
		}
		return nil
	})

	sc := scope.Scope{RuntimeID: "coder", SessionID: "s1", TurnID: "t1", ExecutionID: "x1"}
	bus.Publish(event.Event{Name: event.ToolExecStarted, Scope: sc, Data: &event.ToolStartedData{ToolName: "Bash", Summary: "make"}})
	bus.Publish(event.Event{Name: event.ToolExecFailed, Scope: sc, Data: &event.ToolData{ToolName: "Bash", Output: "exit status 2", IsError: true}})
	bus.Flush(context.Background())
	mu.Lock()
	fmt.Println("failed tool calls:", failed)
	mu.Unlock()
	// Output:
	// audit: tool_exec_started Bash make
	// audit: tool_exec_failed Bash exit status 2
	// failed tool calls: 1
}

// Events have one flat JSON form (orca run --json, timelines, observation
// rows) and decode back with their data typed.
func ExampleDecode() {
	e := event.Event{
		Name:  event.TurnCompleted,
		Time:  time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC),
		Scope: scope.Scope{RuntimeID: "coder", SessionID: "s1", TurnID: "t1", ExecutionID: "x1"},
		Data:  &event.TurnCompletedData{StopReason: "answered", Answer: "Fixed.", Iterations: 3, ToolCalls: 2},
	}
	line, _ := e.MarshalJSON()
	fmt.Println(string(line))
	back, err := event.Decode(line)
	if err != nil {
		panic(err)
	}
	d := back.Data.(*event.TurnCompletedData)
	fmt.Println(back.Name, back.SessionID, d.StopReason, d.ToolCalls)
	// Output:
	// {"name":"turn_completed","time":"2026-05-01T10:00:00Z","runtime_id":"coder","session_id":"s1","turn_id":"t1","execution_id":"x1","stop_reason":"answered","answer":"Fixed.","iterations":3,"tool_calls":2,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_tokens":0,"cache_write_tokens":0}}
	// turn_completed s1 answered 2
}
