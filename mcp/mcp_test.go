package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/orca-agent/orca/internal/tailbuf"
	"github.com/orca-agent/orca/mcp"
	"github.com/orca-agent/orca/tool"
)

// The test binary is also the stdio server of these tests.
const serverEnv = "ORCA_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) != "" {
		serve()
		return
	}
	if cfg := os.Getenv(faultsEnv); cfg != "" {
		serveFaults(cfg)
		return
	}
	// The SDK ends its list_changed subscription in a goroutine of its own
	// that tells the server, giving up after 5 seconds
	// (notifyCancellationTimeout): bounded, and the SDK's.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/modelcontextprotocol/go-sdk/mcp.callSubscriptionsListen.func1"))
}

type echoIn struct {
	Text string `json:"text"`
}

type noteIn struct {
	Name, Text string
}

// testServer has tools with effects the tests can check.
func testServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "orca-test", Version: "1.0"}, nil)
	yes := true
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes its text.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "write_note", Description: "Writes a note.", Annotations: &sdk.ToolAnnotations{DestructiveHint: &yes}},
		func(ctx context.Context, _ *sdk.CallToolRequest, in noteIn) (*sdk.CallToolResult, any, error) {
			if err := os.WriteFile(in.Name, []byte(in.Text), 0o644); err != nil {
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}, nil, nil
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "written"}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Exits the server.", Annotations: &sdk.ToolAnnotations{}},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "hang", Description: "Never answers."},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	return s
}

func serve() {
	if err := testServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil && err != io.EOF {
		os.Exit(1)
	}
}

// provider starts servers for a runtime-like env and closes them with the
// test.
func provider(t *testing.T, servers []mcp.Server, opts mcp.Options) (*mcp.Provider, *tool.Registry) {
	t.Helper()
	p, reg, _ := providerCommands(t, servers, opts)
	return p, reg
}

// providerCommands is provider, with the commands (the servers' prompts)
// the provider handed the runtime.
func providerCommands(t *testing.T, servers []mcp.Server, opts mcp.Options) (*mcp.Provider, *tool.Registry, tool.Expander) {
	t.Helper()
	p := mcp.NewProvider(servers, opts)
	reg := tool.NewRegistry()
	var closers []io.Closer
	var commands tool.Expander
	tools, err := p.Tools(tool.Env{RuntimeID: "rt", Registry: reg, OnClose: func(c io.Closer) { closers = append(closers, c) },
		OnExpander: func(x tool.Expander) { commands = x }})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if err := reg.Add(tl); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, c := range closers {
			if err := c.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		}
	})
	return p, reg, commands
}

func stdioServer(t *testing.T) mcp.Server {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcp.Server{Name: "local", Command: exe, Env: map[string]string{serverEnv: "1"}}
}

func call(t *testing.T, reg *tool.Registry, name string, args any) tool.Result {
	t.Helper()
	raw, _ := json.Marshal(args)
	if err := reg.Validate(name, raw); err != nil {
		return tool.Errorf("%v", err)
	}
	return reg.Call(t.Context(), &tool.Call{ID: "c", Name: name, Input: raw})
}

