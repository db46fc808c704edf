package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/term"

	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/tui"
)

// isTerminal reports whether f (a stream of the command) is a terminal:
// an *os.File on one, or a test's fake that says it is.
func isTerminal(f any) bool {
	switch f := f.(type) {
	case tui.TerminalWriter:
		_, ok := f.Terminal()
		return ok
	case *os.File:
		return term.IsTerminal(int(f.Fd()))
	}
	return false
}

// promptApprover asks the person at the terminal about each call the
// policy asks about: y allows it once, a allows it and what the policy
// suggests (such as Bash(go test:*)) for the rest of the session, n denies
// it. It asks one question at a time.
type promptApprover struct {
	// read reads the next line the person types, giving up when ctx ends.
	read func(ctx context.Context) (string, error)
	// begin and end, if set, frame each question, from before it is
	// shown until it is answered: orca chat, which reads the terminal
	// itself, hands the lines typed meanwhile to read.
	begin func(ctx context.Context) error
	end   func()
	out   io.Writer
	// ready, if set, waits until the screen is free for the question about
	// a tool use (see approvalGate).
	ready func(ctx context.Context, toolUseID string) error
	// asking, if set, is told each question as it is asked — the call,
	// the answer keys and what they do — after begin: the chat's terminal
	// UI shows it, and takes only those keys.
	asking func(question, keys, choices string)

	mu sync.Mutex
}

type line struct {
	s   string
	err error
}

// newPromptApprover returns an approver that reads its answers from in.
func newPromptApprover(in io.Reader, out io.Writer, ready func(context.Context, string) error) *promptApprover {
	return &promptApprover{read: (&lineReader{in: bufio.NewReader(in)}).readLine, out: out, ready: ready}
}

// lineReader reads lines from a stream that may block for ever (a
// terminal), giving up when the caller's context ends.
type lineReader struct {
	in *bufio.Reader
	// pending is a read that a cancelled call left running; the next call
	// takes its line instead of starting a second reader.
	pending chan line
}

// readLine reads the next line, giving up when ctx ends. The read goes on
// in the background then, and the next call takes its line. Calls must not
// overlap.
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
		return l.s, endOfInput(l.err)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// endOfInput says io.EOF the way a person reads it.
func endOfInput(err error) error {
	if errors.Is(err, io.EOF) {
		return errors.New("end of input")
	}
	return err
}

// Approve asks about req and waits for the answer, or for ctx to end.
func (a *promptApprover) Approve(ctx context.Context, req policy.ApprovalRequest) (policy.Approval, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ready != nil {
		if err := a.ready(ctx, req.ToolUseID); err != nil {
			return policy.Approval{}, err
		}
	}
	if a.begin != nil {
		if err := a.begin(ctx); err != nil {
			return policy.Approval{}, err
		}
		defer a.end()
	}
	call, _, _ := strings.Cut(strings.TrimPrefix(tui.ToolHeader(req.ToolName, req.Input, req.Display), "● "), "\n")
	rules := req.Verdict.Suggestions
	if len(rules) == 0 && req.Verdict.Suggest != "" {
		rules = []string{req.Verdict.Suggest}
	}
	choices := "[y] yes, once"
	if len(rules) > 0 {
		choices += fmt.Sprintf("   [a] yes, and allow %s for this session", strings.Join(rules, ", "))
	}
	choices += "   [n] no › "
	// What the model chose (the call, the rules made of its words) is
	// stripped of control sequences, and on a terminal the question is
	// drawn in reverse video, which the model's text — stripped the same
	// way — can never be: no answer the model wrote can pass for orca's
	// question, nor cover it.
	question := "? Allow " + tui.Printable(call) + "?"
	if a.asking != nil {
		keys, short := "yn", "[y] yes, once · [n] no (Esc)"
		if len(rules) > 0 {
			keys, short = "yan", "[y] yes, once · [a] yes, and allow "+tui.Printable(strings.Join(rules, ", "))+" for this session · [n] no (Esc)"
		}
		a.asking("Allow "+tui.Printable(call)+"?", keys, short)
	}
	if isTerminal(a.out) && os.Getenv("NO_COLOR") == "" {
		question = "\x1b[1;7m " + question + " \x1b[0m"
	}
	var b strings.Builder
	b.WriteString("  " + question + "\n")
	if reason := strings.TrimSpace(req.Verdict.Reason); reason != "" {
		b.WriteString(tui.Indent("    ", "    ", tui.OneLine(reason, 0)) + "\n")
	}
	b.WriteString("    " + tui.Printable(choices))
	if _, err := io.WriteString(a.out, b.String()); err != nil {
		return policy.Approval{}, fmt.Errorf("asking for approval: %w", err)
	}
	for {
		ans, err := a.read(ctx)
		if err != nil && ans == "" {
			if ctx.Err() != nil {
				io.WriteString(a.out, "\n")
				return policy.Approval{}, ctx.Err()
			}
			io.WriteString(a.out, "\n")
			return policy.Approval{Allow: false, Scope: policy.ScopeOnce,
				Reason: fmt.Sprintf("%s was not run: no answer came from the user (%v).", call, err)}, nil
		}
		switch strings.ToLower(strings.TrimSpace(ans)) {
		case "y", "yes":
			return policy.Approval{Allow: true, Scope: policy.ScopeOnce}, nil
		case "a", "always":
			if len(rules) > 0 {
				return policy.Approval{Allow: true, Scope: policy.ScopeSession}, nil
			}
		case "n", "no":
			return policy.Approval{Allow: false, Scope: policy.ScopeOnce,
				Reason: fmt.Sprintf("The user denied %s. Do not retry it; ask the user what to do instead.", call)}, nil
		}
		if err != nil { // an unclear last line, then the end of the input
			io.WriteString(a.out, "\n")
			return policy.Approval{Allow: false, Scope: policy.ScopeOnce,
				Reason: fmt.Sprintf("%s was not run: no answer came from the user (%v).", call, err)}, nil
		}
		keys := "y or n"
		if len(rules) > 0 {
			keys = "y, a or n"
		}
		if _, err := fmt.Fprintf(a.out, "    Please answer %s › ", keys); err != nil {
			return policy.Approval{}, fmt.Errorf("asking for approval: %w", err)
		}
	}
}

// approvalGate keeps an approver's question from interleaving with the
// renderer's output. The runtime emits approval_requested before it asks
// the approver and emits nothing more until the approver answers; the
// renderer calls rendered once it has drawn that event (stopping a
// spinner), and the approver waits for it: from then on the screen is the
// approver's alone.
type approvalGate struct {
	mu   sync.Mutex
	seen map[string]*gateEntry
}

type gateEntry struct {
	ch     chan struct{}
	closed bool
}

func newApprovalGate() *approvalGate { return &approvalGate{seen: make(map[string]*gateEntry)} }

func (g *approvalGate) entry(id string) *gateEntry {
	e, ok := g.seen[id]
	if !ok {
		e = &gateEntry{ch: make(chan struct{})}
		g.seen[id] = e
	}
	return e
}

// rendered says the renderer has drawn the approval_requested event of
// tool use id.
func (g *approvalGate) rendered(id string) {
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
func (g *approvalGate) resolved(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.seen, id)
}

// wait waits until the approval_requested event of tool use id has been
// drawn, or ctx ends.
func (g *approvalGate) wait(ctx context.Context, id string) error {
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
