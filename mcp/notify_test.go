//lint:file-ignore SA1019 roots, sampling and logging are deprecated in the 2026-07-28 protocol (SEP-2577); these tests are of orca's answers to servers that use them

package mcp_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orca-agent/orca/mcp"
	"github.com/orca-agent/orca/mcp/mcptest"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

// Each call carries a progress token of its own: the server's progress
// notifications reach whoever watches the call (tool.Report), in order. The
// last, sent just before the answer, may lose the race to it (the SDK
// hands notifications to a goroutine of their own): a call that has its
// answer hears no more of its progress.
func TestProgress(t *testing.T) {
	matrix(t, func(t *testing.T, tr string) {
		r := setup(t, tr, mcptest.Faults{}, mcp.Options{})
		var mu sync.Mutex
		var got []tool.Progress
		ctx := tool.WithProgress(t.Context(), func(p tool.Progress) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, p)
		})
		res := r.reg.Call(ctx, &tool.Call{ID: "c1", Name: "mcp__faults__sleep", Input: []byte(`{"seconds": 1.5, "steps": 3}`)})
		if res.IsError || res.Content != "slept 1.5s" {
			t.Fatalf("sleep: %+v", res)
		}
		time.Sleep(100 * time.Millisecond) // a notification that came late would be in by now
		mu.Lock()
		defer mu.Unlock()
		want := []tool.Progress{{Progress: 1, Total: 3, Message: "step 1 of 3"}, {Progress: 2, Total: 3, Message: "step 2 of 3"}, {Progress: 3, Total: 3, Message: "step 3 of 3"}}
		if len(got) < 2 || !slices.Equal(got, want[:len(got)]) {
			t.Errorf("progress %+v, want %+v (the last may be missing)", got, want)
		}
	})
}

// A server's log messages reach Options.OnLog from the level asked for
// up (logging/setLevel, or the call's _meta in the sessionless protocol),
// bounded: of a burst, the first logBurst are told, and the next message
// told says how many were dropped.
func TestServerLog(t *testing.T) {
	matrix(t, func(t *testing.T, tr string) {
		var mu sync.Mutex
		var got []mcp.Log
		r := setup(t, tr, mcptest.Faults{}, mcp.Options{LogLevel: "notice", OnLog: func(l mcp.Log) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, l)
		}})
		logs := func() []mcp.Log {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(got)
		}
		if res := r.call("log", map[string]any{"level": "info", "text": "below the level"}); res.IsError {
			t.Fatalf("log: %+v", res)
		}
		if res := r.call("log", map[string]any{"level": "warning", "text": "flood", "count": 30}); res.IsError {
			t.Fatalf("log: %+v", res)
		}
		eventually(t, "the first messages of the flood", func() bool { return len(logs()) >= 20 })
		time.Sleep(time.Second) // the bound lets one more through after this
		if res := r.call("log", map[string]any{"level": "error", "text": "after"}); res.IsError {
			t.Fatalf("log: %+v", res)
		}
		eventually(t, "the message after the flood", func() bool {
			l := logs()
			return len(l) > 0 && l[len(l)-1].Message == "after"
		})
		l := logs()
		if first := l[0]; first.Message != "flood 1" || first.Level != "warning" || first.Server != "faults" || first.RuntimeID != "rt" || first.Logger != "orca-mcp-faults" {
			t.Errorf("the first message: %+v", first)
		}
		last := l[len(l)-1]
		if len(l) < 21 || len(l)+last.Dropped != 31 || last.Level != "error" {
			t.Errorf("%d told, the last %+v: want at least 20 of the 30, and the rest said dropped", len(l), last)
		}
		for _, m := range l {
			if m.Message == "below the level" {
				t.Errorf("a message below the level: %+v", m)
			}
		}
	})
}

// Without OnLog, a server's log messages go to Options.Logger at their
// level.
func TestServerLogToLogger(t *testing.T) {
	var l logs
	r := setup(t, "stdio", mcptest.Faults{}, mcp.Options{Logger: slog.New(slog.NewTextHandler(&l, nil))})
	if res := r.call("log", map[string]any{"level": "error", "text": "disk full"}); res.IsError {
		t.Fatalf("log: %+v", res)
	}
	eventually(t, "the message in the log", func() bool {
		s := l.String()
		return strings.Contains(s, "level=ERROR") && strings.Contains(s, `msg="MCP server log" server=faults severity=error message="disk full"`)
	})
}

// rootsServer is a server whose tools tell what the client offers: its
// roots (roots/list) and its model (sampling/createMessage).
func rootsServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "asker", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "roots", Description: "Lists the client's roots."},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			if req.Session.InitializeParams().Capabilities.RootsV2 == nil {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "no roots declared"}}}, nil, nil
			}
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return nil, nil, err
			}
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.Name+" "+r.URI)
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Join(uris, "\n")}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "ask_model", Description: "Asks the client's model."},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			declared := req.Session.InitializeParams().Capabilities.Sampling != nil
			_, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 10,
				Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "hi"}}}})
			text := "sampling declared: " + map[bool]string{true: "yes", false: "no"}[declared] + "; "
			if err != nil {
				text += err.Error()
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil, nil
		})
	return s
}

// The roots are the runtime's workspace, as a file:// URI; outside a
// runtime there are none, and none are declared. Sampling is not
// declared, and a server that asks all the same is refused, told why.
func TestRootsAndSampling(t *testing.T) {
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return rootsServer() }, nil))
	t.Cleanup(hs.Close)
	srv := []mcp.Server{{Name: "asker", Type: "http", URL: hs.URL}}

	dir := filepath.Join(t.TempDir(), "my project")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fs, err := workspace.OpenLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	p := mcp.NewProvider(srv, mcp.Options{})
	reg := tool.NewRegistry()
	var closers []io.Closer
	if _, err := p.Tools(tool.Env{RuntimeID: "rt", FS: fs, Registry: reg, OnClose: func(c io.Closer) { closers = append(closers, c) }}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range closers {
			c.Close()
		}
	})
	res := reg.Call(t.Context(), &tool.Call{ID: "c", Name: "mcp__asker__roots", Input: []byte(`{}`)})
	if want := "my project file://" + strings.ReplaceAll(filepath.ToSlash(fs.Root()), " ", "%20"); res.IsError || res.Content != want {
		t.Errorf("roots: %+v, want %q", res, want)
	}
	res = reg.Call(t.Context(), &tool.Call{ID: "c", Name: "mcp__asker__ask_model", Input: []byte(`{}`)})
	if res.IsError || !strings.Contains(res.Content, "sampling declared: no;") || !strings.Contains(res.Content, mcp.ErrSamplingRefused) {
		t.Errorf("sampling: %+v", res)
	}

	_, outside := provider(t, srv, mcp.Options{})
	if res := call(t, outside, "mcp__asker__roots", map[string]any{}); res.IsError || res.Content != "no roots declared" {
		t.Errorf("roots outside a runtime: %+v", res)
	}
}

// logs collects what a logger writes.
type logs struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
