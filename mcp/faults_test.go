package mcp_test

// The fault matrix of the reliability contract (the package doc): every
// fault of mcptest, against the real client — a Provider filling a
// tool.Registry — over stdio and over streamable HTTP.
//
// Over stdio the server is this test binary run again as
// mcptest.ServeStdio, crashing as orca-mcp-faults does (exit status 3),
// and holding a lock in a folder of the test's (proctest.Lock), so that
// each test can count the server processes and check that none outlives
// the provider. Over HTTP it is a mcptest.Handler under httptest, behind
// a spy that counts the JSON-RPC methods it is sent.
//
// A stdio server that crashed is a new process when it comes back, and
// counts its calls from 1 again; a Handler counts on across sessions.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orca-agent/orca/internal/proctest"
	"github.com/orca-agent/orca/mcp"
	"github.com/orca-agent/orca/mcp/mcptest"
	"github.com/orca-agent/orca/tool"
)

// faultsEnv makes the test binary a fault server over stdio: its value is
// a faultServer, as JSON.
const faultsEnv = "ORCA_MCP_TEST_FAULTS"

type faultServer struct {
	Faults mcptest.Faults
	Dir    string // the notes folder
	Locks  string // the folder of proctest.Lock, if any
	// Faulty: only the first Faulty processes have the faults; those
	// started after them behave (0: every process has them).
	Faulty int
	// Log is the file the server logs to (appending), if any.
	Log string
}

func serveFaults(cfg string) {
	var fs faultServer
	if err := json.Unmarshal([]byte(cfg), &fs); err != nil {
		fmt.Fprintln(os.Stderr, "fault server:", err)
		os.Exit(2)
	}
	if fs.Faulty > 0 && len(proctest.Locks(fs.Locks)) >= fs.Faulty {
		fs.Faults = mcptest.Faults{}
	}
	if fs.Locks != "" {
		if err := proctest.Lock(fs.Locks); err != nil {
			fmt.Fprintln(os.Stderr, "fault server:", err)
			os.Exit(2)
		}
	}
	var logTo io.Writer = os.Stderr
	if fs.Log != "" {
		f, err := os.OpenFile(fs.Log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fault server:", err)
			os.Exit(2)
		}
		logTo = f
	}
	err := mcptest.ServeStdio(context.Background(), fs.Faults, mcptest.Options{
		Dir:     fs.Dir,
		Logger:  slog.New(slog.NewTextHandler(logTo, nil)),
		OnCrash: func() { os.Exit(3) }, // as orca-mcp-faults
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "fault server:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

var transports = []string{"stdio", "http", "sse"}

// rig is one fault server and the provider connected to it.
type rig struct {
	t      *testing.T
	dir    string // the server's notes folder
	log    string // the file the server logs to
	p      *mcp.Provider
	reg    *tool.Registry
	cmds   tool.Expander // the server's prompts
	spy    *spy          // over HTTP: what the server was sent
	locks  string        // over stdio: a lock per server process started
	faulty int           // over stdio: the processes with the faults (0: all)
	// changes are what the provider told Options.OnChange.
	mu      sync.Mutex
	changes []mcp.Change
}

// setup serves faults f over transport and connects a provider with opts
// to it, as server "faults"; adjust changes the rig or the server before
// the provider starts. Over stdio, the test fails if a server process
// outlives the provider.
func setup(t *testing.T, transport string, f mcptest.Faults, opts mcp.Options, adjust ...func(*rig, *mcp.Server)) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir()}
	r.log = filepath.Join(t.TempDir(), "server.log")
	var s mcp.Server
	switch transport {
	case "stdio":
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		r.locks = t.TempDir()
		// Registered before the provider's close: it runs after it.
		t.Cleanup(func() { proctest.RequireUnlocked(t, r.locks) })
		cfg, _ := json.Marshal(faultServer{Faults: f, Dir: r.dir, Locks: r.locks, Log: r.log})
		s = mcp.Server{Name: "faults", Command: exe, Env: map[string]string{faultsEnv: string(cfg)}}
	case "http", "sse":
		lf, err := os.OpenFile(r.log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lf.Close() })
		o := mcptest.Options{Dir: r.dir, Logger: slog.New(slog.NewTextHandler(lf, nil))}
		h := mcptest.NewStreamableHandler(f, o)
		if transport == "sse" {
			h = mcptest.NewSSEHandler(f, o)
		}
		r.spy = &spy{h: h, methods: map[string]int{}}
		hs := httptest.NewServer(r.spy)
		t.Cleanup(func() {
			h.Close()
			hs.Close()
		})
		s = mcp.Server{Name: "faults", Type: transport, URL: hs.URL}
	default:
		t.Fatalf("transport %q", transport)
	}
	for _, f := range adjust {
		f(r, &s)
	}
	if r.faulty > 0 && transport == "stdio" {
		cfg, _ := json.Marshal(faultServer{Faults: f, Dir: r.dir, Locks: r.locks, Faulty: r.faulty, Log: r.log})
		s.Env[faultsEnv] = string(cfg)
	}
	opts.OnChange = func(ch mcp.Change) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.changes = append(r.changes, ch)
	}
	r.p, r.reg, r.cmds = providerCommands(t, []mcp.Server{s}, opts)
	return r
}

