package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/middleware"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/toolset"
	"github.com/orca-agent/orca/workspace"
)

// bench is a runtime with the default tools, shared services, and an
// optional policy and approver, over a fresh workspace.
type bench struct {
	t      *testing.T
	svc    *agent.Services
	model  *script.Client
	rt     *agent.Runtime
	root   string
	events *collector
	log    *trail
}

// trail records the order in which the pipeline's stages ran.
type trail struct {
	mu sync.Mutex
	l  []string
}

func (t *trail) add(s string) { t.mu.Lock(); t.l = append(t.l, s); t.mu.Unlock() }
func (t *trail) get() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.l)
}

func newBench(t *testing.T, pol *policy.Policy, approver policy.Approver) *bench {
	t.Helper()
	b := &bench{t: t, svc: agent.NewServices(nil), model: script.New(), events: &collector{}, log: &trail{}}
	t.Cleanup(func() { b.svc.Close() })
	if _, err := b.svc.Bus.SubscribePrefix("test", "", b.events.add, event.Buffer(1<<14)); err != nil {
		t.Fatal(err)
	}
	b.root = t.TempDir()
	b.rt = b.runtime(pol, approver)
	return b
}

func (b *bench) runtime(pol *policy.Policy, approver policy.Approver) *agent.Runtime {
	fs, err := workspace.OpenLocal(b.root)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { fs.Close() })
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "pipeline", SystemPrompt: "sys"}, agent.Collaborators{
		Client: b.model, FS: fs, Services: b.svc, Policy: pol, Approver: approver,
	})
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { rt.Close() })
	return rt
}

// runtimeWith builds another runtime on the bench's services and workspace.
func (b *bench) runtimeWith(def agent.Definition) *agent.Runtime {
	fs, err := workspace.OpenLocal(b.root)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { fs.Close() })
	if def.ToolProviders == nil {
		// As app builds runtimes: orca's own tools.
		def.ToolProviders = toolset.Default()
	}
	rt, err := agent.New(def, agent.Collaborators{Client: b.model, FS: fs, Services: b.svc})
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { rt.Close() })
	return rt
}

func (b *bench) run(session, input string) *agent.Result {
	b.t.Helper()
	res, _ := agent.NewExecutor().Execute(b.t.Context(), b.rt, agent.Request{SessionID: session, Input: input})
	b.svc.Bus.Flush(b.t.Context())
	return res
}

func (b *bench) hook(n hook.Name, name string, h hook.Handler, opts ...hook.Option) {
	b.t.Helper()
	if _, err := b.svc.Hooks.Register(n, name, h, opts...); err != nil {
		b.t.Fatal(err)
	}
}

func (b *bench) file(rel string) string {
	data, err := os.ReadFile(filepath.Join(b.root, rel))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(data)
}

// observation returns what the model saw of tool use id in call n of session.
func (b *bench) observation(session string, n int, id string) llm.Block {
	b.t.Helper()
	calls := b.model.CallsTo(session)
	if len(calls) <= n {
		b.t.Fatalf("only %d model calls", len(calls))
	}
	for _, o := range calls[n].Observations() {
		if o.ToolUseID == id {
			return o
		}
	}
	b.t.Fatalf("call %d carries no observation of %s: %+v", n, id, calls[n].Observations())
	return llm.Block{}
}

func write(id, path, content string) script.Response {
	return script.Response{ToolCalls: []script.ToolCall{{ID: id, Name: "Write", Input: raw(map[string]string{"file_path": path, "content": content})}}}
}

func raw(v any) json.RawMessage { b, _ := json.Marshal(v); return b }

