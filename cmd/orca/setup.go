package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/extension"
	"github.com/orca-agent/orca/llm/provider"
	"github.com/orca-agent/orca/observe"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/sqlite"
)

// agentFlags are the flags of the commands that run an agent in a session
// of a workspace: run and chat.
type agentFlags struct {
	provider      string
	model         string
	baseURL       string
	script        string
	verify        string
	workspace     string
	maxIterations int
	system        string
	perm          permFlags
	trust         bool
	session       string
	cont          bool
	budget        budgetFlags
	// timeline: also write the run's events to .orca/runs/<run>/events.jsonl.
	timeline bool
}

// budgetFlags are the --budget-* flags: a session's budget override.
type budgetFlags struct {
	tokens    int64
	costUSD   float64
	toolCalls int64
	wallTime  time.Duration
	// given says which flags were given: only those change the override.
	given struct{ tokens, cost, toolCalls, wallTime bool }
}

func addAgentFlags(cmd *cobra.Command, f *agentFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.provider, "provider", "", "`NAME` of the model provider, one of "+strings.Join(append(provider.Names(), scriptProvider), ", ")+
		" (default: the settings' \"provider\", else $"+provider.ProviderEnv+"; script when --script is given)")
	fl.StringVar(&f.model, "model", "", "`NAME` of the model (default: the settings' \"model\", else $"+provider.ModelEnv+", else the provider's default)")
	fl.StringVar(&f.baseURL, "base-url", "", "`URL` of the provider's API, such as http://localhost:11434/v1 for a local OpenAI-compatible server "+
		"(default: the settings' \"base_url\", else $ANTHROPIC_BASE_URL or $OPENAI_BASE_URL, else the provider's own)")
	fl.StringVar(&f.script, "script", "", "JSON `FILE` of the scripted model's responses (the script provider)")
	fl.StringVar(&f.verify, "verify", "", "shell `COMMAND` that checks every finished turn, such as 'go test ./...': if it fails, the model is sent back "+
		"to fix it, and a turn still failing ends as escalated (default: the settings' \"verify\"; \"\" for none)")
	fl.StringVarP(&f.workspace, "workspace", "w", ".", "workspace `DIR`: the folder the tools work in, whose .orca/orca.db keeps the sessions")
	fl.IntVar(&f.maxIterations, "max-iterations", agent.DefaultMaxIterations, "end a turn after `N` model calls (iterations)")
	fl.StringVar(&f.session, "session", "", "continue session `ID`, or start it if the workspace has none by that id (default: a new session)")
	fl.BoolVar(&f.cont, "continue", false, "continue the workspace's most recently active session")
	fl.StringVar(&f.system, "system", "", "system `PROMPT` (default: orca's built-in coding-agent prompt; \"\" for none)")
	addPermFlags(cmd, &f.perm, "the settings' defaultMode, else default")
	fl.BoolVar(&f.trust, "trust", false, "trust the workspace for this run only: apply its own command hooks, allow rules and permission mode")
	fl.Int64Var(&f.budget.tokens, "budget-tokens", 0, "cap the session's tokens (in and out, all turns) at `N`; 0 lifts the cap")
	fl.Float64Var(&f.budget.costUSD, "budget-cost", 0, "cap the session's cost at `USD` dollars; 0 lifts the cap")
	fl.Int64Var(&f.budget.toolCalls, "budget-tool-calls", 0, "cap the session's tool calls at `N`; 0 lifts the cap")
	fl.DurationVar(&f.budget.wallTime, "budget-time", 0, "cap the session's wall time at `DURATION` (such as 90s or 10m); 0 lifts the cap")
	fl.BoolVar(&f.timeline, "timeline", false, "also write every event to .orca/runs/<run>/events.jsonl ('orca timeline' shows it)")
}

