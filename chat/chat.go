// Package chat is orca's terminal chat — what orca chat runs — as a
// library: a conversation of many turns in one session of an App, each
// line typed a turn, the turns drawn as orca run draws them, lines typed
// while a turn runs queued into it, the calls the policy asks about and
// the questions of MCP servers asked at the terminal, and the chat's
// commands (/compact, /cost, /model, /permissions, /resume, /clear,
// /approve, /deny, /mcp, /help, /exit).
//
// On a terminal (standard input and output both), the input is an editor
// under the conversation (tui.Input); otherwise the input's lines are read
// as a script, each waiting for the previous turn to end.
//
// A program gives the chat's approver to the App, and its OnEvent to the
// session, then runs it:
//
//	c := chat.New(ctx, chat.Options{In: os.Stdin, Out: os.Stdout})
//	defer c.Close()
//	cfg.Approver, cfg.Elicitor = c.Approver(), c.Elicitor()
//	a, err := app.Open(ctx, cfg)
//	…
//	defer a.Close()
//	ls, err := a.Session(ctx, app.SessionOptions{OnEvent: c.OnEvent})
//	…
//	return c.Run(ctx, a, ls)
//
// The terminal UI reads Ctrl-C as a key; elsewhere it is a signal to the
// process, which the program hands to the chat (signal.Notify on a
// channel, then c.Signal for each) so that it interrupts the turn instead
// of killing the program.
package chat

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/elicit"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/mcp"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/queue"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/tui"
)

// Help lists the chat's commands, as /help shows them.
const Help = `Type a message and press Enter. A line that ends with \ goes on on the next line
(in a terminal, so do Alt+Enter, Ctrl+J and, where the terminal tells it from Enter,
Shift+Enter; ↑ and ↓ recall what you typed before).
  /compact [instructions]  summarise the older conversation, to free the model's context
  /cost                    what the session has spent, and its budget
  /model [NAME]            the provider and model the chat talks to; with a NAME (or an alias: sonnet, opus, haiku), the next turns use it
  /permissions [revoke N]  the permission mode, the rules in force and what you granted ([a] answers); revoke N takes grant N back
  /resume [ID]             the workspace's other sessions; with an ID, go on in that one
  /clear                   end this session (it is kept) and go on in a new one
  /rewind [N [force]]      the turns that changed the workspace; with N, put it back as it was before turn N;
                           /rewind N conversation: the conversation too (the chat goes on in a branch of it)
  /approve, /deny [why]    decide the call of this session parked for approval (orca run --park-approvals): its turn goes on
  /mcp                     the MCP servers: up or not, their tools and prompts
  /paste                   attach the image on the clipboard (a copied screenshot) to your next message (so does Ctrl+V)
  /help                    this help, with the skills and MCP prompts to invoke
  /exit                    leave (so do Ctrl-D and Ctrl-C at the prompt)
Ctrl-C interrupts the running turn; a second Ctrl-C within 2s leaves. Lines typed
while a turn runs are queued into it: the model reads them at its next step.`

// Options say where a chat reads and writes, and what it tells the person
// of the program around it.
type Options struct {
	// In is what the person types (or a script of lines); Out is where
	// the conversation is shown: standard input and output if nil. When
	// both are terminals (*os.File), the chat draws its terminal UI on
	// them.
	In  io.Reader
	Out io.Writer
	// HistoryFile, if set, is the file the terminal UI keeps the inputs
	// typed in, recalled with ↑ and ↓ (tui.OpenHistory).
	HistoryFile string
	// ResumeCommand, if set, returns the command line that opens session
	// id again: the chat shows it when it leaves a session (/clear,
	// /resume, the end).
	ResumeCommand func(id string) string
	// RaiseBudget, if set, says how to raise a spent budget dimension of
	// the session (such as "Raise it with --budget-cost when you open the
	// session again."): shown when a turn ends on the budget.
	RaiseBudget func(budget.Dimension) string
}

// Chat is one chat: New, give Approver and Elicitor to the App and
// OnEvent to the session, Run, Close.
type Chat struct {
	c        *chat
	approver policy.Approver
	elicitor elicit.Elicitor
	show     func(event.Event)
	mu       sync.Mutex // OnEvent calls, one at a time
	// shown are the sessions whose session_started OnEvent has seen: Run
	// refuses a session that does not show its events to the chat.
	shown map[string]bool
	ran   bool
}

