package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/media"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/telemetry"
	"github.com/orca-agent/orca/tool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
)

// llmMessage is llm.Message (a shorter name for this package's helpers).
type llmMessage = llm.Message

// Scorer scores a run of a case, or of one of its turns (View says
// which). A library user's scorers go in Options.Scorers.
type Scorer interface {
	// Name names the scorer in reports and gates.
	Name() string
	// Score scores what v shows.
	Score(ctx context.Context, v *View) Score
}

// ScorerFunc is a Scorer of a function: a value from 0 to 1, passing at
// 1, and what is wrong ("" if nothing).
func ScorerFunc(name string, fn func(ctx context.Context, v *View) (float64, string)) Scorer {
	return &builtin{name: name, turn: -1, fn: fn}
}

// Score is a scorer's verdict.
type Score struct {
	Scorer string `json:"scorer"`
	// Turn is the turn scored, from 1; 0 for the whole case.
	Turn   int     `json:"turn,omitempty"`
	Value  float64 `json:"value"`
	Pass   bool    `json:"pass"`
	Detail string  `json:"detail,omitempty"`
	// CostUSD is what the scorer spent (a judge's model calls).
	CostUSD float64 `json:"cost_usd,omitempty"`
}

type builtin struct {
	name string
	turn int
	fn   func(ctx context.Context, v *View) (float64, string)
}

func (b *builtin) Name() string { return b.name }

func (b *builtin) Score(ctx context.Context, v *View) Score {
	v = v.run.view(b.turn)
	value, why := b.fn(ctx, v)
	return Score{Scorer: b.name, Turn: b.turn + 1, Value: value, Pass: value >= 1 && why == "", Detail: why}
}

// Options are how a suite runs.
type Options struct {
	// Live asks the configured model (Client, or Model) instead of the
	// cases' recorded responses; each case runs Repeat times (1 if zero).
	Live   bool
	Repeat int
	// Client is the model of live runs (nil: Model chooses, as orca run's
	// flags and settings do).
	Client llm.Client
	Model  app.ModelConfig
	// Judge is the model judge scorers ask (nil: judges fail, saying so).
	Judge llm.Client
	// JudgeModel names the judge's model for its requests.
	JudgeModel string
	// JudgeBudgetUSD caps what the run's judges spend, together (0: no
	// cap): a judge scorer past it fails, saying so.
	JudgeBudgetUSD float64
	// Scorers are added to every case's own.
	Scorers []Scorer
	// Parallel is how many cases run at once (the machine's cores if
	// zero).
	Parallel int
	// CaseBudgetUSD and RunBudgetUSD cap what a live case and the whole
	// run may spend (0: no cap): a case is stopped, and the cases not yet
	// started are not run, once reached.
	CaseBudgetUSD, RunBudgetUSD float64
	// Filter, if set, runs only the cases whose name contains it.
	Filter string
	// Getenv reads the environment (os.Getenv if nil).
	Getenv func(string) string
	// Logger receives what goes wrong around the cases (discarded if nil).
	Logger *slog.Logger
	// Telemetry, if set, traces each run of a case as a span
	// ("eval_case NAME": its suite, case, run and verdict), its turns'
	// spans under it (telemetry.FromEnv makes one from OTEL_*).
	Telemetry *telemetry.Telemetry
}

// Report is a run of suites.
type Report struct {
	Suites   []SuiteResult `json:"suites"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns"`
	Live     bool          `json:"live,omitempty"`
	Repeat   int           `json:"repeat,omitempty"`
	// Passed: every suite passed.
	Passed bool `json:"passed"`
	// CostUSD is what the run spent, judges included.
	CostUSD float64 `json:"cost_usd"`
	// Diff is what changed from a baseline report, when compared with
	// one (Compare).
	Diff *Diff `json:"diff,omitempty"`
}

