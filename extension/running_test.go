package extension_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/extension"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/internal/proctest"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/toolset"
)

// answerLoop is the heart of a handler script: for each request line it
// sets $id and $line, runs body, and answers {"id": $id} unless body
// answered itself (and set answered=1).
func answerLoop(body string) string {
	return `while IFS= read -r line; do
  id=${line#'{"id":'}; id=${id%%,*}
  answered=
  ` + body + `
  [ -n "$answered" ] || printf '{"id":%s}\n' "$id"
done`
}

// extNode is the real runtime around a scripted model, with the
// extensions of its workspace loaded and registered on its services.
type extNode struct {
	t      *testing.T
	ws     string
	trust  *config.TrustStore
	svc    *agent.Services
	model  *script.Client
	rt     *agent.Runtime
	loaded *extension.Loaded
	mu     sync.Mutex
	events []event.Event
	log    syncBuffer // the bus's warnings
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newExtNode(t *testing.T) *extNode {
	n := &extNode{t: t, ws: t.TempDir(), trust: config.NewTrustStore(t.TempDir()), model: script.New()}
	n.svc = agent.NewServices(slog.New(slog.NewTextHandler(&n.log, nil)))
	t.Cleanup(func() { n.svc.Close() })
	return n
}

func (n *extNode) grant(grants ...string) {
	n.t.Helper()
	for _, g := range grants {
		if _, err := n.trust.Grant(n.ws, g); err != nil {
			n.t.Fatal(err)
		}
	}
}

// start loads and registers the extensions and builds the runtime.
func (n *extNode) start(resources map[string]string) []*extension.Extension {
	n.t.Helper()
	exts, err := extension.LoadExtensions(extension.ExtensionOptions{Workspace: n.ws, Trust: n.trust, Resources: resources})
	if err != nil {
		n.t.Fatal(err)
	}
	n.loaded, err = extension.RegisterExtensions(n.svc, exts)
	if err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() { n.loaded.Close() })
	n.rt, err = agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "ext"}, agent.Collaborators{Client: n.model, Workspace: n.ws, Services: n.svc})
	if err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() { n.rt.Close() })
	return exts
}

func (n *extNode) run(session, input string) *agent.Result {
	n.t.Helper()
	res, _ := agent.NewExecutor().Execute(n.t.Context(), n.rt, agent.Request{SessionID: session, Input: input, OnEvent: func(e event.Event) {
		n.mu.Lock()
		n.events = append(n.events, e)
		n.mu.Unlock()
	}})
	if err := n.svc.Bus.Flush(n.t.Context()); err != nil {
		n.t.Fatal(err)
	}
	return res
}

