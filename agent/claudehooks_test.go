package agent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/subagent"
	"github.com/orca-agent/orca/toolset"
	"github.com/orca-agent/orca/workspace"
)

// The decisions Claude Code's hooks take, as the runtime carries them
// out (issue 14): an allow answers an ask, once, and never beats a deny;
// defer parks the call; ending the turn stops everything after it;
// PRE_TOOL_USE context reaches the model; PERMISSION_REQUEST may allow a
// rewritten input; a message reaches the user as an event.

// A PRE_TOOL_USE allow answers the ask the policy would have put to the
// user: the approver is not asked, and the call runs.
func TestHookAllowAnswersTheAsk(t *testing.T) {
	asked := 0
	approver := policy.ApproverFunc(func(context.Context, policy.ApprovalRequest) (policy.Approval, error) {
		asked++
		return policy.Approval{}, nil
	})
	pol, _ := policy.New(policy.ModeDefault, policy.Rules{})
	b := newBench(t, pol, approver)
	b.hook(hook.PreToolUse, "ok-writes", hook.On(func(ctx context.Context, p *hook.PreToolUsePayload) (*hook.Decision, error) {
		return &hook.Decision{Action: hook.Allow, Reason: "writes are fine here"}, nil
	}))
	b.model.Script("s", write("1", "a.txt", "x"), script.Text("ok"))
	b.run("s", "go")
	if b.file("a.txt") != "x" || asked != 0 {
		t.Fatalf("file %q, approver asked %d times; want the hook's allow to answer the ask", b.file("a.txt"), asked)
	}
	found := false
	for _, e := range b.events.named(event.ApprovalResolved) {
		if d := e.Data.(*event.ApprovalData); d.Allowed && d.By == "hook:ok-writes" {
			found = true
		}
	}
	if !found {
		t.Error("no approval_resolved event names the hook")
	}
}