// SuiteResult is a suite's cases, and its verdict.
type SuiteResult struct {
	Name      string       `json:"name"`
	File      string       `json:"file,omitempty"`
	Cases     []CaseResult `json:"cases"`
	PassRate  float64      `json:"pass_rate"`
	Threshold float64      `json:"threshold"`
	// FailedGates are the gates a case failed: "case: scorer".
	FailedGates []string `json:"failed_gates,omitempty"`
	Passed      bool     `json:"passed"`
}

// CaseResult is a case's runs (one in replay, Repeat live) and verdict.
type CaseResult struct {
	Name string      `json:"name"`
	Tags []string    `json:"tags,omitempty"`
	Runs []RunResult `json:"runs"`
	// Passed: every run passed (pass^k); PassAtK: one did (pass@k).
	Passed  bool `json:"passed"`
	PassAtK bool `json:"pass_at_k"`
	// PassedRuns counts the runs that passed.
	PassedRuns int `json:"passed_runs"`
}

// RunResult is one run of a case.
type RunResult struct {
	Scores   []Score       `json:"scores"`
	Passed   bool          `json:"passed"`
	Error    string        `json:"error,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	CostUSD  float64       `json:"cost_usd"`
	Tokens   int64         `json:"tokens"`
	// Turns are how each turn ended.
	Turns []string `json:"turns"`
}

// Run runs suites as opts say.
func Run(ctx context.Context, suites []*Suite, opts Options) (*Report, error) {
	if opts.Repeat <= 0 {
		opts.Repeat = 1
	}
	if !opts.Live && opts.Repeat > 1 {
		return nil, errors.New("a replay gives the same answer every time: --repeat is for live runs")
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	par := opts.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	rep := &Report{Started: time.Now().UTC(), Live: opts.Live, Repeat: opts.Repeat, Passed: true}
	r := &runner{opts: opts, judge: &judging{client: opts.Judge, model: opts.JudgeModel, budget: opts.JudgeBudgetUSD}}
	type job struct {
		s, c, k int
	}
	var jobs []job
	rep.Suites = make([]SuiteResult, len(suites))
	for i, s := range suites {
		rep.Suites[i] = SuiteResult{Name: s.Name, File: s.File, Threshold: cmpOr(s.Threshold, 1)}
		for j, c := range s.Cases {
			if opts.Filter != "" && !strings.Contains(c.Name, opts.Filter) {
				continue
			}
			rep.Suites[i].Cases = append(rep.Suites[i].Cases, CaseResult{Name: c.Name, Tags: c.Tags, Runs: make([]RunResult, opts.Repeat)})
			for k := range opts.Repeat {
				jobs = append(jobs, job{i, j, k})
			}
		}
	}
	index := func(j job) *RunResult {
		sr := &rep.Suites[j.s]
		for n := range sr.Cases {
			if sr.Cases[n].Name == suites[j.s].Cases[j.c].Name {
				return &sr.Cases[n].Runs[j.k]
			}
		}
		return nil
	}
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out := index(j)
			if opts.RunBudgetUSD > 0 && r.spent() >= opts.RunBudgetUSD {
				*out = RunResult{Error: fmt.Sprintf("not run: the run's budget ($%.2f) is spent", opts.RunBudgetUSD)}
				return
			}
			*out = r.runCase(ctx, suites[j.s], &suites[j.s].Cases[j.c], j.k)
			r.add(out.CostUSD)
		}()
	}
	wg.Wait()
	for i := range rep.Suites {
		sr := &rep.Suites[i]
		passed := 0
		for n := range sr.Cases {
			c := &sr.Cases[n]
			c.Passed = true
			for _, run := range c.Runs {
				rep.CostUSD += run.CostUSD
				if run.Passed {
					c.PassedRuns++
					c.PassAtK = true
				} else {
					c.Passed = false
				}
				for _, g := range suites[i].Gates {
					for _, s := range run.Scores {
						if s.Scorer == g && !s.Pass {
							sr.FailedGates = appendOnce(sr.FailedGates, c.Name+": "+g)
						}
					}
				}
			}
			if c.Passed {
				passed++
			}
		}
		if len(sr.Cases) > 0 {
			sr.PassRate = float64(passed) / float64(len(sr.Cases))
		}
		sr.Passed = len(sr.FailedGates) == 0 && sr.PassRate >= sr.Threshold-1e-9
		rep.Passed = rep.Passed && sr.Passed
	}
	rep.Duration = time.Since(rep.Started)
	return rep, ctx.Err()
}

type runner struct {
	opts  Options
	judge *judging
	mu    sync.Mutex
	cost  float64
	cases atomic.Uint64
}

func (r *runner) add(usd float64) {
	r.mu.Lock()
	r.cost += usd
	r.mu.Unlock()
}

func (r *runner) spent() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cost
}

// CaseRun is a case's run as scorers see it: its workspace (as the turns
// left it), its turns' results, the main agent's events, the transcript.
type CaseRun struct {
	Case      *Case
	Workspace string
	Results   []*agent.Result
	Events    []event.Event
	// Hooks are the hook handlers that ran in the main agent's turns, in
	// order, whatever they decided.
	Hooks      []hook.Ran
	Transcript []llm.Message
	Duration   time.Duration
	app        *app.App
}

// View is a Run seen from one turn (or all of it).
type View struct {
	run  *CaseRun
	turn int // from 0; -1: the case
}

// Run is the whole run.
func (v *View) Run() *CaseRun { return v.run }

// Turn is the turn seen (from 0), -1 for the case.
func (v *View) Turn() int { return v.turn }

func (r *CaseRun) view(turn int) *View { return &View{run: r, turn: turn} }

// Results are the turns' results seen.
func (v *View) Results() []*agent.Result {
	if v.turn < 0 {
		return v.run.Results
	}
	if v.turn < len(v.run.Results) {
		return v.run.Results[v.turn : v.turn+1]
	}
	return nil
}

// Result is the turn's result (the case's last turn's).
func (v *View) Result() *agent.Result {
	rs := v.Results()
	if len(rs) == 0 {
		return &agent.Result{StopReason: "not_run"}
	}
	return rs[len(rs)-1]
}

// Events are the main agent's events of the turns seen.
func (v *View) Events() []event.Event {
	if v.turn < 0 {
		return v.run.Events
	}
	id := v.Result().TurnID
	var out []event.Event
	for _, e := range v.run.Events {
		if e.Scope.TurnID == id {
			out = append(out, e)
		}
	}
	return out
}

// Call is a tool call the model made, and its observation.
type Call struct {
	ID, Tool string
	Input    json.RawMessage
	Result   string
	IsError  bool
}

// Calls are the model's tool calls, in the order they started.
func (v *View) Calls() []Call {
	var calls []Call
	at := map[string]int{}
	for _, e := range v.Events() {
		switch d := e.Data.(type) {
		case *event.ToolStartedData:
			if _, ok := at[d.ToolUseID]; !ok {
				at[d.ToolUseID] = len(calls)
				calls = append(calls, Call{ID: d.ToolUseID, Tool: d.ToolName, Input: d.Input})
			}
		case *event.ToolData:
			if i, ok := at[d.ToolUseID]; ok {
				calls[i].Result, calls[i].IsError = d.Output, d.IsError
			}
		}
	}
	return calls
}

// Block is a call the control plane refused.
type Block struct{ Tool, By, Reason string }

// Blocks are the refused calls.
func (v *View) Blocks() []Block {
	var out []Block
	for _, e := range v.Events() {
		if d, ok := e.Data.(*event.ToolBlockedData); ok {
			out = append(out, Block{Tool: d.ToolName, By: d.By, Reason: d.Reason})
		}
	}
	return out
}

// Approvals are the tools whose calls asked for approval, in order.
func (v *View) Approvals() []string {
	out := []string{}
	for _, e := range v.Events() {
		if e.Name == event.ApprovalRequested {
			if d, ok := e.Data.(*event.ApprovalData); ok {
				out = append(out, d.ToolName)
			}
		}
	}
	return out
}

// HookRan reports whether the hook handler name (as byMatches takes it,
// without "hook:") ran in the turns seen, whatever it decided.
func (v *View) HookRan(name string) bool {
	var turns map[string]bool
	if v.turn >= 0 {
		turns = map[string]bool{v.Result().TurnID: true}
	}
	for _, r := range v.run.Hooks {
		if (turns == nil || turns[r.TurnID]) && byMatches("hook:"+r.Handler, "hook:"+name) {
			return true
		}
	}
	return false
}

// HookDid reports whether the hook name blocked a call (of tool, if not
// ""), and whether it decided one: blocked, allowed, asked for or
// rewrote it.
func (v *View) HookDid(name, tool string) (blocked, decided bool) {
	by := "hook:" + name
	for _, e := range v.Events() {
		switch d := e.Data.(type) {
		case *event.ToolBlockedData:
			if byMatches(d.By, by) && strings.HasPrefix(d.By, "hook:") && (tool == "" || d.ToolName == tool) {
				blocked, decided = true, true
			}
		case *event.ToolData:
			if tool != "" && d.ToolName != tool {
				continue
			}
			if strings.HasPrefix(d.AllowedBy.By, "hook:") && byMatches(d.AllowedBy.By, by) {
				decided = true
			}
			for _, w := range d.RewrittenBy {
				if strings.HasPrefix(w, "hook:") && byMatches(w, by) {
					decided = true
				}
			}
		case *event.ApprovalData:
			if strings.HasPrefix(d.By, "hook:") && byMatches(d.By, by) && (tool == "" || d.ToolName == tool) {
				decided = true
			}
		}
	}
	return blocked, decided
}

// outputSchema is the schema the turn seen asked its output in (the
// case's last turn's).
func (v *View) outputSchema() json.RawMessage {
	t := v.turn
	if t < 0 {
		t = len(v.run.Case.Turns) - 1
	}
	if t >= 0 && t < len(v.run.Case.Turns) {
		return v.run.Case.Turns[t].OutputSchema
	}
	return nil
}

// Compacted reports whether the conversation was compacted.
func (v *View) Compacted() bool {
	for _, e := range v.Events() {
		if e.Name == event.CompactionCompleted {
			return true
		}
	}
	return false
}

// Spent is what the turns seen spent.
type Spent struct {
	ToolCalls int
	Tokens    int64
	CostUSD   float64
	Seconds   float64
}

// Spent is what the turns seen spent (their own calls, their forks').
func (v *View) Spent() Spent {
	var s Spent
	for _, r := range v.Results() {
		s.ToolCalls += int(r.Spent.ToolCalls)
		s.Tokens += r.Usage.Total()
		s.CostUSD += r.Spent.CostUSD
		s.Seconds += r.Spent.WallTime.Seconds()
	}
	if v.turn < 0 {
		s.Seconds = v.run.Duration.Seconds()
	}
	return s
}

// verify runs command in the workspace through the runtime's command
// runner (the Bash tool: its sandbox, its timeout), as --verify does.
func (r *CaseRun) verify(ctx context.Context, command string) (string, error) {
	runner, ok := r.app.Runtime().Tools().CommandRunner()
	if !ok {
		return "", errors.New("the agent has no tool that runs commands")
	}
	res := tool.Run(ctx, runner, &tool.Call{ID: "eval-verify", Name: runner.Name(), Input: runner.CommandInput(command, "the case's verification")})
	if res.IsError {
		return res.Content, errors.New("it failed")
	}
	return res.Content, nil
}

// runCase runs case c of s once (its k-th repeat) and scores it.
func (r *runner) runCase(ctx context.Context, s *Suite, c *Case, k int) (out RunResult) {
	start := time.Now()
	ctx, span := r.opts.Telemetry.Start(ctx, "eval_case "+c.Name, attribute.String("orca.eval.suite", s.Name),
		attribute.String("orca.eval.case", c.Name), attribute.Int("orca.eval.run", k+1))
	defer func() {
		out.Duration = time.Since(start)
		span.SetAttributes(attribute.Bool("orca.eval.passed", out.Passed))
		if !out.Passed {
			var failed []string
			for _, sc := range out.Scores {
				if !sc.Pass {
					failed = append(failed, where(sc))
				}
			}
			if out.Error != "" {
				failed = append(failed, out.Error)
			}
			span.SetStatus(codes.Error, "failed: "+strings.Join(failed, ", "))
		}
		span.End()
	}()
	fail := func(format string, args ...any) RunResult {
		out.Error = fmt.Sprintf(format, args...)
		return out
	}
	ws, err := os.MkdirTemp("", "orca-eval-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(ws)
	if ws, err = filepath.EvalSymlinks(ws); err != nil {
		return fail("%v", err)
	}
	if c, err = expand(c, ws); err != nil {
		return fail("%v", err)
	}
	if err := prepare(s, c, ws); err != nil {
		return fail("the workspace: %v", err)
	}
	id := fmt.Sprintf("eval-%d", r.cases.Add(1))
	mode, _ := policy.ParseMode(c.Mode) // checked when the suite was read
	cfg := app.Config{
		Workspace: ws, ConfigDir: "-", ClaudeDir: "-", Trust: true,
		Allow: c.Allow, Deny: c.Deny, Ask: c.Ask, Mode: mode, NoSandbox: c.NoSandbox,
		Approver: policy.Headless{}, NoMemory: false, Store: store.NewMemory(),
		Getenv: r.opts.Getenv, Logger: r.opts.Logger, Tracing: r.opts.Telemetry,
	}
	defer cfg.Store.Close()
	var model *script.Client
	if r.opts.Live {
		cfg.Client, cfg.Model = r.opts.Client, r.opts.Model
	} else {
		model = script.New()
		var main []script.Response
		for _, t := range c.Turns {
			main = append(main, t.Responses...)
		}
		routes := map[string][]script.Response{"main": main}
		for name, rs := range c.Routes {
			routes[name] = rs
		}
		(&script.File{Routes: routes}).Install(model, id)
		cfg.Client = model
	}
	a, err := app.Open(ctx, cfg)
	if err != nil {
		return fail("opening the agent: %v", err)
	}
	defer a.Close()
	run := &CaseRun{Case: c, Workspace: ws, app: a}
	var mu sync.Mutex
	sub, err := a.Services().Bus.SubscribePrefix("eval:"+id, "", func(e event.Event) error {
		if e.Scope.SessionID == id && e.Scope.Depth == 0 && e.Name != event.LLMDelta {
			mu.Lock()
			run.Events = append(run.Events, e)
			mu.Unlock()
		}
		return nil
	}, event.Buffer(1<<16))
	if err != nil {
		return fail("%v", err)
	}
	a.Services().Hooks.Observe(func(x hook.Ran) {
		if x.SessionID == id && x.Depth == 0 {
			mu.Lock()
			run.Hooks = append(run.Hooks, x)
			mu.Unlock()
		}
	})
	ls, err := a.Session(ctx, app.SessionOptions{ID: id})
	if err != nil {
		sub.Unsubscribe()
		return fail("opening the session: %v", err)
	}
	var limits budget.Limits
	if c.Budget != nil {
		limits = *c.Budget
	}
	if r.opts.CaseBudgetUSD > 0 && (limits.CostUSD == 0 || limits.CostUSD > r.opts.CaseBudgetUSD) {
		limits.CostUSD = r.opts.CaseBudgetUSD
	}
	if !limits.IsZero() {
		if err := ls.SetBudget(ctx, &limits); err != nil {
			sub.Unsubscribe()
			return fail("the budget: %v", err)
		}
	}
	for i, t := range c.Turns {
		var opts []session.RunOption
		var shown []*llm.Media
		text := t.Prompt
		for _, p := range t.Attachments {
			m, note, err := media.ReadFile(filepath.Join(s.Dir, filepath.FromSlash(p)), filepath.Base(p))
			if err != nil {
				sub.Unsubscribe()
				return fail("turn %d: attachment %s: %v", i+1, p, err)
			}
			shown = append(shown, m)
			text += "\n\n" + media.Attached(m, note)
		}
		if len(shown) > 0 {
			opts = append(opts, session.WithMedia(shown...))
		}
		if len(t.OutputSchema) > 0 {
			opts = append(opts, session.WithOutput(&agent.Output{Schema: t.OutputSchema}))
		}
		res, err := ls.Run(ctx, text, opts...)
		if res == nil {
			res = &agent.Result{StopReason: agent.StopFailed, Err: err}
		}
		if res.Err == nil && err != nil {
			res.Err = err
		}
		run.Results = append(run.Results, res)
		out.Turns = append(out.Turns, string(res.StopReason))
		if res.StopReason == agent.StopFailed {
			why := "the turn failed"
			if res.Err != nil {
				why = res.Err.Error()
			}
			if model != nil && (errors.Is(res.Err, script.ErrExhausted) || errors.Is(res.Err, script.ErrUnrouted) || strings.Contains(why, script.ErrExhausted.Error())) {
				why = fmt.Sprintf("the case's recorded responses ran out at turn %d (the agent asked the model more than it did when they were recorded): %s", i+1, why)
			}
			out.Error = fmt.Sprintf("turn %d: %s", i+1, why)
		}
	}
	_ = a.Services().Bus.Flush(ctx)
	sub.Unsubscribe()
	run.Transcript = ls.Transcript()
	run.Duration = time.Since(start)
	totals, _ := ls.Totals(ctx)
	out.CostUSD, out.Tokens = totals.CostUSD, totals.Usage.Total()

	var scorers []Scorer
	for i := range c.Turns {
		scorers = append(scorers, c.Turns[i].Expect.scorers(i)...)
	}
	scorers = append(scorers, c.Expect.scorers(-1)...)
	scorers = append(scorers, c.Extra...)
	scorers = append(scorers, r.opts.Scorers...)
	sctx := context.WithValue(ctx, judgeKey{}, r.judge)
	out.Passed = out.Error == ""
	for _, sc := range scorers {
		score := sc.Score(sctx, run.view(-1))
		if score.Scorer == "" {
			score.Scorer = sc.Name()
		}
		if th, ok := s.Thresholds[score.Scorer]; ok && score.Scorer != "judge" {
			// The suite's threshold for the scorer: its value passes at it.
			score.Pass = score.Value >= th
			if score.Pass {
				score.Detail = ""
			}
		}
		out.Scores = append(out.Scores, score)
		out.CostUSD += score.CostUSD
		out.Passed = out.Passed && score.Pass
	}
	_ = ls.Close(ctx)
	return out
}

// prepare makes the case's workspace: the fixture folder copied, the
// files written, the settings in .orca/settings.json.
func prepare(s *Suite, c *Case, ws string) error {
	if c.Workspace != "" {
		src := filepath.Join(s.Dir, filepath.FromSlash(c.Workspace))
		if err := os.CopyFS(ws, os.DirFS(src)); err != nil {
			return fmt.Errorf("copying %s: %w", c.Workspace, err)
		}
	}
	for p, content := range c.Files {
		dst := filepath.Join(ws, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, []byte(content), 0o644); err != nil {
			return err
		}
	}
	if len(c.Settings) > 0 {
		if err := os.MkdirAll(filepath.Join(ws, ".orca"), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(ws, ".orca", "settings.json"), c.Settings, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func cmpOr(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
