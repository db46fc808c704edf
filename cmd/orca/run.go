package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/media"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tui"
)

// runFlags are the flags of orca run.
type runFlags struct {
	agent        agentFlags
	attach       []string
	json         bool
	outputSchema string
	// outputFormat is Claude Code's --output-format: text, json (one
	// result object) or stream-json (--json).
	outputFormat string
	print        bool
	// engine runs the turn here ("local") or on Temporal's workers; the
	// Temporal engine's flags (turnID, address …) pass through to it.
	engine                            string
	turnID, address, namespace, queue string
}

func newRunCmd(o options) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [flags] [PROMPT]",
		Short: "Run one turn of a session of an agent in a workspace",
		Long: `Run one turn of an agent: PROMPT goes to the model, every tool call the
model asks for runs in the workspace (Read, Write, Edit, Glob, Grep, Bash,
TodoWrite, WebFetch, WebSearch, Task, Skill, AgentOutput, TaskStop), and
the observations go back to the model until it answers.

The model: --provider anthropic (ANTHROPIC_API_KEY, or ANTHROPIC_AUTH_TOKEN
for a gateway's bearer token), --provider openai
(OPENAI_API_KEY; none needed with --base-url, for a local OpenAI-compatible
server such as Ollama's), or the scripted model of --script FILE. --model
and --base-url choose the model and where its API is. Each comes from the
flags, else the project's settings ("provider", "model", "base_url"), else
the user's, else the environment (ORCA_PROVIDER, ORCA_MODEL); the provider's
default model if none names one.

--verify COMMAND (or the settings' "verify") checks every finished turn with
a shell command, such as 'go test ./...': if it fails, its output goes back
to the model, which revises its work (twice at most); a turn whose check
still fails ends as escalated.

The turn belongs to a session, kept in the workspace's store
(.orca/orca.db): a new one by default, the workspace's most recently active
one with --continue, or the one --session names (started if the store has
none by that id). The model sees the session's earlier turns; 'orca
sessions' lists the sessions, 'orca chat' continues one interactively.
PROMPT "/compact [instructions]" compacts the session's conversation
instead of running a turn.

The events of the turn are shown as they happen; with --json, stdout carries
exactly one JSON object per event and nothing else (llm_delta events and
the events of subagent forks, which carry "depth", included), the last one
being turn_completed. Every event is also kept as an observation row in the
store; with --timeline, in .orca/runs/<run>/events.jsonl too ('orca
timeline' shows both).

PROMPT may be several arguments (joined with spaces), or - to read it from
standard input; a - after them adds standard input to them, in a <stdin>
block (cat build.log | orca run "why does the build fail" -). Standard
input is read only then. With --session or --continue and no PROMPT, the
session's turn that parked a call (--park-approvals) goes on, once the call is
decided ('orca approve', 'orca deny'): the call runs, or the model hears
it was denied, and the turn ends as it would have. With the --script that
parked it, the scripted model goes on from the response after the parked
call's; another script starts at its first.

Budgets cap the session as a whole, all its turns together: --budget-tokens,
--budget-cost, --budget-tool-calls and --budget-time set the session's
stored budget (it stays for the session's later turns; 0 lifts a cap).
A turn that reaches one ends as budget_exhausted.

Every tool call goes through the permission policy: rules from the settings
files and from --allow, --deny and --ask (deny beats ask beats allow), and a
permission mode for calls no rule decides (--permission-mode; default: the
settings' defaultMode, else default, which runs read-only tools and asks
about the rest). When stdin and stdout are terminals, orca asks you about
such calls; otherwise they are refused, and the model is told which flag
would allow them.

Settings files: $XDG_CONFIG_HOME/orca/settings.json (default
~/.config/orca/settings.json), then .orca/settings.json and
.orca/settings.local.json in the workspace, in Claude Code's format
(permissions and command hooks), plus orca's "provider", "model",
"base_url", "modelAliases" (the models subagents' "model: sonnet", "opus"
and "haiku" run on), "prices" (per model, dollars per million tokens) and
"verify".
The workspace's own hooks, allow rules, permissive defaultMode, base_url,
prices and verify apply only once you trust it: 'orca trust DIR', or --trust
for one run. The workspace's extensions (.orca/hooks/<name>, with a
hook.yaml manifest) run only once granted: 'orca trust hook:<name> DIR'.

Ctrl-C interrupts the turn (it ends as interrupted); a second Ctrl-C
cancels it.

Exit codes, by how the turn ended (its stop_reason, in the summary line and
in --json's turn_completed):
  0  answered; compacted (PROMPT /compact)
  1  failed (a provider error retries did not cure, a used-up script)
     interrupted (Ctrl-C)
     escalated (its --verify check still failed after two revisions)
     refused (the model or its provider's safety classifier declined)
     blocked (refused before the model was asked, or ended by a hook)
     budget_exhausted (the session's budget is spent)
     max_iterations (--max-iterations model calls)
     — and 1 too when the session store could not be opened
  2  usage errors, before the turn (flags, no provider chosen or an unknown
     one, a missing API key, script file, workspace, settings files,
     extension manifests, a session of another runtime, nothing to
     --continue)
  3  awaiting_approval (--park-approvals parked a call), or the session
     still waits for a decision on one
  4  the session is open in another writer (another orca run, chat or
     serve): nothing ran

` + claudeFlagsHelp + `

-p (--print) is accepted: it is what orca run does, and 'orca -p PROMPT'
is 'orca run PROMPT'. --output-format json
prints one result object when the turn ends (result, session_id,
stop_reason, subtype success, error_max_turns or error_during_execution,
is_error, num_turns, duration_ms, total_cost_usd, usage), stream-json the
events as --json does (orca's events, not Claude Code's).`,
		Example: `  orca run --provider anthropic "Fix the failing test"
  orca run --provider openai --base-url http://localhost:11434/v1 --model qwen3-coder "Fix the failing test"
  orca run --provider anthropic --verify 'go test ./...' "Fix the failing test"
  orca run --script fix.json "Fix the failing test"
  orca run --script fix.json --workspace ./project --json "Fix the failing test"
  orca run --script more.json --continue "Now add a test for it"
  orca run --script fix.json --budget-tokens 200000 --budget-time 10m "Fix the failing test"
  orca run --script fix.json --allow "Bash(go test:*)" --permission-mode accept-edits "Fix the failing test"
  orca run --script fix.json --park-approvals --session s1 "Fix the failing test"; orca approve ID; orca run --script fix.json --session s1`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRun(cmd, args, &f, o)
		},
	}
	addAgentFlags(cmd, &f.agent)
	cmd.Flags().BoolVar(&f.json, "json", false, "print the events as JSON lines instead of text")
	cmd.Flags().StringVar(&f.outputFormat, "output-format", "text", "what stdout carries, as Claude Code's flag says it: `FORMAT` text, json (one result object when the turn ends: result, session_id, stop_reason, usage, total_cost_usd, …) or stream-json (the events as JSON lines: --json)")
	cmd.Flags().BoolVarP(&f.print, "print", "p", false, "Claude Code's -p: print the turn and exit, which orca run does anyway")
	cmd.Flags().StringArrayVar(&f.attach, "attach", nil, "show the model the image (PNG, JPEG, GIF, WebP) or PDF in `FILE` with the prompt; one too large is scaled down first; repeatable")
	cmd.Flags().StringVar(&f.outputSchema, "output-schema", "", "ask for the answer as a JSON value of the JSON Schema (of an object) in `FILE`: checked, sent back to the model to correct (twice at most), printed as JSON; with --json, turn_completed's \"output\"")
	cmd.Flags().StringVar(&f.engine, "engine", "local", "where the turn runs: `local` (here), or temporal (on 'orca worker's: a durable turn, which survives them; see docs/scale-out.md)")
	cmd.Flags().StringVar(&f.turnID, "turn-id", "", "with --engine temporal: the turn's `ID` (asking again with it gets the same turn)")
	cmd.Flags().StringVar(&f.address, "address", "", "with --engine temporal: Temporal's `HOST:PORT` (TEMPORAL_ADDRESS, else 127.0.0.1:7233)")
	cmd.Flags().StringVar(&f.namespace, "namespace", "", "with --engine temporal: Temporal's `NAMESPACE` (default)")
	cmd.Flags().StringVar(&f.queue, "task-queue", "", "with --engine temporal: the workers' task `QUEUE` (orca)")
	cmd.Flags().BoolVar(&f.agent.park, "park-approvals", false, "with no one at a terminal to ask, park a call the policy asks about instead of refusing it: "+
		"the turn stops (exit 3) until 'orca approve ID' or 'orca deny ID', and the next run of the session runs an approved call first")
	return cmd
}

