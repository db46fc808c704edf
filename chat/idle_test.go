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

// idleChat runs a chat over an App whose Notifier is h and whose model
// answers with replies, in session s1, on a pipe: write lines to pw, close
// it to end the chat, whose Run's error done gives. typed, if set, stands
// in for the terminal UI's last key. Call it inside the bubble.
func idleChat(t *testing.T, h *heard, typed func() time.Time, replies ...script.Response) (a *app.App, out *lockedBuilder, pw *io.PipeWriter, done <-chan error) {
	t.Helper()
	ctx := t.Context()
	pr, pw := io.Pipe()
	out = &lockedBuilder{}
	c := New(ctx, Options{In: pr, Out: out})
	t.Cleanup(c.Close)
	c.c.typed = typed
	a, err := app.Open(ctx, app.Config{Workspace: t.TempDir(), ConfigDir: "-", ClaudeDir: "-", Client: script.New().ScriptAny(replies...), Store: store.NewMemory(), Notifier: h})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	ls, err := a.Session(ctx, app.SessionOptions{ID: "s1", OnEvent: c.OnEvent})
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan error, 1)
	go func() { ch <- c.Run(ctx, a, ls) }()
	return a, out, pw, ch
}

// The chat tells the Notification hooks once it has waited IdleAfter for
// the next prompt — once per wait, however long — and again after the
// next turn, when it waits again; not while a turn runs.
func TestChatIdleNotification(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &heard{}
		a, out, pw, done := idleChat(t, h, nil, script.Text("hi"), script.Text("hi again"))

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
		var mu sync.Mutex
		var lastKey time.Time
		h := &heard{}
		_, _, pw, done := idleChat(t, h, func() time.Time { mu.Lock(); defer mu.Unlock(); return lastKey })

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
