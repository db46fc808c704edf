package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/orca-agent/orca/internal/proctest"
	"github.com/orca-agent/orca/sandbox"
)

// The OS sandbox's server starts when a command is about to run, not with
// orca: a turn that runs no command starts none (orca run no longer pays
// for a probe), and the first command's server is the only one — no
// probe's server beside it.
func TestSandboxServerStartsWithTheFirstCommand(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skip(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var pid atomic.Int64
	var servers []int // orca's sandbox servers, when each request arrived (api.mu)
	api := newFakeModelAPI(t, false)
	seen := func() []int {
		api.mu.Lock()
		defer api.mu.Unlock()
		return slices.Clone(servers)
	}
	api.mu.Lock() // the requests come from another process: no ordering the race detector sees
	api.next = func(r fakeRequest) reply {
		servers = append(servers, len(proctest.Children(int(pid.Load()), "orca-sandbox")))
		if strings.Contains(r.raw, "run echo") && !strings.Contains(r.raw, `"role":"tool"`) {
			return reply{tool: "Bash", input: `{"command":"echo ran"}`}
		}
		return reply{text: "done"}
	}
	api.mu.Unlock()
	ws, cfgDir := t.TempDir(), t.TempDir()
	run := func(prompt string) string {
		t.Helper()
		cmd := exec.Command(self, "run", "--json", "--provider", "openai", "--base-url", api.URL+"/v1", "--model", "gpt-4.1",
			"-w", ws, "--permission-mode", "bypass", prompt)
		cmd.Env = append(os.Environ(), asCLI+"=1", "XDG_CONFIG_HOME="+cfgDir, "ORCA_PROVIDER=", "ORCA_MODEL=", "OPENAI_API_KEY=")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid.Store(int64(cmd.Process.Pid))
		if err := cmd.Wait(); err != nil {
			t.Fatalf("orca run %q: %v\n%s", prompt, err, stderr.String())
		}
		return stdout.String()
	}
	run("say hello")
	if s := seen(); !slices.Equal(s, []int{0}) {
		t.Errorf("a turn that runs no command: sandbox servers at its request: %v, want [0]", s)
	}
	out := run("run echo")
	if !strings.Contains(out, `ran\n`) {
		t.Errorf("the command's output is not in the run's events:\n%s", out)
	}
	if s := seen(); !slices.Equal(s, []int{0, 0, 1}) {
		t.Errorf("sandbox servers at the requests of a turn that runs no command, then of one that runs one: %v, want [0 0 1]", s)
	}
}
