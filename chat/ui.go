package chat

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"

	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/tui"
)

// chatUI is the chat's input on a real terminal: a bubbletea program
// (tui.Input) owns the terminal's bottom lines — the editor, the queue,
// the spinner, the approval question, the status line — and everything
// the chat shows is printed above it, one whole line at a time (printer).
// What the person types reaches the chat loop as the lines readLines
// would have read, in order; answers to approval questions go apart, so
// that no line typed ahead can answer one.
type chatUI struct {
	p       *tea.Program
	out     *printer
	lines   chan line
	answers chan string
	done    chan struct{} // closed when the program has returned

	mu     sync.Mutex
	inbox  []line        // typed, not yet taken by the chat loop
	wake   chan struct{} // poked when inbox grows
	closed bool          // Ctrl-D: nothing more comes

	// On the events' goroutine only:
	writing bool              // the model call streams text
	used    llm.Usage         // the turn's model calls so far
	heads   map[string]string // the running tool calls' lines, by tool use id

	// typed is when a key was last pressed (Unix nanoseconds; 0: never).
	typed atomic.Int64

	lastMu   sync.Mutex
	lastHead string // the last tool call's line, for Ctrl-O
	lastOut  string // its output, whole
}

// terminalUI reports whether the chat draws its terminal UI: both its
// input and output are terminals (real ones: the tests' fakes get the
// line-by-line chat).
func terminalUI(stdin io.Reader, stdout io.Writer) (in, out *os.File, ok bool) {
	in, ok1 := stdin.(*os.File)
	out, ok2 := stdout.(*os.File)
	return in, out, ok1 && ok2 && tui.IsTerminal(in) && tui.IsTerminal(out)
}

// newUI starts the UI's program on in and out; sigs takes its Ctrl-C;
// expand shows a note above the program (the chat's console: Ctrl-O's
// output goes where the turns go, between their lines).
func newUI(ctx context.Context, in, out *os.File, theme tui.Theme, h *tui.History, sigs chan<- os.Signal, expand func(string)) *chatUI {
	u := &chatUI{lines: make(chan line), answers: make(chan string, 8), done: make(chan struct{}), wake: make(chan struct{}, 1)}
	model := tui.NewInput(theme, h, tui.Handlers{
		Submit: func(s string) { u.push(line{s: s + "\n"}) },
		Answer: func(k string) {
			select {
			case u.answers <- k:
			default:
			}
		},
		Interrupt: func() {
			select {
			case sigs <- os.Interrupt:
			default:
			}
		},
		EOF:   u.end,
		Paste: func() { u.push(line{s: "/paste\n"}) },
		Typed: func() { u.typed.Store(time.Now().UnixNano()) },
		Expand: func() {
			// On a goroutine of its own: printing waits for the program,
			// whose goroutine this is.
			go func() {
				if expand != nil {
					expand(u.lastOutput())
				}
			}()
		},
	})
	u.p = tea.NewProgram(model, tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out), tea.WithoutSignalHandler())
	u.out = &printer{p: u.p, width: func() int {
		w, _, err := term.GetSize(int(out.Fd()))
		if err != nil {
			return 0
		}
		return w
	}}
	go func() {
		defer close(u.done)
		u.p.Run()
		u.end() // the program is gone: so is the input
	}()
	go u.forward()
	return u
}