// plan is what the agent flags say, checked: everything a session needs
// that can be known before anything is opened.
type plan struct {
	flags *agentFlags
	// model is the client and its configuration; its fill, if set,
	// completes the client once the session's id is known (the script
	// provider's routes are per session).
	model *model
	// verify is the verification command of every turn: --verify, else the
	// settings' (empty: none).
	verify    string
	workspace string // as given
	system    string
	settings  *config.Settings
	warnings  []config.Warning
	policy    *policy.Policy
	configDir string
	// exts are the workspace's filesystem extensions, trusted or not.
	exts []*extension.Extension
}

// check validates the agent flags. Every problem is a usage error.
func (f *agentFlags) check(cmd *cobra.Command, o options) (*plan, error) {
	ws, err := checkWorkspace(f.workspace)
	if err != nil {
		return nil, err
	}
	if f.maxIterations < 1 {
		return nil, usageErrorf("--max-iterations must be at least 1, not %d", f.maxIterations)
	}
	if f.cont && f.session != "" {
		return nil, usageErrorf("--continue and --session %s name two sessions: give one of them", f.session)
	}
	fl := cmd.Flags()
	b := &f.budget
	b.given.tokens, b.given.cost = fl.Changed("budget-tokens"), fl.Changed("budget-cost")
	b.given.toolCalls, b.given.wallTime = fl.Changed("budget-tool-calls"), fl.Changed("budget-time")
	switch {
	case b.tokens < 0:
		return nil, usageErrorf("--budget-tokens must not be negative, not %d", b.tokens)
	case b.costUSD < 0:
		return nil, usageErrorf("--budget-cost must not be negative, not %g", b.costUSD)
	case b.toolCalls < 0:
		return nil, usageErrorf("--budget-tool-calls must not be negative, not %d", b.toolCalls)
	case b.wallTime < 0:
		return nil, usageErrorf("--budget-time must not be negative, not %s", b.wallTime)
	}
	configDir := o.userConfigDir()
	settings, warns, err := config.Load(config.LoadOptions{Workspace: ws, ConfigDir: configDir, TrustOverride: f.trust})
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	m, err := f.chooseModel(cmd, settings, o)
	if err != nil {
		return nil, err
	}
	verify := settings.Verify
	if fl.Changed("verify") {
		verify = f.verify
	}
	pol, err := policyFor(cmd, &f.perm, settings, settings.Mode(), configDir)
	if err != nil {
		return nil, err
	}
	exts, err := loadExtensions(ws, configDir, &warns)
	if err != nil {
		return nil, err
	}
	system := f.system
	if !fl.Changed("system") {
		system = defaultSystemPrompt
	}
	return &plan{flags: f, model: m, verify: verify, workspace: ws, system: system, settings: settings,
		warnings: warns, policy: pol, configDir: configDir, exts: exts}, nil
}

// openStore opens the session store of workspace ws,
// <ws>/.orca/orca.db, creating it if needed. Its errors name the file and
// end orca with exitTurn.
func openStore(ws string) (*sqlite.Store, error) {
	root, err := config.Canonical(ws)
	if err != nil {
		return nil, &exitError{code: exitTurn, err: fmt.Errorf("workspace %s: %w", ws, err)}
	}
	path := sqlite.DefaultPath(root)
	st, err := sqlite.Open(path)
	if err != nil {
		// Say the path once.
		msg := strings.TrimPrefix(err.Error(), "sqlite store: open "+path+": ")
		return nil, &exitError{code: exitTurn, err: fmt.Errorf("cannot open the session store %s: %s", path, msg)}
	}
	return st, nil
}

// live is an open session with everything it runs on. close releases it
// all, in order.
type live struct {
	*session.LiveSession
	rt *agent.Runtime
	// view says which events of the session's feed are shown.
	view    *view
	closers []func()
}

// close closes the session (firing SESSION_END even after Ctrl-C), then
// the runtime, the event writers, the store, the extensions and the
// services.
func (l *live) close(ctx context.Context) {
	if l.LiveSession != nil {
		l.LiveSession.Close(context.WithoutCancel(ctx))
	}
	for i := len(l.closers) - 1; i >= 0; i-- {
		l.closers[i]()
	}
}

