package mcptest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orca-agent/orca/mcp/mcptest"
)

// counterOf is what the counter tool answers: the number of its call.
func counterOf(t *testing.T, cs *mcp.ClientSession) int {
	t.Helper()
	r, err := call(context.Background(), cs, "counter", nil)
	if err != nil || r.IsError {
		t.Fatalf("counter: %v, %v", r, err)
	}
	n, _ := r.StructuredContent.(map[string]any)["call"].(float64)
	return int(n)
}

// note writes a line to the note n.txt.
func note(ctx context.Context, cs *mcp.ClientSession, text string) (*mcp.CallToolResult, error) {
	return call(ctx, cs, "write_note", map[string]any{"name": "n.txt", "text": text})
}

// noteIs fails the test unless the note n.txt in dir holds these lines.
func noteIs(t *testing.T, dir string, lines ...string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "n.txt"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	want := ""
	for _, l := range lines {
		want += l + "\n"
	}
	if string(b) != want {
		t.Errorf("the note holds %q, want %q", b, want)
	}
}

// Connecting waits StartDelay (fake time), again on each connection.
func TestStartDelay(t *testing.T) {
	for _, v := range versions {
		t.Run("version="+v, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := mcptest.NewServer(mcptest.Faults{StartDelay: 2 * time.Second}, mcptest.Options{})
				for range 2 {
					start := time.Now()
					sv := serve(t, s, nil, v)
					if d := time.Since(start); d != 2*time.Second {
						t.Errorf("connecting took %v, want 2s", d)
					}
					if r, err := call(context.Background(), sv.cs, "echo", map[string]any{"text": "up"}); err != nil || textOf(r) != "up" {
						t.Errorf("echo: %v, %v", r, err)
					}
					sv.cs.Close()
				}
			})
		})
	}
}

// Every call waits SlowCall; one given up meanwhile has no effect.
func TestSlowCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		cs := serve(t, mcptest.NewServer(mcptest.Faults{SlowCall: time.Second}, mcptest.Options{Dir: dir}), nil, "").cs
		start := time.Now()
		if _, err := note(context.Background(), cs, "one"); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("the call took %v, want 1s", d)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		if _, err := note(ctx, cs, "two"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a call given up after 0.5s: %v", err)
		}
		synctest.Wait()
		noteIs(t, dir, "one")
		if n := counterOf(t, cs); n != 3 {
			t.Errorf("counter: call %d, want 3", n)
		}
	})
}

// Call N is never answered until the client gives it up; the calls around
// it are answered.
func TestHangOnCall(t *testing.T) {
	for _, v := range versions {
		t.Run("version="+v, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l logs
				dir := t.TempDir()
				cs := serve(t, mcptest.NewServer(mcptest.Faults{HangOnCall: 2}, mcptest.Options{Dir: dir, Logger: l.logger()}), nil, v).cs
				if _, err := note(context.Background(), cs, "one"); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				defer cancel()
				start := time.Now()
				if _, err := note(ctx, cs, "two"); !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("the hung call: %v", err)
				}
				if d := time.Since(start); d != time.Hour {
					t.Errorf("the hung call ended after %v, want the client's hour", d)
				}
				synctest.Wait() // the server hears the cancellation
				if !strings.Contains(l.String(), "hung call ended") || !strings.Contains(l.String(), "context canceled") {
					t.Errorf("the server's hung call did not end with the client's cancellation:\n%s", l.String())
				}
				if _, err := note(context.Background(), cs, "three"); err != nil {
					t.Fatal(err)
				}
				noteIs(t, dir, "one", "three")
			})
		})
	}
}

// The first N tools/list requests fail, over every connection to the
// server; the next is answered, and calls were never affected.
func TestFailListTools(t *testing.T) {
	s := mcptest.NewServer(mcptest.Faults{FailListTools: 2}, mcptest.Options{})
	for i := range 2 {
		cs := serve(t, s, nil, "").cs
		if _, err := cs.ListTools(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "FailListTools") {
			t.Errorf("tools/list %d: %v, want the fault's error", i+1, err)
		}
		if n := counterOf(t, cs); n != i+1 {
			t.Errorf("the call after list %d is call %d", i+1, n)
		}
	}
	cs := serve(t, s, nil, "").cs
	r, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(r.Tools) == 0 {
		t.Fatalf("tools/list 3: %v, %v", r, err)
	}
}