// An allow never beats a deny rule, nor built-in protection.
func TestHookAllowNeverBeatsADeny(t *testing.T) {
	rules, err := policy.ParseRules(nil, []string{"Write(secret.txt)"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pol, _ := policy.New(policy.ModeDefault, rules)
	b := newBench(t, pol, nil)
	b.hook(hook.PreToolUse, "yes-to-all", hook.On(func(ctx context.Context, p *hook.PreToolUsePayload) (*hook.Decision, error) {
		return &hook.Decision{Action: hook.Allow}, nil
	}))
	b.model.Script("s", write("1", "secret.txt", "x"), write("2", ".orca/settings.json", "{}"), script.Text("ok"))
	b.run("s", "go")
	if b.file("secret.txt") == "x" {
		t.Error("a hook's allow beat a deny rule")
	}
	if o := b.observation("s", 2, "2"); !o.IsError || b.file(".orca/settings.json") == "{}" {
		t.Errorf("a hook's allow beat built-in protection: %+v", o)
	}
}

// Defer parks the call for a person, as a parking approver does; the
// resumed call asks the hooks again, and the person's approval runs it.
func TestHookDeferParksTheCall(t *testing.T) {
	b := newBench(t, nil, nil)
	var calls int
	b.hook(hook.PreToolUse, "ops", hook.On(func(ctx context.Context, p *hook.PreToolUsePayload) (*hook.Decision, error) {
		calls++
		return &hook.Decision{Action: hook.Defer, Reason: "ops decides"}, nil
	}))
	b.model.Script("s", write("1", "a.txt", "x"), script.Text("done"))
	res := b.run("s", "go")
	if res.StopReason != agent.StopAwaitingApproval || res.Parked == nil || res.Parked.ToolUseID != "1" || b.file("a.txt") == "x" {
		t.Fatalf("stop %s, parked %+v, file %q: want the call parked, not run", res.StopReason, res.Parked, b.file("a.txt"))
	}
	// The person approves; the turn resumes with the call.
	var use = res.Transcript[len(res.Transcript)-1].Content
	res2, _ := agent.NewExecutor().Execute(t.Context(), b.rt, agent.Request{SessionID: "s", History: res.Transcript, Resume: use, Approved: map[string]bool{"1": true}})
	if b.file("a.txt") != "x" || calls != 2 || res2.StopReason != agent.StopAnswered {
		t.Fatalf("after approval: file %q, hook ran %d times, stop %s", b.file("a.txt"), calls, res2.StopReason)
	}
}

// Ending the turn from PRE_TOOL_USE: the call and the calls after it do
// not run, the model is not called again, and the user learns why.
func TestHookEndsTheTurn(t *testing.T) {
	b := newBench(t, nil, nil)
	b.hook(hook.PreToolUse, "tripwire", hook.On(func(ctx context.Context, p *hook.PreToolUsePayload) (*hook.Decision, error) {
		if strings.Contains(string(p.Arguments), "b.txt") {
			return &hook.Decision{EndTurn: "the build is red", Message: "stopped the agent"}, nil
		}
		return nil, nil
	}))
	b.model.Script("s", script.Response{ToolCalls: []script.ToolCall{
		{ID: "1", Name: "Write", Input: raw(map[string]string{"file_path": "a.txt", "content": "a"})},
		{ID: "2", Name: "Write", Input: raw(map[string]string{"file_path": "b.txt", "content": "b"})},
		{ID: "3", Name: "Write", Input: raw(map[string]string{"file_path": "c.txt", "content": "c"})},
	}}, script.Text("never"))
	res := b.run("s", "go")
	if res.StopReason != agent.StopBlocked || !strings.Contains(res.Reason, "the build is red") || !strings.Contains(res.Reason, "tripwire") {
		t.Fatalf("stop %s, reason %q: want blocked by tripwire", res.StopReason, res.Reason)
	}
	if b.file("a.txt") != "a" || b.file("b.txt") == "b" || b.file("c.txt") == "c" {
		t.Errorf("files a=%q b=%q c=%q: want only the call before the hook's run", b.file("a.txt"), b.file("b.txt"), b.file("c.txt"))
	}
	if n := len(b.model.CallsTo("s")); n != 1 {
		t.Errorf("the model was called %d times; want once", n)
	}
	msgs := b.events.named(event.HookMessage)
	if len(msgs) != 1 || msgs[0].Data.(*event.HookMessageData).Message != "stopped the agent" {
		t.Errorf("hook_message events = %+v", msgs)
	}
}

// PRE_TOOL_USE context reaches the model with the call's observation.
func TestPreToolUseContextReachesTheModel(t *testing.T) {
	b := newBench(t, nil, nil)
	b.hook(hook.PreToolUse, "hint", hook.On(func(ctx context.Context, p *hook.PreToolUsePayload) (*hook.Decision, error) {
		return &hook.Decision{Context: "this repository formats with gofmt"}, nil
	}))
	b.model.Script("s", write("1", "a.txt", "x"), script.Text("ok"))
	b.run("s", "go")
	if o := b.observation("s", 1, "1"); o.IsError || !strings.Contains(o.Content, "formats with gofmt") {
		t.Errorf("observation = %+v, want the hook's context", o)
	}
}

// A PERMISSION_REQUEST allow may rewrite the input it allows; the new
// input is validated and decided by the policy again.
func TestPermissionRequestAllowsARewrittenInput(t *testing.T) {
	rules, _ := policy.ParseRules(nil, []string{"Write(forbidden.txt)"}, nil)
	pol, _ := policy.New(policy.ModeDefault, rules)
	b := newBench(t, pol, nil)
	b.hook(hook.PermissionRequest, "redirect", hook.On(func(ctx context.Context, p *hook.PermissionRequestPayload) (*hook.Decision, error) {
		var in map[string]string
		json.Unmarshal(p.Arguments, &in)
		target := "safe/" + in["file_path"]
		if in["file_path"] == "b.txt" {
			target = "forbidden.txt"
		}
		return &hook.Decision{Action: hook.Allow, Updates: map[string]any{"arguments": map[string]string{"file_path": target, "content": in["content"]}}}, nil
	}))
	b.model.Script("s", write("1", "a.txt", "x"), write("2", "b.txt", "y"), script.Text("ok"))
	b.run("s", "go")
	if b.file("safe/a.txt") != "x" || b.file("a.txt") == "x" {
		t.Errorf("safe/a.txt %q, a.txt %q: want the rewritten input run", b.file("safe/a.txt"), b.file("a.txt"))
	}
	if o := b.observation("s", 2, "2"); !o.IsError || b.file("forbidden.txt") == "y" {
		t.Errorf("a rewrite into a denied path ran: %+v", o)
	}
}

// POST_TOOL_USE gets the tool's structured response; the transcript
// path names a file holding the conversation in Claude Code's shape, up
// to the call's assistant message; the mode is the policy's.
func TestPostToolUseSeesResponseAndTranscript(t *testing.T) {
	root := t.TempDir()
	fs, err := workspace.OpenLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	svc := agent.NewServices(nil)
	defer svc.Close()
	model := script.New()
	pol, _ := policy.New(policy.ModeAcceptEdits, policy.Rules{})
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "t"}, agent.Collaborators{Client: model, FS: fs, Services: svc, Policy: pol, TranscriptDir: filepath.Join(root, "transcripts")})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var (
		mu   sync.Mutex
		seen []*hook.PostToolUsePayload
		tx   [][]map[string]any
	)
	svc.Hooks.Register(hook.PostToolUse, "watch", hook.On(func(ctx context.Context, p *hook.PostToolUsePayload) (*hook.Decision, error) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, p)
		tx = append(tx, readJSONL(t, p.TranscriptPath))
		return nil, nil
	}))
	model.Script("s", write("1", "a.go", "package a\n"), script.Text("done"))
	res, _ := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "write a.go"})
	if res.StopReason != agent.StopAnswered || len(seen) != 1 {
		t.Fatalf("stop %s, %d POST_TOOL_USE payloads", res.StopReason, len(seen))
	}
	p := seen[0]
	var resp map[string]any
	if err := json.Unmarshal(p.Response, &resp); err != nil || resp["filePath"] != filepath.Join(fs.Root(), "a.go") || resp["type"] != "create" || resp["content"] != "package a\n" {
		t.Errorf("response = %s (%v); want Write's {type, filePath, content}", p.Response, err)
	}
	if p.PermissionMode != string(policy.ModeAcceptEdits) {
		t.Errorf("permission mode = %q", p.PermissionMode)
	}
	lines := tx[0]
	if len(lines) != 2 || lines[0]["type"] != "user" || lines[1]["type"] != "assistant" {
		t.Fatalf("transcript = %v; want the user's message and the assistant's", lines)
	}
	msg := lines[1]["message"].(map[string]any)
	content := msg["content"].([]any)
	if msg["role"] != "assistant" || content[0].(map[string]any)["type"] != "tool_use" || content[0].(map[string]any)["name"] != "Write" {
		t.Errorf("assistant line = %v", lines[1])
	}
	if u, _ := msg["usage"].(map[string]any); msg["model"] == nil || u == nil || u["input_tokens"] == nil {
		t.Errorf("assistant line has no model and usage: %v", msg)
	}
	if lines[1]["parentUuid"] != lines[0]["uuid"] || lines[0]["sessionId"] != "s" {
		t.Errorf("lines are not chained: %v", lines)
	}
	if u := lines[0]["message"].(map[string]any)["content"].([]any)[0].(map[string]any); u["text"] != "write a.go" {
		t.Errorf("user line = %v", lines[0])
	}
}