// open opens the session the flags name — --session, --continue or a new
// one — on a runtime with the default tools over the workspace, its state
// in the workspace's store; then it applies the --budget-* flags to the
// session's stored budget. The session's events, its subagent forks'
// included, go to onEvent, one at a time; the calls the policy asks about
// go to approver (nil: refused). oneTurn: the session runs one turn, and
// nothing is shown after its turn_completed.
func (p *plan) open(ctx context.Context, stderr io.Writer, approver policy.Approver, onEvent func(event.Event), oneTurn bool) (_ *live, err error) {
	l := &live{}
	defer func() {
		if err != nil {
			l.close(ctx)
		}
	}()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// The process's services: created here, closed after the runtime that
	// uses them.
	svc := agent.NewServices(logger)
	l.closers = append(l.closers, func() { svc.Close() })
	unregister, err := p.settings.RegisterHooks(svc.Hooks, p.workspace)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	l.closers = append(l.closers, unregister)
	// The trusted extensions: their handlers start on their first event or
	// hook, and stop when loaded is closed, after the runtime.
	loaded, err := extension.RegisterExtensions(svc, p.exts)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	l.closers = append(l.closers, func() { loaded.Close() })
	st, err := openStore(p.workspace)
	if err != nil {
		return nil, err
	}
	l.closers = append(l.closers, func() { st.Close() })
	// Every event becomes an observation row of the store: closed after
	// the session and the runtime, so that their last events are written,
	// and before the store.
	rows, err := observe.NewRows(svc.Bus, st, logger)
	if err != nil {
		return nil, &exitError{code: exitTurn, err: fmt.Errorf("observation rows: %w", err)}
	}
	l.closers = append(l.closers, func() { rows.Close() }) // its failures were logged as they happened
	if p.flags.timeline {
		if err := p.startTimeline(l, svc.Bus, stderr); err != nil {
			return nil, err
		}
	}
	if approver == nil {
		approver = policy.Headless{}
	}
	rt, err := agent.New(agent.Definition{
		Name:          agentName,
		SystemPrompt:  p.system,
		MaxIterations: p.flags.maxIterations,
		Model:         p.model.cfg.Model,
		Prices:        budget.DefaultPrices.With(p.settings.Prices),
		Verify:        p.verify,
	}, agent.Collaborators{
		Client:    p.model.client,
		Workspace: p.workspace,
		Logger:    logger,
		Services:  svc,
		Policy:    p.policy,
		Approver:  approver,
		Approvals: session.Approvals(st),
		ConfigDir: cmp.Or(p.configDir, "-"),
	})
	if err != nil {
		return nil, &exitError{code: exitTurn, err: err}
	}
	l.rt = rt
	l.closers = append(l.closers, func() { rt.Close() })

	id, err := p.sessionID(ctx, st, rt.FS().Root())
	if err != nil {
		return nil, err
	}
	if p.model.fill != nil {
		p.model.fill(id)
	}
	l.view = &view{show: onEvent, oneTurn: oneTurn}
	ls, err := session.NewRouter(rt, st, agent.NewExecutor()).Open(ctx, id, session.OpenOptions{OnEvent: l.view.feed})
	switch {
	case errors.Is(err, store.ErrWrongRuntime):
		// A runtime is an agent over a workspace folder: the session was
		// started in the folder at another path (it was moved or copied).
		where := ""
		if s, err := st.Session(ctx, id); err == nil {
			where = fmt.Sprintf(" (agent %s in %s)", s.Agent, s.Workspace)
		}
		return nil, usageErrorf("session %s belongs to another runtime%s: this one is agent %s in %s, "+
			"and a session stays with the runtime that started it", id, where, agentName, rt.FS().Root())
	case err != nil:
		return nil, &exitError{code: exitTurn, err: fmt.Errorf("cannot open session %s: %w", id, err)}
	}
	l.LiveSession = ls
	if err := p.flags.budget.apply(ctx, ls); err != nil {
		return nil, &exitError{code: exitTurn, err: fmt.Errorf("session %s: setting the budget: %w", id, err)}
	}
	return l, nil
}