func TestUserPromptSubmitBlockRewriteAndContext(t *testing.T) {
	b := newBench(t, nil, nil)
	b.hook(hook.UserPromptSubmit, "secrets", hook.On(func(ctx context.Context, p *hook.UserPromptSubmitPayload) (*hook.Decision, error) {
		if strings.Contains(p.Prompt, "password") {
			return &hook.Decision{Action: hook.Block, Reason: "prompts may not contain passwords"}, nil
		}
		return &hook.Decision{Updates: map[string]any{"prompt": strings.ToUpper(p.Prompt)}, Context: "ticket ORC-7"}, nil
	}))
	b.hook(hook.TurnStart, "branch", hook.On(func(ctx context.Context, p *hook.TurnStartPayload) (*hook.Decision, error) {
		return &hook.Decision{Context: "branch main; input was " + p.Input}, nil
	}))
	res := b.run("s", "my password is hunter2")
	if res.StopReason != agent.StopBlocked || !strings.Contains(res.Reason, "passwords") || len(b.model.Calls()) != 0 {
		t.Fatalf("blocked prompt: %+v, %d model calls", res, len(b.model.Calls()))
	}
	b.model.Script("s2", script.Text("ok"))
	b.run("s2", "fix the bug")
	first := b.model.CallsTo("s2")[0].Messages[0].Content
	if len(first) != 3 || first[0].Text != "FIX THE BUG" || !strings.Contains(first[1].Text, "ticket ORC-7") || !strings.Contains(first[2].Text, "input was FIX THE BUG") {
		t.Errorf("first prompt = %+v", first)
	}
}

func TestPreToolUseBlockAndRewrite(t *testing.T) {
	b := newBench(t, nil, nil)
	b.hook(hook.PreToolUse, "guard", hook.On(func(ctx context.Context, p *hook.PreToolUsePayload) (*hook.Decision, error) {
		var in struct {
			FilePath string `json:"file_path"`
			Content  string `json:"content"`
		}
		json.Unmarshal(p.Arguments, &in)
		switch in.FilePath {
		case "secret.txt":
			return &hook.Decision{Action: hook.Block, Reason: "secret.txt is off limits"}, nil
		case "draft.txt":
			return &hook.Decision{Updates: map[string]any{"arguments": map[string]string{"file_path": "final.txt", "content": in.Content}}}, nil
		case "bad.txt":
			return &hook.Decision{Updates: map[string]any{"arguments": map[string]any{"file_path": 7}}}, nil
		}
		return nil, nil
	}))
	b.model.Script("s",
		script.Response{ToolCalls: []script.ToolCall{
			{ID: "a", Name: "Write", Input: raw(map[string]string{"file_path": "secret.txt", "content": "x"})},
			{ID: "b", Name: "Write", Input: raw(map[string]string{"file_path": "draft.txt", "content": "v2"})},
			{ID: "c", Name: "Write", Input: raw(map[string]string{"file_path": "bad.txt", "content": "x"})},
		}},
		script.Text("done"))
	b.run("s", "go")
	if o := b.observation("s", 1, "a"); !o.IsError || !strings.Contains(o.Content, "secret.txt is off limits") || b.file("secret.txt") == "x" {
		t.Errorf("blocked call: %+v, file %q", o, b.file("secret.txt"))
	}
	if b.file("final.txt") != "v2" || !strings.HasPrefix(b.file("draft.txt"), "<") {
		t.Errorf("rewrite: final.txt %q, draft.txt %q", b.file("final.txt"), b.file("draft.txt"))
	}
	if o := b.observation("s", 1, "c"); !o.IsError || !strings.Contains(o.Content, "rewrote the arguments") || !strings.HasPrefix(b.file("bad.txt"), "<") {
		t.Errorf("invalid rewrite: %+v", o)
	}
	blocked := 0
	for _, n := range b.events.names() {
		if n == string(event.ToolBlocked) {
			blocked++
		}
	}
	if blocked != 2 {
		t.Errorf("tool_blocked events = %d, want 2", blocked)
	}
}