// New prepares a chat on o.In and o.Out; on a terminal it starts the
// terminal UI, which Close ends.
func New(ctx context.Context, o Options) *Chat {
	if o.In == nil {
		o.In = os.Stdin
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	tty := tui.IsTerminal(o.In)
	opt := tui.OptionsFor(o.Out)
	opt.HideInput = tty // the terminal shows what was typed
	c := &chat{
		opts:     o,
		in:       o.In,
		tty:      tty,
		asks:     make(chan *ask),
		quit:     make(chan struct{}),
		activity: make(chan struct{}, 1),
		sigs:     make(chan os.Signal, 4),
		window:   2 * time.Second,
	}
	if in, out, ok := terminalUI(o.In, o.Out); ok {
		// The UI draws the spinner and the prompt; turns show their input.
		opt.Terminal, opt.HideInput = false, false
		var h *tui.History
		if o.HistoryFile != "" {
			h, _ = tui.OpenHistory(o.HistoryFile)
		}
		c.ui = newUI(ctx, in, out, opt.Theme, h, c.sigs, func(s string) { c.con.note(s) })
		c.con = &console{w: c.ui.out, r: tui.NewText(ctx, c.ui.out, opt)}
	} else {
		c.con = &console{w: o.Out, r: tui.NewText(ctx, o.Out, opt)}
	}
	ch := &Chat{c: c, shown: map[string]bool{}}
	c.onEvent = ch.OnEvent
	gate := tui.NewApprovalGate()
	if tty && tui.IsTerminal(o.Out) {
		q := &question{c: c}
		pa := &tui.Approver{Read: q.read, Begin: q.begin, End: q.end, Out: c.con, Ready: gate.Wait}
		if c.ui != nil {
			pa.Asking = func(question, keys, choices string) {
				c.ui.out.flush()
				c.ui.send(tui.Ask{Question: question, Keys: keys, Choices: choices})
			}
			pa.End = func() {
				q.end()
				c.ui.send(tui.Answered{})
			}
		}
		ch.approver = pa
		// An MCP server's question: its form's fields are asked a line at
		// a time, typed in the editor.
		pe := &tui.Elicitor{Read: q.read, Begin: q.begin, End: q.end, Out: c.con, Ready: gate.Wait}
		if c.ui != nil {
			pe.Asking = func(prompt string) {
				c.ui.out.flush()
				c.ui.send(tui.Prompt{Question: prompt})
			}
			pe.End = func() {
				q.end()
				c.ui.send(tui.Answered{})
			}
		}
		ch.elicitor = pe
	}
	ch.show = gate.Show(c.con.render)
	return ch
}

// Notes returns where a program writes what the person should read while
// the chat's terminal UI runs — the configuration's warnings, say: above
// the UI, as its own lines are (written straight to the terminal, in raw
// mode, they would stair-step and mix into the UI's drawing). Nil when
// there is no terminal UI: write to standard error then.
func (ch *Chat) Notes() io.Writer {
	if ch.c.ui == nil {
		return nil
	}
	return ch.c.con
}

// Approver returns the approver that asks the person at the terminal, for
// app.Config.Approver; nil when the input or the output is not a terminal
// (the policy's questions then have no one to ask: they are denied).
func (ch *Chat) Approver() policy.Approver {
	if ch.approver == nil {
		return nil
	}
	return ch.approver
}

// Elicitor returns the Elicitor that asks the person at the terminal the
// questions of MCP servers, for app.Config.Elicitor; nil when the input or
// the output is not a terminal (the questions are then declined, unless a
// hook answers them).
func (ch *Chat) Elicitor() elicit.Elicitor {
	if ch.elicitor == nil {
		return nil
	}
	return ch.elicitor
}

// OnEvent shows an event of the session's feed: give it as the session's
// app.SessionOptions.OnEvent. session_started and session_ended are not
// shown.
func (ch *Chat) OnEvent(ev event.Event) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ev.Name == event.SessionStarted && ev.Depth == 0 {
		ch.shown[ev.SessionID] = true
	}
	if ev.Name == event.SessionStarted || ev.Name == event.SessionEnded {
		return
	}
	ch.show(ev)
	if ch.c.ui != nil {
		ch.c.ui.event(ev)
	}
	ch.c.poke()
}

// Signal delivers a signal the process received: os.Interrupt (Ctrl-C)
// interrupts the running turn, a second within 2s or one at the prompt
// leaves, and any other signal leaves. It never blocks.
func (ch *Chat) Signal(sig os.Signal) {
	select {
	case ch.c.sigs <- sig:
	default: // the chat has not taken the last ones yet: one is enough
	}
}

