package app_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/policy"
)

// TestRemoteA2AAgent: an agent of the settings' a2aAgents — a server on
// the A2A protocol's own TypeScript SDK, started here — is a subagent
// Task delegates to: its answer is the call's observation, what it says
// as it works the call's progress, between subagent events; its failure
// and its timeout reach the model as observations, and the turn goes on.
func TestRemoteA2AAgent(t *testing.T) {
	sdk, node := os.Getenv("ORCA_A2A_SDK"), os.Getenv("ORCA_NODE22")
	if sdk == "" || node == "" {
		t.Skip("ORCA_A2A_SDK and ORCA_NODE22 name no A2A SDK and node to run it")
	}
	remote := exec.CommandContext(t.Context(), node, filepath.Join("testdata", "a2a-remote.mjs"))
	remote.Env = append(os.Environ(), "A2A_MODULES="+filepath.Dir(filepath.Dir(sdk)))
	out, err := remote.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	remote.Stderr = os.Stderr
	if err := remote.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { remote.Process.Kill(); remote.Wait() })
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatal("the remote agent printed no port")
	}
	port := strings.TrimSpace(lines.Text())

	cfgDir := t.TempDir()
	os.MkdirAll(filepath.Join(cfgDir, "orca"), 0o755)
	os.WriteFile(filepath.Join(cfgDir, "orca", "settings.json"), []byte(`{"a2aAgents": {"echoer": {"url": "http://127.0.0.1:`+port+`", "description": "Says back what it is told.", "timeout": 3}}}`), 0o644)
	task := func(prompt string) script.Response {
		return script.Call("Task", map[string]string{"description": "ask the echoer", "prompt": prompt, "subagent_type": "echoer"})
	}
	model := script.New().Script("s", task("hello there"), task("fail"), task("slow"), script.Text("done"))
	a, err := app.Open(t.Context(), app.Config{Workspace: t.TempDir(), ConfigDir: cfgDir, ClaudeDir: "-", Client: model, NoMCP: true, NoSandbox: true, Mode: policy.ModeBypass})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var mu sync.Mutex
	var seen []string
	ls, err := a.Session(t.Context(), app.SessionOptions{ID: "s", OnEvent: func(ev event.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch d := ev.Data.(type) {
		case *event.SubagentData:
			seen = append(seen, string(ev.Name)+" "+d.Agent+" "+d.Error)
		case *event.ToolProgressData:
			seen = append(seen, "progress "+d.Message)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := ls.Run(t.Context(), "ask the echoer three things")
	if err != nil || res.Answer != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	var results []string
	for _, m := range ls.Transcript() {
		for _, b := range m.Content {
			if b.Type == llm.BlockToolResult {
				results = append(results, b.Content)
			}
		}
	}
	if len(results) != 3 || results[0] != "remote says: hello there" || !strings.Contains(results[1], "the remote agent echoer: its task") || !strings.Contains(results[1], "ended failed: it broke") ||
		!strings.Contains(results[2], "the remote agent echoer did not answer within 3s") {
		t.Errorf("observations: %q", results)
	}
	mu.Lock()
	got := strings.Join(seen, "\n")
	mu.Unlock()
	if !strings.Contains(got, "subagent_started echoer \nprogress thinking about it\nsubagent_completed echoer \n") || !strings.Contains(got, "subagent_completed echoer the remote agent echoer did not answer within 3s") {
		t.Errorf("events:\n%s", got)
	}
}