func runRun(cmd *cobra.Command, args []string, f *runFlags, o options) error {
	switch {
	case len(args) > 0:
	case f.engine == "temporal":
		return usageErrorf("the prompt is missing (orca run --engine temporal [flags] PROMPT)")
	case f.agent.session == "" && !f.agent.cont:
		return usageErrorf("the prompt is missing (orca run [flags] PROMPT, or - to read it from standard input: ... | orca run -; with --session or --continue and no PROMPT, a turn whose parked call was decided goes on)")
	case f.agent.fork:
		return usageErrorf("the prompt is missing: --fork-session starts a new session, which needs one")
	}
	switch f.engine {
	case "temporal":
		return engineRun(cmd, args, f, o)
	case "", "local":
		for _, name := range engineFlags {
			if cmd.Flags().Changed(name) {
				return usageErrorf("--%s is for --engine temporal", name)
			}
		}
	default:
		return usageErrorf("--engine %s: want local or temporal", f.engine)
	}
	switch f.outputFormat {
	case "text":
	case "stream-json":
		f.json = true
	case "json":
		if f.json {
			return usageErrorf("--output-format json is one result object, --json the events: give one of them")
		}
		f.agent.result = true
	default:
		return usageErrorf("--output-format %s: want text, json or stream-json", f.outputFormat)
	}
	cfg, err := f.agent.check(cmd, o)
	if err != nil {
		return err
	}
	if f.outputSchema != "" {
		if f.agent.output, err = agent.ReadOutput(f.outputSchema); err != nil {
			return usageErrorf("--output-schema: %v", err)
		}
	}
	var attached []string
	for _, path := range f.attach {
		m, note, err := media.ReadFile(path, path)
		if err != nil {
			return usageErrorf("--attach: %v", err)
		}
		f.agent.media = append(f.agent.media, m)
		attached = append(attached, media.Attached(m, note))
	}
	prompt := func(ctx context.Context) (string, error) {
		p, err := readPrompt(ctx, cmd.InOrStdin(), args)
		if err != nil || len(attached) == 0 {
			return p, err
		}
		if p == "" {
			return "", usageErrorf("--attach needs a PROMPT to go with it")
		}
		// The model is told which file each one is, and what was done
		// to it.
		return p + "\n\n" + strings.Join(attached, "\n"), nil
	}
	return runTurn(cmd, o, cfg, &f.agent, f.json, prompt, func(l *live, text *tui.Text) {
		n := "a new session"
		if t, err := l.Totals(cmd.Context()); err == nil {
			n = tui.Plural(int(t.Turns), "turn")
		}
		text.Note(fmt.Sprintf("%s · session %s · %s · continue it with --continue or --session %s", l.app.ModelLabel(), l.ID(), n, l.ID()))
	})
}