// A stdio server's tools are orca tools: named mcp__<server>__<tool>,
// with their schemas and annotations; their calls run on the server.
func TestStdioServerTools(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	p, reg := provider(t, []mcp.Server{stdioServer(t)}, mcp.Options{})
	names := reg.Names()
	want := []string{"mcp__local__crash", "mcp__local__echo", "mcp__local__hang", "mcp__local__write_note"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("tools %v, want %v", names, want)
	}
	echo, _ := reg.Lookup("mcp__local__echo")
	note, _ := reg.Lookup("mcp__local__write_note")
	if !tool.TraitsOf(echo).ReadOnly || !tool.TraitsOf(echo).Idempotent || tool.TraitsOf(note).ReadOnly {
		t.Errorf("traits: echo %+v, write_note %+v", tool.TraitsOf(echo), tool.TraitsOf(note))
	}
	if res := call(t, reg, "mcp__local__echo", map[string]string{"text": "hi"}); res.IsError || res.Content != "echo: hi" {
		t.Errorf("echo: %+v", res)
	}
	if res := call(t, reg, "mcp__local__echo", map[string]any{"text": 3}); !res.IsError {
		t.Errorf("an invalid input reached the server: %+v", res)
	}
	if res := call(t, reg, "mcp__local__write_note", map[string]string{"Name": "note.txt", "Text": "from the server"}); res.IsError {
		t.Errorf("write_note: %+v", res)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "note.txt")); string(data) != "from the server" {
		t.Errorf("note.txt = %q", data)
	}
	if st := p.Status(); len(st) != 1 || st[0].State != mcp.StateUp || st[0].Server != "orca-test 1.0" || len(st[0].Tools) != 4 {
		t.Errorf("status %+v", st)
	}
}

// A server that crashes during a call: the call may or may not have taken
// effect (it is not sent again: the tool is not idempotent); the next
// call starts the server again.
func TestCrashReconnects(t *testing.T) {
	t.Chdir(t.TempDir())
	p, reg := provider(t, []mcp.Server{stdioServer(t)}, mcp.Options{})
	res := call(t, reg, "mcp__local__crash", map[string]any{})
	if !res.IsError || !strings.Contains(res.Content, "may or may not have taken effect") {
		t.Fatalf("crash: %+v", res)
	}
	if st := p.Status()[0]; st.State != mcp.StateDown {
		t.Errorf("after the crash: %+v", st)
	}
	if res := call(t, reg, "mcp__local__echo", map[string]string{"text": "again"}); res.IsError || res.Content != "echo: again" {
		t.Errorf("after the crash, echo: %+v", res)
	}
}

// A call the server never answers ends at the timeout, saying so, and
// cannot hang the turn; the server is started afresh for the next call.
func TestHangTimesOut(t *testing.T) {
	t.Chdir(t.TempDir())
	srv := stdioServer(t)
	srv.Timeout = 300 * time.Millisecond
	_, reg := provider(t, []mcp.Server{srv}, mcp.Options{})
	start := time.Now()
	res := call(t, reg, "mcp__local__hang", map[string]any{})
	if !res.IsError || !strings.Contains(res.Content, "did not answer") || !strings.Contains(res.Content, "may or may not have taken effect") {
		t.Fatalf("hang: %+v", res)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the hung call took %v", took)
	}
	if res := call(t, reg, "mcp__local__echo", map[string]string{"text": "x"}); res.IsError {
		t.Errorf("after the timeout: %+v", res)
	}
}

// A server that does not start is reported; the others' tools come.
func TestServerThatDoesNotStart(t *testing.T) {
	t.Chdir(t.TempDir())
	p, reg := provider(t, []mcp.Server{{Name: "missing", Command: "no-such-mcp-server-x"}, stdioServer(t)}, mcp.Options{StartTimeout: 5 * time.Second})
	if len(reg.Names()) != 4 {
		t.Errorf("tools %v", reg.Names())
	}
	st := p.Status()
	if st[0].State != mcp.StateFailed || !strings.Contains(st[0].Error, "no-such-mcp-server-x") {
		t.Errorf("status %+v", st[0])
	}
}

