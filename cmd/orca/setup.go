package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/provider"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/tui"
)

// agentFlags are the flags of the commands that run an agent in a session
// of a workspace: run and chat.
type agentFlags struct {
	// output is what --output-schema asks of the turn (nil: text).
	output *agent.Output
	// media are the files --attach shows the model with the prompt.
	media            []*llm.Media
	provider         string
	model            string
	baseURL          string
	fallbacks        []string
	script           string
	verify           string
	workspace        string
	maxIterations    int
	maxTokens        int
	maxParallelTools int
	system           string
	perm             permFlags
	trust            bool
	noSandbox        bool
	noCheckpoints    bool
	noLSP            bool
	noClaude         bool
	pluginDirs       []string
	session          string
	cont             bool
	fork             bool
	budget           budgetFlags
	// timeline: also write the run's events to .orca/runs/<run>/events.jsonl.
	timeline bool
	// park: with no one to ask, park the calls the policy asks about.
	park bool
	// result: stdout carries one result object (--output-format json).
	result bool
	// goOn: the run goes on with the session's parked turn (no prompt).
	goOn   bool
	claude claudeFlags
}

// claudeFlags are Claude Code's flags of the same meaning as orca's, taken
// as they are: a claude -p habit works with orca (hidden from the flag
// list; the commands' help names them).
type claudeFlags struct {
	resume          string
	skipPermissions bool
	allowedTools    []string
	disallowedTools []string
	appendSystem    string
	maxTurns        int
	verbose         bool
}

// claudeFlagsHelp is what the help of the commands that run an agent says
// of Claude Code's flags.
const claudeFlagsHelp = `Claude Code's flags work as they do there: -c (--continue), -r/--resume ID
(--session ID), --dangerously-skip-permissions (--permission-mode
bypass), --allowedTools and --disallowedTools (--allow and --deny; one
value may hold several rules, "Bash(git log:*),Edit" or "Read Edit"),
--append-system-prompt TEXT (after the system prompt), --max-turns N
(--max-iterations N) and --verbose (every event as a debug line on
stderr).`

// budgetFlags are the --budget-* flags: a session's budget override.
type budgetFlags struct {
	tokens    int64
	costUSD   float64
	toolCalls int64
	wallTime  time.Duration
	// change is what the flags given change, set by check.
	change budget.Change
}

