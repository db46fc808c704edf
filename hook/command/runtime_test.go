package command_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/internal/proctest"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/toolset"
)

// node is the real runtime — factory, default tools, a local workspace,
// process-wide services — around a scripted model, with the settings of
// its workspace loaded and their command hooks registered.
type node struct {
	t      *testing.T
	ws     string
	cfgDir string
	svc    *agent.Services
	model  *script.Client
	rt     *agent.Runtime
	mu     sync.Mutex
	events []event.Event
}

// newNode returns a node over a new workspace; files are written into it
// (paths relative to the workspace; a path under hooks/ becomes an
// executable script) before the settings are loaded.
func newNode(t *testing.T, opts config.LoadOptions, files map[string]string) (*node, []config.Warning) {
	t.Helper()
	n := &node{t: t, ws: t.TempDir(), cfgDir: t.TempDir(), svc: agent.NewServices(nil), model: script.New()}
	t.Cleanup(func() { n.svc.Close() })
	for rel, body := range files {
		if strings.HasPrefix(rel, ".orca/hooks/") {
			writeScript(t, n.ws, rel, body)
		} else {
			writeFile(t, n.ws, rel, body)
		}
	}
	opts.Workspace = n.ws
	if opts.ConfigDir == "" {
		opts.ConfigDir = n.cfgDir
	}
	s, warns, err := config.Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	unregister, err := s.RegisterHooks(n.svc.Hooks, n.ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unregister)
	n.rt, err = agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "ext"}, agent.Collaborators{Client: n.model, Workspace: n.ws, Services: n.svc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.rt.Close() })
	return n, warns
}

func (n *node) run(session, input string) *agent.Result {
	n.t.Helper()
	res, _ := agent.NewExecutor().Execute(n.t.Context(), n.rt, agent.Request{SessionID: session, Input: input, OnEvent: func(e event.Event) {
		n.mu.Lock()
		n.events = append(n.events, e)
		n.mu.Unlock()
	}})
	return res
}