// told returns the changes the provider told so far.
func (r *rig) told() []mcp.Change {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.changes)
}

// toldAre fails the test unless the provider told the changes kinds, in
// order (waiting a little for those told in the background, after the
// registry changed).
func (r *rig) toldAre(kinds ...mcp.ChangeKind) {
	r.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); len(r.told()) < len(kinds) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	var got []mcp.ChangeKind
	for _, ch := range r.told() {
		got = append(got, ch.Kind)
		if ch.RuntimeID != "rt" || ch.Status.Name != "faults" {
			r.t.Errorf("change %+v: not of runtime rt's server faults", ch)
		}
	}
	if !slices.Equal(got, kinds) {
		r.t.Fatalf("changes %v, want %v", got, kinds)
	}
}

// logged reports whether the server's log has a line with each of what.
func (r *rig) logged(what ...string) bool {
	b, _ := os.ReadFile(r.log)
	for line := range strings.Lines(string(b)) {
		all := true
		for _, w := range what {
			all = all && strings.Contains(line, w)
		}
		if all {
			return true
		}
	}
	return false
}

// processes is how many server processes were started so far.
func (r *rig) processes() int { return len(proctest.Locks(r.locks)) }

func (r *rig) call(toolName string, args any) tool.Result {
	r.t.Helper()
	return call(r.t, r.reg, "mcp__faults__"+toolName, args)
}

// note appends line to the note n.txt through write_note.
func (r *rig) note(line string) tool.Result {
	r.t.Helper()
	return r.call("write_note", map[string]string{"name": "n.txt", "text": line})
}

// noteIs fails unless the note has exactly lines: the calls that ran.
func (r *rig) noteIs(lines ...string) {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, "n.txt"))
	if err != nil && !os.IsNotExist(err) {
		r.t.Fatal(err)
	}
	want := ""
	if len(lines) > 0 {
		want = strings.Join(lines, "\n") + "\n"
	}
	if string(b) != want {
		r.t.Errorf("the note is %q, want %q", b, want)
	}
}

// counter calls the counter tool: the number the server gave the call.
func (r *rig) counter() int {
	r.t.Helper()
	res := r.call("counter", map[string]any{})
	var out struct{ Call int }
	if res.IsError || json.Unmarshal([]byte(res.Content), &out) != nil {
		r.t.Fatalf("counter: %+v", res)
	}
	return out.Call
}

func (r *rig) has(toolName string) bool {
	_, ok := r.reg.Lookup("mcp__faults__" + toolName)
	return ok
}

func (r *rig) status() mcp.Status { return r.p.Status()[0] }

// toolsChanged fails unless ch says that reverse came and add went.
func (r *rig) toolsChanged(ch mcp.Change) {
	r.t.Helper()
	if !slices.Equal(ch.Added, []string{"mcp__faults__reverse"}) || !slices.Equal(ch.Removed, []string{"mcp__faults__add"}) {
		r.t.Errorf("tools changed: added %v, removed %v", ch.Added, ch.Removed)
	}
}

// eventually waits a few seconds for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

// spy counts the JSON-RPC methods an HTTP server is sent; with noStream,
// it refuses the standalone SSE stream (GET), so that the client hears no
// notification.
type spy struct {
	h        http.Handler
	noStream atomic.Bool

	mu      sync.Mutex
	methods map[string]int
}

func (s *spy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && s.noStream.Load() {
		http.Error(w, "no standalone stream here", http.StatusMethodNotAllowed)
		return
	}
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method != "" {
			s.mu.Lock()
			s.methods[m.Method]++
			s.mu.Unlock()
		}
	}
	s.h.ServeHTTP(w, r)
}

