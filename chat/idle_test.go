package chat

import (
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/store"
)

// heard records notifications.
type heard struct {
	mu    sync.Mutex
	notes []hook.Notification
}

func (h *heard) Notify(n hook.Notification) { h.mu.Lock(); h.notes = append(h.notes, n); h.mu.Unlock() }
func (h *heard) all() []hook.Notification {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hook.Notification(nil), h.notes...)
}

// lockedBuilder is a strings.Builder the chat writes and the test reads.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuilder) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// The chat tells the Notification hooks once it has waited IdleAfter for
// the next prompt — once per wait, however long — and again after the
// next turn, when it waits again; not while a turn runs.
func TestChatIdleNotification(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		pr, pw := io.Pipe()
		out := &lockedBuilder{}
		c := New(ctx, Options{In: pr, Out: out})
		defer c.Close()
		h := &heard{}
		model := script.New().ScriptAny(script.Text("hi"), script.Text("hi again"))
		a, err := app.Open(ctx, app.Config{Workspace: t.TempDir(), ConfigDir: "-", ClaudeDir: "-", Client: model, Store: store.NewMemory(), Notifier: h})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		ls, err := a.Session(ctx, app.SessionOptions{ID: "s1", OnEvent: c.OnEvent})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx, a, ls) }()

		time.Sleep(IdleAfter - time.Second)
		synctest.Wait()
		if n := len(h.all()); n != 0 {
			t.Fatalf("%d notifications before the chat waited a minute", n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		notes := h.all()
		if len(notes) != 1 || notes[0].Type != hook.NotifyIdle || notes[0].Message != "orca is waiting for your input" || notes[0].SessionID != "s1" || notes[0].Cwd != a.Root() {
			t.Fatalf("after a minute: %+v", notes)
		}
		time.Sleep(10 * IdleAfter)
		synctest.Wait()
		if n := len(h.all()); n != 1 {
			t.Fatalf("%d notifications after ten minutes more, want still 1", n)
		}

		if _, err := io.WriteString(pw, "hello\n"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if !strings.Contains(out.String(), "hi") {
			t.Fatalf("the turn did not answer:\n%s", out.String())
		}
		time.Sleep(IdleAfter + time.Second)
		synctest.Wait()
		if notes := h.all(); len(notes) != 2 || notes[1].Type != hook.NotifyIdle {
			t.Fatalf("a minute after the turn: %+v", notes)
		}

		pw.Close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// Typing a prompt is not being idle: with a key pressed at 30 s, the
// notification comes a minute after that key, not at 60 s.
func TestChatIdleWaitsForTheLastKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		pr, pw := io.Pipe()
		c := New(ctx, Options{In: pr, Out: &lockedBuilder{}})
		defer c.Close()
		var mu sync.Mutex
		var lastKey time.Time
		c.c.typed = func() time.Time { mu.Lock(); defer mu.Unlock(); return lastKey }
		h := &heard{}
		a, err := app.Open(ctx, app.Config{Workspace: t.TempDir(), ConfigDir: "-", ClaudeDir: "-", Client: script.New(), Store: store.NewMemory(), Notifier: h})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		ls, err := a.Session(ctx, app.SessionOptions{ID: "s1", OnEvent: c.OnEvent})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx, a, ls) }()

		time.Sleep(IdleAfter / 2)
		mu.Lock()
		lastKey = time.Now()
		mu.Unlock()
		time.Sleep(IdleAfter/2 + time.Second)
		synctest.Wait()
		if n := len(h.all()); n != 0 {
			t.Fatalf("%d notifications 31 s after a key", n)
		}
		time.Sleep(IdleAfter / 2)
		synctest.Wait()
		if n := len(h.all()); n != 1 {
			t.Fatalf("%d notifications a minute after the last key, want 1", n)
		}
		pw.Close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