// runTurn runs one turn of a session of the App cfg describes (the session
// f names) and shows it on stdout, as text or, asJSON, as JSON lines; a
// person at the terminal answers the calls the policy asks about. prompt
// gives the turn's input once the App is open (a usage error should not
// wait for standard input); after the turn, done may add a note to the
// text. It returns nil if the turn answered (or compacted).
func runTurn(cmd *cobra.Command, o options, cfg app.Config, f *agentFlags, asJSON bool, prompt func(context.Context) (string, error), done func(*live, *tui.Text)) error {
	ctx := cmd.Context()
	stdin, stdout, stderr := cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	// A reader that goes away (orca run … | head) ends the turn as an
	// interrupt, stored as every turn is, rather than the process in the
	// middle of it.
	gone := make(chan struct{})
	if !tui.IsTerminal(stdout) {
		stdout = &pipeOut{w: stdout, gone: gone}
	}
	var r tui.Renderer
	var text *tui.Text
	switch {
	case f.result:
		r = quietRenderer{}
	case asJSON:
		r = tui.NewJSON(stdout)
	default:
		text = tui.NewText(ctx, stdout, tui.OptionsFor(stdout))
		r = text
	}
	gate := tui.NewApprovalGate()
	if tui.IsTerminal(stdin) && tui.IsTerminal(stdout) {
		// The question goes where the turn is shown; with --json, stdout
		// carries only events, so it goes to stderr.
		out := stdout
		if asJSON {
			out = stderr
		}
		cfg.Approver = &tui.Approver{Read: tui.KeyReader(stdin), Out: out, Ready: gate.Wait}
		// An MCP server's question is asked there too, a line at a time.
		cfg.Elicitor = &tui.Elicitor{Read: tui.LineReader(stdin), Out: out, Ready: gate.Wait}
	} else if f.park {
		cfg.Approver = policy.Parking{}
	}
	if err := askTrust(cmd, o, &cfg); err != nil {
		return err
	}
	a, err := openApp(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	input, err := prompt(ctx)
	if err != nil {
		a.Close()
		return err
	}
	// The images and PDFs the prompt mentions (@path) are shown too.
	shown, input, problems := app.Mentioned(a.Root(), input)
	for _, p := range problems {
		fmt.Fprintln(stderr, "orca: "+p)
	}
	f.media = append(f.media, shown...)
	if input == "" && f.session != "" {
		// Going on with a turn of a session that does not exist would
		// start an empty one.
		if _, err := a.Store().Session(ctx, f.session); errors.Is(err, store.ErrNotFound) {
			a.Close()
			return usageErrorf("the prompt is missing, and there is no session %s to go on with: give a PROMPT to start it", f.session)
		}
	}
	// The events are rendered as the turn emits them, on its goroutine.
	v := &tui.TurnView{Show: gate.Show(r.Render)}
	if asJSON {
		v.AfterTurn = func(ev event.Event) {
			switch d := ev.Data.(type) {
			case *event.HookMessageData:
				fmt.Fprintf(stderr, "orca: hook %s: %s\n", d.Handler, d.Message)
			case *event.HookFailedData:
				fmt.Fprintf(stderr, "orca: hook %s failed: %s\n", d.Handler, d.Error)
			}
		}
	}
	f.goOn = input == ""
	l, err := f.openSession(ctx, a, stderr, v.Feed)
	if err != nil {
		return err
	}
	defer l.close(ctx)

	// The first Ctrl-C interrupts the turn, which ends as interrupted; a
	// second one (or one before the turn started) cancels it.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var signalled atomic.Int32
	restore := o.interrupts.handle(func(sig os.Signal) {
		if signalled.Add(1) == 1 && sig == os.Interrupt {
			if id := l.CurrentTurn(); id != "" && l.Interrupt(id) {
				return
			}
		}
		cancel()
	})
	go func() {
		select {
		case <-gone:
			if id := l.CurrentTurn(); id == "" || !l.Interrupt(id) {
				cancel()
			}
		case <-runCtx.Done():
		}
	}()
	opts := []session.RunOption{session.WithOutput(f.output), session.WithMedia(f.media...)}
	if input == "" {
		// No prompt (orca run --session ID): the turn that parked a call
		// goes on.
		turn, err := l.ParkedTurn(ctx)
		if err != nil {
			restore()
			return &exitError{code: exitTurn, err: err}
		}
		if turn == "" {
			restore()
			return usageErrorf("the prompt is missing, and session %s has no turn that parked a call to go on with: give a PROMPT", l.ID())
		}
		opts = append(opts, session.WithTurnID(turn), session.Retry())
	}
	started := time.Now()
	res, err := l.Run(runCtx, input, opts...)
	restore()
	if f.result {
		if werr := writeResult(stdout, l.ID(), res, err, time.Since(started)); werr != nil {
			return &exitError{code: exitTurn, err: fmt.Errorf("writing the result: %w", werr)}
		}
		asJSON = true // the result says how the turn ended; stderr says it too
	}
	v.Stop() // a background fork still running is not shown after the turn
	r.Close()
	if stopped := l.StopTasks(); len(stopped) > 0 {
		// orca exits with the turn: say what that ends.
		fmt.Fprintf(stderr, "orca: stopped what the turn left running in the background (orca run ends with its turn; orca chat keeps them): %s\n", tui.Tasks(stopped))
	}
	if errors.Is(err, session.ErrAwaitingApproval) {
		return &exitError{code: exitParked, err: err}
	}
	if errors.Is(err, agent.ErrMediaNotTaken) {
		return usageErrorf("%v", err)
	}
	if res == nil {
		return &exitError{code: exitTurn, err: err}
	}
	if werr := r.Err(); werr != nil {
		return &exitError{code: exitTurn, err: fmt.Errorf("writing the events: %w", werr)}
	}
	if err != nil && res.Err == nil {
		// The turn ended, but its totals could not be stored.
		return &exitError{code: exitTurn, err: err}
	}
	if text != nil && done != nil {
		done(l, text)
	}
	switch res.StopReason {
	case agent.StopAnswered, agent.StopCompacted:
		return nil
	case agent.StopAwaitingApproval:
		msg := fmt.Sprintf("the turn waits for approval of %s", res.Parked.ToolName)
		if p := l.Parked(); p != nil {
			msg = fmt.Sprintf("the turn waits for approval of %s (%s): 'orca approve %s' or 'orca deny %s', then 'orca run --session %s' goes on with it", p.ToolName, p.ID, p.ID, p.ID, l.ID())
		}
		return &exitError{code: exitParked, err: errors.New(msg)}
	}
	msg := fmt.Sprintf("the turn ended with %s", res.StopReason)
	if res.BudgetDimension != "" {
		msg += fmt.Sprintf(" (the session's %s budget)", strings.ReplaceAll(string(res.BudgetDimension), "_", " "))
	}
	msg += " after " + tui.Plural(res.Iterations, "iteration")
	switch {
	case res.Err != nil:
		msg += ": " + res.Err.Error()
	case res.Reason != "":
		msg += ": " + res.Reason
	}
	// In text mode the summary on stdout already says how the turn ended.
	return &exitError{code: exitTurn, err: errors.New(msg), quiet: !asJSON}
}

// readPrompt joins the arguments into the prompt ("" for none). A single
// "-" reads it from stdin; a "-" after other arguments adds what stdin
// holds to them, in a <stdin> block (cat log | orca run "why does it
// fail" -). Stdin is read until its end or until ctx ends, and only when
// asked: a program that starts orca with a pipe it never closes does not
// hang it.
func readPrompt(ctx context.Context, stdin io.Reader, args []string) (string, error) {
	if len(args) == 0 {
		return "", nil
	}
	var block string
	if args[len(args)-1] == "-" {
		type read struct {
			b   []byte
			err error
		}
		ch := make(chan read, 1)
		go func() {
			// One byte past the cap is enough to know it is too long.
			b, err := io.ReadAll(io.LimitReader(stdin, maxPrompt+1))
			ch <- read{b, err}
		}()
		var in string
		select {
		case r := <-ch:
			if r.err != nil {
				return "", usageErrorf("reading the prompt from standard input: %v", r.err)
			}
			in = string(r.b)
		case <-ctx.Done():
			return "", &exitError{code: exitTurn, err: fmt.Errorf("reading the prompt from standard input: %w", context.Cause(ctx))}
		}
		if args = args[:len(args)-1]; len(args) == 0 {
			args = []string{in}
		} else if strings.TrimSpace(in) != "" {
			block = "\n\n<stdin>\n" + strings.TrimRight(in, "\r\n") + "\n</stdin>"
		}
	}
	prompt := strings.TrimSpace(strings.Join(args, " "))
	if prompt == "" {
		return "", usageErrorf("the prompt is empty")
	}
	if n := len(prompt) + len(block); n > maxPrompt {
		size := sizeText(n)
		if n == maxPrompt+1 || len(block) > maxPrompt {
			size = "longer than that" // standard input, read up to the cap
		}
		return "", usageErrorf("the prompt is more than orca takes, %s (it is %s: more than a model's context window holds): put the text in a file in the workspace and ask the model to read what it needs of it",
			sizeText(maxPrompt), size)
	}
	return prompt + block, nil
}

// maxPrompt is the largest prompt orca run takes: 4 MiB, more than any
// model's context window (200k tokens are about 800 KB of text) — a
// larger one could only fail at the provider, after the store kept it.
const maxPrompt = 4 << 20

// sizeText says n bytes for people: "4 MiB", "20.0 MiB", "312 KiB".
func sizeText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// quietRenderer shows nothing: with --output-format json, stdout carries
// only the result.
type quietRenderer struct{}

func (quietRenderer) Render(event.Event) {}
func (quietRenderer) Close()             {}
func (quietRenderer) Err() error         { return nil }

// writeResult writes the turn's result as one JSON object, in the shape of
// Claude Code's --output-format json (type, subtype, is_error, result,
// session_id, num_turns, duration_ms, total_cost_usd, usage), with orca's
// stop_reason and, for --output-schema, structured_output.
func writeResult(w io.Writer, sessionID string, res *agent.Result, runErr error, took time.Duration) error {
	out := map[string]any{"type": "result", "session_id": sessionID, "duration_ms": took.Milliseconds()}
	subtype, isErr := "error_during_execution", true
	if res != nil {
		out["stop_reason"] = res.StopReason
		out["num_turns"] = res.Iterations
		out["result"] = res.Answer
		out["total_cost_usd"] = res.Spent.CostUSD
		out["usage"] = map[string]int64{"input_tokens": res.Usage.InputTokens, "output_tokens": res.Usage.OutputTokens,
			"cache_read_input_tokens": res.Usage.CacheReadTokens, "cache_creation_input_tokens": res.Usage.CacheWriteTokens}
		if res.Output != nil {
			out["structured_output"] = res.Output
		}
		switch res.StopReason {
		case agent.StopAnswered, agent.StopCompacted:
			subtype, isErr = "success", false
		case agent.StopMaxIterations:
			subtype = "error_max_turns"
		}
		switch {
		case res.Err != nil:
			out["error"] = res.Err.Error()
		case res.Reason != "" && isErr:
			out["error"] = res.Reason
		}
	}
	if runErr != nil && out["error"] == nil {
		out["error"] = runErr.Error()
	}
	out["subtype"], out["is_error"] = subtype, isErr
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// pipeOut is standard output when it is no terminal: the first write that
// finds its reader gone (EPIPE, once SIGPIPE no longer kills orca) closes
// gone, and what follows is dropped.
type pipeOut struct {
	w    io.Writer
	gone chan struct{}
	once sync.Once
	dead atomic.Bool
}

func (p *pipeOut) Write(b []byte) (int, error) {
	if p.dead.Load() {
		return len(b), nil
	}
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.dead.Store(true)
		p.once.Do(func() { close(p.gone) })
		return len(b), nil
	}
	return n, err
}