// tool_request middleware run before validation and approval, the
// tool_execution middleware after approval, around the tool.
func TestPipelineOrder(t *testing.T) {
	var b *bench
	approver := policy.ApproverFunc(func(ctx context.Context, req policy.ApprovalRequest) (policy.Approval, error) {
		b.log.add("approver")
		return policy.Approval{Allow: true, Scope: policy.ScopeOnce}, nil
	})
	pol, err := policy.New(policy.ModeDefault, policy.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	b = newBench(t, pol, approver)
	b.svc.Middleware.RegisterToolRequest("req", func(ctx context.Context, c *tool.Call) (*tool.Call, error) {
		b.log.add("tool_request:" + string(c.Input))
		// A transformation before validation: fill in a default.
		c2 := *c
		c2.Input = json.RawMessage(strings.Replace(string(c.Input), `"content":null`, `"content":"filled"`, 1))
		return &c2, nil
	})
	b.svc.Middleware.RegisterToolExecution("exec", func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
		b.log.add("tool_execution:before")
		r, err := next(ctx, c)
		b.log.add("tool_execution:after")
		return r, err
	})
	b.hook(hook.PreToolUse, "pre", hook.On(func(ctx context.Context, p *hook.PreToolUsePayload) (*hook.Decision, error) {
		b.log.add("PRE_TOOL_USE")
		return nil, nil
	}))
	b.hook(hook.PostToolUse, "post", hook.On(func(ctx context.Context, p *hook.PostToolUsePayload) (*hook.Decision, error) {
		b.log.add("POST_TOOL_USE")
		return nil, nil
	}))
	b.model.Script("s", script.Response{ToolCalls: []script.ToolCall{{ID: "w", Name: "Write", InputRaw: ptr(`{"file_path":"a.txt","content":null}`)}}}, script.Text("ok"))
	b.run("s", "go")
	want := []string{`tool_request:{"file_path":"a.txt","content":null}`, "PRE_TOOL_USE", "approver", "tool_execution:before", "tool_execution:after", "POST_TOOL_USE"}
	if got := b.log.get(); !slices.Equal(got, want) {
		t.Errorf("order:\n got %v\nwant %v", got, want)
	}
	if b.file("a.txt") != "filled" {
		t.Errorf("a.txt = %q", b.file("a.txt"))
	}
}