func (s *spy) sent(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.methods[method]
}

func matrix(t *testing.T, test func(t *testing.T, transport string)) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			test(t, tr)
		})
	}
}

// A server slower to start than StartTimeout is reported failed and
// offers nothing; the background retry, waiting longer, brings it in,
// and its tools appear in the registry. Within StartTimeout it is up
// at once.
func TestFaultSlowStart(t *testing.T) {
	matrix(t, func(t *testing.T, tr string) {
		t.Run("beyond", func(t *testing.T) {
			r := setup(t, tr, mcptest.Faults{StartDelay: 400 * time.Millisecond}, mcp.Options{StartTimeout: 300 * time.Millisecond})
			if st := r.status(); st.State != mcp.StateFailed || st.Error == "" || len(st.Tools) != 0 || r.has("echo") {
				t.Fatalf("a server slower than StartTimeout: %+v; registry %v", st, r.reg.Names())
			}
			if _, ok := r.reg.Lookup(mcp.ReadResourceTool); ok {
				t.Errorf("resource tools before any server serves resources: %v", r.reg.Names())
			}
			eventually(t, "the slow server joins", func() bool { return r.has("echo") && r.status().State == mcp.StateUp })
			if res := r.call("echo", map[string]string{"text": "late"}); res.IsError || res.Content != "late" {
				t.Errorf("echo: %+v", res)
			}
			// Failed once, however many tries failed after; then started,
			// with its tools (told once the registry has them).
			r.toldAre(mcp.Failed, mcp.Started)
			// It serves resources: the resource tools came with it, before
			// it was told started.
			if _, ok := r.reg.Lookup(mcp.ReadResourceTool); !ok {
				t.Errorf("the resource tools did not come with the server: %v", r.reg.Names())
			}
			if told := r.told(); len(told) != 2 || told[0].Status.Error == "" || !slices.Contains(told[1].Status.Tools, "mcp__faults__echo") {
				t.Errorf("changes %+v", told)
			}
		})
		t.Run("within", func(t *testing.T) {
			r := setup(t, tr, mcptest.Faults{StartDelay: 200 * time.Millisecond}, mcp.Options{StartTimeout: 10 * time.Second})
			if st := r.status(); st.State != mcp.StateUp || !r.has("echo") || st.Server != "orca-mcp-faults v1" {
				t.Fatalf("a server within StartTimeout: %+v; registry %v", st, r.reg.Names())
			}
			if res := r.call("echo", map[string]string{"text": "on time"}); res.IsError || res.Content != "on time" {
				t.Errorf("echo: %+v", res)
			}
			r.toldAre(mcp.Started)
			if st := r.told()[0].Status; st.State != mcp.StateUp || st.Server != "orca-mcp-faults v1" || len(st.Tools) == 0 {
				t.Errorf("started: %+v", st)
			}
		})
	})
}

// A server whose tools cannot be listed is failed, and told so once: the
// retry that connects but cannot list them either is not a second
// failure (it was told again, before, under -race in CI). The third try
// lists them, and the server is told started. Over stdio each try is a
// new process, so the first two have the fault.
func TestFaultListToolsFails(t *testing.T) {
	matrix(t, func(t *testing.T, tr string) {
		f := mcptest.Faults{FailListTools: 2}
		if tr == "stdio" {
			f.FailListTools = 1
		}
		r := setup(t, tr, f, mcp.Options{}, func(r *rig, _ *mcp.Server) { r.faulty = 2 })
		if st := r.status(); st.State != mcp.StateFailed || !strings.Contains(st.Error, "listing its tools") || r.has("echo") {
			t.Fatalf("a server that cannot list its tools: %+v; registry %v", st, r.reg.Names())
		}
		eventually(t, "the server joins on the third try", func() bool { return r.has("echo") && r.status().State == mcp.StateUp })
		r.toldAre(mcp.Failed, mcp.Started)
		switch {
		case r.spy != nil:
			if n := r.spy.sent("tools/list"); n != 3 {
				t.Errorf("tools/list sent %d times, want 3", n)
			}
		default:
			if n := r.processes(); n != 3 {
				t.Errorf("%d server processes started, want 3", n)
			}
		}
	})
}