// lastTyped is when a key was last pressed (zero: never).
func (u *chatUI) lastTyped() time.Time {
	if n := u.typed.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

func (u *chatUI) push(l line) {
	u.mu.Lock()
	if !u.closed {
		u.inbox = append(u.inbox, l)
	}
	u.mu.Unlock()
	u.poke()
}

func (u *chatUI) end() {
	u.mu.Lock()
	u.closed = true
	u.mu.Unlock()
	u.poke()
}

func (u *chatUI) poke() {
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

// forward hands the lines typed to the chat loop in order, then closes
// lines at the end of the input.
func (u *chatUI) forward() {
	defer close(u.lines)
	for {
		u.mu.Lock()
		var next *line
		if len(u.inbox) > 0 {
			next = &u.inbox[0]
			u.inbox = u.inbox[1:]
		}
		closed := u.closed
		u.mu.Unlock()
		switch {
		case next != nil:
			select {
			case u.lines <- *next:
			case <-u.done:
				return
			}
		case closed:
			return
		default:
			select {
			case <-u.wake:
			case <-u.done:
				return
			}
		}
	}
}

// send gives the program msg, unless it has ended.
func (u *chatUI) send(msg tea.Msg) {
	select {
	case <-u.done:
	default:
		u.p.Send(msg)
	}
}

// event tells the UI what a turn's event means for its spinner, queue
// and question.
func (u *chatUI) event(ev event.Event) {
	if ev.Depth > 0 {
		return
	}
	switch d := ev.Data.(type) {
	case *event.TurnStartedData:
		u.used = llm.Usage{}
		u.send(tui.Entered{})
		u.send(tui.Busy{Activity: "Thinking…", Since: time.Now()})
	case *event.UserMessageData:
		u.send(tui.Entered{})
	case *event.LLMCallStartedData:
		u.writing = false
		what := "Thinking…"
		if t := tui.Tokens(u.used); len(t) > 0 {
			what += " · " + strings.Join(t, " · ")
		}
		u.send(tui.Busy{Activity: what, Since: time.Now()})
	case *event.LLMCallData: // completed or failed
		if d.Usage != nil {
			u.used = u.used.Add(*d.Usage)
		}
		// What the model wrote is printed: no spinner under it until
		// the turn does something else.
		u.send(tui.Busy{})
	case *event.LLMDeltaData:
		if d.Delta.Type == llm.DeltaText && !u.writing {
			u.writing = true
			u.send(tui.Busy{Activity: "Writing…", Since: time.Now()})
		}
	case *event.ToolStartedData:
		// Only the start says how the tool shows the call.
		head := tui.ToolLine(d.ToolName, d.Input, tool.Display{Summary: d.Summary, Detail: d.Detail})
		if u.heads == nil {
			u.heads = make(map[string]string)
		}
		u.heads[d.ToolUseID] = head
		u.send(tui.Busy{Activity: head, Since: time.Now()})
	case *event.ToolData: // the call's end
		head := u.heads[d.ToolUseID]
		delete(u.heads, d.ToolUseID)
		if head == "" {
			head = d.ToolName
		}
		u.lastMu.Lock()
		u.lastHead, u.lastOut = head, d.Output
		u.lastMu.Unlock()
	case *event.CompactionData:
		if ev.Name == event.CompactionStarted {
			u.send(tui.Busy{Activity: "Compacting the conversation…", Since: time.Now()})
		}
	}
}

// lastOutput returns the last tool call's line and its whole output, as
// Ctrl-O shows them; "" before any call.
func (u *chatUI) lastOutput() string {
	u.lastMu.Lock()
	head, out := u.lastHead, u.lastOut
	u.lastMu.Unlock()
	if head == "" {
		return "No tool call yet: Ctrl-O shows the last one's output whole."
	}
	out = strings.TrimRight(tui.Sanitize(out), "\n")
	if strings.TrimSpace(out) == "" {
		out = "(no output)"
	}
	n := strings.Count(out, "\n") + 1
	return tui.Indent("⎿  ", "   ", head+" · "+tui.Plural(n, "line")+", whole:\n"+out)
}

// drainAnswers forgets keys pressed before a question was asked.
func (u *chatUI) drainAnswers() {
	for {
		select {
		case <-u.answers:
		default:
			return
		}
	}
}

// close erases the UI's lines and waits for the program to end.
func (u *chatUI) close() {
	u.out.flush()
	u.send(tui.Quit{})
	<-u.done
}

// printer prints what is written to it above the program, whole lines at
// a time; flush prints a line still open (an approval question's "›").
type printer struct {
	p     *tea.Program
	width func() int // the terminal's width now (0: unknown)
	mu    sync.Mutex
	buf   bytes.Buffer
}

func (w *printer) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	if i := bytes.LastIndexByte(w.buf.Bytes(), '\n'); i >= 0 {
		s := string(w.buf.Next(i + 1))
		w.println(w.wrap(strings.TrimSuffix(s, "\n")))
	}
	return len(b), nil
}

// wrap breaks the lines of s that are wider than the terminal: the
// program erases what it printed over only up to the width it knows, so
// a line the terminal wrapped would leave the rest of the old screen line.
func (w *printer) wrap(s string) string {
	width := 0
	if w.width != nil {
		width = w.width()
	}
	if width <= 1 {
		return s
	}
	// At spaces (a word longer than a line is broken): /help's and
	// /model's lines used to break mid-word.
	return ansi.Wrap(s, width-1, "")
}

// Terminal is the terminal's width: the approver wraps its question's
// reason to it, with the reason's indent.
func (w *printer) Terminal() (int, bool) {
	if w.width == nil {
		return 0, false
	}
	n := w.width()
	return n, n > 0
}

func (w *printer) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf.Len() > 0 {
		w.println(w.wrap(w.buf.String()))
		w.buf.Reset()
	}
}

// println prints s above the program; nothing once it has ended
// (Program.Println would wait for it for ever).
func (w *printer) println(s string) { w.p.Send(tea.Println(s)()) }

var _ io.Writer = (*printer)(nil)
