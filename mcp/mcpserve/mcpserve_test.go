package mcpserve_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/mcp/mcpserve"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/sandbox"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/toolset"
)

func TestMain(m *testing.M) {
	// No Claude Code folder but the tests' own.
	os.Setenv("CLAUDE_CONFIG_DIR", "/nonexistent/orca-tests/claude")
	goleak.VerifyTestMain(m)
}

// rig is a session of a runtime with the default tools over a fresh
// workspace, served to an SDK client in-process.
type rig struct {
	t      *testing.T
	root   string
	model  *script.Client
	svc    *agent.Services
	ls     *session.LiveSession
	client *mcp.ClientSession
	done   chan error
	events chan event.Event
}

type config struct {
	policy  *policy.Policy
	opts    mcpserve.Options
	hooks   func(*agent.Services)
	sandbox *sandbox.Runner
}

func newRig(t *testing.T, c config) *rig {
	t.Helper()
	r, srv := newServer(t, c)
	ct, st2 := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { r.done <- srv.Run(ctx, st2) }()
	var err error
	r.client, err = mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.client.Close()
		if err := <-r.done; err != nil {
			t.Errorf("the server's Run: %v", err)
		}
		cancel()
	})
	return r
}

// newServer is a rig's session and its server, not yet serving.
func newServer(t *testing.T, c config) (*rig, *mcpserve.Server) {
	t.Helper()
	r := &rig{t: t, root: t.TempDir(), model: script.New(), svc: agent.NewServices(nil), done: make(chan error, 1), events: make(chan event.Event, 1024)}
	t.Cleanup(func() { r.svc.Close() })
	if c.hooks != nil {
		c.hooks(r.svc)
	}
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "served"}, agent.Collaborators{Client: r.model, Workspace: r.root, Services: r.svc, Policy: c.policy, Sandbox: c.sandbox})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	st := store.NewMemory()
	t.Cleanup(func() { st.Close() })
	r.ls, err = session.NewRouter(rt, st, nil).Open(t.Context(), "mcp", session.OpenOptions{OnEvent: func(e event.Event) {
		select {
		case r.events <- e:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.ls.Close(context.Background()) })
	srv, err := mcpserve.New(r.ls, c.opts)
	if err != nil {
		t.Fatal(err)
	}
	return r, srv
}

func (r *rig) call(name string, args any) *mcp.CallToolResult {
	r.t.Helper()
	res, err := r.client.CallTool(r.t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		r.t.Fatalf("%s: %v", name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func (r *rig) file(rel string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(r.root, rel))
	return string(b), err == nil
}

// The client sees the runtime's tools as the model does — names,
// descriptions, input schemas — with their traits as annotations.
func TestListTools(t *testing.T) {
	r := newRig(t, config{opts: mcpserve.Options{Agent: true}})
	res, err := r.client.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	var names []string
	for _, tl := range res.Tools {
		byName[tl.Name] = tl
		names = append(names, tl.Name)
	}
	want := append(r.ls.Runtime().Tools().Names(), mcpserve.AgentTool)
	slices.Sort(names) // the SDK lists tools by name
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	for _, def := range r.ls.Runtime().Tools().Definitions() {
		got := byName[def.Name]
		var a, b any
		json.Unmarshal(def.InputSchema, &a)
		sb, _ := json.Marshal(got.InputSchema)
		json.Unmarshal(sb, &b)
		if got.Description != def.Description || !jsonEqual(a, b) {
			t.Errorf("%s: description %q, schema %s; want %q, %s", def.Name, got.Description, sb, def.Description, def.InputSchema)
		}
	}
	for name, want := range map[string]struct{ readOnly, destructive, idempotent, openWorld bool }{
		"Read": {readOnly: true, idempotent: true}, "Grep": {readOnly: true, idempotent: true},
		"Write": {destructive: true, idempotent: true, openWorld: true}, "Bash": {destructive: true, openWorld: true}, mcpserve.AgentTool: {destructive: true, openWorld: true},
		"WebFetch": {readOnly: true, idempotent: true, openWorld: true},
	} {
		a := byName[name].Annotations
		if a == nil || a.ReadOnlyHint != want.readOnly || a.IdempotentHint != want.idempotent || (a.DestructiveHint != nil && *a.DestructiveHint) != want.destructive ||
			(a.OpenWorldHint == nil || *a.OpenWorldHint) != want.openWorld {
			t.Errorf("%s: annotations %+v, want %+v", name, a, want)
		}
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// Write, then Read: the file is on disk, and the client reads it back
// through the same tools; the session's feed has the calls' events.
func TestWriteAndRead(t *testing.T) {
	r := newRig(t, config{})
	res := r.call("Write", map[string]string{"file_path": "notes/a.txt", "content": "from an MCP client\n"})
	if res.IsError {
		t.Fatalf("Write: %s", text(res))
	}
	if got, _ := r.file("notes/a.txt"); got != "from an MCP client\n" {
		t.Errorf("notes/a.txt = %q", got)
	}
	res = r.call("Read", map[string]string{"file_path": "notes/a.txt"})
	if res.IsError || !strings.Contains(text(res), "from an MCP client") {
		t.Errorf("Read: %v %s", res.IsError, text(res))
	}
	res = r.call("Read", map[string]any{"file_path": 7})
	if !res.IsError || !strings.Contains(text(res), "invalid tool input for Read") {
		t.Errorf("invalid input: %v %s", res.IsError, text(res))
	}
	var completed int
	for len(r.events) > 0 {
		if e := <-r.events; e.Name == event.ToolExecCompleted && e.SessionID == "mcp" {
			completed++
		}
	}
	if completed != 2 {
		t.Errorf("%d tool_exec_completed events on the session's feed, want 2", completed)
	}
}

// What the policy denies, protection refuses or a hook blocks comes back
// as an error result saying why, and nothing changes on disk; what it
// would ask about is refused too, with the rule that would allow it.
func TestRefusedCalls(t *testing.T) {
	pol, err := policy.New(policy.ModeAcceptEdits, policy.Rules{Deny: []policy.Rule{{Tool: "Write", Pattern: "secrets/**"}}})
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, config{policy: pol, hooks: func(svc *agent.Services) {
		svc.Hooks.Register(hook.PreToolUse, "guard", hook.On(func(ctx context.Context, p *hook.PreToolUsePayload) (*hook.Decision, error) {
			if slices.Contains(p.Writes, "hooked.txt") {
				return &hook.Decision{Action: hook.Block, Reason: "hooked.txt is off limits"}, nil
			}
			return nil, nil
		}))
	}})
	for _, c := range []struct {
		name string
		tool string
		args map[string]string
		want string
		path string
	}{
		{"deny rule", "Write", map[string]string{"file_path": "secrets/k", "content": "x"}, "secrets/**", "secrets/k"},
		{"protected", "Write", map[string]string{"file_path": ".orca/settings.json", "content": `{"permissions":{"allow":["Bash"]}}`}, ".orca", ".orca/settings.json"},
		{"hook", "Write", map[string]string{"file_path": "hooked.txt", "content": "x"}, "Blocked by hook guard: hooked.txt is off limits", "hooked.txt"},
		{"ask", "Bash", map[string]string{"command": "touch asked.txt"}, "--allow", "asked.txt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := r.call(c.tool, c.args)
			if !res.IsError || !strings.Contains(text(res), c.want) {
				t.Errorf("%v %s, want an error saying %q", res.IsError, text(res), c.want)
			}
			if _, ok := r.file(c.path); ok {
				t.Errorf("%s exists", c.path)
			}
		})
	}
}

// Options.Tools serves only the tools it names; a name the runtime lacks
// is an error.
func TestToolsOption(t *testing.T) {
	r := newRig(t, config{opts: mcpserve.Options{Tools: []string{"Read", "Glob", "Read"}}})
	names := r.toolNames()
	if want := []string{"Glob", "Read"}; !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
	if res, err := r.client.CallTool(t.Context(), &mcp.CallToolParams{Name: "Write", Arguments: map[string]string{"file_path": "a", "content": "x"}}); err == nil && !res.IsError {
		t.Errorf("Write, not served, ran: %s", text(res))
	}
	if _, err := mcpserve.New(r.ls, mcpserve.Options{Tools: []string{"Nope"}}); err == nil || !strings.Contains(err.Error(), `no tool "Nope"`) {
		t.Errorf("unknown tool: %v", err)
	}
}

// The agent as one tool: each call is a turn of the session, so that the
// second turn sees the first; its answer is the result.
func TestAgentTool(t *testing.T) {
	r := newRig(t, config{opts: mcpserve.Options{Agent: true}})
	r.model.Script("mcp",
		script.Call("Write", map[string]string{"file_path": "plan.md", "content": "step 1\n"}),
		script.Text("Wrote plan.md."),
		script.Text("It has one step."))
	res := r.call(mcpserve.AgentTool, map[string]string{"prompt": "write a plan"})
	if res.IsError || text(res) != "Wrote plan.md." {
		t.Fatalf("first turn: %v %s", res.IsError, text(res))
	}
	if got, _ := r.file("plan.md"); got != "step 1\n" {
		t.Errorf("plan.md = %q", got)
	}
	res = r.call(mcpserve.AgentTool, map[string]string{"prompt": "how many steps?"})
	if res.IsError || text(res) != "It has one step." {
		t.Fatalf("second turn: %v %s", res.IsError, text(res))
	}
	calls := r.model.CallsTo("mcp")
	if last := calls[len(calls)-1]; len(last.Messages) != 5 {
		t.Errorf("the second turn's prompt has %d messages, want the first turn's 4 and its own", len(last.Messages))
	}
	res = r.call(mcpserve.AgentTool, map[string]string{"prompt": "  "})
	if !res.IsError || !strings.Contains(text(res), `needs {"prompt"`) {
		t.Errorf("empty prompt: %v %s", res.IsError, text(res))
	}
	// The script is used up: the turn fails, and says so.
	res = r.call(mcpserve.AgentTool, map[string]string{"prompt": "more"})
	if !res.IsError || !strings.Contains(text(res), "The agent's turn ended failed") {
		t.Errorf("failed turn: %v %s", res.IsError, text(res))
	}
}

// A tool a deny rule names outright is not served, as the agent is not
// offered it; a deny rule with a pattern leaves it served.
func TestToolsDeniedOutrightAreNotServed(t *testing.T) {
	rules, err := policy.ParseRules(nil, []string{"Bash", "Agent", "Write(secrets/**)"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.ModeBypass, rules)
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, config{policy: pol})
	names := r.toolNames()
	if slices.Contains(names, "Bash") || slices.Contains(names, "Task") || !slices.Contains(names, "Write") || !slices.Contains(names, "Read") {
		t.Errorf("served %v", names)
	}
}

// toolNames lists the names of the tools the client is served.
func (r *rig) toolNames() []string {
	r.t.Helper()
	res, err := r.client.ListTools(r.t.Context(), nil)
	if err != nil {
		r.t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}
