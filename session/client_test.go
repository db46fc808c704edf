package session_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/toolset"
)

// A front end's tool: offered to the model for the turn; a call with bad
// input is answered so and the model tries again; a good one ends the
// turn with the call left for the caller, the runtime's calls before it
// run and the one after it waiting; the caller's result, given to the
// next attempt of the turn, reaches the model, and the call after it
// runs then. A new session handle (a restarted server) still finds the
// calls left.
func TestClientToolsStopTheTurnAndTheirResultsContinueIt(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	model := script.New().Script("s1",
		script.Call("pick_color", map[string]any{"colour": 7}),
		script.Response{ToolCalls: []script.ToolCall{
			{ID: "read1", Name: "Read", Input: json.RawMessage(`{"file_path":"a.txt"}`)},
			{ID: "pick", Name: "pick_color", Input: json.RawMessage(`{"color":"red"}`)},
			{ID: "read2", Name: "Read", Input: json.RawMessage(`{"file_path":"a.txt"}`)},
		}},
		script.Text("You picked teal."))
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "ui"}, agent.Collaborators{Client: model, Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	st := store.NewMemory()
	defer st.Close()
	ctx := context.Background()
	router := session.NewRouter(rt, st, nil)
	s, err := router.Open(ctx, "s1", session.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	schema, err := tool.CompileSchema("pick_color", json.RawMessage(`{"type":"object","properties":{"color":{"type":"string"}},"required":["color"],"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	picker := agent.ClientTool{Name: "pick_color", Description: "Ask the user to pick a colour.", Schema: schema}
	shadow := agent.ClientTool{Name: "Read", Description: "not the runtime's"}

	res, err := s.Run(ctx, "Pick a colour with me.", session.WithClientTools(picker, shadow))
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != agent.StopClientTools || len(res.ClientCalls) != 1 || res.ClientCalls[0].ID != "pick" {
		t.Fatalf("stop %s, client calls %+v: want client_tools, the call pick", res.StopReason, res.ClientCalls)
	}
	calls := model.CallsTo("s1")
	if len(calls) != 2 {
		t.Fatalf("%d model calls, want 2", len(calls))
	}
	var offered []string
	for _, d := range calls[0].Tools {
		offered = append(offered, d.Name)
	}
	if got := strings.Join(offered, ","); !strings.Contains(got, "pick_color") || strings.Count(got, "Read") != 1 {
		t.Errorf("tools offered %s: want pick_color once, Read once (the runtime's)", got)
	}
	if got := lastResults(calls[1].Messages); !strings.Contains(got, "Invalid input for pick_color") {
		t.Errorf("the second call saw %q: want the bad input refused", got)
	}

	// The handle goes; another opens the session (a restarted server).
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s, err = router.Open(ctx, "s1", session.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	turn, left := s.ClientCalls()
	if turn != res.TurnID || len(left) != 1 || left[0].ID != "pick" {
		t.Fatalf("ClientCalls = %s %+v, want %s and the call pick", turn, left, res.TurnID)
	}
	if _, err := s.Run(ctx, "", session.WithTurnID(turn), session.Retry(), session.WithResults(llm.ToolResultBlock("nope", "x", false))); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("a result for no call: err %v, want it named", err)
	}
	res, err = s.Run(ctx, "", session.WithTurnID(turn), session.Retry(), session.WithResults(llm.ToolResultBlock("pick", "The user picked teal.", false)))
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != agent.StopAnswered || res.Answer != "You picked teal." {
		t.Fatalf("stop %s, answer %q", res.StopReason, res.Answer)
	}
	calls = model.CallsTo("s1")
	got := lastResults(calls[2].Messages)
	if !strings.Contains(got, "pick:The user picked teal.") || !strings.Contains(got, "read2:") || !strings.Contains(got[strings.Index(got, "read2:"):], "alpha") || !strings.Contains(got[:strings.Index(got, "pick:")], "alpha") {
		t.Errorf("the model saw %q: want Read's result, the user's pick, and the Read after it", got)
	}
	if _, left := s.ClientCalls(); left != nil {
		t.Errorf("calls still left: %+v", left)
	}
}

// A new message instead of a result: the call left is answered that no
// result came.
func TestClientCallsLeftUnansweredAreSaidSo(t *testing.T) {
	model := script.New().Script("s1", script.Call("confirm", map[string]any{}), script.Text("ok"))
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "ui"}, agent.Collaborators{Client: model, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	st := store.NewMemory()
	defer st.Close()
	ctx := context.Background()
	s, err := session.NewRouter(rt, st, nil).Open(ctx, "s1", session.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	if res, err := s.Run(ctx, "go", session.WithClientTools(agent.ClientTool{Name: "confirm"})); err != nil || res.StopReason != agent.StopClientTools {
		t.Fatalf("%v %+v", err, res)
	}
	if _, err := s.Run(ctx, "never mind"); err != nil {
		t.Fatal(err)
	}
	if got := lastResults(model.CallsTo("s1")[1].Messages[:3]); !strings.Contains(got, "No result came for this call: confirm") {
		t.Errorf("the model saw %q", got)
	}
}

// lastResults are the tool results of msgs' last message that has some,
// as "id:content" lines.
func lastResults(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		var out []string
		for _, b := range msgs[i].Content {
			if b.Type == llm.BlockToolResult {
				out = append(out, b.ToolUseID+":"+b.Content)
			}
		}
		if out != nil {
			return strings.Join(out, "\n")
		}
	}
	return ""
}
