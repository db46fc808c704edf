package tui

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"

	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/policy"
)

// IsTerminal reports whether f (a stream: standard input or output) is a
// terminal: an *os.File on one, or a TerminalWriter that says it is.
func IsTerminal(f any) bool {
	switch f := f.(type) {
	case TerminalWriter:
		_, ok := f.Terminal()
		return ok
	case *os.File:
		return term.IsTerminal(int(f.Fd()))
	}
	return false
}

// Approver is a policy.Approver that asks the person at the terminal about
// each call the policy asks about: y allows it once, a allows it and what
// the policy suggests (such as Bash(go test:*)) for the rest of the
// session, n denies it. It asks one question at a time, and draws it the
// same way wherever it asks: the question (in reverse video), the policy's
// reason wrapped to the terminal under it, the keys, and, once answered,
// the answer — so that what the call prints next starts on a line of its
// own. Read and Out are required; the rest is for a program that owns the
// terminal (orca chat).
type Approver struct {
	// Read reads the next answer the person gives, giving up when ctx
	// ends: a key (KeyReader, which takes one key at a terminal) or a line
	// (LineReader).
	Read func(ctx context.Context) (string, error)
	// Out is where the question is written.
	Out io.Writer
	// Begin and End, if set, frame each question, from before it is
	// shown until it is answered: a program that reads the terminal
	// itself hands the lines typed meanwhile to Read.
	Begin func(ctx context.Context) error
	End   func()
	// Ready, if set, waits until the screen is free for the question about
	// a tool use (ApprovalGate.Wait).
	Ready func(ctx context.Context, toolUseID string) error
	// Asking, if set, is told each question as it is asked — the call,
	// the answer keys and what they do — after Begin: a terminal UI shows
	// it in a bar of its own, with the keys, which Out then does not
	// repeat (Ask).
	Asking func(question, keys, choices string)

	mu sync.Mutex
}

type line struct {
	s   string
	err error
}

// LineReader returns a function that reads the lines of in, a stream that
// may block for ever (a terminal), giving up when the caller's context
// ends. The read goes on in the background then, and the next call takes
// its line. Calls must not overlap. The end of in reads as the error "end
// of input".
func LineReader(in io.Reader) func(ctx context.Context) (string, error) {
	r := &lineReader{in: bufio.NewReader(in)}
	return r.readLine
}

type lineReader struct {
	in *bufio.Reader
	// pending is a read that a cancelled call left running; the next call
	// takes its line instead of starting a second reader.
	pending chan line
}