// A tool_request middleware may call another tool than the model named
// (a name the model got wrong, mapped to the real one): the call is the
// named tool's from then on — validated against its schema, and seen by
// the hooks with what that tool declares it reads. A name mapped to no
// tool is an unknown tool's call.
func TestToolRequestRenamesTheTool(t *testing.T) {
	b := newBench(t, nil, nil)
	b.svc.Middleware.RegisterToolRequest("names", func(ctx context.Context, c *tool.Call) (*tool.Call, error) {
		c2 := *c
		switch c.Name {
		case "ReadFile":
			c2.Name = "Read"
		case "Read":
			c2.Name = "Gone"
		}
		return &c2, nil
	})
	var reads [][]string
	b.hook(hook.PreToolUse, "pre", hook.On(func(ctx context.Context, p *hook.PreToolUsePayload) (*hook.Decision, error) {
		reads = append(reads, p.Reads)
		return nil, nil
	}))
	if err := os.WriteFile(filepath.Join(b.root, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.model.Script("s", script.Response{ToolCalls: []script.ToolCall{
		{ID: "mapped", Name: "ReadFile", InputRaw: ptr(`{"file_path":"a.txt"}`)},
		{ID: "lost", Name: "Read", InputRaw: ptr(`{"file_path":"a.txt"}`)},
	}}, script.Text("ok"))
	b.run("s", "go")
	if o := b.observation("s", 1, "mapped"); o.IsError || !strings.Contains(o.Content, "hello") {
		t.Errorf("ReadFile mapped to Read: %+v", o)
	}
	if o := b.observation("s", 1, "lost"); !o.IsError || !strings.Contains(o.Content, `unknown tool "Gone"`) {
		t.Errorf("Read mapped to no tool: %+v", o)
	}
	if len(reads) != 1 || len(reads[0]) != 1 || !strings.HasSuffix(reads[0][0], "a.txt") {
		t.Errorf("PRE_TOOL_USE saw reads %q, want the mapped Read's a.txt only", reads)
	}
}

func TestPolicyDenyAndHeadlessAsk(t *testing.T) {
	pol, err := policy.New(policy.ModeDefault, policy.Rules{Deny: []policy.Rule{{Tool: "Bash", Pattern: "rm:*"}}})
	if err != nil {
		t.Fatal(err)
	}
	b := newBench(t, pol, nil)
	b.model.Script("s",
		script.Response{ToolCalls: []script.ToolCall{
			{ID: "rm", Name: "Bash", Input: raw(map[string]string{"command": "rm -rf notes"})},
			{ID: "w", Name: "Write", Input: raw(map[string]string{"file_path": "a.txt", "content": "x"})},
			{ID: "r", Name: "Read", Input: raw(map[string]string{"file_path": "a.txt"})},
		}},
		script.Text("I could not write."))
	os.MkdirAll(filepath.Join(b.root, "notes"), 0o755)
	res := b.run("s", "go")
	if o := b.observation("s", 1, "rm"); !o.IsError || !strings.Contains(o.Content, "rm") {
		t.Errorf("denied Bash: %+v", o)
	}
	if _, err := os.Stat(filepath.Join(b.root, "notes")); err != nil {
		t.Errorf("a denied command ran: %v", err)
	}
	o := b.observation("s", 1, "w")
	if !o.IsError || !strings.Contains(o.Content, "--allow") || !strings.HasPrefix(b.file("a.txt"), "<") {
		t.Errorf("headless ask: %+v, file %q", o, b.file("a.txt"))
	}
	// The denial is an observation the model sees once; the turn goes on.
	if res.StopReason != agent.StopAnswered || len(b.model.CallsTo("s")) != 2 {
		t.Errorf("result %+v after %d calls", res, len(b.model.CallsTo("s")))
	}
	if o := b.observation("s", 1, "r"); !o.IsError {
		// Read of a missing file is an error too, but not a refusal.
		t.Errorf("read: %+v", o)
	} else if strings.Contains(o.Content, "--allow") {
		t.Errorf("a read-only tool was refused: %+v", o)
	}
}

// "Always for this session" approves the suggested rule for that session,
// never another.
func TestSessionApprovalReach(t *testing.T) {
	var asked []string
	approver := policy.ApproverFunc(func(ctx context.Context, req policy.ApprovalRequest) (policy.Approval, error) {
		asked = append(asked, req.SessionID+":"+req.ToolName)
		return policy.Approval{Allow: true, Scope: policy.ScopeSession}, nil
	})
	pol, _ := policy.New(policy.ModeDefault, policy.Rules{})
	b := newBench(t, pol, approver)
	b.model.Script("a", write("1", "x/one.txt", "1"), write("2", "x/two.txt", "2"), script.Text("ok"))
	b.model.Script("b", write("3", "x/three.txt", "3"), script.Text("ok"))
	b.run("a", "go")
	b.run("b", "go")
	if !slices.Equal(asked, []string{"a:Write", "b:Write"}) {
		t.Errorf("asked %v; the second write of session a must not ask again, session b must", asked)
	}
	if b.file("x/two.txt") != "2" || b.file("x/three.txt") != "3" {
		t.Errorf("files: %q %q", b.file("x/two.txt"), b.file("x/three.txt"))
	}
}

func TestPermissionRequestHookDecides(t *testing.T) {
	approverCalls := 0
	approver := policy.ApproverFunc(func(context.Context, policy.ApprovalRequest) (policy.Approval, error) {
		approverCalls++
		return policy.Approval{}, nil
	})
	pol, _ := policy.New(policy.ModeDefault, policy.Rules{})
	b := newBench(t, pol, approver)
	b.hook(hook.PermissionRequest, "ops", hook.On(func(ctx context.Context, p *hook.PermissionRequestPayload) (*hook.Decision, error) {
		if strings.Contains(string(p.Arguments), "ok.txt") {
			return &hook.Decision{Action: hook.Allow}, nil
		}
		return &hook.Decision{Action: hook.Deny, Reason: "ops says no"}, nil
	}))
	b.model.Script("s", write("1", "ok.txt", "yes"), write("2", "no.txt", "no"), script.Text("ok"))
	b.run("s", "go")
	if b.file("ok.txt") != "yes" || approverCalls != 0 {
		t.Errorf("hook allow: file %q, approver asked %d times", b.file("ok.txt"), approverCalls)
	}
	if o := b.observation("s", 2, "2"); !o.IsError || !strings.Contains(o.Content, "ops says no") {
		t.Errorf("hook deny: %+v", o)
	}
}

// A PRE_TOOL_USE request_permission turns an allowed call into an ask:
// deny > ask > allow, whoever says it.
func TestHookAskBeatsPolicyAllow(t *testing.T) {
	b := newBench(t, nil, nil) // no policy: everything allowed
	b.hook(hook.PreToolUse, "ticket", hook.On(func(ctx context.Context, p *hook.PreToolUsePayload) (*hook.Decision, error) {
		return &hook.Decision{Action: hook.RequestPermission, Reason: "needs a ticket"}, nil
	}))
	b.model.Script("s", write("1", "a.txt", "x"), script.Text("ok"))
	b.run("s", "go")
	if o := b.observation("s", 1, "1"); !o.IsError || b.file("a.txt") == "x" {
		t.Errorf("asked call ran or was not refused: %+v", o)
	}
}

func TestPostToolUseFeedbackAndFailureContext(t *testing.T) {
	b := newBench(t, nil, nil)
	b.hook(hook.PostToolUse, "lint", hook.On(func(ctx context.Context, p *hook.PostToolUsePayload) (*hook.Decision, error) {
		return &hook.Decision{Action: hook.Block, Reason: "lint: missing newline at end of file", Context: "style guide: docs/style.md"}, nil
	}))
	b.hook(hook.PostToolUseFailure, "hint", hook.On(func(ctx context.Context, p *hook.PostToolUseFailurePayload) (*hook.Decision, error) {
		return &hook.Decision{Context: "files live under src/"}, nil
	}))
	b.model.Script("s", write("1", "a.txt", "x"), script.Call("Read", map[string]string{"file_path": "missing.txt"}), script.Text("ok"))
	b.run("s", "go")
	if o := b.observation("s", 1, "1"); !strings.Contains(o.Content, "lint: missing newline") || !strings.Contains(o.Content, "docs/style.md") || b.file("a.txt") != "x" {
		t.Errorf("post feedback: %+v", o)
	}
	if o := b.observation("s", 2, "call_2_1"); !o.IsError || !strings.Contains(o.Content, "files live under src/") {
		t.Errorf("failure context: %+v", o)
	}
}

func TestStopHookSendsTheAgentBackToWork(t *testing.T) {
	b := newBench(t, nil, nil)
	stops := 0
	b.hook(hook.Stop, "tests-first", hook.On(func(ctx context.Context, p *hook.StopPayload) (*hook.Decision, error) {
		stops++
		if stops == 1 {
			return &hook.Decision{Action: hook.Revise, Instruction: "run the tests before you finish"}, nil
		}
		return nil, nil
	}))
	b.model.Script("s", script.Text("done"), script.Text("tests pass, done"))
	res := b.run("s", "go")
	if res.Answer != "tests pass, done" || res.Iterations != 2 || stops != 2 {
		t.Fatalf("result %+v, stop hook ran %d times", res, stops)
	}
	msgs := b.model.CallsTo("s")[1].Messages
	if last := msgs[len(msgs)-1]; !strings.Contains(last.Text(), "run the tests before you finish") {
		t.Errorf("instruction not sent: %+v", last)
	}
}

func TestHookFailureIsAnEventAndTheRunGoesOn(t *testing.T) {
	b := newBench(t, nil, nil)
	b.hook(hook.PreToolUse, "flaky", hook.HandlerFunc(func(context.Context, hook.Payload) (*hook.Decision, error) {
		return nil, errors.New("audit service down")
	}))
	b.model.Script("s", write("1", "a.txt", "x"), script.Text("ok"))
	res := b.run("s", "go")
	if res.StopReason != agent.StopAnswered || b.file("a.txt") != "x" {
		t.Fatalf("result %+v", res)
	}
	b.events.mu.Lock()
	defer b.events.mu.Unlock()
	found := false
	for _, e := range b.events.events {
		if d, ok := e.Data.(*event.HookFailedData); ok && d.Handler == "flaky" && strings.Contains(d.Error, "audit service down") {
			found = true
		}
	}
	if !found {
		t.Error("no hook_failed event")
	}
}

// A wrapper error after the tool completed keeps the completed result.
func TestMiddlewareFailureAfterCompletionKeepsTheResult(t *testing.T) {
	b := newBench(t, nil, nil)
	b.svc.Middleware.RegisterToolExecution("audit", func(ctx context.Context, c *tool.Call, next middleware.ToolNext) (tool.Result, error) {
		r, _ := next(ctx, c)
		return r, errors.New("audit log full")
	})
	b.model.Script("s", write("1", "a.txt", "x"), script.Text("ok"))
	b.run("s", "go")
	if o := b.observation("s", 1, "1"); o.IsError || b.file("a.txt") != "x" {
		t.Errorf("completed result lost: %+v", o)
	}
	if !slices.Contains(b.events.names(), string(event.MiddlewareFailed)) {
		t.Errorf("no middleware_failed event: %v", b.events.names())
	}
}

// llm_execution runs once per attempt: retries are outside it.
func TestLLMExecutionRunsPerAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t, nil, nil)
		attempts := 0
		b.svc.Middleware.RegisterLLMExecution("count", func(ctx context.Context, r *llm.Request, next middleware.LLMNext) (*llm.Response, error) {
			attempts++
			return next(ctx, r)
		})
		b.model.Script("s", script.Fail(llm.KindRateLimited, "slow"), script.Text("ok"))
		if res := b.run("s", "go"); res.Answer != "ok" || attempts != 2 {
			t.Errorf("result %+v, llm_execution ran %d times", res, attempts)
		}
	})
}