// A subagent's prompt is not the user's: USER_PROMPT_SUBMIT fires once,
// for the user's input, and not for the fork's task; hooks inside the
// fork know its agent, and SUBAGENT_STOP its id.
func TestSubagentPromptIsNotAUserPrompt(t *testing.T) {
	b := newBench(t, nil, nil)
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "main", Subagents: []subagent.Definition{{Name: "scout", Description: "looks", Prompt: "look"}}},
		agent.Collaborators{Client: b.model, Workspace: b.root, Services: b.svc})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var (
		mu      sync.Mutex
		prompts []string
		agents  []string
		stopID  string
	)
	b.hook(hook.UserPromptSubmit, "log", hook.On(func(ctx context.Context, p *hook.UserPromptSubmitPayload) (*hook.Decision, error) {
		mu.Lock()
		defer mu.Unlock()
		prompts = append(prompts, p.Prompt)
		return nil, nil
	}))
	b.hook(hook.PreToolUse, "who", hook.On(func(ctx context.Context, p *hook.PreToolUsePayload) (*hook.Decision, error) {
		mu.Lock()
		defer mu.Unlock()
		agents = append(agents, p.ToolName+":"+p.Agent)
		return nil, nil
	}))
	b.hook(hook.SubagentStop, "id", hook.On(func(ctx context.Context, p *hook.SubagentStopPayload) (*hook.Decision, error) {
		mu.Lock()
		defer mu.Unlock()
		stopID = p.AgentID
		return nil, nil
	}))
	b.hook(hook.SubagentStart, "brief", hook.On(func(ctx context.Context, p *hook.SubagentStartPayload) (*hook.Decision, error) {
		return &hook.Decision{Context: "scouts read, never write"}, nil
	}))
	b.model.Script("s", script.Call("Task", map[string]string{"subagent_type": "scout", "description": "d", "prompt": "find the config"}), script.Text("all done"))
	b.model.ScriptPrefix(script.ForkRoute("s", ""), script.Call("Glob", map[string]string{"pattern": "*"}), script.Text("found it"))
	agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "start"})
	mu.Lock()
	defer mu.Unlock()
	if len(prompts) != 1 || prompts[0] != "start" {
		t.Errorf("USER_PROMPT_SUBMIT saw %q; want only the user's input", prompts)
	}
	if strings.Join(agents, ",") != "Task:,Glob:scout" {
		t.Errorf("PRE_TOOL_USE agents = %v", agents)
	}
	if !strings.HasPrefix(stopID, "exec_") {
		t.Errorf("SUBAGENT_STOP agent id = %q", stopID)
	}
	// The fork's first prompt carries SUBAGENT_START's context, named so.
	var first string
	for _, c := range b.model.Calls() {
		if strings.HasPrefix(c.Route, script.ForkRoute("s", "")) {
			first = c.Messages[0].Text()
			break
		}
	}
	if !strings.Contains(first, `<hook-context hook="SUBAGENT_START">`) || !strings.Contains(first, "scouts read, never write") {
		t.Errorf("the fork's first prompt: %q", first)
	}
}

