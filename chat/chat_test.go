package chat

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/internal/proctest"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
)

// The chat's help lists each of its commands once.
func TestChatHelpListsEachCommandOnce(t *testing.T) {
	seen := map[string]int{}
	for _, line := range strings.Split(Help, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(line, "  /") {
			seen[f[0]]++
		}
	}
	for _, c := range []string{"/compact", "/cost", "/model", "/permissions", "/resume", "/clear", "/rewind", "/approve,", "/mcp", "/paste", "/help", "/exit"} {
		if seen[c] != 1 {
			t.Errorf("%s is listed %d times", c, seen[c])
		}
		delete(seen, c)
	}
	if len(seen) > 0 {
		t.Errorf("the help lists commands the chat does not know: %v", seen)
	}
}

// The recap of a resumed chat says how much of the conversation it shows:
// all of a short one, the last three of a longer one.
func TestRecapSaysHowMuchItShows(t *testing.T) {
	conv := func(n int) []llm.Message {
		var msgs []llm.Message
		for i := range n {
			msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(fmt.Sprint("q", i))}},
				llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock(fmt.Sprint("a", i))}})
		}
		return msgs
	}
	for n, want := range map[int]string{
		0: "",
		1: "Earlier in this session:\n\n❯ q0\na0\n",
		3: "Earlier in this session (its 3 exchanges):\n",
		5: "Earlier in this session (the last 3 of 5 exchanges):\n\n❯ q2\n",
	} {
		if got := recap(conv(n)); !strings.HasPrefix(got, want) || (want == "") != (got == "") {
			t.Errorf("%d exchanges: %q, want it to begin %q", n, got, want)
		}
	}
}

// A program runs the chat over its App as orca chat does: the lines of
// the input are turns and commands, /clear goes on in a new session, and
// Run ends the session it is in when the input ends.
func TestChatOverApp(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script.json")
	os.WriteFile(script, []byte(`[
		{"tool_calls": [{"name": "Write", "input": {"file_path": "hello.txt", "content": "hello, world\n"}}]},
		{"text": "I wrote hello.txt."},
		{"text": "Hello again."}]`), 0o644)
	ctx := t.Context()
	c, a, ls, out := chatOver(t, app.Config{Workspace: dir, Model: app.ModelConfig{Script: script}, Mode: policy.ModeAcceptEdits},
		"first", "Create hello.txt saying hello.\n/cost\n/clear\nhi\n")
	if c.Approver() != nil {
		t.Error("an approver for an input that is not a terminal")
	}
	if err := c.Run(ctx, a, ls); err != nil {
		t.Fatal(err)
	}
	if err := c.Run(ctx, a, ls); err == nil {
		t.Error("a second Run ran")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "hello.txt")); string(b) != "hello, world\n" {
		t.Errorf("hello.txt = %q, %v", b, err)
	}
	ss, err := a.Store().Sessions(ctx, store.Filter{})
	if err != nil || len(ss) != 2 {
		t.Fatalf("sessions %+v, %v: want two", ss, err)
	}
	second := ss[0].ID
	if second == "first" {
		second = ss[1].ID
	}
	got := out.String()
	for _, want := range []string{
		"orca chat · session first (new) · script\n",
		"● Write hello.txt\n",
		"I wrote hello.txt.\n",
		"  tool calls  1      no cap\n",
		"Session first is kept. A new session: " + second + ".\n",
		"Hello again.\n",
		"Session " + second + " · 1 turn\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the chat did not show %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "resume it with") || strings.Contains(got, "session_ended") {
		t.Errorf("the chat showed what it should not:\n%s", got)
	}
	// Each session was ended, as its way out says: its session_ended row
	// (written by the time the App is closed) has the reason.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := app.OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// The session /clear started says so (SESSION_START's source is clear).
	for id, want := range map[string][2]string{"first": {"new", session.EndClear}, second: {"clear", session.EndPromptInputExit}} {
		rows, err := st.Observations(ctx, store.ObservationFilter{SessionID: id})
		if err != nil {
			t.Fatal(err)
		}
		started, ended := "", ""
		for _, r := range rows {
			switch r.Name {
			case string(event.SessionStarted):
				started = string(r.Data)
			case string(event.SessionEnded):
				ended = string(r.Data)
			}
		}
		if !strings.Contains(started, `"source":"`+want[0]+`"`) || !strings.Contains(ended, `"reason":"`+want[1]+`"`) {
			t.Errorf("session %s: session_started %s, session_ended %s; want source %s, reason %s", id, started, ended, want[0], want[1])
		}
	}
}