// A streamable HTTP server: headers sent, tools listed and called; a new
// tool list (notifications/tools/list_changed) reaches the registry, and
// a vanished tool leaves it.
func TestHTTPServerAndListChanged(t *testing.T) {
	s := testServer()
	var auth atomic.Value
	h := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		auth.Store(r.Header.Get("Authorization"))
		return s
	}, nil)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close) // after the provider's, which the test registers later
	_, reg := provider(t, []mcp.Server{{Name: "remote", Type: "http", URL: hs.URL, Headers: map[string]string{"Authorization": "Bearer t0k"}}}, mcp.Options{})
	if res := call(t, reg, "mcp__remote__echo", map[string]string{"text": "over http"}); res.IsError || res.Content != "echo: over http" {
		t.Fatalf("echo: %+v", res)
	}
	if got, _ := auth.Load().(string); got != "Bearer t0k" {
		t.Errorf("Authorization = %q", got)
	}
	sdk.AddTool(s, &sdk.Tool{Name: "fresh", Description: "A new tool."},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "fresh"}}}, nil, nil
		})
	s.RemoveTools("hang")
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, fresh := reg.Lookup("mcp__remote__fresh")
		_, hang := reg.Lookup("mcp__remote__hang")
		if fresh && !hang {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the registry did not follow the new list: %v", reg.Names())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if res := call(t, reg, "mcp__remote__fresh", map[string]any{}); res.IsError || res.Content != "fresh" {
		t.Errorf("fresh: %+v", res)
	}
}

// Names past 64 characters are cut and made unique by a hash; characters
// a tool name cannot have become _.
func TestToolName(t *testing.T) {
	if got := mcp.ToolName("my server", "read.file"); got != "mcp__my_server__read_file" {
		t.Errorf("ToolName = %q", got)
	}
	long := mcp.ToolName("s", strings.Repeat("x", 80))
	if len(long) != 64 || long == mcp.ToolName("s", strings.Repeat("x", 81)) {
		t.Errorf("long names: %q", long)
	}
}

// A remote server that wants authorization is reported by name, saying
// how to give it a token; it offers no tools and hangs nothing.
func TestServerThatWantsAuthorization(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="https://auth.example.com/.well-known/oauth-protected-resource"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	t.Cleanup(hs.Close)
	p, reg := provider(t, []mcp.Server{{Name: "private", Type: "http", URL: hs.URL}, {Name: "old", Type: "sse", URL: hs.URL},
		{Name: "keyed", Type: "http", URL: hs.URL, Headers: map[string]string{"authorization": "Bearer stale"}}}, mcp.Options{StartTimeout: 5 * time.Second})
	if len(reg.Names()) != 0 {
		t.Errorf("tools %v", reg.Names())
	}
	// Streamable HTTP: a sign-in (OAuth) is what it needs.
	st := p.Status()[0]
	if st.State != mcp.StateNeedsLogin || st.Error != "MCP server private asks for authorization: sign in with orca mcp login private" {
		t.Errorf("status %+v", st)
	}
	// SSE, or a server whose headers sign in: a token in the headers.
	for _, st := range p.Status()[1:] {
		if st.State != mcp.StateFailed || !strings.Contains(st.Error, "asks for authorization") || !strings.Contains(st.Error, hs.URL) || !strings.Contains(st.Error, `"headers"`) {
			t.Errorf("status %+v", st)
		}
	}
}

// Two tools of a server whose names are one once made safe: the first the
// server lists is offered under it, and calls reach that one, every time
// the list is read; the other is not offered, and a WARN says why.
func TestToolNamesThatCollide(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "collide", Version: "1.0"}, nil)
	for _, name := range []string{"find.files", "find_files"} {
		sdk.AddTool(s, &sdk.Tool{Name: name, Description: "Finds files."},
			func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "I am " + name}}}, nil, nil
			})
	}
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(hs.Close)
	logs := &tailbuf.Buffer{Max: 1 << 20}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	_, reg := provider(t, []mcp.Server{{Name: "remote", Type: "http", URL: hs.URL}}, mcp.Options{Logger: logger})
	if names := reg.Names(); strings.Join(names, ",") != "mcp__remote__find_files" {
		t.Fatalf("tools %v", names)
	}
	for range 3 {
		if res := call(t, reg, "mcp__remote__find_files", map[string]any{}); res.IsError || res.Content != "I am find.files" {
			t.Fatalf("the call reached %+v, want find.files, the first listed", res)
		}
	}
	if got, _ := logs.Tail(); !strings.Contains(got, "its name is mcp__remote__find_files once made safe, as find.files's is") {
		t.Errorf("no WARN for find_files:\n%s", got)
	}
}