// Call N is a tool error, and the tool did not run.
func TestErrorOnCall(t *testing.T) {
	dir := t.TempDir()
	cs := serve(t, mcptest.NewServer(mcptest.Faults{ErrorOnCall: 2}, mcptest.Options{Dir: dir}), nil, "").cs
	for i, text := range []string{"one", "two", "three"} {
		r, err := note(context.Background(), cs, text)
		if err != nil {
			t.Fatal(err)
		}
		if r.IsError != (i == 1) {
			t.Errorf("call %d: isError %v", i+1, r.IsError)
		}
		if i == 1 && !strings.Contains(textOf(r), "ErrorOnCall") {
			t.Errorf("the error says %q", textOf(r))
		}
	}
	noteIs(t, dir, "one", "three")
}

// After call N the tool list changes and the client is told so, by the
// notification list_changed.
func TestChangeToolsOnCall(t *testing.T) {
	for _, v := range versions {
		t.Run("version="+v, func(t *testing.T) {
			changed := make(chan struct{}, 1)
			cs := serve(t, mcptest.NewServer(mcptest.Faults{ChangeToolsOnCall: 2}, mcptest.Options{}), &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
			}, v).cs
			checkToolsChange(t, cs, changed)
		})
	}
}

// checkToolsChange checks ChangeToolsOnCall: 2 over the session cs, whose
// client sends to changed on list_changed.
func checkToolsChange(t *testing.T, cs *mcp.ClientSession, changed <-chan struct{}) {
	t.Helper()
	ctx := context.Background()
	for i := range 2 {
		if r, err := call(ctx, cs, "add", map[string]any{"a": 1, "b": 1}); err != nil || r.IsError {
			t.Fatalf("add, call %d: %v, %v", i+1, r, err)
		}
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed")
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if strings.Contains(strings.Join(names, " "), "add") || !strings.Contains(strings.Join(names, " "), "reverse") {
		t.Errorf("tools after the change: %v", names)
	}
	if r, err := call(ctx, cs, "reverse", map[string]any{"text": "abc"}); err != nil || textOf(r) != "cba" {
		t.Errorf("reverse: %v, %v", r, err)
	}
	if r, err := call(ctx, cs, "add", map[string]any{"a": 1, "b": 1}); err == nil && !r.IsError {
		t.Errorf("add after its removal: %v", r)
	}
	select {
	case <-changed:
		t.Error("a second list_changed")
	case <-time.After(50 * time.Millisecond):
	}
}

// Under Serve a crash closes the connection: the call is not answered and
// did nothing, the client reads end of file, Serve says ErrCrashed. The
// same server served again counts on and does not crash again.
func TestCrashOnCall(t *testing.T) {
	for _, v := range versions {
		t.Run("version="+v, func(t *testing.T) {
			dir := t.TempDir()
			s := mcptest.NewServer(mcptest.Faults{CrashOnCall: 2}, mcptest.Options{Dir: dir})
			sv := serve(t, s, nil, v)
			if _, err := note(context.Background(), sv.cs, "one"); err != nil {
				t.Fatal(err)
			}
			if r, err := note(context.Background(), sv.cs, "two"); !errors.Is(err, io.EOF) {
				t.Fatalf("the crashing call: %v, %v; want io.EOF", r, err)
			}
			if err := sv.wait(); !errors.Is(err, mcptest.ErrCrashed) {
				t.Errorf("Serve: %v", err)
			}
			sv.cs.Wait()
			if _, err := note(context.Background(), sv.cs, "three"); !errors.Is(err, mcp.ErrConnectionClosed) {
				t.Errorf("a call after the crash: %v", err)
			}
			noteIs(t, dir, "one")

			again := serve(t, s, nil, v)
			// "three" never left the client: the counter's call is the third.
			if n := counterOf(t, again.cs); n != 3 {
				t.Errorf("counter after reconnecting: call %d, want 3", n)
			}
		})
	}
}

// DropSessionOnCall has no session to drop in memory: the call goes on.
func TestDropSessionInMemory(t *testing.T) {
	dir := t.TempDir()
	cs := serve(t, mcptest.NewServer(mcptest.Faults{DropSessionOnCall: 1}, mcptest.Options{Dir: dir}), nil, "").cs
	if r, err := note(context.Background(), cs, "one"); err != nil || r.IsError {
		t.Fatalf("%v, %v", r, err)
	}
	noteIs(t, dir, "one")
}

// When several faults name one call, the first of crash, drop, hang and
// error applies.
func TestFaultOrder(t *testing.T) {
	dir := t.TempDir()
	sv := serve(t, mcptest.NewServer(mcptest.Faults{HangOnCall: 1, ErrorOnCall: 1, CrashOnCall: 2, DropSessionOnCall: 2}, mcptest.Options{Dir: dir}), nil, "")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := note(ctx, sv.cs, "one"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hang and error on call 1: %v, want the hang", err)
	}
	note(context.Background(), sv.cs, "two")
	if err := sv.wait(); !errors.Is(err, mcptest.ErrCrashed) {
		t.Errorf("crash and drop on call 2: %v, want the crash", err)
	}
	noteIs(t, dir)
}

// From call N on, the connection answers nothing — the stalled call, a
// later call, a ping — and drops a cancellation; the client's own
// timeouts are all that end its requests. A new connection to the same
// server is answered.
func TestStallOnCall(t *testing.T) {
	for _, v := range versions {
		t.Run("version="+v, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l logs
				dir := t.TempDir()
				s := mcptest.NewServer(mcptest.Faults{StallOnCall: 2}, mcptest.Options{Dir: dir, Logger: l.logger()})
				cs := serve(t, s, nil, v).cs
				if _, err := note(context.Background(), cs, "one"); err != nil {
					t.Fatal(err)
				}
				for _, what := range []string{"the stalled call", "a call after it", "a ping"} {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					var err error
					switch what {
					case "a ping":
						err = cs.Ping(ctx, nil)
					default:
						_, err = note(ctx, cs, what)
					}
					cancel()
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("%s: %v, want no answer", what, err)
					}
				}
				synctest.Wait()
				if log := l.String(); !strings.Contains(log, "StallOnCall") || strings.Contains(log, "notifications/cancelled received") {
					t.Errorf("the log (a stalled server hears no cancellation):\n%s", log)
				}
				noteIs(t, dir, "one")
				// The call after the stalled one was dropped unread: not counted.
				again := serve(t, s, nil, v)
				if n := counterOf(t, again.cs); n != 3 {
					t.Errorf("counter on a new connection: call %d, want 3", n)
				}
			})
		})
	}
}