func TestCacheGuardFailsBeforeTheProvider(t *testing.T) {
	b := newBench(t, nil, nil)
	b.svc.Middleware.RegisterLLMRequest("inject", func(ctx context.Context, r *llm.Request) (*llm.Request, error) {
		r2 := *r
		r2.System = r.System + " Today is Tuesday."
		return &r2, nil
	})
	b.model.Script("s", script.Text("never"))
	res := b.run("s", "go")
	if res.StopReason != agent.StopFailed || !errors.Is(res.Err, middleware.ErrCacheInvalidation) || len(b.model.Calls()) != 0 {
		t.Errorf("result %+v, %d provider calls", res, len(b.model.Calls()))
	}
}

// An llm_request middleware that adds a reminder to the newest turn at
// each call: each request has it on its own newest turn only, the
// transcript never, and a request the provider kept is, after the later
// calls, what it was when it was sent (the turn keeps its copy of the
// conversation from call to call).
func TestLLMRequestEditsReachNeitherTheTranscriptNorEarlierRequests(t *testing.T) {
	b := newBench(t, nil, nil)
	b.svc.Middleware.RegisterLLMRequest("remind", func(ctx context.Context, r *llm.Request) (*llm.Request, error) {
		last := &r.Messages[len(r.Messages)-1]
		last.Content = append(last.Content, llm.TextBlock("<reminder>"))
		return r, nil
	})
	b.svc.Middleware.RegisterLLMRequest("pass", func(ctx context.Context, r *llm.Request) (*llm.Request, error) { return r, nil })
	os.WriteFile(filepath.Join(b.root, "a.txt"), []byte("A"), 0o644)
	b.model.Script("s",
		script.Call("Read", map[string]string{"file_path": "a.txt"}),
		script.Call("Read", map[string]string{"file_path": "a.txt"}),
		script.Call("Read", map[string]string{"file_path": "a.txt"}),
		script.Text("ok"))
	res := b.run("s", "go")
	if res.Answer != "ok" {
		t.Fatalf("result %+v", res)
	}
	reminders := func(msgs []llm.Message) (at []int) {
		for i, m := range msgs {
			for _, c := range m.Content {
				if c.Text == "<reminder>" {
					at = append(at, i)
				}
			}
		}
		return at
	}
	calls := b.model.Calls()
	if len(calls) != 4 {
		t.Fatalf("%d calls", len(calls))
	}
	for k, c := range calls {
		if got := reminders(c.Messages); !slices.Equal(got, []int{len(c.Messages) - 1}) {
			t.Errorf("call %d of %d messages: reminders at %v", k, len(c.Messages), got)
		}
	}
	if got := reminders(res.Messages); got != nil {
		t.Errorf("the transcript has reminders at %v", got)
	}
}