// A crash on the third call. write_note, not idempotent, is reported as
// a call that may or may not have taken effect and is not sent again:
// the note keeps the two lines of the calls before, and the next call is
// the only one the server gets after. counter, read-only and so
// idempotent, is sent again once, on a fresh connection, and succeeds.
func TestFaultCrash(t *testing.T) {
	matrix(t, func(t *testing.T, tr string) {
		t.Run("not idempotent", func(t *testing.T) {
			r := setup(t, tr, mcptest.Faults{CrashOnCall: 3}, mcp.Options{})
			for _, line := range []string{"one", "two"} {
				if res := r.note(line); res.IsError {
					t.Fatalf("note %s: %+v", line, res)
				}
			}
			res := r.note("three")
			if !res.IsError || !strings.Contains(res.Content, "may or may not have taken effect") || !strings.Contains(res.Content, "Check its effect") {
				t.Fatalf("the crashed call: %+v", res)
			}
			r.noteIs("one", "two")
			// Not replayed: the next call is the first the restarted
			// process gets, or the Handler's fourth.
			want := map[string]int{"stdio": 1, "http": 4, "sse": 4}[tr]
			if n := r.counter(); n != want {
				t.Errorf("the call after the crash is call %d, want %d", n, want)
			}
			if res := r.note("four"); res.IsError {
				t.Errorf("note four: %+v", res)
			}
			r.noteIs("one", "two", "four")
			if tr == "stdio" && r.processes() != 2 {
				t.Errorf("%d server processes, want 2 (the crashed one, the restarted one)", r.processes())
			}
			r.toldAre(mcp.Started, mcp.Dropped, mcp.Reconnected)
			if st := r.told()[1].Status; st.State != mcp.StateDown || st.Error == "" {
				t.Errorf("dropped: %+v", st)
			}
		})
		t.Run("idempotent", func(t *testing.T) {
			r := setup(t, tr, mcptest.Faults{CrashOnCall: 3}, mcp.Options{})
			r.counter()
			r.counter()
			// Retried once on a fresh connection: the restarted process's
			// first call, or the Handler's fourth.
			want := map[string]int{"stdio": 1, "http": 4, "sse": 4}[tr]
			if n := r.counter(); n != want {
				t.Errorf("the retried call is call %d, want %d", n, want)
			}
			if st := r.status(); st.State != mcp.StateUp {
				t.Errorf("after the retry: %+v", st)
			}
			r.toldAre(mcp.Started, mcp.Dropped, mcp.Reconnected)
		})
	})
}

// A call that overruns the server's Timeout ends then, reported as one
// that may or may not have taken effect — the turn waiting for it goes
// on — and is cancelled on the wire: the server logs the
// notifications/cancelled it received, and its sleep cut short. The
// server still answers, so its connection stays: a call in flight beside
// the one that overran completes, and the next call goes to the same
// process or session.
func TestFaultHang(t *testing.T) {
	matrix(t, func(t *testing.T, tr string) {
		timeout := 3 * time.Second
		r := setup(t, tr, mcptest.Faults{}, mcp.Options{}, func(_ *rig, s *mcp.Server) { s.Timeout = timeout })
		var beside tool.Result
		var wg sync.WaitGroup
		wg.Go(func() {
			// In flight when the other call times out, and answered
			// within its own timeout.
			time.Sleep(timeout / 2)
			beside = r.call("sleep", map[string]any{"seconds": timeout.Seconds() * 3 / 4})
		})
		start := time.Now()
		res := r.call("sleep", map[string]any{"seconds": 60})
		took := time.Since(start)
		wg.Wait()
		if !res.IsError || !strings.Contains(res.Content, "did not answer") || !strings.Contains(res.Content, "was cancelled") ||
			!strings.Contains(res.Content, "may or may not have taken effect") {
			t.Fatalf("the call that overran: %+v", res)
		}
		if took < timeout || took > timeout+2*time.Second {
			t.Errorf("the call that overran took %v, timeout %v", took, timeout)
		}
		if beside.IsError || beside.Content != "slept 2.25s" {
			t.Errorf("the call beside it: %+v", beside)
		}
		eventually(t, "the server logs the cancellation and the sleep cut short", func() bool {
			return r.logged("notifications/cancelled received", "context deadline exceeded") && r.logged("sleep cut short", "call=1")
		})
		if n := r.counter(); n != 3 {
			t.Errorf("the call after is call %d, want 3 (same server, same count)", n)
		}
		if st := r.status(); st.State != mcp.StateUp {
			t.Errorf("after the timeout: %+v", st)
		}
		switch tr {
		case "stdio":
			if n := r.processes(); n != 1 {
				t.Errorf("%d server processes, want 1: the server was not restarted", n)
			}
		case "http":
			if n := r.spy.sent("initialize"); n != 1 {
				t.Errorf("%d initialize requests, want 1: the session was kept", n)
			}
		}
		r.toldAre(mcp.Started)
	})
}