func (r *lineReader) readLine(ctx context.Context) (string, error) {
	if r.pending == nil {
		ch := make(chan line, 1)
		go func() {
			s, err := r.in.ReadString('\n')
			ch <- line{s, err}
		}()
		r.pending = ch
	}
	select {
	case l := <-r.pending:
		r.pending = nil
		return l.s, EndOfInput(l.err)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// KeyReader returns a function that reads one key at a time from in,
// with the terminal in raw mode for that read alone (as orca chat takes
// an answer): no Enter needed. A stream that is no terminal is read a
// line at a time (LineReader). Ctrl-C is the interrupt it would have been
// outside raw mode: the process gets SIGINT, and the read goes on until
// ctx ends.
func KeyReader(in io.Reader) func(ctx context.Context) (string, error) {
	f, ok := in.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return LineReader(in)
	}
	r := &keyReader{f: f}
	return r.readKey
}

type keyReader struct {
	f       *os.File
	pending chan line
}

func (r *keyReader) readKey(ctx context.Context) (string, error) {
	fd := int(r.f.Fd())
	old, err := term.MakeRaw(fd)
	if err != nil {
		return LineReader(r.f)(ctx)
	}
	defer term.Restore(fd, old)
	for {
		if r.pending == nil {
			ch := make(chan line, 1)
			go func() {
				var b [1]byte
				n, err := r.f.Read(b[:])
				ch <- line{string(b[:n]), err}
			}()
			r.pending = ch
		}
		select {
		case l := <-r.pending:
			r.pending = nil
			switch l.s {
			case "\x03":
				interrupt()
				continue
			case "\r", "\n", "":
				if l.err != nil {
					return "", EndOfInput(l.err)
				}
				continue
			}
			return l.s, EndOfInput(l.err)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// EndOfInput says io.EOF the way a person reads it ("end of input"); other
// errors are returned as they are.
func EndOfInput(err error) error {
	if errors.Is(err, io.EOF) {
		return errors.New("end of input")
	}
	return err
}

// Approve asks about req and waits for the answer, or for ctx to end.
func (a *Approver) Approve(ctx context.Context, req policy.ApprovalRequest) (policy.Approval, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.Ready != nil {
		if err := a.Ready(ctx, req.ToolUseID); err != nil {
			return policy.Approval{}, err
		}
	}
	if a.Begin != nil {
		if err := a.Begin(ctx); err != nil {
			return policy.Approval{}, err
		}
		if a.End != nil {
			defer a.End()
		}
	}
	call := ToolLine(req.ToolName, req.Input, req.Display)
	rules := req.Verdict.Suggestions
	if len(rules) == 0 && req.Verdict.Suggest != "" {
		rules = []string{req.Verdict.Suggest}
	}
	always := ""
	if len(rules) > 0 {
		always = "yes, and allow " + Printable(strings.Join(rules, ", ")) + " for this session"
	}
	items := []string{"[y] yes, once"}
	if always != "" {
		items = append(items, "[a] "+always)
	}
	items = append(items, "[n] no ›")
	// What the model chose (the call, the rules made of its words) is
	// stripped of control sequences, and on a terminal the question is
	// drawn in reverse video, which the model's text — stripped the same
	// way — can never be: no answer the model wrote can pass for orca's
	// question, nor cover it.
	question := "? Allow " + Printable(call) + "?"
	if IsTerminal(a.Out) && os.Getenv("NO_COLOR") == "" {
		question = "\x1b[1;7m " + question + " \x1b[0m"
	}
	var b strings.Builder
	if a.Asking != nil {
		// The UI's bar asks, with the keys: the scrollback keeps the
		// reason, and the answer once it comes.
		keys, short := "yn", "[y] yes, once · [n] no (Esc)"
		if always != "" {
			keys, short = "yan", "[y] yes, once · [a] "+always+" · [n] no (Esc)"
		}
		a.Asking("Allow "+Printable(call)+"?", keys, short)
	} else {
		b.WriteString("  " + question + "\n")
	}
	if reason := strings.TrimSpace(req.Verdict.Reason); reason != "" {
		b.WriteString(Wrap(OneLine(reason, 0), "    ", widthOf(a.Out)) + "\n")
	}
	if a.Asking == nil {
		// The keys, wrapped as the reason is; the answer comes after the ›.
		b.WriteString(wrapItems(items, "    ", widthOf(a.Out)) + " ")
	}
	if _, err := io.WriteString(a.Out, b.String()); err != nil {
		return policy.Approval{}, fmt.Errorf("asking for approval: %w", err)
	}
	// answered ends the question's block with the answer, on its line:
	// what the call prints next comes on a line of its own.
	answered := func(what string) {
		wrapped := wrapItems(items, "    ", widthOf(a.Out))
		last := wrapped[strings.LastIndexByte(wrapped, '\n')+1:]
		if w := widthOf(a.Out); a.Asking != nil || w > 0 && lipgloss.Width(last)+1+lipgloss.Width(what) >= w {
			if a.Asking == nil {
				io.WriteString(a.Out, "\n")
			}
			io.WriteString(a.Out, "    › "+what+"\n")
			return
		}
		io.WriteString(a.Out, what+"\n")
	}
	for {
		ans, err := a.Read(ctx)
		if err != nil && ans == "" {
			if ctx.Err() != nil {
				answered("(no answer: the turn was interrupted)")
				return policy.Approval{}, ctx.Err()
			}
			answered("no: no answer came")
			return policy.Approval{Allow: false, Scope: policy.ScopeOnce,
				Reason: fmt.Sprintf("%s was not run: no answer came from the user (%v).", call, err)}, nil
		}
		switch strings.ToLower(strings.TrimSpace(ans)) {
		case "y", "yes":
			answered("yes, once")
			return policy.Approval{Allow: true, Scope: policy.ScopeOnce}, nil
		case "a", "always":
			if always != "" {
				answered(always)
				return policy.Approval{Allow: true, Scope: policy.ScopeSession}, nil
			}
		case "n", "no", "\x1b":
			answered("no")
			return policy.Approval{Allow: false, Scope: policy.ScopeOnce,
				Reason: fmt.Sprintf("The user denied %s. Do not retry it; ask the user what to do instead.", call)}, nil
		}
		if err != nil { // an unclear last line, then the end of the input
			answered("no: no answer came")
			return policy.Approval{Allow: false, Scope: policy.ScopeOnce,
				Reason: fmt.Sprintf("%s was not run: no answer came from the user (%v).", call, err)}, nil
		}
		keys := "y or n"
		if always != "" {
			keys = "y, a or n"
		}
		if a.Asking != nil {
			continue // the bar takes only its keys
		}
		if _, err := fmt.Fprintf(a.Out, "\n    Please answer %s › ", keys); err != nil {
			return policy.Approval{}, fmt.Errorf("asking for approval: %w", err)
		}
	}
}

// widthOf returns the width of the terminal w writes to, 0 if it is none.
func widthOf(w io.Writer) int {
	switch w := w.(type) {
	case TerminalWriter:
		if n, ok := w.Terminal(); ok {
			return n
		}
	case *os.File:
		if n, _, err := term.GetSize(int(w.Fd())); err == nil {
			return n
		}
	}
	return 0
}

// wrapItems puts items on lines of at most width columns (0: one line),
// three spaces apart, each line starting with indent; an item is never
// broken (one longer than a line is wrapped as words).
func wrapItems(items []string, indent string, width int) string {
	var b strings.Builder
	b.WriteString(indent)
	n := 0
	room := width - 1 - lipgloss.Width(indent)
	for _, it := range items {
		it = Printable(it)
		w := lipgloss.Width(it)
		switch {
		case n == 0:
		case width > 0 && n+3+w > room:
			b.WriteString("\n" + indent)
			n = 0
		default:
			b.WriteString("   ")
			n += 3
		}
		if width > 0 && w > room {
			it = strings.TrimPrefix(Wrap(it, indent, width), indent)
		}
		b.WriteString(it)
		n += w
	}
	return b.String()
}

// Wrap breaks s at spaces into lines of at most width columns, each
// starting with indent (width 0: one line). A word longer than a line
// has a line of its own.
func Wrap(s, indent string, width int) string {
	s = strings.Join(strings.Fields(s), " ")
	if width <= 0 || s == "" {
		return indent + s
	}
	room := max(width-1-lipgloss.Width(indent), 20)
	return indent + strings.ReplaceAll(ansi.Wordwrap(s, room, ""), "\n", "\n"+indent)
}

// ApprovalGate keeps an approver's question from interleaving with the
// renderer's output. The runtime emits approval_requested before it asks
// the approver and emits nothing more until the approver answers; Show
// tells the gate once the renderer has drawn that event (stopping a
// spinner), and the approver's Ready (Wait) waits for it: from then on the
// screen is the approver's alone. An MCP server's question is gated the
// same way, by its elicitation_requested event and id (Elicitor.Ready).
type ApprovalGate struct {
	mu   sync.Mutex
	seen map[string]*gateEntry
}

type gateEntry struct {
	ch     chan struct{}
	closed bool
}

// NewApprovalGate returns a gate no event has passed yet.
func NewApprovalGate() *ApprovalGate { return &ApprovalGate{seen: make(map[string]*gateEntry)} }

// Show returns the OnEvent of a turn whose events render draws: after
// drawing an approval_requested event it opens the gate for that tool
// use, so that the approver's question comes under it.
func (g *ApprovalGate) Show(render func(event.Event)) func(event.Event) {
	return func(ev event.Event) {
		render(ev)
		switch d := ev.Data.(type) {
		case *event.ApprovalData:
			if ev.Name == event.ApprovalRequested {
				g.rendered(d.ToolUseID)
			} else {
				g.resolved(d.ToolUseID)
			}
		case *event.ElicitationData:
			if ev.Name == event.ElicitationRequested {
				g.rendered(d.ID)
			} else {
				g.resolved(d.ID)
			}
		}
	}
}

func (g *ApprovalGate) entry(id string) *gateEntry {
	e, ok := g.seen[id]
	if !ok {
		e = &gateEntry{ch: make(chan struct{})}
		g.seen[id] = e
	}
	return e
}

// rendered says the renderer has drawn the approval_requested event of
// tool use id.
func (g *ApprovalGate) rendered(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e := g.entry(id); !e.closed {
		e.closed = true
		close(e.ch)
	}
}

// resolved forgets tool use id once its approval is resolved (by the
// approver or by a PERMISSION_REQUEST hook), so that a later call with
// the same id waits again.
func (g *ApprovalGate) resolved(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.seen, id)
}

// Wait waits until the approval_requested event of tool use id has been
// drawn, or ctx ends: an Approver's Ready.
func (g *ApprovalGate) Wait(ctx context.Context, id string) error {
	g.mu.Lock()
	ch := g.entry(id).ch
	g.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
