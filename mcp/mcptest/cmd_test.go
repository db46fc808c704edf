package mcptest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orca-agent/orca/internal/proctest"
)

// commandDir holds the command the tests build, once; TestMain removes it.
var (
	commandDir  string
	commandOnce sync.Once
	commandErr  error
)

// command builds cmd/orca-mcp-faults once and returns its path.
func command(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to build the command with")
	}
	commandOnce.Do(func() {
		commandDir, commandErr = os.MkdirTemp("", "orca-mcp-faults-")
		if commandErr != nil {
			return
		}
		out, err := exec.Command(goTool, "build", "-o", filepath.Join(commandDir, "orca-mcp-faults"), "github.com/orca-agent/orca/cmd/orca-mcp-faults").CombinedOutput()
		if err != nil {
			commandErr = errors.New(string(out))
		}
	})
	if commandErr != nil {
		t.Fatalf("building the command: %v", commandErr)
	}
	return filepath.Join(commandDir, "orca-mcp-faults")
}

// started is a process of the command; the test fails if it outlives it.
func started(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	t.Cleanup(func() {
		if cmd.Process != nil {
			proctest.RequireGone(t, cmd.Process.Pid)
		}
	})
}

// Over stdio: a slow start, calls, then a real crash: the process exits
// with status 3, the call unanswered and without effect.
func TestCommandStdioCrash(t *testing.T) {
	dir := t.TempDir()
	var stderr logs
	cmd := exec.Command(command(t), "-dir", dir, "-start-delay", "300ms", "-crash-on-call", "3")
	cmd.Stderr = &stderr
	started(t, cmd)
	start := time.Now()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("connecting took %v, want 300ms at least", d)
	}
	ctx := context.Background()
	if _, err := note(ctx, cs, "one"); err != nil {
		t.Fatal(err)
	}
	if r, err := call(ctx, cs, "echo", map[string]any{"text": "two"}); err != nil || textOf(r) != "two" {
		t.Fatalf("echo: %v, %v", r, err)
	}
	if r, err := note(ctx, cs, "three"); err == nil {
		t.Fatalf("the crashing call was answered: %v", r)
	}
	cs.Wait()
	cs.Close()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 3 {
		t.Errorf("the process ended %v, want exit status 3", cmd.ProcessState)
	}
	if !strings.Contains(stderr.String(), "crashing on purpose") {
		t.Errorf("stderr: %s", stderr.String())
	}
	noteIs(t, dir, "one")
}

// Over stdio, closing standard input ends the server with status 0, and
// a hung call does not keep it alive.
func TestCommandStdioClose(t *testing.T) {
	var stderr logs
	cmd := exec.Command(command(t), "-hang-on-call", "1")
	cmd.Stderr = &stderr
	started(t, cmd)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := call(ctx, cs, "echo", map[string]any{"text": "x"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the hung call: %v", err)
	}
	start := time.Now()
	cs.Close()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("the process ended %v, want exit status 0\n%s", cmd.ProcessState, stderr.String())
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("closing took %v: the server did not end on end of input", d)
	}
}

// -log sends the log to a file: a sleep the client gives up on is logged
// there, with the cancellation the server received.
func TestCommandLogFile(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "faults.log")
	cmd := exec.Command(command(t), "-log", logFile)
	started(t, cmd)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := call(ctx, cs, "sleep", map[string]any{"seconds": 30}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the sleep given up: %v", err)
	}
	eventually(t, "the log says the sleep was cancelled", func() bool {
		b, _ := os.ReadFile(logFile)
		return strings.Contains(string(b), "notifications/cancelled received") && strings.Contains(string(b), "sleep cut short")
	})
	cs.Close()
}

var servingAt = regexp.MustCompile(`serving .* at (http://\S+)`)