// Registrations on the shared services reach every runtime built with
// them.
func TestSharedServicesReachEveryRuntime(t *testing.T) {
	b := newBench(t, nil, nil)
	other := b.runtime(nil, nil)
	var seen []string
	b.hook(hook.TurnStart, "audit", hook.On(func(ctx context.Context, p *hook.TurnStartPayload) (*hook.Decision, error) {
		seen = append(seen, p.RuntimeID+"/"+p.SessionID)
		return nil, nil
	}))
	b.model.Script("one", script.Text("ok"))
	b.model.Script("two", script.Text("ok"))
	b.run("one", "hi")
	agent.NewExecutor().Execute(t.Context(), other, agent.Request{SessionID: "two", Input: "hi"})
	if len(seen) != 2 || !strings.HasSuffix(seen[1], "/two") {
		t.Errorf("hook saw %v", seen)
	}
}

// Protected paths are refused whatever the mode says.
func TestProtectedPathsInBypassMode(t *testing.T) {
	pol, _ := policy.New(policy.ModeBypass, policy.Rules{})
	b := newBench(t, pol, nil)
	b.model.Script("s", write("1", ".orca/settings.json", `{"permissions":{"allow":["Bash"]}}`), write("2", ".orca/hooks/x/hook.yaml", "name: x"), script.Text("ok"))
	b.run("s", "go")
	for i, id := range []string{"1", "2"} {
		if o := b.observation("s", i+1, id); !o.IsError {
			t.Errorf("write %s allowed: %+v", id, o)
		}
	}
	if _, err := os.Stat(filepath.Join(b.root, ".orca")); err == nil {
		t.Error(".orca was written")
	}
}