func (n *extNode) named(name event.Name) []event.Event {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []event.Event
	for _, e := range n.events {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

func (n *extNode) read(rel string) string {
	b, err := os.ReadFile(filepath.Join(n.ws, filepath.FromSlash(rel)))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func (n *extNode) publish(name event.Name) {
	n.svc.Bus.Publish(event.Event{Name: name, Time: time.Now(), Scope: scope.Scope{RuntimeID: "rt", SessionID: "s"}})
}

func (n *extNode) flush() {
	n.t.Helper()
	if err := n.svc.Bus.Flush(n.t.Context()); err != nil {
		n.t.Fatal(err)
	}
}

// An events extension receives the events it names, in their flat JSON
// form, in its folder, with a scrubbed environment.
func TestEventsExtensionReceivesItsEvents(t *testing.T) {
	t.Setenv("ORCA_TEST_SECRET", "do not leak")
	n := newExtNode(t)
	addExtension(t, n.ws, "metrics", manifest("metrics", "tool_exec_started, tool_exec_completed, turn_completed", "events"),
		`pwd > cwd.txt
env > env.txt
`+answerLoop(`name=${line#*'"event":{"name":"'}; name=${name%%'"'*}
  echo "$name" >> events.log
  printf '%s\n' "$line" >> requests.log`))
	n.grant("hook:metrics")
	exts := n.start(nil)
	if len(exts) != 1 || !exts[0].Trusted {
		t.Fatalf("%+v", exts)
	}
	if exists(filepath.Join(n.ws, ".orca/hooks/metrics/env.txt")) {
		t.Fatal("the handler started before any event")
	}
	n.model.Script("s", call("w", "Write", map[string]string{"file_path": "a.txt", "content": "x"}), script.Text("done"))
	if res := n.run("s", "write a.txt"); res.StopReason != agent.StopAnswered {
		t.Fatalf("turn: %+v", res)
	}

	got := strings.Fields(n.read(".orca/hooks/metrics/events.log"))
	slices.Sort(got)
	if want := []string{"tool_exec_completed", "tool_exec_started", "turn_completed"}; !slices.Equal(got, want) {
		t.Errorf("events.log: %q, want %q", got, want)
	}
	var ids []int
	for _, line := range strings.Split(strings.TrimSpace(n.read(".orca/hooks/metrics/requests.log")), "\n") {
		var req struct {
			ID    int
			Kind  string
			Event map[string]any
		}
		if err := json.Unmarshal([]byte(line), &req); err != nil || req.Kind != "event" {
			t.Fatalf("request %q: %v", line, err)
		}
		ids = append(ids, req.ID)
		if req.Event["name"] == "tool_exec_completed" && (req.Event["tool_name"] != "Write" || req.Event["session_id"] != "s") {
			t.Errorf("the event is not flat: %s", line)
		}
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []int{1, 2, 3}) {
		t.Errorf("request ids %v", ids)
	}
	if got := strings.TrimSpace(n.read(".orca/hooks/metrics/cwd.txt")); got != filepath.Join(realPath(t, n.ws), ".orca/hooks/metrics") {
		t.Errorf("working directory %s", got)
	}
	env := n.read(".orca/hooks/metrics/env.txt")
	for _, want := range []string{"ORCA_EXTENSION_NAME=metrics\n", "ORCA_EXTENSION_PORTS=events\n", "PATH="} {
		if !strings.Contains(env, want) {
			t.Errorf("the environment lacks %q:\n%s", want, env)
		}
	}
	if strings.Contains(env, "ORCA_TEST_SECRET") || strings.Contains(env, "ORCA_RESOURCE_") {
		t.Errorf("the environment is not scrubbed:\n%s", env)
	}
	if st := n.svc.Bus.Stats(); st.Failed != 0 || st.Panicked != 0 {
		t.Errorf("bus: %+v", st)
	}
}

// A hooks extension blocks a Bash call: the command does not run and the
// model sees the reason.
func TestHooksExtensionBlocksBash(t *testing.T) {
	n := newExtNode(t)
	addExtension(t, n.ws, "guard", manifest("guard", "PRE_TOOL_USE", "hooks", "priority: 7", "timeout: 5s"),
		answerLoop(`case "$line" in
  *'"tool_name":"Bash"'*) printf '{"id":%s,"decision":{"action":"block","reason":"guard: no shell in this repository"}}\n' "$id"; answered=1 ;;
  esac`))
	n.grant("hook:guard")
	n.start(nil)
	if got := n.svc.Hooks.Handlers(hook.PreToolUse); !slices.Equal(got, []string{"ext:guard"}) {
		t.Fatalf("PRE_TOOL_USE handlers %q", got)
	}
	n.model.Script("s",
		call("b", "Bash", map[string]string{"command": "touch ran.txt"}),
		call("w", "Write", map[string]string{"file_path": "w.txt", "content": "ok"}),
		script.Text("done"))
	n.run("s", "go")
	if exists(filepath.Join(n.ws, "ran.txt")) {
		t.Error("the blocked command ran")
	}
	o := observation(t, n.model, "s", 1, "b")
	if !o.IsError || !strings.Contains(o.Content, "guard: no shell in this repository") {
		t.Errorf("observation: %+v", o)
	}
	if n.read("w.txt") != "ok" {
		t.Error("the Write call the guard allowed did not run")
	}
	blocked := n.named(event.ToolBlocked)
	if len(blocked) != 1 || !strings.Contains(blocked[0].Data.(*event.ToolBlockedData).By, "ext:guard") {
		t.Errorf("tool_blocked: %+v", blocked)
	}
	if f := n.named(event.HookFailed); len(f) != 0 {
		t.Errorf("hook_failed: %+v", f[0].Data)
	}
}

// An extension without a grant is returned, untrusted, and never started.
func TestUntrustedExtensionNeverStarts(t *testing.T) {
	n := newExtNode(t)
	addExtension(t, n.ws, "spy", manifest("spy", "PRE_TOOL_USE, turn_completed", "hooks, events"), "touch started\n"+answerLoop(""))
	n.grant("hook:other") // a grant of another extension does not count
	other := t.TempDir()
	if _, err := n.trust.Grant(other, "hook:spy"); err != nil { // nor one in another workspace
		t.Fatal(err)
	}
	exts := n.start(nil)
	if len(exts) != 1 || exts[0].Trusted || !strings.Contains(exts[0].Reason, "hook:spy") || len(n.loaded.Extensions()) != 0 {
		t.Fatalf("%+v", exts[0])
	}
	n.model.Script("s", call("w", "Write", map[string]string{"file_path": "a.txt", "content": "x"}), script.Text("done"))
	n.run("s", "go")
	if exists(filepath.Join(n.ws, ".orca/hooks/spy/started")) {
		t.Error("an untrusted extension ran")
	}
	if n.svc.Hooks.Has(hook.PreToolUse) {
		t.Error("an untrusted extension was registered")
	}
}

// A crashing, a garbage-speaking and a silent handler fail their
// requests, isolated and counted; each is started again for the next
// request, and a killed one leaves no process behind.
func TestHandlerFailuresAreIsolated(t *testing.T) {
	n := newExtNode(t)
	addExtension(t, n.ws, "crash", manifest("crash", "tool_exec_failed", "events"), `echo start >> starts; echo "crash: out of luck" >&2; exit 3`)
	addExtension(t, n.ws, "garbage", manifest("garbage", "tool_exec_failed", "events"), `echo start >> starts
while read -r line; do echo "hello there"; done`)
	addExtension(t, n.ws, "silent", manifest("silent", "tool_exec_failed", "events", "timeout: 300ms"), `echo $$ >> pids
while read -r line; do sleep 30 & echo $! >> pids; wait; done`)
	n.grant("hook:crash", "hook:garbage", "hook:silent")
	n.start(nil)

	sub, err := n.svc.Bus.Subscribe("test", event.ToolExecFailed, func(event.Event) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	for range 2 {
		n.publish(event.ToolExecFailed)
		n.flush()
	}
	if st := n.svc.Bus.Stats(); st.Failed != 6 || st.Delivered != 2 || st.Panicked != 0 {
		t.Errorf("bus stats %+v: want 6 failures (3 extensions × 2 events)", st)
	}
	for _, x := range []string{"crash", "garbage"} {
		if got := n.read(".orca/hooks/" + x + "/starts"); got != "start\nstart\n" {
			t.Errorf("%s was started %q, want twice", x, got)
		}
	}
	// The bus's warnings say what went wrong, in the handler's words too.
	for _, want := range []string{
		`extension crash: tool_exec_failed: the handler stopped without answering: it exited with status 3; stderr: crash: out of luck`,
		`extension garbage: tool_exec_failed: the handler answered garbage and was killed: \"hello there\" is not an answer`,
		`extension silent: tool_exec_failed: no answer within 300ms; the handler was killed, with the processes it started`,
	} {
		if !strings.Contains(n.log.String(), want) {
			t.Errorf("the log lacks %s:\n%s", want, n.log.String())
		}
	}
	lines := strings.Fields(n.read(".orca/hooks/silent/pids"))
	if len(lines) != 4 {
		t.Fatalf("silent pids %q", lines)
	}
	var ps []int
	for _, l := range lines {
		p, err := strconv.Atoi(l)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	proctest.RequireGone(t, ps...)
}

// observation returns what the model saw of tool use id in call i.
func observation(t *testing.T, model *script.Client, session string, i int, id string) llm.Block {
	t.Helper()
	calls := model.CallsTo(session)
	if len(calls) <= i {
		t.Fatalf("only %d model calls", len(calls))
	}
	for _, o := range calls[i].Observations() {
		if o.ToolUseID == id {
			return o
		}
	}
	t.Fatalf("call %d carries no observation of %s", i, id)
	return llm.Block{}
}

// A hook handler that fails is a hook failure: reported as hook_failed,
// and the call goes on.
func TestHookHandlerFailureIsAHookFailure(t *testing.T) {
	n := newExtNode(t)
	addExtension(t, n.ws, "noisy", manifest("noisy", "PRE_TOOL_USE", "hooks"), answerLoop(`printf 'not json\n'; answered=1`))
	addExtension(t, n.ws, "rude", manifest("rude", "PRE_TOOL_USE", "hooks"), answerLoop(`printf '{"id":%s,"decision":{"action":"deny"}}\n' "$id"; answered=1`))
	n.grant("hook:noisy", "hook:rude")
	n.start(nil)
	n.model.Script("s", call("w", "Write", map[string]string{"file_path": "a.txt", "content": "x"}), script.Text("done"))
	n.run("s", "go")
	if n.read("a.txt") != "x" {
		t.Error("the call did not go on")
	}
	byHandler := map[string]*event.HookFailedData{}
	for _, e := range n.named(event.HookFailed) {
		d := e.Data.(*event.HookFailedData)
		byHandler[d.Handler] = d
	}
	if d := byHandler["ext:noisy"]; d == nil || !strings.Contains(d.Error, `extension noisy: the handler answered garbage and was killed: "not json" is not an answer`) {
		t.Errorf("noisy: %+v", d)
	}
	if d := byHandler["ext:rude"]; d == nil || !d.Violation {
		t.Errorf("rude (deny is not a PRE_TOOL_USE action): %+v", d)
	}
}

// Close unregisters in reverse order, lets each handler see EOF and exit,
// and leaves no process behind.
func TestCloseUnregistersInReverseOrder(t *testing.T) {
	n := newExtNode(t)
	stop := func(name string) string {
		return `echo $$ > pid
sleep 30 & echo $! > child.pid
` + answerLoop("") + `
echo ` + name + ` >> ../../../stops.log
kill $(cat child.pid)`
	}
	addExtension(t, n.ws, "first", manifest("first", "turn_completed, PRE_TOOL_USE", "events, hooks"), stop("first"))
	addExtension(t, n.ws, "second", manifest("second", "turn_completed", "events"), stop("second"))
	addExtension(t, n.ws, "stubborn", manifest("stubborn", "turn_completed", "events"), `echo $$ > pid
trap '' TERM
`+answerLoop("")+`
sleep 30`)
	n.grant("hook:first", "hook:second", "hook:stubborn")
	n.start(nil)
	n.publish(event.TurnCompleted)
	n.flush()
	var ps []int
	for _, x := range []string{"first", "second", "stubborn"} {
		ps = append(ps, proctest.PIDs(t, filepath.Join(n.ws, ".orca/hooks", x), "pid")...)
	}
	ps = append(ps, proctest.PIDs(t, filepath.Join(n.ws, ".orca/hooks/first"), "child.pid")...)
	if err := n.loaded.Close(); err != nil {
		t.Fatal(err)
	}
	if got := n.read("stops.log"); got != "second\nfirst\n" {
		t.Errorf("stops.log = %q, want second then first", got)
	}
	for _, p := range ps {
		if proctest.Alive(p) {
			t.Errorf("process %d outlived Close", p)
		}
	}
	if n.svc.Hooks.Has(hook.PreToolUse) {
		t.Error("the hook handler is still registered")
	}
	// The subscription names are free again.
	for _, x := range []string{"first", "second", "stubborn"} {
		s, err := n.svc.Bus.Subscribe(extension.SubscriptionName(x), event.TurnCompleted, func(event.Event) error { return nil })
		if err != nil {
			t.Errorf("%s is still subscribed: %v", x, err)
			continue
		}
		s.Unsubscribe()
	}
	// A second Close does nothing.
	n.loaded.Close()
}

// A name already taken on the hook registry or the bus fails the
// registration, and nothing stays registered or ran.
func TestRegistrationCollisions(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		take       func(svc *agent.Services)
	}{
		{"hook", `.orca/hooks/zeta/hook.yaml: name: ext:zeta is already registered on STOP`, func(svc *agent.Services) {
			svc.Hooks.Register(hook.Stop, "ext:zeta", hook.HandlerFunc(func(context.Context, hook.Payload) (*hook.Decision, error) { return nil, nil }))
		}},
		{"bus", `.orca/hooks/zeta/hook.yaml: name: event: a subscription named "ext:zeta" already exists`, func(svc *agent.Services) {
			svc.Bus.Subscribe("ext:zeta", event.TurnCompleted, func(event.Event) error { return nil })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newExtNode(t)
			addExtension(t, n.ws, "alpha", manifest("alpha", "PRE_TOOL_USE, turn_completed", "hooks, events"), "touch started\n"+answerLoop(""))
			addExtension(t, n.ws, "zeta", manifest("zeta", "turn_completed, STOP", "events, hooks"), "touch started\n"+answerLoop(""))
			n.grant("hook:alpha", "hook:zeta")
			tc.take(n.svc)
			exts, err := extension.LoadExtensions(extension.ExtensionOptions{Workspace: n.ws, Trust: n.trust})
			if err != nil {
				t.Fatal(err)
			}
			l, err := extension.RegisterExtensions(n.svc, exts)
			if err == nil || l != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %s", err, tc.want)
			}
			if n.svc.Hooks.Has(hook.PreToolUse) {
				t.Error("alpha's hook handler stayed registered")
			}
			n.publish(event.TurnCompleted)
			n.flush()
			for _, x := range []string{"alpha", "zeta"} {
				if exists(filepath.Join(n.ws, ".orca/hooks", x, "started")) {
					t.Errorf("%s ran", x)
				}
			}
			// alpha's subscription was removed: its name is free.
			s, err := n.svc.Bus.Subscribe(extension.SubscriptionName("alpha"), event.TurnCompleted, func(event.Event) error { return nil })
			if err != nil {
				t.Error(err)
			} else {
				s.Unsubscribe()
			}
		})
	}
}

// A resource reaches the handler only when granted; a port grant narrows
// what the handler gets.
func TestResourcesAndPortsAreGranted(t *testing.T) {
	n := newExtNode(t)
	addExtension(t, n.ws, "res", manifest("res", "turn_completed, STOP", "events, hooks", "resource_keys: [METRICS_URL, API_TOKEN, api.key]"),
		"env > env.txt\n"+answerLoop(""))
	n.grant("hook:res:events", "hook:res:resource:METRICS_URL", "hook:res:resource:api.key")
	exts := n.start(map[string]string{"METRICS_URL": "https://m.example/x?a=1", "API_TOKEN": "s3cret", "api.key": "k"})
	x := exts[0]
	if !x.Trusted || !slices.Equal(x.Ports, []extension.Capability{extension.CapabilityEvents}) ||
		!slices.Equal(x.Resources, []string{"METRICS_URL", "api.key"}) ||
		!slices.Equal(x.Withheld, []string{"hook:res:hooks", "hook:res:resource:API_TOKEN"}) {
		t.Fatalf("%+v", x)
	}
	if shown := fmt.Sprintf("%+v %v", x, *x); strings.Contains(shown, "m.example") {
		t.Errorf("printing the extension shows a resource value: %s", shown)
	}
	if n.svc.Hooks.Has(hook.Stop) {
		t.Error("the hooks port was not granted, yet the STOP handler is registered")
	}
	n.publish(event.TurnCompleted)
	n.flush()
	env := n.read(".orca/hooks/res/env.txt")
	for _, want := range []string{"ORCA_RESOURCE_METRICS_URL=https://m.example/x?a=1\n", "ORCA_RESOURCE_api_key=k\n", "ORCA_EXTENSION_PORTS=events\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %q:\n%s", want, env)
		}
	}
	if strings.Contains(env, "s3cret") || strings.Contains(env, "API_TOKEN") {
		t.Errorf("an ungranted resource reached the handler:\n%s", env)
	}
}

// A handler that reports an error fails the request and keeps serving.
func TestHandlerReportedError(t *testing.T) {
	n := newExtNode(t)
	addExtension(t, n.ws, "picky", manifest("picky", "turn_completed", "events"), `echo start >> starts
`+answerLoop(`printf '{"id":%s,"error":"the metrics server is down"}\n' "$id"; answered=1`))
	n.grant("hook:picky")
	n.start(nil)
	for range 3 {
		n.publish(event.TurnCompleted)
	}
	n.flush()
	if st := n.svc.Bus.Stats(); st.Failed != 3 {
		t.Errorf("bus stats %+v", st)
	}
	if got := n.read(".orca/hooks/picky/starts"); got != "start\n" {
		t.Errorf("started %q, want once", got)
	}
	if !strings.Contains(n.log.String(), "extension picky: turn_completed: the handler reported: the metrics server is down") {
		t.Errorf("log:\n%s", n.log.String())
	}
}

// A hook handler's updates rewrite the call, which is validated again.
func TestHooksExtensionRewritesArguments(t *testing.T) {
	n := newExtNode(t)
	addExtension(t, n.ws, "redirect", manifest("redirect", "PRE_TOOL_USE", "hooks"), answerLoop(`case "$line" in
  *'"tool_name":"Write"'*) printf '{"id":%s,"decision":{"updates":{"arguments":{"file_path":"drafts/b.txt","content":"rewritten"}},"reason":"drafts first"}}\n' "$id"; answered=1 ;;
  esac`))
	n.grant("hook:redirect")
	n.start(nil)
	n.model.Script("s", call("w", "Write", map[string]string{"file_path": "a.txt", "content": "original"}), script.Text("done"))
	n.run("s", "go")
	if got := n.read("drafts/b.txt"); got != "rewritten" {
		t.Errorf("drafts/b.txt = %q", got)
	}
	if exists(filepath.Join(n.ws, "a.txt")) {
		t.Error("the original call ran")
	}
}

// A hook handler that does not answer in time is killed; the hook
// failure says so and the call goes on.
func TestHookHandlerTimeout(t *testing.T) {
	n := newExtNode(t)
	addExtension(t, n.ws, "slow", manifest("slow", "PRE_TOOL_USE", "hooks", "timeout: 200ms"), `echo $$ > pid
while read -r line; do sleep 30; done`)
	n.grant("hook:slow")
	n.start(nil)
	n.model.Script("s", call("w", "Write", map[string]string{"file_path": "a.txt", "content": "x"}), script.Text("done"))
	n.run("s", "go")
	f := n.named(event.HookFailed)
	if len(f) != 1 || !strings.Contains(f[0].Data.(*event.HookFailedData).Error, "extension slow: no answer within 200ms; the handler was killed") {
		t.Errorf("hook_failed: %+v", f)
	}
	if n.read("a.txt") != "x" {
		t.Error("the call did not go on")
	}
	proctest.RequireGone(t, proctest.PIDs(t, filepath.Join(n.ws, ".orca/hooks/slow"), "pid")...)
}