func addAgentFlags(cmd *cobra.Command, f *agentFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.provider, "provider", "", "`NAME` of the model provider, one of "+strings.Join(append(provider.Names(), app.ScriptProvider), ", ")+
		" (default: the settings' \"provider\", else $"+provider.ProviderEnv+"; script when --script is given)")
	fl.StringVar(&f.model, "model", "", "`NAME` of the model (default: the settings' \"model\", else $"+provider.ModelEnv+", else the provider's default)")
	fl.StringVar(&f.baseURL, "base-url", "", "`URL` of the provider's API, such as http://localhost:11434/v1 for a local OpenAI-compatible server "+
		"(default: the settings' \"base_url\", else $ANTHROPIC_BASE_URL or $OPENAI_BASE_URL, else the provider's own)")
	fl.StringVar(&f.script, "script", "", "JSON `FILE` of the scripted model's responses (the script provider)")
	fl.StringArrayVar(&f.fallbacks, "fallback-model", nil, "`MODEL` a call falls over to when the model fails it (overloaded, rate limited, a server's error) after its retries, "+
		"before any of its answer streamed: a model of the same provider, or PROVIDER:MODEL (another provider's, with its credentials from the environment); repeatable, tried in order")
	fl.StringVar(&f.verify, "verify", "", "shell `COMMAND` that checks every finished turn, such as 'go test ./...': if it fails, the model is sent back "+
		"to fix it, and a turn still failing ends as escalated (default: the settings' \"verify\"; \"\" for none)")
	fl.StringVarP(&f.workspace, "workspace", "w", ".", "workspace `DIR`: the folder the tools work in, whose .orca/orca.db keeps the sessions")
	fl.IntVar(&f.maxIterations, "max-iterations", 0, "end a turn after `N` model calls (iterations); 0, the default, sets no cap — as in Claude Code, a long coding turn runs to its end, and the --budget-* flags and Ctrl-C are the brakes")
	fl.IntVar(&f.maxTokens, "max-tokens", agent.DefaultMaxTokens, "cap each model response at `N` output tokens, as the provider counts them: an answer cut off there ends the turn as max_tokens")
	fl.IntVar(&f.maxParallelTools, "max-parallel-tools", 0, "run at most `N` read-only tool calls of one response at once (1: one after another; default: the settings' maxParallelTools, else 10)")
	fl.StringVar(&f.session, "session", "", "continue session `ID`, or start it if the workspace has none by that id (default: a new session)")
	fl.BoolVarP(&f.cont, "continue", "c", false, "continue the workspace's most recently active session")
	fl.BoolVar(&f.fork, "fork-session", false, "with --session or --continue: start a new session from that one's conversation, leaving it as it was")
	fl.StringVar(&f.system, "system", "", "system `PROMPT` (default: orca's built-in coding-agent prompt; \"\" for none)")
	addPermFlags(cmd, &f.perm, "the settings' defaultMode, else default")
	fl.BoolVar(&f.noLSP, "no-lsp", false, "start no language server: no diagnostics after edits, no LSP tool (servers start on first use: gopls, typescript-language-server, pyright, rust-analyzer where installed, and the settings' lspServers)")
	fl.BoolVar(&f.noCheckpoints, "no-checkpoints", false, "keep no checkpoint of what the turns change in the workspace (orca rewind): no snapshot before and after each turn")
	fl.BoolVar(&f.noSandbox, "no-sandbox", false, "run commands (Bash, --verify) without the OS sandbox: they may then write anywhere the user can and reach the network "+
		"(the settings' \"sandbox\": {\"enabled\": false} does the same)")
	fl.StringArrayVar(&f.pluginDirs, "plugin-dir", nil, "run the hooks of the Claude Code plugin in this folder (its hooks/hooks.json, with CLAUDE_PLUGIN_ROOT set); repeatable")
	fl.BoolVar(&f.noClaude, "no-claude", false, "read none of Claude Code's files: ~/.claude (settings, skills, agents, CLAUDE.md), the workspace's .claude and CLAUDE.md; only orca's own")
	fl.BoolVar(&f.trust, "trust", false, "trust the workspace for this run only: apply its own command hooks, allow rules and permission mode")
	fl.Int64Var(&f.budget.tokens, "budget-tokens", 0, "cap the session's tokens (in and out, all turns) at `N`; 0 lifts the cap")
	fl.Float64Var(&f.budget.costUSD, "budget-cost", 0, "cap the session's cost at `USD` dollars; 0 lifts the cap")
	fl.Int64Var(&f.budget.toolCalls, "budget-tool-calls", 0, "cap the session's tool calls at `N`; 0 lifts the cap")
	fl.DurationVar(&f.budget.wallTime, "budget-time", 0, "cap the session's wall time at `DURATION` (such as 90s or 10m); 0 lifts the cap")
	fl.BoolVar(&f.timeline, "timeline", false, "also write every event to .orca/runs/<run>/events.jsonl ('orca timeline' shows it)")
	c := &f.claude
	fl.StringVarP(&c.resume, "resume", "r", "", "Claude Code's --resume `ID`: --session ID")
	fl.BoolVar(&c.skipPermissions, "dangerously-skip-permissions", false, "Claude Code's: --permission-mode bypass")
	for _, name := range []string{"allowedTools", "allowed-tools"} {
		fl.StringArrayVar(&c.allowedTools, name, nil, "Claude Code's: --allow for each `RULES` (comma or space separated)")
	}
	for _, name := range []string{"disallowedTools", "disallowed-tools"} {
		fl.StringArrayVar(&c.disallowedTools, name, nil, "Claude Code's: --deny for each `RULES` (comma or space separated)")
	}
	fl.StringVar(&c.appendSystem, "append-system-prompt", "", "Claude Code's: `TEXT` after the system prompt")
	fl.IntVar(&c.maxTurns, "max-turns", 0, "Claude Code's: --max-iterations `N`")
	fl.BoolVar(&c.verbose, "verbose", false, "Claude Code's: every event as a debug line on stderr")
	for _, name := range []string{"resume", "dangerously-skip-permissions", "allowedTools", "allowed-tools", "disallowedTools", "disallowed-tools", "append-system-prompt", "max-turns", "verbose"} {
		fl.MarkHidden(name)
	}
}

// applyClaude turns Claude Code's flags into orca's, refusing a pair that
// says two things (--resume and --session, --max-turns and
// --max-iterations, --dangerously-skip-permissions and another
// --permission-mode).
func (f *agentFlags) applyClaude(cmd *cobra.Command) error {
	fl, c := cmd.Flags(), &f.claude
	if fl.Changed("resume") {
		if fl.Changed("session") && f.session != c.resume {
			return usageErrorf("--resume %s and --session %s name two sessions: give one of them", c.resume, f.session)
		}
		f.session = c.resume
	}
	if fl.Changed("max-turns") {
		if c.maxTurns < 1 {
			return usageErrorf("--max-turns must be at least 1, not %d", c.maxTurns)
		}
		if fl.Changed("max-iterations") && f.maxIterations != c.maxTurns {
			return usageErrorf("--max-turns %d and --max-iterations %d say two things: give one of them", c.maxTurns, f.maxIterations)
		}
		f.maxIterations = c.maxTurns
	}
	if c.skipPermissions {
		if fl.Changed("permission-mode") && f.perm.mode != string(policy.ModeBypass) {
			return usageErrorf("--dangerously-skip-permissions is --permission-mode bypass, not %s: give one of them", f.perm.mode)
		}
		f.perm.mode = string(policy.ModeBypass)
		fl.Lookup("permission-mode").Changed = true
	}
	for _, v := range c.allowedTools {
		f.perm.allow = append(f.perm.allow, splitRules(v)...)
	}
	for _, v := range c.disallowedTools {
		f.perm.deny = append(f.perm.deny, splitRules(v)...)
	}
	return nil
}