// Protection holds without any policy at all.
func TestProtectionWithoutPolicy(t *testing.T) {
	b := newBench(t, nil, nil)
	b.model.Script("s", write("1", ".orca/settings.local.json", `{}`),
		script.Call("Bash", map[string]string{"command": "mkdir -p .orca/hooks/evil && echo x > .orca/hooks/evil/hook.yaml"}),
		write("3", "ok.txt", "fine"), script.Text("ok"))
	b.run("s", "go")
	for i, id := range []string{"1", "call_2_1"} {
		if o := b.observation("s", i+1, id); !o.IsError || !strings.Contains(strings.ToLower(o.Content), "protected") {
			t.Errorf("call %s: %+v", id, o)
		}
	}
	if _, err := os.Stat(filepath.Join(b.root, ".orca")); err == nil {
		t.Error(".orca was written")
	}
	if b.file("ok.txt") != "fine" {
		t.Errorf("an ordinary write was refused: %q", b.file("ok.txt"))
	}
}

// Every payload the runtime sends satisfies its hook's published schema.
func TestSentPayloadsSatisfyTheirSchemas(t *testing.T) {
	pol, _ := policy.New(policy.ModeDefault, policy.Rules{})
	b := newBench(t, pol, nil)
	var mu sync.Mutex
	sent := map[hook.Name][]byte{}
	for _, n := range []hook.Name{hook.UserPromptSubmit, hook.TurnStart, hook.PreToolUse, hook.PermissionRequest, hook.PostToolUse, hook.PostToolUseFailure, hook.Stop} {
		b.hook(n, "record", hook.HandlerFunc(func(ctx context.Context, p hook.Payload) (*hook.Decision, error) {
			data, _ := json.Marshal(p)
			mu.Lock()
			sent[p.Hook()] = data
			mu.Unlock()
			return nil, nil
		}))
	}
	b.model.Script("s", script.Response{ToolCalls: []script.ToolCall{
		{ID: "1", Name: "Glob", Input: raw(map[string]string{"pattern": "*"})},
		{ID: "2", Name: "Read", Input: raw(map[string]string{"file_path": "missing"})},
		{ID: "3", Name: "Write", Input: raw(map[string]string{"file_path": "a", "content": "x"})},
	}}, script.Text("ok"))
	b.run("s", "go")
	if len(sent) != 7 {
		t.Fatalf("payloads sent for %d hooks: %v", len(sent), slices.Collect(func(yield func(hook.Name) bool) {
			for k := range sent {
				if !yield(k) {
					return
				}
			}
		}))
	}
	for n, data := range sent {
		doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader(hook.Schema(n)))
		c := jsonschema.NewCompiler()
		c.AddResource("s.json", doc)
		sch, err := c.Compile("s.json")
		if err != nil {
			t.Fatal(err)
		}
		v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err := sch.Validate(v); err != nil {
			t.Errorf("%s payload %s: %v", n, data, err)
		}
	}
}