// startHTTP starts the command serving HTTP and returns its URL.
func startHTTP(t *testing.T, args ...string) (*exec.Cmd, *logs, string) {
	t.Helper()
	stderr := &logs{}
	cmd := exec.Command(command(t), append([]string{"-http", "127.0.0.1:0"}, args...)...)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started(t, cmd)
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	var url string
	eventually(t, "the command says where it serves", func() bool {
		m := servingAt.FindStringSubmatch(stderr.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})
	return cmd, stderr, url
}

// Over HTTP: a dropped session, a new one, and SIGTERM ends it cleanly.
func TestCommandHTTP(t *testing.T) {
	cmd, stderr, url := startHTTP(t, "-drop-session-on-call", "2")
	ctx := context.Background()
	a := connectHTTP(t, url, nil)
	if r, err := call(ctx, a, "echo", map[string]any{"text": "one"}); err != nil || textOf(r) != "one" {
		t.Fatalf("echo: %v, %v", r, err)
	}
	if _, err := call(ctx, a, "echo", map[string]any{"text": "two"}); !errors.Is(err, mcp.ErrSessionMissing) {
		t.Errorf("the dropped call: %v, want ErrSessionMissing", err)
	}
	b := connectHTTP(t, url, nil)
	if n := counterOf(t, b); n != 3 {
		t.Errorf("counter in a new session: call %d, want 3", n)
	}
	b.Close()
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("after SIGTERM: %v\n%s", err, stderr.String())
	}
}

// Over HTTP a crash is the process exiting: the call is cut, and nothing
// answers any more.
func TestCommandHTTPCrash(t *testing.T) {
	for _, sse := range []bool{false, true} {
		args := []string{"-crash-on-call", "1"}
		connect := connectHTTP
		if sse {
			args = append(args, "-sse")
			connect = func(t *testing.T, url string, _ *mcp.ClientOptions) *mcp.ClientSession { return sseConnect(t, url) }
		}
		cmd, stderr, url := startHTTP(t, args...)
		cs := connect(t, url, nil)
		if r, err := call(context.Background(), cs, "echo", map[string]any{"text": "x"}); err == nil {
			t.Errorf("sse=%v: the crashing call was answered: %v", sse, r)
		}
		if err := cmd.Wait(); cmd.ProcessState.ExitCode() != 3 {
			t.Errorf("sse=%v: the process ended %v, want exit status 3\n%s", sse, err, stderr.String())
		}
		if _, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil); err == nil {
			t.Errorf("sse=%v: a crashed server answered", sse)
		}
	}
}

func TestCommandUsage(t *testing.T) {
	for _, args := range [][]string{{"-no-such-flag"}, {"-sse"}, {"extra"}, {"-crash-on-call", "x"}} {
		cmd := exec.Command(command(t), args...)
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != 2 {
			t.Errorf("%q: exit status %d, want 2\n%s", args, cmd.ProcessState.ExitCode(), out)
		}
	}
}

// Over stdio, standard output is the protocol alone: every line a
// JSON-RPC message, the log on standard error.
func TestCommandStdoutIsProtocol(t *testing.T) {
	cmd := exec.Command(command(t), "-error-on-call", "1")
	var stderr logs
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started(t, cmd)
	out := bufio.NewScanner(stdout)
	var lines []string
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`,
	} {
		if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(msg, `"id"`) {
			if !out.Scan() {
				t.Fatalf("no answer to %s\n%s", msg, stderr.String())
			}
			lines = append(lines, out.Text())
		}
	}
	stdin.Close()
	for out.Scan() {
		lines = append(lines, out.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("%v\n%s", err, stderr.String())
	}
	if len(lines) != 2 {
		t.Fatalf("stdout:\n%s", strings.Join(lines, "\n"))
	}
	for _, l := range lines {
		var m struct {
			JSONRPC string          `json:"jsonrpc"`
			Result  json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil || m.JSONRPC != "2.0" || m.Result == nil {
			t.Errorf("not a JSON-RPC answer on stdout: %s", l)
		}
	}
	if !strings.Contains(lines[1], `"isError":true`) || !strings.Contains(stderr.String(), "ErrorOnCall") {
		t.Errorf("call 1 was not the error result:\n%s\n%s", lines[1], stderr.String())
	}
}