// A session opened without the chat's OnEvent would chat in silence: Run
// refuses it, before reading a line.
func TestChatRefusesASessionItDoesNotShow(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	in := strings.NewReader("hello\n")
	var out strings.Builder
	c := New(ctx, Options{In: in, Out: &out})
	defer c.Close()
	a, err := app.Open(ctx, app.Config{Workspace: dir, ConfigDir: "-", Model: app.ModelConfig{Script: writeScript(t, dir, `[{"text": "hi"}]`)}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ls, err := a.Session(ctx, app.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(ctx, a, ls); err == nil || !strings.Contains(err.Error(), "OnEvent: c.OnEvent") {
		t.Errorf("Run: %v", err)
	}
	if in.Len() != len("hello\n") || out.Len() != 0 {
		t.Errorf("Run read %d bytes and wrote %q", len("hello\n")-in.Len(), out.String())
	}
	if err := New(ctx, Options{In: in, Out: &out}).Run(ctx, nil, nil); err == nil {
		t.Error("Run without an App ran")
	}
}

// chatOver prepares a chat of input over an App of cfg (its ConfigDir
// "-": no user configuration), in session id: the caller runs it. The App
// closes at the end of the test.
func chatOver(t *testing.T, cfg app.Config, id, input string) (*Chat, *app.App, *session.LiveSession, *strings.Builder) {
	t.Helper()
	ctx := t.Context()
	out := &strings.Builder{}
	c := New(ctx, Options{In: strings.NewReader(input), Out: out})
	t.Cleanup(c.Close)
	cfg.ConfigDir, cfg.Approver = "-", c.Approver()
	a, err := app.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	ls, err := a.Session(ctx, app.SessionOptions{ID: id, OnEvent: c.OnEvent})
	if err != nil {
		t.Fatal(err)
	}
	return c, a, ls, out
}

func writeScript(t *testing.T, dir, s string) string {
	t.Helper()
	p := filepath.Join(dir, "script.json")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The background tasks of a session the chat leaves (/clear) are stopped,
// and the chat says so: nothing could read or stop them from the new one.
func TestChatStopsTheTasksOfTheSessionItLeaves(t *testing.T) {
	dir := t.TempDir()
	h := proctest.NewHolder(t, dir, "hold")
	bg, _ := json.Marshal(map[string]any{"tool_calls": []any{map[string]any{"name": "Bash", "input": map[string]any{"command": "exec sleep 1000 3>hold", "run_in_background": true, "description": "Start the server"}}}})
	wait, _ := json.Marshal(map[string]any{"tool_calls": []any{map[string]any{"name": "Bash", "input": map[string]any{"command": h.Await()}}}})
	c, a, ls, out := chatOver(t, app.Config{Workspace: dir, NoSandbox: true, Mode: policy.ModeBypass,
		Model: app.ModelConfig{Script: writeScript(t, dir, "["+string(bg)+","+string(wait)+`,{"text": "It runs."}]`)}}, "first", "start the server\n/clear\n")
	if err := c.Run(t.Context(), a, ls); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	stopped := strings.Index(got, "Stopped what session first left running in the background: task_1 (Bash: Start the server).\n")
	if kept := strings.Index(got, "Session first is kept."); stopped < 0 || kept < stopped {
		t.Errorf("/clear did not say it stopped the task before leaving:\n%s", got)
	}
	h.RequireGone() // before the App closes
}

// Ctrl-O shows the last call under the line its start drew (how its tool
// shows it), with its whole output; a call whose start was not seen is
// named by its tool.
func TestLastOutputIsTheLastCallsWhole(t *testing.T) {
	done := make(chan struct{})
	close(done) // no program to tell
	u := &chatUI{done: done}
	in := json.RawMessage(`{"file_path":"main.go"}`)
	u.event(event.Event{Name: event.ToolExecStarted, Data: &event.ToolStartedData{ToolUseID: "a", ToolName: "Read", Input: in, Summary: "main.go"}})
	u.event(event.Event{Name: event.ToolExecCompleted, Data: &event.ToolData{ToolUseID: "a", ToolName: "Read", Input: in, Output: "1\tpackage main\n2\t"}})
	if got := u.lastOutput(); !strings.Contains(got, "Read main.go · 2 lines, whole:") || !strings.Contains(got, "package main") {
		t.Errorf("after a call:\n%s", got)
	}
	u.event(event.Event{Name: event.ToolExecFailed, Data: &event.ToolData{ToolUseID: "b", ToolName: "Glob", Output: "no match"}})
	if got := u.lastOutput(); !strings.Contains(got, "Glob · 1 line, whole:") || !strings.Contains(got, "no match") {
		t.Errorf("after a call whose start was not seen:\n%s", got)
	}
	if u.event(event.Event{Name: event.ToolExecStarted, Scope: scope.Scope{Depth: 1}, Data: &event.ToolStartedData{ToolUseID: "c", ToolName: "Bash"}}); len(u.heads) != 0 {
		t.Errorf("a fork's call is kept: %v", u.heads)
	}
}

// /permissions lists what [a] answers granted, numbered, by scope, and
// /permissions revoke N (or RULE) takes one back: the next listing, and
// the approvals the runtime reads, no longer have it.
func TestPermissionsListsAndRevokesGrants(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	c, a, ls, out := chatOver(t, app.Config{Workspace: dir, Model: app.ModelConfig{Script: writeScript(t, dir, `[{"text": "hi"}]`)}},
		"s", "/permissions\n/permissions revoke 1\n/permissions revoke Bash(nope:*)\n/permissions revoke 9\n/permissions\n")
	g := a.Grants()
	if err := g.Grant(ctx, a.Runtime().ID(), "s", policy.ScopeSession, []string{"Bash(sleep:*)"}); err != nil {
		t.Fatal(err)
	}
	if err := g.Grant(ctx, a.Runtime().ID(), "s", policy.ScopeAgent, []string{"Edit(src/**)"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Run(ctx, a, ls); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"    1. Bash(sleep:*) (this session)\n",
		"    2. Edit(src/**) (every session of this agent here)\n",
		"Revoked Bash(sleep:*): the calls it allowed are asked about again.",
		"✗ Bash(nope:*) is not granted here",
		"✗ no grant 9: /permissions lists 1",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the chat did not show %q:\n%s", want, got)
		}
	}
	if last := got[strings.LastIndex(got, "Permission mode"):]; strings.Contains(last, "sleep") || !strings.Contains(last, "1. Edit(src/**)") {
		t.Errorf("the last listing:\n%s", last)
	}
	if rules, _ := g.Rules(ctx, a.Runtime().ID(), "s"); len(rules) != 1 || rules[0] != "Edit(src/**)" {
		t.Errorf("the runtime's approvals: %v", rules)
	}
}

// /rewind lists the session's turns that changed the workspace, and
// /rewind N puts it back as it was before turn N — what a command made is
// gone, what it changed is back; a file changed since stops it until
// force; the conversation goes on.
func TestRewindInTheChat(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("before\n"), 0o644)
	cfg := func(script string) app.Config {
		return app.Config{Workspace: dir, Model: app.ModelConfig{Script: writeScript(t, t.TempDir(), script)}, Mode: policy.ModeBypass, NoSandbox: true, Checkpoints: true}
	}
	c, a, ls, _ := chatOver(t, cfg(`[{"tool_calls": [{"id": "b", "name": "Bash", "input": {"command": "echo after > a.txt && echo made > b.txt"}}]}, {"text": "done"}]`),
		"s", "change the files\n")
	if err := c.Run(t.Context(), a, ls); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("the user's\n"), 0o644) // b.txt is the user's now
	c, a, ls, out := chatOver(t, cfg(`[{"text": "still here"}]`), "s", "/rewind\n/rewind 1 now\n/rewind 1\n/rewind 1 force\n/rewind 7\nand now?\n")
	if err := c.Run(t.Context(), a, ls); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"Session s: 1 turn that changed the workspace, oldest first.",
		"   ~ a.txt\n   + b.txt\n",
		"'/rewind N' puts the workspace back as it was before turn N.",
		"Usage: /rewind (the turns)",
		"✗ nothing was put back: 1 path changed since the turns changed it:\n  b.txt: it changed since\nLook at it, then rewind with /rewind 1 force to put it back too",
		"Put back 2 paths as they were before turn ",
		"The conversation is as it was: tell the model what you undid.",
		`✗ session s has no turn "7" with changes to rewind: /rewind lists them`,
		"still here",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the chat did not show %q:\n%s", want, got)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "before\n" {
		t.Errorf("a.txt: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.txt")); err == nil {
		t.Error("b.txt is still there")
	}
}

// /rewind N conversation puts the files back and goes on in a branch of
// the session as it was before turn N: the next message is a turn of the
// branch, whose records are the session's before turn N and that turn's;
// the session keeps all of its own.
func TestRewindTheConversationInTheChat(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("before\n"), 0o644)
	cfg := func(script string) app.Config {
		return app.Config{Workspace: dir, Model: app.ModelConfig{Script: writeScript(t, t.TempDir(), script)}, Mode: policy.ModeBypass, NoSandbox: true, Checkpoints: true}
	}
	c, a, ls, _ := chatOver(t, cfg(`[{"tool_calls": [{"id": "b", "name": "Bash", "input": {"command": "echo after > a.txt"}}]}, {"text": "changed a"},
		{"tool_calls": [{"id": "w", "name": "Write", "input": {"file_path": "c.txt", "content": "c\n"}}]}, {"text": "wrote c"}]`),
		"s", "change a\nwrite c\n")
	if err := c.Run(t.Context(), a, ls); err != nil {
		t.Fatal(err)
	}
	c, a, ls, out := chatOver(t, cfg(`[{"text": "going on"}]`), "s", "/rewind 2 conversation force conversation\n/rewind 2 conversation\nand now?\n/rewind\n")
	if err := c.Run(t.Context(), a, ls); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	st := a.Store()
	orig, _ := st.Records(ctx, "s", store.RecordFilter{IncludeCompacted: true})
	ss, _ := st.Sessions(ctx, store.Filter{})
	if len(orig) != 8 || len(ss) != 2 {
		t.Fatalf("s has %d records (want 8), the store %d sessions (want s and its branch)", len(orig), len(ss))
	}
	branch := ss[0].ID
	if branch == "s" {
		branch = ss[1].ID
	}
	got := out.String()
	for _, want := range []string{
		"Usage: /rewind (the turns)",
		"Put back 1 path as it was before turn " + orig[4].TurnID,
		"The conversation is as it was before turn " + orig[4].TurnID + ": going on in session " + branch + ", a branch of session s, which is kept as it was.",
		"Session " + branch + ": 1 turn that changed the workspace, oldest first.",
		"going on",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the chat did not show %q:\n%s", want, got)
		}
	}
	recs, _ := st.Records(ctx, branch, store.RecordFilter{IncludeCompacted: true})
	if len(recs) != 6 || recs[3].TurnID != orig[0].TurnID || recs[4].Message.Text() != "and now?" || recs[5].Message.Text() != "going on" {
		for _, r := range recs {
			t.Logf("%s %s %q", r.TurnID, r.Message.Role, r.Message.Text())
		}
		t.Fatalf("the branch has %d records, want turn 1's 4 and the new turn's 2", len(recs))
	}
	for i := range 4 {
		if recs[i].TurnID != orig[i].TurnID || !recs[i].Message.Equal(orig[i].Message) {
			t.Errorf("record %d of the branch is not the session's", i+1)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "after\n" {
		t.Errorf("a.txt: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "c.txt")); err == nil {
		t.Error("c.txt is still there")
	}
}