// Random llm_request edits of the newest turn, call after call: every
// request a provider kept is, after the turn, what was sent at its call,
// and the transcript holds none of the edits (the turn's kept copy of the
// conversation is never written where an earlier request or the
// transcript can see it).
func TestLLMRequestRandomEditsOfTheNewestTurn(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for round := range 20 {
		b := newBench(t, nil, nil)
		os.WriteFile(filepath.Join(b.root, "a.txt"), []byte("A"), 0o644)
		b.svc.Middleware.RegisterLLMRequest("edit", func(ctx context.Context, r *llm.Request) (*llm.Request, error) {
			n := len(r.Messages)
			switch rng.IntN(5) {
			case 1:
				r.Messages[n-1].Content = append(r.Messages[n-1].Content, llm.TextBlock("<edit>"))
			case 2:
				r.Messages[n-1] = llm.Message{Role: llm.RoleUser, Content: append(slices.Clone(r.Messages[n-1].Content), llm.TextBlock("<edit>"))}
			case 3:
				r.Messages = append(r.Messages, llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("<edit>")}})
			case 4: // in place, in the request's own blocks
				if c := r.Messages[n-1].Content; len(c) > 0 {
					c[0].Text += "<edit>"
					c[0].Content += "<edit>"
				}
			}
			return r, nil
		})
		var sent [][]llm.Message // deep copies of what each call sent, at the call
		b.svc.Middleware.RegisterLLMExecution("snap", func(ctx context.Context, r *llm.Request, next middleware.LLMNext) (*llm.Response, error) {
			c := make([]llm.Message, len(r.Messages))
			for i, m := range r.Messages {
				c[i] = llm.Message{Role: m.Role, Content: slices.Clone(m.Content)}
			}
			sent = append(sent, c)
			return next(ctx, r)
		})
		var steps []script.Response
		for range 2 + rng.IntN(6) {
			steps = append(steps, script.Call("Read", map[string]string{"file_path": "a.txt"}))
		}
		b.model.Script("s", append(steps, script.Text("ok"))...)
		res := b.run("s", "go")
		if res.Answer != "ok" {
			t.Fatalf("round %d: %+v", round, res)
		}
		calls := b.model.Calls()
		if len(calls) != len(sent) {
			t.Fatalf("round %d: %d calls, %d sent", round, len(calls), len(sent))
		}
		for k, c := range calls {
			if !slices.EqualFunc(c.Messages, sent[k], llm.Message.Equal) {
				t.Fatalf("round %d: call %d changed after it was sent:\n%v\nwas\n%v", round, k, c.Messages, sent[k])
			}
			// An edit is the newest turn's of its own call only: none
			// reaches a later call's prefix.
			for i, m := range sent[k][:middleware.PrefixLen(sent[k])] {
				for _, b := range m.Content {
					if strings.Contains(b.Text+b.Content, "<edit>") {
						t.Fatalf("round %d: call %d's message %d has an earlier call's edit: %v", round, k, i, m)
					}
				}
			}
		}
		for _, m := range res.Messages {
			for _, c := range m.Content {
				if strings.Contains(c.Text+c.Content, "<edit>") {
					t.Fatalf("round %d: the transcript has an edit: %v", round, m)
				}
			}
		}
	}
}

// In permission mode dont-ask a hook that asks for a person's decision
// (request_permission, defer) is not put to anyone: the call is refused,
// and the approver is never asked.
func TestDontAskRefusesWhatAHookWouldAsk(t *testing.T) {
	for _, action := range []hook.Action{hook.RequestPermission, hook.Defer} {
		pol, err := policy.New(policy.ModeDontAsk, policy.Rules{Allow: []policy.Rule{{Tool: "Write"}}})
		if err != nil {
			t.Fatal(err)
		}
		asked := 0
		b := newBench(t, pol, policy.ApproverFunc(func(context.Context, policy.ApprovalRequest) (policy.Approval, error) {
			asked++
			return policy.Approval{Allow: true, Scope: policy.ScopeOnce}, nil
		}))
		b.hook(hook.PreToolUse, "ticket", hook.On(func(ctx context.Context, p *hook.PreToolUsePayload) (*hook.Decision, error) {
			return &hook.Decision{Action: action, Reason: "needs a ticket"}, nil
		}))
		b.model.Script("s", write("1", "a.txt", "x"), script.Text("ok"))
		b.run("s", "go")
		if o := b.observation("s", 1, "1"); !o.IsError || !strings.Contains(o.Content, "dont-ask asks no one") || b.file("a.txt") == "x" || asked != 0 {
			t.Errorf("%s: observation %+v, approver asked %d times", action, o, asked)
		}
	}
}
