package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/mcp"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/queue"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/tui"
)

// chatHelp lists the chat's commands.
const chatHelp = `Type a message and press Enter. A line that ends with \ goes on on the next line
(in a terminal, so do Alt+Enter and Ctrl+J; ↑ and ↓ recall what you typed before).
  /compact [instructions]  summarise the older conversation, to free the model's context
  /cost                    what the session has spent, and its budget
  /model [NAME]            the provider and model the chat talks to; with a NAME (or an alias: sonnet, opus, haiku), the next turns use it
  /permissions             the permission mode and the allow, ask and deny rules in force
  /resume [ID]             the workspace's other sessions; with an ID, go on in that one
  /clear                   end this session (it is kept) and go on in a new one
  /approve, /deny [why]    decide the call of this session parked for approval (orca run --park-approvals): its turn goes on
  /mcp                     the MCP servers: up or not, their tools and prompts
  /help                    this help, with the skills and MCP prompts to invoke
  /exit                    leave (so do Ctrl-D and Ctrl-C at the prompt)
Ctrl-C interrupts the running turn; a second Ctrl-C within 2s leaves. Lines typed
while a turn runs are queued into it: the model reads them at its next step.`

func newChatCmd(o options) *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "chat [flags]",
		Short: "Talk with an agent in the terminal: a session of many turns",
		Long: `Hold a conversation with an agent in a workspace: each line you type is a
turn of one session, kept in the workspace's store (.orca/orca.db) like those
of 'orca run' — a new session by default, the most recently active one with
--continue, or the one --session names. The turns are shown as 'orca run'
shows them, and calls the policy asks about are asked about at the terminal.

` + chatHelp + `

In a terminal (standard input and output both), the input is an editor
under the conversation: Alt+Enter or Ctrl+J for a new line, ↑/↓ for the
workspace's history, a pasted block sent whole; while a turn runs a spinner
says what it does, messages you send are listed as queued, and an approval
is a question only a key pressed once it is shown answers (y, a, n or Esc).

When standard input is not a terminal (a pipe, a file), its lines are read
as a script: one turn after another, each line waiting for the previous turn
to end, and no prompt is shown.

The flags are those of 'orca run' (without --json): the model (--provider,
--model, --base-url, or --script), --verify, the permissions; the --budget-*
flags set the session's stored budget before the first turn. A turn that is
escalated, or fails, does not end the chat.

Exit codes: 0 when the chat ends (/exit, end of input, Ctrl-C); 1 if the
session store cannot be opened; 2 usage errors, as for 'orca run'.`,
		Example: `  orca chat --provider anthropic
  orca chat --provider openai --base-url http://localhost:11434/v1 --model qwen3-coder
  orca chat --script replies.json
  orca chat --script replies.json --continue
  orca chat --script replies.json --session session_0123456789abcdef --budget-cost 2.50
  printf 'Fix the test\n/cost\n' | orca chat --script replies.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runChat(cmd, &f, o)
		},
	}
	addAgentFlags(cmd, &f)
	return cmd
}

func runChat(cmd *cobra.Command, f *agentFlags, o options) error {
	cfg, err := f.check(cmd, o)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	stdin, stdout, stderr := cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()

	tty := isTerminal(stdin)
	opt := tui.OptionsFor(stdout)
	opt.HideInput = tty // the terminal shows what was typed
	c := &chat{
		in:       stdin,
		tty:      tty,
		asks:     make(chan *ask),
		quit:     make(chan struct{}),
		activity: make(chan struct{}, 1),
		window:   2 * time.Second,
	}
	sigs := make(chan os.Signal, 4)
	if useChatUI(stdin, stdout) {
		// The UI draws the spinner and the prompt; turns show their input.
		opt.Terminal, opt.HideInput = false, false
		var h *tui.History
		if dir := o.userConfigDir(); dir != "" {
			root, _ := filepath.Abs(f.workspace)
			if r, err := filepath.EvalSymlinks(root); err == nil {
				root = r
			}
			h, _ = tui.OpenHistory(historyPath(dir, root))
		}
		c.ui = newChatUI(ctx, stdin.(*os.File), stdout.(*os.File), opt.Theme, h, sigs, func(s string) { c.con.note(s) })
		defer c.ui.close()
		c.con = &console{w: c.ui.out, r: tui.NewText(ctx, c.ui.out, opt)}
	} else {
		c.con = &console{w: stdout, r: tui.NewText(ctx, stdout, opt)}
	}
	gate := newApprovalGate()
	var approver policy.Approver
	if tty && isTerminal(stdout) {
		q := &question{c: c}
		pa := &promptApprover{read: q.read, begin: q.begin, end: q.end, out: c.con, ready: gate.wait}
		if c.ui != nil {
			pa.asking = func(question, keys, choices string) {
				c.ui.out.flush()
				c.ui.send(tui.Ask{Question: question, Keys: keys, Choices: choices})
			}
			pa.end = func() {
				q.end()
				c.ui.send(tui.Answered{})
			}
		}
		approver = pa
	}
	show := gated(c.con.render, gate)
	cfg.Approver = approver
	a, err := openApp(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	l, err := f.openSession(ctx, a, stderr, func(ev event.Event) {
		show(ev)
		if c.ui != nil {
			c.ui.event(ev)
		}
		c.poke()
	}, false)
	if err != nil {
		return err
	}
	// A chat ends when the user leaves its prompt.
	l.endReason = session.EndPromptInputExit
	defer l.close(ctx)
	c.ls, c.queues, c.mcp = l.LiveSession, l.app.Runtime().Queues(), l.app.MCPServers
	c.model, c.root = modelLabel(l.app), l.app.Root()
	c.env = &chatEnv{app: l.app, cfg: cfg, store: l.app.Store(),
		newSession: func(ctx context.Context) (*session.LiveSession, error) {
			return l.app.Session(ctx, app.SessionOptions{OnEvent: l.view.feed})
		},
		openSession: func(ctx context.Context, id string) (*session.LiveSession, error) {
			return l.app.Session(ctx, app.SessionOptions{ID: id, OnEvent: l.view.feed})
		},
		swap: func(ls *session.LiveSession) { l.LiveSession = ls },
	}

	restore := o.interrupts.handle(func(sig os.Signal) {
		select {
		case sigs <- sig:
		default: // the chat has not taken the last ones yet: one is enough
		}
	})
	defer restore()
	c.sigs = sigs
	if err := c.run(ctx); err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	return nil
}

// chat is the loop of orca chat. It owns the screen between turns and
// routes what is typed: to a new turn, into the running one (queued), to
// the approver's question, or to a command. One goroutine reads the input
// lines, one runs each turn (LiveSession.Run), and the loop's goroutine
// decides; everything it decides on arrives on a channel, so that a test
// drives it with a reader and a signal channel and no terminal.
type chat struct {
	ls *session.LiveSession
	// queues are the runtime's message queues, where Run queues input
	// typed while a turn runs.
	queues *queue.Manager
	// mcp is the MCP servers' status (/mcp).
	mcp func() []mcp.Status
	// model names the provider and model (modelLabel); root is the
	// workspace, for the command that resumes the session.
	model, root string
	env         *chatEnv // for /model, /permissions, /resume, /clear
	con         *console
	// ui is the terminal UI the person types in (a real terminal), or nil:
	// the input is read line by line.
	ui *chatUI
	in io.Reader
	// tty: the input is a terminal, where a person types. Prompts are shown,
	// and lines typed while a turn runs are queued into it; otherwise the
	// input is a script, read one line per finished turn.
	tty bool
	// sigs are the signals the user sends (os.Interrupt: Ctrl-C).
	sigs <-chan os.Signal
	// asks are the approver's questions (see question).
	asks chan *ask
	// quit is closed when the loop has returned: asks fail from then on.
	quit chan struct{}
	// window: a second Ctrl-C within it, while a turn runs, ends the chat.
	window time.Duration

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
		return l.s, endOfInput(l.err)
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
	for {
		c.dispatch()
		if c.exiting && c.running == 0 && len(c.backlog) == 0 {
			c.farewell(ctx)
			return c.con.err()
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
		case l, ok := <-in:
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
		c.con.note(chatHelp + c.commandsHelp())
		c.prompt()
	case "/mcp":
		var b strings.Builder
		servers := c.mcp()
		if len(servers) == 0 {
			b.WriteString("No MCP servers: they come from .mcp.json and the settings' mcpServers (see orca mcp add).")
		}
		writeMCPServers(&b, servers)
		c.con.note(strings.TrimRight(b.String(), "\n"))
		c.prompt()
	case "/cost":
		c.cost(ctx)
		c.prompt()
	case "/model":
		if name := strings.TrimSpace(strings.TrimPrefix(trimmed, "/model")); name != "" {
			c.switchModel(ctx, name)
		} else {
			c.con.note(c.modelNote())
		}
		c.prompt()
	case "/permissions":
		c.con.note(c.permissionsNote())
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
		c.con.note(fmt.Sprintf("Unknown command %s: the commands are /compact, /cost, /model, /permissions, /resume, /clear, /approve, /deny, /mcp, /help and /exit; /help lists the skills and MCP prompts too.", name))
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
// turn with it, or queues it into the running one (ErrQueued).
func (c *chat) start(input string, probe bool) {
	c.running++
	c.probing = c.probing || probe
	go func() {
		res, err := c.ls.Run(c.runCtx, input)
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
	if _, err := c.env.store.SetParkStatus(ctx, p.ID, status, "chat", note); err != nil {
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
		c.con.note(fmt.Sprintf("The session's %s budget is spent (/cost shows it). Raise it with --%s when you open the session again.",
			strings.ReplaceAll(string(d), "_", " "), budgetFlag(d)))
	}
}

// budgetFlag is the flag that sets a budget dimension.
func budgetFlag(d budget.Dimension) string {
	switch d {
	case budget.Cost:
		return "budget-cost"
	case budget.ToolCalls:
		return "budget-tool-calls"
	case budget.WallTime:
		return "budget-time"
	}
	return "budget-tokens"
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
	writeSpending(&sb, t, b)
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

func (c *console) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.r.Err()
}