// A server that stops answering altogether: its call times out, the ping
// that follows gets no answer either, and only then is the connection
// dropped; the next call connects again (a new process, a new session)
// and is answered.
func TestFaultStall(t *testing.T) {
	matrix(t, func(t *testing.T, tr string) {
		timeout := time.Second
		r := setup(t, tr, mcptest.Faults{StallOnCall: 2}, mcp.Options{}, func(r *rig, s *mcp.Server) {
			s.Timeout = timeout
			r.faulty = 1
		})
		if res := r.note("one"); res.IsError {
			t.Fatalf("note one: %+v", res)
		}
		if res := r.note("two"); !res.IsError || !strings.Contains(res.Content, "did not answer") {
			t.Fatalf("the stalled call: %+v", res)
		}
		eventually(t, "the connection dropped", func() bool { return len(r.told()) >= 2 })
		if ch := r.told()[1]; ch.Kind != mcp.Dropped || !strings.Contains(ch.Status.Error, "did not answer a ping") {
			t.Errorf("the drop: %+v", ch)
		}
		if res := r.note("three"); res.IsError {
			t.Errorf("the call after the drop: %+v", res)
		}
		r.noteIs("one", "three")
		r.toldAre(mcp.Started, mcp.Dropped, mcp.Reconnected)
		switch tr {
		case "stdio":
			if n := r.processes(); n != 2 {
				t.Errorf("%d server processes, want 2", n)
			}
		case "http":
			if n := r.spy.sent("initialize"); n != 2 {
				t.Errorf("%d initialize requests, want 2", n)
			}
		}
	})
}

// A dropped HTTP session (404 to the call's request): the server never
// ran the call, so the call is sent again, once, on a new session, which
// the client initializes and lists the tools of. Over stdio, which has no
// sessions, the fault is ignored. Over SSE the call's request was
// accepted (202) before its session's stream ended, so the client cannot
// know it did not run: it is reported cut off, not sent again, and the
// next call makes a new session.
func TestFaultDropSession(t *testing.T) {
	matrix(t, func(t *testing.T, tr string) {
		r := setup(t, tr, mcptest.Faults{DropSessionOnCall: 2}, mcp.Options{})
		if res := r.note("one"); res.IsError {
			t.Fatalf("note one: %+v", res)
		}
		if tr == "sse" {
			if res := r.note("two"); !res.IsError || !strings.Contains(res.Content, "may or may not have taken effect") {
				t.Fatalf("the call whose session was dropped: %+v", res)
			}
			if res := r.note("three"); res.IsError {
				t.Fatalf("the call after: %+v", res)
			}
			r.noteIs("one", "three")
			r.toldAre(mcp.Started, mcp.Dropped, mcp.Reconnected)
			if n := r.spy.sent("tools/call"); n != 3 {
				t.Errorf("%d tools/call requests, want 3: the cut-off call is not sent again", n)
			}
			return
		}
		if res := r.note("two"); res.IsError {
			t.Fatalf("the call whose session was dropped: %+v", res)
		}
		r.noteIs("one", "two") // run once
		if st := r.status(); st.State != mcp.StateUp {
			t.Errorf("after the drop: %+v", st)
		}
		if tr == "stdio" {
			r.toldAre(mcp.Started)
			return
		}
		r.toldAre(mcp.Started, mcp.Dropped, mcp.Reconnected)
		if n := r.spy.sent("initialize"); n != 2 {
			t.Errorf("%d initialize requests, want 2", n)
		}
		if n := r.spy.sent("tools/list"); n != 2 {
			t.Errorf("%d tools/list requests, want 2: the tools are listed again on the new session", n)
		}
		if n := r.spy.sent("tools/call"); n != 3 {
			t.Errorf("%d tools/call requests, want 3", n)
		}
	})
}