// splitRules splits a value of --allowedTools into its rules, as Claude
// Code does: at commas and spaces outside parentheses ("Bash(git log:*),
// Edit", "Read Edit").
func splitRules(v string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range v {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0 && (r == ',' || r == ' '):
			if s := strings.TrimSpace(v[start:i]); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(v[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

// check validates the agent flags and returns the configuration of the
// App they ask for. Every problem is a usage error.
func (f *agentFlags) check(cmd *cobra.Command, o options) (app.Config, error) {
	if err := f.applyClaude(cmd); err != nil {
		return app.Config{}, err
	}
	if f.maxIterations < 0 {
		return app.Config{}, usageErrorf("--max-iterations must be at least 1 (or 0: no cap), not %d", f.maxIterations)
	}
	if f.maxTokens < 1 {
		return app.Config{}, usageErrorf("--max-tokens must be at least 1, not %d", f.maxTokens)
	}
	// 0 is the flag's unset value (the settings', else 10); given, it is
	// refused as -2 is.
	if f.maxParallelTools < 0 || f.maxParallelTools == 0 && cmd.Flags().Changed("max-parallel-tools") {
		return app.Config{}, usageErrorf("--max-parallel-tools must be at least 1, not %d", f.maxParallelTools)
	}
	if f.cont && f.session != "" {
		return app.Config{}, usageErrorf("--continue and --session %s name two sessions: give one of them", f.session)
	}
	if f.fork && !f.cont && f.session == "" {
		return app.Config{}, usageErrorf("--fork-session needs the session to fork: give --session ID or --continue")
	}
	fl := cmd.Flags()
	b := &f.budget
	b.change = budget.Change{}
	if fl.Changed("budget-tokens") {
		b.change.Tokens = &b.tokens
	}
	if fl.Changed("budget-cost") {
		b.change.CostUSD = &b.costUSD
	}
	if fl.Changed("budget-tool-calls") {
		b.change.ToolCalls = &b.toolCalls
	}
	if fl.Changed("budget-time") {
		b.change.WallTime = &b.wallTime
	}
	switch d, _ := b.change.Negative(); d {
	case budget.Tokens:
		return app.Config{}, usageErrorf("--budget-tokens must not be negative, not %d", b.tokens)
	case budget.Cost:
		return app.Config{}, usageErrorf("--budget-cost must be a number of dollars, 0 or more, not %g", b.costUSD)
	case budget.ToolCalls:
		return app.Config{}, usageErrorf("--budget-tool-calls must not be negative, not %d", b.toolCalls)
	case budget.WallTime:
		return app.Config{}, usageErrorf("--budget-time must not be negative, not %s", b.wallTime)
	}
	cfg := app.Config{
		Workspace:        f.workspace,
		ConfigDir:        o.configDir,
		Trust:            f.trust,
		NoSandbox:        f.noSandbox,
		NoClaude:         f.noClaude,
		PluginDirs:       f.pluginDirs,
		Model:            app.ModelConfig{Provider: f.provider, Model: f.model, BaseURL: f.baseURL, Script: f.script, Fallbacks: f.fallbacks},
		Labels:           labels,
		Getenv:           o.env,
		SystemPrompt:     app.DefaultSystemPrompt,
		MaxIterations:    cmp.Or(f.maxIterations, noCap),
		MaxTokens:        f.maxTokens,
		MaxParallelTools: f.maxParallelTools,
		Timeline:         f.timeline,
		// OpenTelemetry, when the OTEL_* variables name an endpoint.
		Telemetry: true,
		// What each turn changes in the workspace, for orca rewind.
		Checkpoints:     !f.noCheckpoints,
		LanguageServers: !f.noLSP,
	}
	if fl.Changed("system") {
		cfg.SystemPrompt = f.system
	}
	if a := f.claude.appendSystem; a != "" {
		cfg.SystemPrompt = strings.TrimRight(cfg.SystemPrompt+"\n\n"+a, "\n")
		cfg.SystemPrompt = strings.TrimLeft(cfg.SystemPrompt, "\n")
	}
	if f.claude.verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if fl.Changed("verify") {
		cfg.Verify = &f.verify
	}
	if err := f.perm.apply(cmd, &cfg); err != nil {
		return app.Config{}, err
	}
	return cfg, nil
}

// noCap is the iteration cap of a turn when --max-iterations sets none:
// more model calls than a turn could make in a lifetime, not a limit.
const noCap = math.MaxInt32

// warningPrefix begins the lines of the warnings orca's packages log.
const warningPrefix = "orca: warning: "

// labels are how the model errors name the flags.
var labels = app.Labels{Provider: "--provider NAME", Script: "--script FILE", BaseURL: "--base-url"}

// live is an open session and the App it runs in.
type live struct {
	*session.LiveSession
	app    *app.App
	stderr io.Writer
	// endReason is why the session ends (session.EndOther if empty).
	endReason string
}

// close closes the session (firing SESSION_END even after Ctrl-C), then
// the App, and says where the run's timeline went.
func (l *live) close(ctx context.Context) {
	l.LiveSession.End(context.WithoutCancel(ctx), l.endReason)
	err := l.app.Close()
	if path := l.app.TimelinePath(); path != "" {
		if err != nil {
			fmt.Fprintf(l.stderr, "orca: %v\n", err)
			return
		}
		fmt.Fprintf(l.stderr, "orca: the run's timeline is in %s ('orca timeline %s' shows it)\n", path, shellQuote(path))
	}
}

// openApp opens the App of cfg, its warnings shown on stderr (through
// cfg.Logger if the command set one). Its errors end orca with the right
// code.
func openApp(ctx context.Context, cfg app.Config, stderr io.Writer) (*app.App, error) {
	if cfg.Logger == nil {
		cfg.Logger = tui.Warnings(stderr, warningPrefix)
	}
	_, statErr := os.Lstat(filepath.Join(cfg.Workspace, ".orca"))
	a, err := app.Open(ctx, cfg)
	if err != nil {
		return nil, fromApp(err)
	}
	if errors.Is(statErr, fs.ErrNotExist) && fileExists(filepath.Join(a.Root(), ".orca", ".gitignore")) && fileExists(filepath.Join(a.Root(), ".git")) {
		// Said once: the next run finds the folder.
		fmt.Fprintln(stderr, "orca: made .orca/ to keep this workspace's sessions; commit .orca/.gitignore, which keeps orca's own files (the store, its runs) out of git")
	}
	reportWarnings(stderr, a.Warnings(), a.Root())
	reportExtensions(stderr, a.Extensions(), a.Root())
	return a, nil
}

// warnSandbox says, up front, that Bash commands will be refused when the
// OS sandbox cannot be set up here. Only the commands that stay (chat,
// serve, acp, mcp serve) ask: asking starts the sandbox's server, which
// `orca run` starts only when its turn runs a command (the command's
// error then says the same).
func warnSandbox(a *app.App, stderr io.Writer) {
	if err := a.SandboxError(); err != nil {
		fmt.Fprintf(stderr, "orca: warning: %v.\nBash commands will be refused. To run them without the sandbox, pass --no-sandbox or set \"sandbox\": {\"enabled\": false} in a settings file.\n", err)
	}
}

// fromApp gives an error of package app the exit code it ends orca with:
// a configuration that cannot be used is a usage error.
func fromApp(err error) error {
	var ce *app.ConfigError
	if errors.As(err, &ce) {
		return &exitError{code: exitUsage, err: err}
	}
	var busy *session.BusyError
	if errors.As(err, &busy) {
		return &exitError{code: exitBusy, err: err}
	}
	return &exitError{code: exitTurn, err: err}
}

// openSession opens, in the App a, the session the flags name — --session,
// --continue or a new one — then applies the --budget-* flags to the
// session's stored budget. The session's events, its subagent forks'
// included, go to feed (nil: none), one at a time. The live session owns
// a: closing it closes both, and so does an error.
func (f *agentFlags) openSession(ctx context.Context, a *app.App, stderr io.Writer, feed func(event.Event)) (*live, error) {
	ls, err := a.Session(ctx, app.SessionOptions{ID: f.session, Continue: f.cont, Fork: f.fork, OnEvent: feed, GoOn: f.goOn})
	if err != nil {
		a.Close()
		return nil, fromApp(err)
	}
	l := &live{LiveSession: ls, app: a, stderr: stderr}
	if _, err := ls.ChangeBudget(ctx, f.budget.change); err != nil {
		l.close(ctx)
		return nil, &exitError{code: exitTurn, err: fmt.Errorf("session %s: setting the budget: %w", ls.ID(), err)}
	}
	return l, nil
}

// checkWorkspace returns the folder dir, absolute with links resolved, or
// a usage error naming it.
func checkWorkspace(dir string) (string, error) {
	root, err := app.CheckWorkspace(dir)
	if err != nil {
		return "", fromApp(err)
	}
	return root, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