// sleep waits, reporting its progress to a client that asked for it
// (fake time); cancelled, it ends at once, and the server logs the
// cancellation it received and the sleep cut short.
func TestSleep(t *testing.T) {
	for _, v := range versions {
		t.Run("version="+v, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l logs
				var mu sync.Mutex
				var got []string
				cs := serve(t, mcptest.NewServer(mcptest.Faults{}, mcptest.Options{Logger: l.logger()}), &mcp.ClientOptions{
					ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
						mu.Lock()
						defer mu.Unlock()
						got = append(got, fmt.Sprintf("%v %v/%v %s", r.Params.ProgressToken, r.Params.Progress, r.Params.Total, r.Params.Message))
					},
				}, v).cs
				start := time.Now()
				params := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"seconds": 3, "steps": 3}}
				params.SetProgressToken("p1")
				r, err := cs.CallTool(context.Background(), params)
				if err != nil || textOf(r) != "slept 3s" || time.Since(start) != 3*time.Second {
					t.Fatalf("sleep: %v, %v after %v", r, err, time.Since(start))
				}
				synctest.Wait()
				mu.Lock()
				if want := []string{"p1 1/3 step 1 of 3", "p1 2/3 step 2 of 3", "p1 3/3 step 3 of 3"}; !slices.Equal(got, want) {
					t.Errorf("progress %q, want %q", got, want)
				}
				mu.Unlock()

				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				if _, err := call(ctx, cs, "sleep", map[string]any{"seconds": 60}); !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("a sleep given up: %v", err)
				}
				synctest.Wait()
				if log := l.String(); !strings.Contains(log, "notifications/cancelled received") || !strings.Contains(log, "sleep cut short") {
					t.Errorf("the server did not log the cancellation:\n%s", log)
				}
			})
		})
	}
}

// log sends what the client's level lets through: none before the client
// sets one (the SDK's rule), then those at or above it.
func TestLogTool(t *testing.T) {
	var mu sync.Mutex
	var got []string
	cs := serve(t, mcptest.NewServer(mcptest.Faults{}, mcptest.Options{}), &mcp.ClientOptions{
		//lint:ignore SA1019 logging is deprecated in protocol 2026-07-28 (SEP-2577); the tool is for clients that still take it
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, fmt.Sprintf("%s %s %v", r.Params.Level, r.Params.Logger, r.Params.Data))
		},
	}, "2025-11-25").cs
	ctx := context.Background()
	if _, err := call(ctx, cs, "log", map[string]any{"level": "error", "text": "unheard"}); err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 as above
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}
	for _, level := range []string{"info", "warning"} {
		if r, err := call(ctx, cs, "log", map[string]any{"level": level, "text": level, "count": 2}); err != nil || textOf(r) != "sent 2" {
			t.Fatalf("log: %v, %v", r, err)
		}
	}
	// Those held back were never sent: the two heard are the first two
	// that came.
	eventually(t, "two messages", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"warning orca-mcp-faults warning 1", "warning orca-mcp-faults warning 2"}; !slices.Equal(got, want) {
		t.Errorf("messages %q, want %q", got, want)
	}
}