// A changed tool list: reverse appears in the registry, add leaves it —
// on the notification, and over HTTP also when the notification is lost
// (no standalone stream), by the tool list read again when the session
// is made again.
func TestFaultChangeTools(t *testing.T) {
	matrix(t, func(t *testing.T, tr string) {
		r := setup(t, tr, mcptest.Faults{ChangeToolsOnCall: 1}, mcp.Options{})
		if !r.has("add") || r.has("reverse") {
			t.Fatalf("tools before the change: %v", r.reg.Names())
		}
		if res := r.call("echo", map[string]string{"text": "x"}); res.IsError {
			t.Fatalf("echo: %+v", res)
		}
		eventually(t, "the registry follows the new list", func() bool { return r.has("reverse") && !r.has("add") })
		if res := r.call("reverse", map[string]string{"text": "abc"}); res.IsError || res.Content != "cba" {
			t.Errorf("reverse: %+v", res)
		}
		if st := r.status(); !slices.Contains(st.Tools, "mcp__faults__reverse") || slices.Contains(st.Tools, "mcp__faults__add") {
			t.Errorf("status tools %v", st.Tools)
		}
		r.toldAre(mcp.Started, mcp.ToolsChanged)
		r.toolsChanged(r.told()[1])
	})
	t.Run("http/notification lost", func(t *testing.T) {
		t.Parallel()
		r := setup(t, "http", mcptest.Faults{ChangeToolsOnCall: 1, DropSessionOnCall: 2}, mcp.Options{},
			func(r *rig, _ *mcp.Server) { r.spy.noStream.Store(true) })
		r.call("echo", map[string]string{"text": "x"}) // call 1: the list changes, unheard
		time.Sleep(200 * time.Millisecond)
		if r.has("reverse") {
			t.Fatalf("the notification was heard: the test proves nothing")
		}
		if res := r.note("after"); res.IsError { // call 2: dropped, sent again on a new session
			t.Fatalf("note: %+v", res)
		}
		if !r.has("reverse") || r.has("add") {
			t.Errorf("tools after the reconnect: %v", r.reg.Names())
		}
		r.toldAre(mcp.Started, mcp.Dropped, mcp.Reconnected, mcp.ToolsChanged)
		r.toolsChanged(r.told()[3])
	})
}

// An error result is the model's observation, marked as an error; the
// connection stays.
func TestFaultErrorResult(t *testing.T) {
	matrix(t, func(t *testing.T, tr string) {
		r := setup(t, tr, mcptest.Faults{ErrorOnCall: 2}, mcp.Options{})
		r.note("one")
		res := r.note("two")
		if !res.IsError || !strings.Contains(res.Content, "error injected on call 2 (ErrorOnCall)") {
			t.Fatalf("the error result: %+v", res)
		}
		r.noteIs("one")
		if n := r.counter(); n != 3 {
			t.Errorf("the call after is call %d, want 3 (same server, same count)", n)
		}
		if st := r.status(); st.State != mcp.StateUp {
			t.Errorf("after an error result: %+v", st)
		}
		if tr == "stdio" && r.processes() != 1 {
			t.Errorf("%d server processes, want 1", r.processes())
		}
		r.toldAre(mcp.Started)
	})
}

// Calls that find the connection dropped at once make it again once:
// one new process or session, not one per call, and none left behind.
func TestFaultConcurrentReconnect(t *testing.T) {
	matrix(t, func(t *testing.T, tr string) {
		r := setup(t, tr, mcptest.Faults{CrashOnCall: 1}, mcp.Options{}, func(r *rig, _ *mcp.Server) { r.faulty = 1 })
		if res := r.note("crash"); !res.IsError {
			t.Fatalf("the crashing call: %+v", res)
		}
		var wg sync.WaitGroup
		results := make([]tool.Result, 8)
		for i := range results {
			wg.Go(func() { results[i] = r.call("echo", map[string]string{"text": strconv.Itoa(i)}) })
		}
		wg.Wait()
		for i, res := range results {
			if res.IsError || res.Content != strconv.Itoa(i) {
				t.Errorf("call %d: %+v", i, res)
			}
		}
		switch tr {
		case "stdio":
			if n := r.processes(); n != 2 {
				t.Errorf("%d server processes, want 2", n)
			}
		case "http":
			if n := r.spy.sent("initialize"); n != 2 {
				t.Errorf("%d initialize requests, want 2", n)
			}
		}
		r.toldAre(mcp.Started, mcp.Dropped, mcp.Reconnected)
	})
}