func readJSONL(t *testing.T, path string) []map[string]any {
	t.Helper()
	if path == "" {
		t.Fatal("no transcript path")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("transcript line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// named returns the events of name n, in order.
func (c *collector) named(n event.Name) []event.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []event.Event
	for _, e := range c.events {
		if e.Name == n {
			out = append(out, e)
		}
	}
	return out
}

// A loop a STOP hook drives runs as long as the hook wants, within the
// cap: a ralph-style hook that counts its own iterations and stops
// itself at 5 gets all 5; one that never stops is ended at the cap, and
// the user is told.
func TestStopHookLoops(t *testing.T) {
	for _, tc := range []struct {
		name      string
		max       int // the hook's own limit; 0: none
		cap       int
		wantCalls int
		wantMsg   bool
	}{
		{"the hook ends its loop", 5, 0, 6, false},
		{"the cap ends a loop that does not", 0, 3, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t, nil, nil)
			b.rt = b.runtimeWith(agent.Definition{Name: "loop", MaxContinuations: tc.cap})
			var actives []bool
			b.hook(hook.Stop, "ralph", hook.On(func(ctx context.Context, p *hook.StopPayload) (*hook.Decision, error) {
				actives = append(actives, p.Continued > 0)
				if tc.max > 0 && p.Continued >= tc.max {
					return nil, nil
				}
				return &hook.Decision{Action: hook.Revise, Instruction: "keep improving the code"}, nil
			}))
			for range 30 {
				b.model.Script("s", script.Text("pass"))
			}
			res := b.run("s", "improve it")
			if n := len(b.model.CallsTo("s")); n != tc.wantCalls || res.StopReason != agent.StopAnswered {
				t.Fatalf("%d model calls, stop %s; want %d, answered", n, res.StopReason, tc.wantCalls)
			}
			if actives[0] || !actives[len(actives)-1] {
				t.Errorf("stop_hook_active per call = %v; want false first, true after", actives)
			}
			msgs := b.events.named(event.HookMessage)
			if got := len(msgs) == 1 && strings.Contains(res.Reason, "the cap"); got != tc.wantMsg {
				t.Errorf("cap message: events %+v, reason %q", msgs, res.Reason)
			}
		})
	}
}