// Run holds the conversation in session ls of App a until /exit, the end
// of the input, Ctrl-C at the prompt or the end of ctx; it returns once no
// turn runs, having ended the session it is in (/clear and /resume change
// it) with session.EndPromptInputExit. Its error is a failure to write on
// the screen, or a session that was not opened with the chat's OnEvent
// (its turns would not be shown). A Chat runs once.
func (ch *Chat) Run(ctx context.Context, a *app.App, ls *session.LiveSession) error {
	if a == nil || ls == nil {
		return errors.New("chat: Run needs the App and a session of it")
	}
	ch.mu.Lock()
	shown, ran := ch.shown[ls.ID()], ch.ran
	ch.ran = true
	ch.mu.Unlock()
	switch {
	case ran:
		return errors.New("chat: Run was called twice")
	case !shown:
		return fmt.Errorf("chat: session %s does not show its events to the chat: open it with app.SessionOptions{OnEvent: c.OnEvent}", ls.ID())
	}
	c := ch.c
	c.app, c.ls = a, ls
	c.queues, c.mcp = a.Runtime().Queues(), a.MCPServers
	c.model, c.root = a.ModelLabel(), a.Root()
	err := c.run(ctx)
	c.ls.End(context.WithoutCancel(ctx), session.EndPromptInputExit)
	return err
}

// Close ends the terminal UI, if the chat drew one, erasing its lines.
func (ch *Chat) Close() {
	if ch.c.ui != nil {
		ch.c.ui.close()
	}
}

// line is a line read, or the error that ended the input.
type line struct {
	s   string
	err error
}

// chat is the loop of orca chat. It owns the screen between turns and
// routes what is typed: to a new turn, into the running one (queued), to
// the approver's question, or to a command. One goroutine reads the input
// lines, one runs each turn (LiveSession.Run), and the loop's goroutine
// decides; everything it decides on arrives on a channel, so that a test
// drives it with a reader and a signal channel and no terminal.
type chat struct {
	opts Options
	app  *app.App
	ls   *session.LiveSession
	// onEvent is the Chat's OnEvent, for the sessions /clear and /resume
	// open.
	onEvent func(event.Event)
	// queues are the runtime's message queues, where Run queues input
	// typed while a turn runs.
	queues *queue.Manager
	// mcp is the MCP servers' status (/mcp).
	mcp func() []mcp.Status
	// model names the provider and model (App.ModelLabel); root is the
	// workspace, for the command that resumes the session.
	model, root string
	con         *console
	// ui is the terminal UI the person types in (a real terminal), or nil:
	// the input is read line by line.
	ui *chatUI
	// typed, when set, stands in for the UI's last key (tests).
	typed func() time.Time
	in    io.Reader
	// tty: the input is a terminal, where a person types. Prompts are shown,
	// and lines typed while a turn runs are queued into it; otherwise the
	// input is a script, read one line per finished turn.
	tty bool
	// sigs are the signals the user sends (os.Interrupt: Ctrl-C).
	sigs chan os.Signal
	// asks are the approver's questions (see question).
	asks chan *ask
	// quit is closed when the loop has returned: asks fail from then on.
	quit chan struct{}
	// window: a second Ctrl-C within it, while a turn runs, ends the chat.
	window time.Duration
	// clipped are the images /paste took from the clipboard, for the next
	// message.
	clipped []*llm.Media

	// activity is poked at every event of a turn: the loop looks at the
	// backlog again.
	activity chan struct{}
	runCtx   context.Context
	runs     chan outcome

	// The loop's state, touched by its goroutine only.
	running int  // Run calls that have not returned
	probing bool // a Run of the backlog has not returned
	// answered: the last turn answered, so Run drained the queue after it;
	// what is left there came too late for that.
	answered bool
	backlog  []string // inputs typed while a turn runs, for Run, in order
	exiting  bool     // leave once running is 0 and the backlog empty
	pending  []string // the lines of an input continued with \
	asked    *ask     // the approver's question: the lines typed are its
	lastInt  time.Time
}

// ask is a question of the approver: from the time it is asked until it
// is answered, the lines typed are its answers.
type ask struct {
	ctx   context.Context
	lines chan line     // buffered: the loop never waits for the approver
	done  chan struct{} // closed once the approver has its answer
}

// open reports whether the question still takes lines.
func (a *ask) open() bool {
	select {
	case <-a.done:
		return false
	default:
		return a.ctx.Err() == nil
	}
}