func (n *node) file(rel string) string {
	b, err := os.ReadFile(filepath.Join(n.ws, rel))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// observation returns what the model saw of tool use id in call i.
func (n *node) observation(session string, i int, id string) llm.Block {
	n.t.Helper()
	calls := n.model.CallsTo(session)
	if len(calls) <= i {
		n.t.Fatalf("only %d model calls", len(calls))
	}
	for _, o := range calls[i].Observations() {
		if o.ToolUseID == id {
			return o
		}
	}
	n.t.Fatalf("call %d carries no observation of %s", i, id)
	return llm.Block{}
}

func (n *node) named(name event.Name) []event.Event {
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

func call(id, tool string, input any) script.Response {
	b, _ := json.Marshal(input)
	return script.Response{ToolCalls: []script.ToolCall{{ID: id, Name: tool, Input: b}}}
}

// settings writes a .orca/settings.json with one hook per event.
func settings(hooks ...string) string {
	return `{"hooks": {` + strings.Join(hooks, ",\n") + `}}`
}

func hookOf(event, matcher, cmdline string, timeout float64) string {
	t := ""
	if timeout > 0 {
		b, _ := json.Marshal(timeout)
		t = `, "timeout": ` + string(b)
	}
	return `"` + event + `": [{"matcher": "` + matcher + `", "hooks": [{"type": "command", "command": "` + cmdline + `"` + t + `}]}]`
}

// Exit code 2 blocks the call; stderr is what the model sees.
func TestExitTwoBlocksAndTheModelSeesStderr(t *testing.T) {
	n, _ := newNode(t, config.LoadOptions{TrustOverride: true}, map[string]string{
		".orca/settings.json": settings(hookOf("PreToolUse", "Bash", "./.orca/hooks/guard.sh", 0)),
		".orca/hooks/guard.sh": `input=$(cat)
case "$input" in
  *'"rm '*) echo "rm is not allowed in this repository; move files to trash/ instead" >&2; exit 2 ;;
esac
exit 0`,
		"keep/a.txt": "keep me",
	})
	n.model.Script("s",
		call("rm", "Bash", map[string]string{"command": "rm -rf keep"}),
		call("ls", "Bash", map[string]string{"command": "ls keep"}),
		script.Text("ok"))
	if res := n.run("s", "clean up"); res.StopReason != agent.StopAnswered {
		t.Fatalf("turn: %+v", res)
	}
	o := n.observation("s", 1, "rm")
	if !o.IsError || !strings.Contains(o.Content, "rm is not allowed in this repository; move files to trash/ instead") {
		t.Errorf("observation of the blocked call: %+v", o)
	}
	if n.file("keep/a.txt") != "keep me" {
		t.Error("the blocked command ran")
	}
	if o := n.observation("s", 2, "ls"); o.IsError || !strings.Contains(o.Content, "a.txt") {
		t.Errorf("the allowed call: %+v", o)
	}
	blocked := n.named(event.ToolBlocked)
	if len(blocked) != 1 || !strings.Contains(blocked[0].Data.(*event.ToolBlockedData).By, ".orca/settings.json#PreToolUse[0].hooks[0]") {
		t.Errorf("tool_blocked: %+v", blocked)
	}
}

// updatedInput rewrites the call: the file on disk is the rewritten one.
func TestUpdatedInputRewritesTheCall(t *testing.T) {
	n, _ := newNode(t, config.LoadOptions{TrustOverride: true}, map[string]string{
		".orca/settings.json": settings(hookOf("PreToolUse", "Write|Edit", "./.orca/hooks/redirect.sh", 0)),
		".orca/hooks/redirect.sh": `cat > /dev/null
cat <<'EOF'
{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
 "updatedInput": {"file_path": "drafts/final.txt", "content": "rewritten\n"}}}
EOF`,
	})
	n.model.Script("s", call("w", "Write", map[string]string{"file_path": "final.txt", "content": "original\n"}), script.Text("ok"))
	n.run("s", "write it")
	if got := n.file("drafts/final.txt"); got != "rewritten\n" {
		t.Errorf("drafts/final.txt = %q", got)
	}
	if got := n.file("final.txt"); !strings.HasPrefix(got, "<") {
		t.Errorf("the original path was written: %q", got)
	}
	if o := n.observation("s", 1, "w"); o.IsError || !strings.Contains(o.Content, "drafts/final.txt") {
		t.Errorf("observation: %+v", o)
	}
}

// Context from hooks reaches the model's next prompt.
func TestContextReachesTheNextPrompt(t *testing.T) {
	n, _ := newNode(t, config.LoadOptions{TrustOverride: true}, map[string]string{
		".orca/settings.json": settings(
			hookOf("UserPromptSubmit", "", "./.orca/hooks/ticket.sh", 0),
			hookOf("PostToolUse", "Write", "./.orca/hooks/lint.sh", 0),
		),
		".orca/hooks/ticket.sh": `echo "Working on ticket ORC-7."`,
		".orca/hooks/lint.sh":   `echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "Remember to run gofmt on Go files."}}'`,
	})
	n.model.Script("s", call("w", "Write", map[string]string{"file_path": "a.go", "content": "package a\n"}), script.Text("ok"))
	n.run("s", "write a.go")
	first := n.model.CallsTo("s")[0].Messages[0]
	if !strings.Contains(first.Text(), "Working on ticket ORC-7.") && !slices.ContainsFunc(first.Content, func(b llm.Block) bool { return strings.Contains(b.Text, "Working on ticket ORC-7.") }) {
		t.Errorf("the first prompt lacks the UserPromptSubmit context: %+v", first.Content)
	}
	if o := n.observation("s", 1, "w"); !strings.Contains(o.Content, "Remember to run gofmt on Go files.") {
		t.Errorf("the observation lacks the PostToolUse context: %q", o.Content)
	}
}

// A Stop hook's exit code 2 sends the agent back to work with stderr as
// the instruction.
func TestStopExitTwoRevises(t *testing.T) {
	n, _ := newNode(t, config.LoadOptions{TrustOverride: true}, map[string]string{
		".orca/settings.json": settings(hookOf("Stop", "", "./.orca/hooks/once.sh", 0)),
		".orca/hooks/once.sh": `cat > /dev/null
[ -f .stopped ] && exit 0
touch .stopped
echo "Run the tests before you finish." >&2
exit 2`,
	})
	n.model.Script("s", script.Text("done"), script.Text("tests pass, done"))
	res := n.run("s", "go")
	if res.Answer != "tests pass, done" || res.Iterations != 2 {
		t.Fatalf("turn: %+v", res)
	}
	second := n.model.CallsTo("s")[1].Messages
	if last := second[len(second)-1]; !strings.Contains(last.Text(), "Run the tests before you finish.") {
		t.Errorf("the second call lacks the instruction: %+v", last)
	}
}

// A hook that times out is killed, reported as hook_failed, and the call
// goes on.
func TestTimeoutIsAFailureAndTheProcessIsGone(t *testing.T) {
	n, _ := newNode(t, config.LoadOptions{TrustOverride: true}, map[string]string{
		".orca/settings.json": settings(hookOf("PreToolUse", "", "./.orca/hooks/slow.sh", 0.3)),
		".orca/hooks/slow.sh": `sleep 30 & echo $! > sleep.pid; wait`,
	})
	n.model.Script("s", call("w", "Write", map[string]string{"file_path": "a.txt", "content": "x"}), script.Text("ok"))
	n.run("s", "go")
	failed := n.named(event.HookFailed)
	if len(failed) != 1 || !strings.Contains(failed[0].Data.(*event.HookFailedData).Error, "timed out after 300ms and was killed") {
		t.Errorf("hook_failed: %+v", failed)
	}
	if n.file("a.txt") != "x" {
		t.Errorf("the call did not go on: a.txt = %q", n.file("a.txt"))
	}
	proctest.RequireGone(t, proctest.PIDs(t, n.ws, "sleep.pid")...)
}

// An untrusted workspace's hooks never run; the user's always do.
func TestUntrustedHooksNeverRun(t *testing.T) {
	cfgDir := t.TempDir()
	writeFile(t, cfgDir, "orca/settings.json", settings(hookOf("PreToolUse", "", "touch user-hook-ran", 0)))
	files := map[string]string{
		".orca/settings.json":       settings(hookOf("PreToolUse", "", "./.orca/hooks/mark.sh", 0), hookOf("UserPromptSubmit", "", "touch prompt-hook-ran", 0)),
		".orca/settings.local.json": settings(hookOf("Stop", "", "touch stop-hook-ran", 0)),
		".orca/hooks/mark.sh":       `touch project-hook-ran`,
	}
	n, warns := newNode(t, config.LoadOptions{ConfigDir: cfgDir}, files)
	n.model.Script("s", call("w", "Write", map[string]string{"file_path": "a.txt", "content": "x"}), script.Text("ok"))
	n.run("s", "go")
	for _, m := range []string{"project-hook-ran", "prompt-hook-ran", "stop-hook-ran"} {
		if exists(filepath.Join(n.ws, m)) {
			t.Errorf("%s: an untrusted workspace's hook ran", m)
		}
	}
	if !exists(filepath.Join(n.ws, "user-hook-ran")) {
		t.Error("the user's hook did not run")
	}
	if len(warns) != 2 || !warns[0].Untrusted || !warns[1].Untrusted {
		t.Errorf("warnings: %v", warns)
	}

	// Once trusted, they run.
	if _, err := config.NewTrustStore(cfgDir).Trust(n.ws); err != nil {
		t.Fatal(err)
	}
	s, warns, err := config.Load(config.LoadOptions{Workspace: n.ws, ConfigDir: cfgDir})
	if err != nil || len(warns) != 0 || len(s.Hooks) != 4 {
		t.Fatalf("trusted: %d hooks, %v, %v", len(s.Hooks), warns, err)
	}
}
