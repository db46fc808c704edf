package temporal_test

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/postgres"
	"github.com/orca-agent/orca/store/postgres/pgtest"
	"github.com/orca-agent/orca/store/sqlite"
	"github.com/orca-agent/orca/temporal"
)

// End to end: a real Temporal server (the Temporal CLI's dev server, on
// loopback), orca-temporal workers as processes, the session store in
// PostgreSQL when $ORCA_TEST_POSTGRES names a server (else the
// workspace's SQLite file, which the workers of one machine share), and a
// model that is an HTTP server speaking Anthropic's Messages API.

// The variables that find the server: ORCA_TEST_TEMPORAL names a running
// one (HOST:PORT); else ORCA_TEMPORAL_CLI (or `temporal` on PATH) is
// started as a dev server for these tests. ORCA_TEST_TEMPORAL_REQUIRED=1
// makes their absence a failure instead of a skip.
const (
	serverEnv   = "ORCA_TEST_TEMPORAL"
	cliEnv      = "ORCA_TEMPORAL_CLI"
	requiredEnv = "ORCA_TEST_TEMPORAL_REQUIRED"
)

var (
	serverOnce sync.Once
	serverAddr string
	serverErr  error
	serverStop func()
	binOnce    sync.Once
	binPath    string
	binErr     error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if serverStop != nil {
		serverStop()
	}
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// server returns the address of the Temporal server for these tests.
func server(t testing.TB) string {
	t.Helper()
	serverOnce.Do(func() {
		if a := os.Getenv(serverEnv); a != "" {
			serverAddr = a
			return
		}
		cli := os.Getenv(cliEnv)
		if cli == "" {
			cli, _ = exec.LookPath("temporal")
		}
		if cli == "" {
			serverErr = fmt.Errorf("no Temporal server: set %s to one, or %s to the Temporal CLI (.ci/run builds it)", serverEnv, cliEnv)
			return
		}
		serverAddr, serverStop, serverErr = startDevServer(cli)
	})
	if serverErr != nil {
		if os.Getenv(requiredEnv) == "1" {
			t.Fatalf("%v (and %s=1)", serverErr, requiredEnv)
		}
		t.Skip(serverErr)
	}
	return serverAddr
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// devServerFlags are what the tests' dev server is started with, as
// docs/scale-out.md tells a user to start theirs: the dev server has one
// history shard, whose transfer queue is read at most 20 times a second
// by default (history.transferProcessorMaxPollRPS), so that each step of
// a turn — an activity task out, then the workflow task that follows —
// waits for it twice (~40–45 ms a step); and task queues of one partition
// each, so that a poller and a task always meet (the default 4 make a
// task wait for a forward between partitions). A production cluster has
// many shards and reads them as fast by default. And eager activity
// execution (system.enableActivityEagerExecution): a step scheduled by a
// workflow task comes back with its completion to the worker that ran
// it, without a dispatch.
var devServerFlags = []string{
	"--dynamic-config-value", "history.transferProcessorMaxPollRPS=1000",
	"--dynamic-config-value", "matching.numTaskqueueReadPartitions=1",
	"--dynamic-config-value", "matching.numTaskqueueWritePartitions=1",
	"--dynamic-config-value", "system.enableActivityEagerExecution=true",
}

// startDevServer starts the CLI's dev server on loopback, in memory, with
// devServerFlags, and waits until it answers.
func startDevServer(cli string) (string, func(), error) {
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	args := append([]string{"server", "start-dev", "--ip", "127.0.0.1", "--port", fmt.Sprint(port), "--headless", "--log-level", "error"}, devServerFlags...)
	cmd := exec.Command(cli, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("starting %s: %w", cli, err)
	}
	stop := func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, err := client.Dial(client.Options{HostPort: addr, Logger: log.NewStructuredLogger(quietLogger())})
		if err == nil {
			_, err = c.CheckHealth(context.Background(), nil)
			c.Close()
			if err == nil {
				return addr, stop, nil
			}
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("the Temporal dev server at %s did not answer: %w", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// binary builds orca-temporal once for these tests.
func binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "orca-temporal-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "orca-temporal")
		out, err := exec.Command("go", "build", "-o", binPath, "./cmd/orca-temporal").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// cluster is one test's world: a workspace, a store every worker shares,
// a model, workers on a task queue of the test's own, and a client.
type cluster struct {
	t      *testing.T
	addr   string
	queue  string
	ws     string
	home   string
	dsn    string // PostgreSQL's, or "" for the workspace's SQLite
	model  *fakeModel
	client *temporal.Client

	mu      sync.Mutex
	workers map[string]*exec.Cmd // by name
	started int
}

func newCluster(t *testing.T, model *fakeModel, opts temporal.Options) *cluster {
	t.Helper()
	c := &cluster{t: t, addr: server(t), ws: t.TempDir(), home: t.TempDir(), model: model, workers: map[string]*exec.Cmd{}}
	c.queue = fmt.Sprintf("orca-test-%d-%d", os.Getpid(), rand.Int64())
	if os.Getenv(pgtest.ServerEnv) != "" || os.Getenv(pgtest.RequiredEnv) == "1" {
		c.dsn = pgtest.DSN(t, "temporal")
	}
	tc, err := client.Dial(client.Options{HostPort: c.addr, Logger: log.NewStructuredLogger(quietLogger())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	c.client = &temporal.Client{Temporal: tc, TaskQueue: c.queue, Options: opts}
	t.Cleanup(c.stopAll)
	return c
}

// start starts a worker named name (its model key names it too).
func (c *cluster) start(name string, args ...string) {
	c.t.Helper()
	all := append([]string{"worker", "-w", c.ws, "--address", c.addr, "--task-queue", c.queue,
		"--provider", "anthropic", "--base-url", c.model.URL, "--lease-wait", "30s"}, args...)
	cmd := exec.Command(binary(c.t), all...)
	cmd.Env = append(os.Environ(), "HOME="+c.home, "XDG_CONFIG_HOME="+filepath.Join(c.home, ".config"),
		"CLAUDE_CONFIG_DIR=/nonexistent/orca-tests/claude", "ANTHROPIC_API_KEY="+name, "ANTHROPIC_BASE_URL=",
		"ORCA_STORE_DSN="+c.dsn, "TEMPORAL_ADDRESS=", "OTEL_EXPORTER_OTLP_ENDPOINT=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		said := false
		for sc.Scan() {
			line := sc.Text()
			if !said && strings.Contains(line, "orca-temporal: worker of") {
				said = true
				close(ready)
				continue
			}
			c.t.Logf("worker %s: %s", name, line)
		}
		if !said {
			close(ready)
		}
	}()
	<-ready
	c.mu.Lock()
	c.workers[name] = cmd
	c.started++
	c.mu.Unlock()
}

// kill kills worker name with SIGKILL, as a machine that dies would.
func (c *cluster) kill(name string) bool {
	c.mu.Lock()
	cmd := c.workers[name]
	delete(c.workers, name)
	c.mu.Unlock()
	if cmd == nil {
		return false
	}
	cmd.Process.Kill()
	cmd.Wait()
	return true
}

// term stops worker name with SIGTERM, as a redeploy would, and waits
// for it to exit; it returns its exit code.
func (c *cluster) term(name string) int {
	c.mu.Lock()
	cmd := c.workers[name]
	delete(c.workers, name)
	c.mu.Unlock()
	if cmd == nil {
		return -1
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	return cmd.ProcessState.ExitCode()
}

func (c *cluster) stopAll() {
	c.mu.Lock()
	ws := c.workers
	c.workers = map[string]*exec.Cmd{}
	c.mu.Unlock()
	for _, cmd := range ws {
		cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, cmd := range ws {
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
}

// turned is what a turn asked for on a goroutine came to.
type turned struct {
	res temporal.TurnResult
	err error
}

// turnAsync asks for req in session sessionID on a goroutine of its own;
// the channel gets what it came to.
func (c *cluster) turnAsync(sessionID string, req temporal.TurnRequest) <-chan turned {
	done := make(chan turned, 1)
	go func() {
		res, err := c.client.Turn(c.t.Context(), sessionID, req)
		done <- turned{res, err}
	}()
	return done
}

// store opens the workers' store from the test.
func (c *cluster) store() store.Store {
	c.t.Helper()
	var st store.Store
	var err error
	if c.dsn != "" {
		st, err = postgres.Open(c.t.Context(), c.dsn)
	} else {
		st, err = sqlite.Open(filepath.Join(c.ws, ".orca", "orca.db"))
	}
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { st.Close() })
	return st
}

// orca runs orca-temporal's client commands against the cluster.
func (c *cluster) orca(args ...string) (stdout, stderr string, code int) {
	c.t.Helper()
	cmd := exec.Command(binary(c.t), append(args, "--address", c.addr, "--task-queue", c.queue)...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code = cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		c.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// fakeModel answers Anthropic's Messages API (streamed) with what reply
// says for a request: a pure function of the conversation, so that a
// retried call — on another worker — gets the same answer. Before it
// answers, before(caller, step) may act (kill the caller); after(caller,
// step) runs once the answer is sent.
type fakeModel struct {
	*httptest.Server
	// reply, before, after and perTurn are guarded by mu (the setters).
	reply  func(step int) (text string, calls []fakeCall)
	before func(caller string, step int)
	after  func(caller string, step int)
	// perTurn counts the steps of the last turn only (from the last
	// user's message), not of the whole conversation.
	perTurn bool
	// record keeps the requests' bodies (bodies).
	record bool

	mu       sync.Mutex
	requests int
	callers  map[string]int
	bodies   [][]byte
}

type fakeCall struct {
	Name  string
	Input any
}

func newFakeModel(t testing.TB, reply func(step int) (string, []fakeCall)) *fakeModel {
	m := &fakeModel{reply: reply, callers: map[string]int{}}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

func (m *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	// The request is read with gjson, which skips what it does not ask
	// for: a benchmark's model shares the machine with the worker it
	// measures, and decoding a long conversation whole took a fifth of
	// the benchmark's CPU.
	body, err := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" || err != nil || !gjson.ValidBytes(body) || !gjson.GetBytes(body, "messages").IsArray() {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"type":"error","error":{"type":"invalid_request_error","message":"not a messages request"}}`)
		return
	}
	m.mu.Lock()
	perTurn := m.perTurn
	m.mu.Unlock()
	step := 0
	gjson.GetBytes(body, "messages").ForEach(func(_, msg gjson.Result) bool {
		results, blocks := 0, 0
		msg.Get("content").ForEach(func(_, b gjson.Result) bool {
			blocks++
			if b.Get("type").Str == "tool_result" {
				results++
			}
			return true
		})
		if perTurn && msg.Get("role").Str == "user" && results < blocks {
			step = 0 // a user's message: a new turn
		}
		step += results
		return true
	})
	model := gjson.GetBytes(body, "model").Str
	// The worker's API key names it (the SDK sends it as a bearer token).
	caller := cmp.Or(r.Header.Get("X-Api-Key"), strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	m.mu.Lock()
	m.requests++
	m.callers[caller]++
	if m.record {
		m.bodies = append(m.bodies, body)
	}
	reply, before, after := m.reply, m.before, m.after
	m.mu.Unlock()
	if before != nil {
		before(caller, step)
	}
	text, calls := reply(step)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	ev := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	type obj = map[string]any
	ev("message_start", obj{"type": "message_start", "message": obj{"id": fmt.Sprintf("msg_%d", step), "type": "message", "role": "assistant",
		"model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": obj{"input_tokens": 100, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1}}})
	i := 0
	if text != "" {
		ev("content_block_start", obj{"type": "content_block_start", "index": i, "content_block": obj{"type": "text", "text": ""}})
		ev("content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": obj{"type": "text_delta", "text": text}})
		ev("content_block_stop", obj{"type": "content_block_stop", "index": i})
		i++
	}
	for j, c := range calls {
		input, _ := json.Marshal(c.Input)
		ev("content_block_start", obj{"type": "content_block_start", "index": i,
			"content_block": obj{"type": "tool_use", "id": fmt.Sprintf("toolu_%d_%d", step, j), "name": c.Name, "input": obj{}}})
		ev("content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": obj{"type": "input_json_delta", "partial_json": string(input)}})
		ev("content_block_stop", obj{"type": "content_block_stop", "index": i})
		i++
	}
	stop := "end_turn"
	if len(calls) > 0 {
		stop = "tool_use"
	}
	ev("message_delta", obj{"type": "message_delta", "delta": obj{"stop_reason": stop, "stop_sequence": nil}, "usage": obj{"output_tokens": 20}})
	ev("message_stop", obj{"type": "message_stop"})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if after != nil {
		after(caller, step)
	}
}

// The setters change what the model does while it serves (the fields are
// read by its handlers, under mu).
func (m *fakeModel) setReply(f func(step int) (string, []fakeCall)) { m.locked(func() { m.reply = f }) }
func (m *fakeModel) setBefore(f func(caller string, step int))      { m.locked(func() { m.before = f }) }
func (m *fakeModel) setAfter(f func(caller string, step int))       { m.locked(func() { m.after = f }) }
func (m *fakeModel) setPerTurn(b bool)                              { m.locked(func() { m.perTurn = b }) }
func (m *fakeModel) setRecord(b bool)                               { m.locked(func() { m.record = b }) }

// requestBodies returns the bodies of the requests it was sent since
// setRecord(true).
func (m *fakeModel) requestBodies() [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.bodies)
}

func (m *fakeModel) locked(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f()
}