// startTimeline writes the events of the bus to a new run's timeline,
// .orca/runs/<run>/events.jsonl, until l closes; then it says on stderr
// where the timeline went.
func (p *plan) startTimeline(l *live, bus *event.Bus, stderr io.Writer) error {
	root, err := config.Canonical(p.workspace)
	if err != nil {
		return &exitError{code: exitTurn, err: fmt.Errorf("workspace %s: %w", p.workspace, err)}
	}
	tl, err := observe.NewTimeline(bus, root, newRunID(time.Now()))
	if err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	l.closers = append(l.closers, func() {
		if err := tl.Close(); err != nil {
			fmt.Fprintf(stderr, "orca: %v\n", err)
			return
		}
		fmt.Fprintf(stderr, "orca: the run's timeline is in %s ('orca timeline %s' shows it)\n", tl.Path(), shellQuote(tl.Path()))
	})
	return nil
}

// newRunID returns a fresh run id, run_<yyyymmdd-hhmmss>_<random hex>:
// ids sort in the order the runs started.
func newRunID(now time.Time) string {
	var b [4]byte
	rand.Read(b[:])
	return "run_" + now.Format("20060102-150405") + "_" + hex.EncodeToString(b[:])
}

// sessionID returns the id of the session to open: --session's, the most
// recently active session of the workspace for --continue, or a new one.
func (p *plan) sessionID(ctx context.Context, st store.Store, root string) (string, error) {
	switch {
	case p.flags.session != "":
		return p.flags.session, nil
	case p.flags.cont:
		ss, err := st.Sessions(ctx, store.Filter{Workspace: root, Limit: 1})
		if err != nil {
			return "", &exitError{code: exitTurn, err: fmt.Errorf("--continue: listing the sessions of %s: %w", root, err)}
		}
		if len(ss) == 0 {
			return "", usageErrorf("--continue: workspace %s has no session to continue yet", root)
		}
		return ss[0].ID, nil
	}
	return session.NewID(), nil
}

// apply sets the budget flags given on the session's stored override,
// starting from the budget in force: the other dimensions keep theirs.
func (b *budgetFlags) apply(ctx context.Context, ls *session.LiveSession) error {
	g := b.given
	if !g.tokens && !g.cost && !g.toolCalls && !g.wallTime {
		return nil
	}
	l, err := ls.Budget(ctx)
	if err != nil {
		return err
	}
	if g.tokens {
		l.Tokens = b.tokens
	}
	if g.cost {
		l.CostUSD = b.costUSD
	}
	if g.toolCalls {
		l.ToolCalls = b.toolCalls
	}
	if g.wallTime {
		l.WallTime = b.wallTime
	}
	return ls.SetBudget(ctx, &l)
}

// gated returns the OnEvent of a turn whose events render shows: after
// drawing an approval_requested event it tells gate, so that the
// approver's question comes under it.
func gated(render func(event.Event), gate *approvalGate) func(event.Event) {
	return func(ev event.Event) {
		render(ev)
		if d, ok := ev.Data.(*event.ApprovalData); ok {
			if ev.Name == event.ApprovalRequested {
				gate.rendered(d.ToolUseID)
			} else {
				gate.resolved(d.ToolUseID)
			}
		}
	}
}

// view picks the events of a session's feed that are shown. orca run shows
// one turn: from its turn_started to its turn_completed, its forks'
// events among them, and nothing after (a background fork still running
// is not shown); orca chat shows the turns and the forks' events between
// them. Neither shows session_started or session_ended.
type view struct {
	show    func(event.Event)
	oneTurn bool
	mu      sync.Mutex
	done    bool
}

func (v *view) feed(ev event.Event) {
	if v.show == nil || ev.Name == event.SessionStarted || ev.Name == event.SessionEnded {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.done {
		return
	}
	v.show(ev)
	if v.oneTurn && ev.Depth == 0 && ev.Name == event.TurnCompleted {
		v.done = true
	}
}

// stop ends what is shown.
func (v *view) stop() {
	v.mu.Lock()
	v.done = true
	v.mu.Unlock()
}