// give hands l to the question; false if it takes no more.
func (a *ask) give(l line) bool {
	if !a.open() {
		return false
	}
	select {
	case a.lines <- l:
		return true
	default:
		return false
	}
}

// outcome is what a Run call returned.
type outcome struct {
	res   *agent.Result
	err   error
	probe bool // a Run of the backlog
}

// question connects the approver to the chat loop, which reads the
// terminal: begin, before the question is shown, makes the lines typed
// from then on the approver's, read takes the next of them, and end gives
// the terminal back to the conversation. The approver asks one question at
// a time, so cur needs no lock.
type question struct {
	c   *chat
	cur *ask
}

func (q *question) begin(ctx context.Context) error {
	a := &ask{ctx: ctx, lines: make(chan line, 8), done: make(chan struct{})}
	select {
	case q.c.asks <- a:
	case <-ctx.Done():
		return ctx.Err()
	case <-q.c.quit:
		return errors.New("the chat has ended")
	}
	q.cur = a
	return nil
}

func (q *question) read(ctx context.Context) (string, error) {
	select {
	case l := <-q.cur.lines:
		return l.s, tui.EndOfInput(l.err)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (q *question) end() {
	close(q.cur.done)
	q.cur = nil
}

// readLines reads the input's lines on a goroutine of its own until the
// end of the input (then it closes the channel) or stop. A read from a
// terminal cannot be cancelled: the goroutine ends with the process then.
func (c *chat) readLines() (lines <-chan line, stop func()) {
	if c.ui != nil {
		return c.ui.lines, func() {}
	}
	ch := make(chan line)
	done := make(chan struct{})
	go func() {
		defer close(ch)
		br := bufio.NewReader(c.in)
		for {
			s, err := br.ReadString('\n')
			if s != "" || (err != nil && !errors.Is(err, io.EOF)) {
				if err != nil && errors.Is(err, io.EOF) {
					err = nil // the last line, without its newline
				}
				select {
				case ch <- line{s, err}:
				case <-done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return ch, func() { close(done) }
}

// IdleAfter is how long the chat waits for the next prompt, with no key
// pressed, before it tells the Notification hooks (hook.NotifyIdle), once
// per wait: Claude Code's idle_prompt.
const IdleAfter = 60 * time.Second

// typedAt is when a key was last pressed in the terminal UI (zero: never,
// or no UI: lines arrive whole).
func (c *chat) typedAt() time.Time {
	if c.typed != nil {
		return c.typed()
	}
	if c.ui != nil {
		return c.ui.lastTyped()
	}
	return time.Time{}
}

// run holds the conversation until /exit, the end of the input, or
// Ctrl-C at the prompt; it returns once no turn runs. Its error is a
// failure to write on the screen.
func (c *chat) run(ctx context.Context) error {
	defer close(c.quit)
	runCtx, cancelRuns := context.WithCancel(ctx)
	defer cancelRuns()
	c.runCtx, c.runs = runCtx, make(chan outcome)
	lines, stopReading := c.readLines()
	defer stopReading()

	c.greet(ctx)
	c.prompt()
	cancelled := ctx.Done()
	// idle fires once the chat has waited IdleAfter for the next prompt;
	// told: it did, and nothing was typed since.
	var idle <-chan time.Time
	told := false
	for {
		c.dispatch()
		if c.exiting && c.running == 0 && len(c.backlog) == 0 {
			c.stopTasks(c.ls)
			c.farewell(ctx)
			return c.con.err()
		}
		switch waiting := lines != nil && c.running == 0 && len(c.backlog) == 0 && c.asked == nil && !c.exiting && len(c.pending) == 0; {
		case !waiting:
			idle, told = nil, false
		case idle == nil && !told:
			idle = time.After(IdleAfter)
		}
		in := lines
		if c.exiting || (c.running > 0 && !c.tty && c.asked == nil) {
			in = nil // a script's next line waits for the turn
		}
		var answers <-chan string
		if c.ui != nil && c.asked != nil {
			answers = c.ui.answers
		}
		select {
		case k := <-answers:
			if !c.asked.give(line{s: k + "\n"}) {
				c.asked = nil
			}
		case <-idle:
			if since := time.Since(c.typedAt()); since < IdleAfter {
				// Typing a prompt is not being idle: a minute from the
				// last key.
				idle = time.After(IdleAfter - since)
				continue
			}
			idle, told = nil, true
			c.app.Runtime().Notify(c.ls.ID(), hook.NotifyIdle, "orca is waiting for your input")
		case l, ok := <-in:
			idle, told = nil, false
			if !ok {
				lines = nil
				c.endOfInput()
				continue
			}
			if c.asked != nil {
				if c.asked.give(l) {
					continue
				}
				c.asked = nil
			}
			if l.err != nil {
				c.con.note("✗ reading the input: " + l.err.Error())
				lines = nil
				c.endOfInput()
				continue
			}
			c.line(ctx, strings.TrimRight(l.s, "\r\n"))
		case a := <-c.asks:
			if c.ui != nil {
				c.ui.drainAnswers() // keys pressed before the question cannot answer it
			}
			if c.exiting {
				a.lines <- line{err: errors.New("the chat is ending")}
				continue
			}
			c.asked = a
		case sig := <-c.sigs:
			c.signal(sig, cancelRuns)
		case <-c.activity:
		case o := <-c.runs:
			c.running--
			if o.probe {
				c.probing = false
			}
			c.report(o)
			c.takeBack(o)
			if c.ui != nil && c.running == 0 {
				c.ui.send(tui.Idle{})
				c.showStatus(ctx)
			}
			if c.con.err() != nil && !c.exiting {
				// The screen is gone: nobody is there to chat with.
				c.leave()
			}
			c.prompt()
		case <-cancelled:
			cancelled = nil
			c.leave()
			cancelRuns()
		}
	}
}

// endOfInput ends the chat: an input continued with \ is sent as it is,
// and a running turn is waited for.
func (c *chat) endOfInput() {
	if a := c.asked; a != nil {
		c.asked = nil
		a.give(line{err: io.EOF})
	}
	if len(c.pending) > 0 {
		input := strings.Join(c.pending, "\n")
		c.pending = nil
		if strings.TrimSpace(input) != "" {
			c.submit(input)
		}
	}
	if c.tty && c.running == 0 && c.ui == nil {
		c.con.newline()
	}
	c.exiting = true
}

// line takes one typed line: part of an input continued with \, or the
// end of one, which is a command or a message for the model.
func (c *chat) line(ctx context.Context, s string) {
	if rest, ok := strings.CutSuffix(s, `\`); ok {
		c.pending = append(c.pending, rest)
		if c.running == 0 && c.tty {
			c.con.prompt("… ", true)
		}
		return
	}
	input := strings.Join(append(c.pending, s), "\n")
	c.pending = nil
	trimmed := strings.TrimSpace(input)
	name := ""
	if f := strings.Fields(trimmed); len(f) > 0 && isCommand(f[0]) {
		name = f[0]
	}
	switch name {
	case "":
		if trimmed == "" {
			c.prompt()
			return
		}
		c.submit(input)
	case "/exit", "/quit":
		c.leave()
		c.backlog = nil
		if c.running > 0 && c.interrupt() {
			c.con.note("Interrupting the turn, then leaving…")
		}
	case "/help":
		c.con.note(Help + c.commandsHelp())
		c.prompt()
	case "/mcp":
		var b strings.Builder
		servers := c.mcp()
		if len(servers) == 0 {
			b.WriteString("No MCP servers: they come from .mcp.json and the settings' mcpServers (see orca mcp add).")
		}
		mcp.WriteStatus(&b, servers)
		c.con.note(strings.TrimRight(b.String(), "\n"))
		c.prompt()
	case "/cost":
		c.cost(ctx)
		c.prompt()
	case "/paste":
		c.paste(ctx)
		c.prompt()
	case "/model":
		if name := strings.TrimSpace(strings.TrimPrefix(trimmed, "/model")); name != "" {
			c.switchModel(ctx, name)
		} else {
			c.con.note(c.modelNote())
		}
		c.prompt()
	case "/permissions":
		if arg := strings.TrimSpace(strings.TrimPrefix(trimmed, "/permissions")); arg != "" {
			c.con.note(c.revokeGrant(ctx, arg))
		} else {
			c.con.note(c.permissionsNote(ctx))
		}
		c.prompt()
	case "/resume":
		if id := strings.TrimSpace(strings.TrimPrefix(trimmed, "/resume")); id != "" {
			c.resume(ctx, id)
		} else {
			c.con.note(c.resumeNote(ctx))
		}
		c.prompt()
	case "/clear":
		c.clear(ctx)
		c.prompt()
	case "/rewind":
		c.rewindTo(ctx, strings.TrimSpace(strings.TrimPrefix(trimmed, "/rewind")))
		c.prompt()
	case "/approve", "/deny":
		if c.running > 0 || len(c.backlog) > 0 {
			c.con.note("A turn is running: decide once it has ended.")
			return
		}
		c.decide(ctx, name == "/approve", strings.TrimSpace(strings.TrimPrefix(trimmed, name)))
	case "/compact":
		if c.running > 0 || len(c.backlog) > 0 {
			c.con.note("A turn is running: /compact once it has ended.")
			return
		}
		c.start(trimmed, false)
	default:
		if c.invocable(name) {
			c.submit(input)
			return
		}
		c.con.note(fmt.Sprintf("Unknown command %s: the commands are /compact, /cost, /model, /paste, /permissions, /resume, /clear, /rewind, /approve, /deny, /mcp, /help and /exit; /help lists the skills and MCP prompts too.", name))
		c.prompt()
	}
}

// invocable reports whether /name is one of the runtime's commands (a
// skill, an MCP server's prompt): the turn expands it.
func (c *chat) invocable(word string) bool {
	name := strings.TrimPrefix(word, "/")
	for _, cmd := range c.ls.Runtime().Commands() {
		if cmd.Name == name {
			return true
		}
	}
	return false
}

// commandsHelp lists the runtime's commands, for /help.
func (c *chat) commandsHelp() string {
	cmds := c.ls.Runtime().Commands()
	if len(cmds) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nSkills and MCP prompts, invoked as a message (\"/name arguments\"):")
	for _, cmd := range cmds {
		head := "/" + cmd.Name
		if cmd.Args != "" {
			head += " " + cmd.Args
		}
		desc := strings.Join(strings.Fields(cmd.Description), " ")
		if n := 100; len([]rune(desc)) > n {
			desc = string([]rune(desc)[:n-1]) + "…"
		}
		if len(head) > 24 {
			fmt.Fprintf(&b, "\n  %s\n  %-24s %s", head, "", desc)
		} else {
			fmt.Fprintf(&b, "\n  %-24s %s", head, desc)
		}
	}
	return b.String()
}

// isCommand reports whether word is a chat command's name: a slash and
// lower-case letters (so that a path such as /etc/hosts is a message).
func isCommand(word string) bool {
	name, ok := strings.CutPrefix(word, "/")
	return ok && name != "" && !strings.ContainsFunc(name, func(r rune) bool { return r < 'a' || r > 'z' })
}

// signal handles a signal: Ctrl-C interrupts the running turn; a second
// one within the window, one at the prompt, or SIGTERM ends the chat.
func (c *chat) signal(sig os.Signal, cancelRuns context.CancelFunc) {
	now := time.Now()
	again := !c.lastInt.IsZero() && now.Sub(c.lastInt) < c.window
	c.lastInt = now
	switch {
	case sig != os.Interrupt || c.exiting || (c.running > 0 && again):
		if !c.exiting && c.running > 0 {
			c.con.note("Leaving: the turn is cancelled.")
		}
		c.leave()
		c.backlog = nil
		c.interrupt()
		cancelRuns()
	case c.running > 0:
		if c.interrupt() {
			c.con.note("Interrupting the turn… (Ctrl-C again to leave the chat)")
		} else {
			c.con.note("Nothing to interrupt yet. (Ctrl-C again to leave the chat)")
		}
	case len(c.pending) > 0:
		c.pending = nil
		c.con.note("(the unfinished input was dropped)")
		c.prompt()
	default:
		if c.tty && c.ui == nil {
			c.con.newline()
		}
		c.leave()
	}
}

// submit sends input to the model: it starts a turn, or, typed while one
// runs, it waits in the backlog to be queued into it.
func (c *chat) submit(input string) {
	if c.running == 0 && len(c.backlog) == 0 {
		c.start(input, false)
		return
	}
	c.backlog = append(c.backlog, input)
}

// start runs input on a goroutine of its own: LiveSession.Run starts a
// turn with it, or queues it into the running one (ErrQueued). The images
// and PDFs it names (@path, or a path pasted alone on a line:
// app.Mentioned) are shown to the model with it.
func (c *chat) start(input string, probe bool) {
	shown, text, problems := app.Mentioned(c.root, input)
	for _, p := range problems {
		c.con.note(p)
	}
	for _, m := range shown {
		c.con.note("Attached " + tui.MediaLabel(m))
	}
	if len(c.clipped) > 0 && !strings.HasPrefix(strings.TrimSpace(input), "/compact") {
		shown = append(c.clipped, shown...)
		c.clipped = nil
	}
	c.running++
	c.probing = c.probing || probe
	go func() {
		res, err := c.ls.Run(c.runCtx, text, session.WithMedia(shown...))
		c.runs <- outcome{res, err, probe}
	}()
}

// dispatch hands the backlog to Run in the order it was typed. Two Run
// calls racing could swap it (whichever takes the session first starts the
// turn, and concurrent queuings land in any order), so it waits until the
// session's turn has started, then gives Run one input at a time: each
// returns ErrQueued at once while the turn runs. With no turn left, the
// next input starts one.
func (c *chat) dispatch() {
	for !c.probing && len(c.backlog) > 0 {
		switch {
		case c.running == 0:
			c.start(c.pop(), false)
		case c.ls.CurrentTurn() != "":
			c.start(c.pop(), true)
		default:
			return // a turn is starting, or a compaction runs: wait for it
		}
	}
}

// takeBack puts input that was queued too late back in front of the
// backlog. Run takes queued input into the turn, or starts the next turn
// with it when the turn answers; input queued between that last look and
// the end of Run would wait for the turn after the next message, behind
// it. (After a turn that did not answer — interrupted, say — queued input
// goes with the next message, as documented.)
func (c *chat) takeBack(o outcome) {
	if !errors.Is(o.err, session.ErrQueued) {
		c.answered = o.res != nil && o.res.StopReason == agent.StopAnswered
	}
	if c.running > 0 || !c.answered || c.exiting || c.queues == nil {
		return
	}
	if late := c.queues.Drain(c.ls.ID()); len(late) > 0 {
		c.backlog = append([]string{strings.Join(late, "\n\n")}, c.backlog...)
	}
}

func (c *chat) pop() string {
	s := c.backlog[0]
	c.backlog = c.backlog[1:]
	return s
}

// poke wakes the loop (at every event of a turn), without waiting.
func (c *chat) poke() {
	select {
	case c.activity <- struct{}{}:
	default:
	}
}

// interrupt interrupts the running turn, if any.
func (c *chat) interrupt() bool {
	id := c.ls.CurrentTurn()
	return id != "" && c.ls.Interrupt(id)
}

// leave ends the chat once no turn runs.
func (c *chat) leave() { c.exiting = true }

// prompt shows the prompt, when a person types and no turn runs.
func (c *chat) prompt() {
	if c.ui != nil {
		return // the UI's editor is the prompt
	}
	if c.tty && c.running == 0 && len(c.backlog) == 0 && !c.exiting {
		c.con.prompt("❯ ", false)
	}
}

// greet says which session the chat is in.
func (c *chat) greet(ctx context.Context) {
	s := fmt.Sprintf("orca chat · session %s", c.ls.ID())
	resumed := c.ls.Source() == "resumed"
	if resumed {
		if t, err := c.ls.Totals(ctx); err == nil {
			s += fmt.Sprintf(" (resumed: %s so far)", tui.Plural(int(t.Turns), "turn"))
		}
	} else {
		s += " (new)"
	}
	c.con.note(s + " · " + c.model + "\nType /help for the commands, /exit to leave.")
	c.showStatus(ctx)
	if resumed {
		if r := recap(c.ls.Transcript()); r != "" {
			c.con.note(r)
		}
	}
	if p := c.ls.Parked(); p != nil {
		c.con.note(fmt.Sprintf("A call of this session waits for a decision: %s (%s)\n/approve runs it and its turn goes on; /deny [why] refuses it.",
			tui.OneLine(p.ToolName+" "+tool.CompactArgs(p.Input), 80), p.ID))
	}
}

// decide approves or denies the session's parked call (/approve, /deny),
// and goes on with the turn that parked it, as orca run --session with no
// prompt does.
func (c *chat) decide(ctx context.Context, approve bool, note string) {
	p := c.ls.Parked()
	if p == nil {
		c.con.note("No call of this session waits for a decision.")
		c.prompt()
		return
	}
	status, verb := store.ParkDenied, "Denied"
	if approve {
		status, verb = store.ParkApproved, "Approved"
	}
	if _, err := c.app.Store().SetParkStatus(ctx, p.ID, status, "chat", note); err != nil {
		c.con.note(fmt.Sprintf("Deciding %s: %v", p.ID, err))
		c.prompt()
		return
	}
	c.con.note(fmt.Sprintf("%s %s %s: its turn goes on.", verb, p.ToolName, p.ID))
	c.running++
	go func() {
		res, err := c.ls.Run(c.runCtx, "", session.WithTurnID(p.TurnID), session.Retry())
		c.runs <- outcome{res, err, false}
	}()
}

// showStatus sets the UI's status line: the model, the session, what it
// has used.
func (c *chat) showStatus(ctx context.Context) {
	if c.ui == nil {
		return
	}
	s := c.model + " · session " + c.ls.ID()
	if t, err := c.ls.Totals(ctx); err == nil {
		s += " · " + tui.Plural(int(t.Turns), "turn")
		if tk := tui.Tokens(t.Usage); len(tk) > 0 {
			s += " · " + strings.Join(tk, " · ")
		}
		if t.CostUSD > 0 {
			s += fmt.Sprintf(" · $%.2f", t.CostUSD)
		}
	}
	if p, w := c.ls.PromptTokens(), c.ls.Runtime().Definition().ContextWindow; p > 0 && w > 0 {
		s += fmt.Sprintf(" · context %d%% of %s", p*100/int64(w), tui.TokenCount(int64(w)))
	}
	c.ui.send(tui.Status(s + " · Enter sends · Alt+Enter new line · Ctrl-O last output · Ctrl-D leaves"))
}

// report says what a Run call did that the turn's events did not show.
func (c *chat) report(o outcome) {
	if errors.Is(o.err, session.ErrQueued) {
		if c.ui == nil { // the UI shows its queue
			c.con.note("↳ queued: the running turn reads it at its next step.")
		}
		return
	}
	c.con.endTurn()
	switch {
	case o.res == nil:
		c.con.note("✗ " + o.err.Error())
	case o.err != nil && o.res.Err == nil:
		c.con.note("✗ " + o.err.Error())
	case o.res.StopReason == agent.StopBudgetExhausted:
		d := o.res.BudgetDimension
		msg := fmt.Sprintf("The session's %s budget is spent (/cost shows it).", strings.ReplaceAll(string(d), "_", " "))
		if c.opts.RaiseBudget != nil {
			msg += " " + c.opts.RaiseBudget(d)
		}
		c.con.note(msg)
	}
}

// cost shows the session's totals and the budget in force.
func (c *chat) cost(ctx context.Context) {
	t, err := c.ls.Totals(ctx)
	if err != nil {
		c.con.note("✗ " + err.Error())
		return
	}
	b, err := c.ls.Budget(ctx)
	if err != nil {
		c.con.note("✗ " + err.Error())
		return
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Session %s · %s\n", c.ls.ID(), tui.Plural(int(t.Turns), "turn"))
	tui.WriteSpending(&sb, t, b)
	c.con.note(sb.String())
}

// console is the chat's screen. The renderer draws the turns' events on it
// from the goroutine of the turn, the loop writes prompts and notes from
// its own, and the approver its questions: a mutex keeps them apart.
type console struct {
	mu sync.Mutex
	w  io.Writer
	r  *tui.Text
}

func (c *console) render(ev event.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.r.Render(ev)
}

// endTurn stops what the last turn left animated.
func (c *console) endTurn() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.r.Close()
}

func (c *console) note(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.r.Note(s)
}

func (c *console) prompt(p string, cont bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.r.Prompt(p, cont)
}

// newline ends the prompt's line, which no Enter ended (Ctrl-C, Ctrl-D).
func (c *console) newline() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.r.Newline()
}

// Write writes the approver's question.
func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.w.Write(p)
}

// Terminal is the terminal's width, when the console writes to one (the
// approver wraps its question's reason to it).
func (c *console) Terminal() (int, bool) {
	if tw, ok := c.w.(tui.TerminalWriter); ok {
		return tw.Terminal()
	}
	return 0, false
}

func (c *console) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.r.Err()
}

// paste is /paste (and Ctrl+V): the image on the clipboard goes with the
// next message, as an attachment.
func (c *chat) paste(ctx context.Context) {
	m, err := app.ClipboardImage(ctx)
	switch {
	case errors.Is(err, app.ErrNoClipboardImage):
		c.con.note("The clipboard holds no image (text pastes with your terminal's own paste: Ctrl+Shift+V, or Cmd+V).")
	case err != nil:
		c.con.note("✗ " + err.Error())
	default:
		c.clipped = append(c.clipped, m)
		c.con.note("Attached " + tui.MediaLabel(m) + ": it goes with your next message.")
	}
}
