package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/eval"
	"github.com/orca-agent/orca/llm/provider"
	"github.com/orca-agent/orca/rewind"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/telemetry"
)

type evalFlags struct {
	json, live                bool
	junit, filter             string
	repeat, parallel          int
	provider, model, baseURL  string
	judgeProvider, judgeModel string
	judgeBaseURL              string
	caseBudget, runBudget     float64
	judgeBudget               float64
	baseline, save            string
	noRegressions, record     bool
	workspace                 string
}

func newEvalCmd(o options) *cobra.Command {
	var f evalFlags
	cmd := &cobra.Command{
		Use:   "eval [flags] FILE|DIR",
		Short: "Run evaluations: cases replayed (no key, no network) or live, scored from what the agent and its control plane did",
		Long: `orca eval runs the cases of a suite file (*.eval.json; Google ADK's
*.evalset.json and *.test.json too), or of every such file under DIR,
each in a workspace of its own (its fixture folder and
files copied in, its settings the workspace's), through the runtime
orca run uses: the same tools, hooks, permission rules and sandbox.

By default each turn is replayed: the model's responses are the ones
the case recorded, so a change to the tools, hooks, policy, prompts or
settings is checked with no key and no network. With --live the
configured model answers (as orca run's --provider, --model and
settings choose it), each case --repeat times: a case passes (pass^k)
when every run does, and pass@k says one did.

What a case expects is scored from orca's own record of the run: how
each turn ended, the answer, the tool calls (exact, in order, any
order, their arguments), their results, what a hook or a rule blocked,
what asked for approval, what the sandbox refused, budgets, compaction,
files on disk, a command that must pass, ceilings of calls, tokens,
dollars and seconds, and a judge model's grade by a rubric.

The exit code is 0 when every suite passed (its threshold of cases, and
its gates), 1 when one did not (or, with --no-regressions, when a case
that passed in the --baseline report fails now), 2 for a suite that
cannot be read. --save DIR keeps each report; --baseline DIR compares
with the newest kept.
'orca eval add --from-session ID --out FILE' makes a case of a session.`,
		Example: `  orca eval examples/eval
  orca eval checks.eval.json --junit report.xml
  orca eval checks.eval.json --live --repeat 5 --provider anthropic
  orca eval add --from-session session_0123456789abcdef --out checks.eval.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runEval(cmd, &f, args[0], o)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.json, "json", false, "print the report as JSON")
	fl.StringVar(&f.junit, "junit", "", "write the report as JUnit XML to `FILE` too")
	fl.StringVar(&f.filter, "filter", "", "run only the cases whose name contains `TEXT`")
	fl.BoolVar(&f.live, "live", false, "ask the configured model instead of replaying the cases' recorded responses")
	fl.IntVar(&f.repeat, "repeat", 1, "run each case `N` times (live): pass^N and pass@N")
	fl.IntVar(&f.parallel, "parallel", 0, "cases run at once (default: the machine's cores)")
	fl.StringVar(&f.provider, "provider", "", "the live model's provider (as orca run's --provider)")
	fl.StringVar(&f.model, "model", "", "the live model (as orca run's --model)")
	fl.StringVar(&f.baseURL, "base-url", "", "where the live model's API is")
	fl.StringVar(&f.judgeProvider, "judge-provider", "", "the provider of the judge model (default: the live model's)")
	fl.StringVar(&f.judgeModel, "judge-model", "", "the model that grades answers by the cases' rubrics (judge scorers)")
	fl.StringVar(&f.judgeBaseURL, "judge-base-url", "", "where the judge model's API is")
	fl.Float64Var(&f.caseBudget, "budget-case", 0, "the most a live case may spend, in `USD`")
	fl.Float64Var(&f.runBudget, "budget-run", 0, "the most the live run may spend, in `USD`: later cases are not run")
	fl.Float64Var(&f.judgeBudget, "budget-judge", 0, "the most the judge model may spend, in `USD`: later judgements fail")
	fl.StringVar(&f.baseline, "baseline", "", "compare with an earlier run: a --json report `FILE`, a --save folder (its newest), or \"recorded\" (the last --record kept)")
	fl.BoolVar(&f.record, "record", false, "keep the run in the workspace's store (orca serve's page lists the runs kept)")
	fl.StringVarP(&f.workspace, "workspace", "w", ".", "the workspace `DIR` whose store --record and --baseline recorded use")
	fl.BoolVar(&f.noRegressions, "no-regressions", false, "fail (exit 1) when a case that passed in the --baseline fails now")
	fl.StringVar(&f.save, "save", "", "keep the report (JSON) in `DIR`, named by its time: a later --baseline DIR compares with it")
	cmd.AddCommand(newEvalAddCmd(o))
	return cmd
}

func runEval(cmd *cobra.Command, f *evalFlags, path string, o options) error {
	if f.repeat < 1 {
		return usageErrorf("--repeat must be at least 1, not %d", f.repeat)
	}
	if !f.live && f.repeat > 1 {
		return usageErrorf("--repeat is for --live runs: a replay gives the same answer every time")
	}
	if !f.live && (f.provider != "" || f.model != "" || f.baseURL != "") {
		return usageErrorf("--provider, --model and --base-url choose the live model: give --live too")
	}
	if f.caseBudget < 0 || f.runBudget < 0 || f.judgeBudget < 0 {
		return usageErrorf("--budget-case, --budget-run and --budget-judge must not be negative")
	}
	if f.noRegressions && f.baseline == "" {
		return usageErrorf("--no-regressions compares with a --baseline: give one")
	}
	suites, err := eval.Load(path)
	if err != nil {
		return usageErrorf("%v", err)
	}
	var base *eval.Report
	var baseName string
	var kept store.Store // the workspace's store, for --record and --baseline recorded
	if f.record || f.baseline == "recorded" {
		st, root, err := existingStore(cmd.Context(), f.workspace, o)
		if err != nil {
			return err
		}
		if st == nil && f.record {
			if st, err = app.OpenStore(root); err != nil {
				return &exitError{code: exitTurn, err: err}
			}
		}
		if st == nil {
			return usageErrorf("--baseline recorded: workspace %s keeps no runs of orca eval (--record keeps them)", root)
		}
		defer st.Close()
		kept = st
	}
	switch {
	case f.baseline == "recorded":
		rows, ok := kept.(store.Observations)
		if !ok {
			return usageErrorf("--baseline recorded: the workspace's store keeps no rows")
		}
		var id string
		if base, id, err = eval.LastRecorded(cmd.Context(), rows); err != nil {
			return usageErrorf("--baseline recorded: %v", err)
		}
		baseName = "the run " + id + " kept in the store"
	case f.baseline != "":
		if base, baseName, err = eval.ReadReport(f.baseline); err != nil {
			return usageErrorf("--baseline: %v", err)
		}
	}
	getenv := o.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	opts := eval.Options{Live: f.live, Repeat: f.repeat, Parallel: f.parallel, Filter: f.filter, Getenv: getenv,
		Model:         app.ModelConfig{Provider: f.provider, Model: f.model, BaseURL: f.baseURL},
		CaseBudgetUSD: f.caseBudget, RunBudgetUSD: f.runBudget, JudgeBudgetUSD: f.judgeBudget}
	if f.judgeModel != "" {
		p := f.judgeProvider
		if p == "" {
			p = f.provider
		}
		if p == "" {
			p = getenv(provider.ProviderEnv)
		}
		if p == "" {
			return usageErrorf("--judge-model %s: name its provider with --judge-provider (or --provider, or $%s)", f.judgeModel, provider.ProviderEnv)
		}
		judge, err := provider.New(provider.Config{Provider: p, Model: f.judgeModel, BaseURL: f.judgeBaseURL})
		if err != nil {
			return usageErrorf("--judge-model %s: %v", f.judgeModel, err)
		}
		opts.Judge, opts.JudgeModel = judge, f.judgeModel
	}
	// OTEL_* trace each case, its turns under it, as orca run's turns.
	telProvider := f.provider
	if !f.live {
		telProvider = app.ScriptProvider
	}
	tel, err := telemetry.FromEnv(cmd.Context(), getenv, telemetry.Options{Provider: telProvider})
	if err != nil {
		return usageErrorf("telemetry: %v", err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tel.Shutdown(ctx)
	}()
	opts.Telemetry = tel
	rep, err := eval.Run(cmd.Context(), suites, opts)
	if err != nil && rep == nil {
		return usageErrorf("%v", err)
	}
	out := cmd.OutOrStdout()
	var diff *eval.Diff
	if base != nil {
		diff = eval.Compare(base, baseName, rep)
		rep.Diff = diff
	}
	if f.record {
		rows, ok := kept.(store.Observations)
		if !ok {
			return &exitError{code: exitTurn, err: errors.New("--record: the workspace's store keeps no rows")}
		}
		if _, rerr := eval.Record(cmd.Context(), rows, rep); rerr != nil {
			return &exitError{code: exitTurn, err: fmt.Errorf("--record: %w", rerr)}
		}
	}
	if f.save != "" {
		if _, serr := eval.Save(f.save, rep); serr != nil {
			return &exitError{code: exitTurn, err: fmt.Errorf("--save %s: %w", f.save, serr)}
		}
	}
	if f.junit != "" {
		w, ferr := os.Create(f.junit)
		if ferr != nil {
			return &exitError{code: exitTurn, err: ferr}
		}
		ferr = errors.Join(eval.WriteJUnit(w, rep), w.Close())
		if ferr != nil {
			return &exitError{code: exitTurn, err: fmt.Errorf("--junit %s: %w", f.junit, ferr)}
		}
	}
	if f.json {
		err = errors.Join(err, eval.WriteJSON(out, rep))
	} else {
		err = errors.Join(err, eval.WriteText(out, rep))
		if diff != nil {
			err = errors.Join(err, eval.WriteDiff(out, diff))
		}
	}
	if err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	if f.noRegressions && len(diff.Regressed) > 0 {
		return &exitError{code: exitTurn, err: fmt.Errorf("orca eval: %d case(s) regressed against %s: %s", len(diff.Regressed), baseName, strings.Join(diff.Regressed, "; ")), quiet: !f.json}
	}
	if !rep.Passed {
		var failed []string
		for _, s := range rep.Suites {
			if !s.Passed {
				failed = append(failed, s.Name)
			}
		}
		return &exitError{code: exitTurn, err: fmt.Errorf("orca eval: %s failed", strings.Join(failed, ", ")), quiet: true}
	}
	return nil
}

type evalAddFlags struct {
	session, out, workspace, name string
	turn                          int
	force                         bool
}

func newEvalAddCmd(o options) *cobra.Command {
	var f evalAddFlags
	cmd := &cobra.Command{
		Use:   "add --from-session ID --out FILE",
		Short: "Make a case of a session: its prompts, the model's responses to replay, and what happened as expected",
		Long: `orca eval add writes a case (orca eval's format) made of a session of the
workspace: each turn's prompt, the model's responses (replayed when the
case runs), the files its calls named as they were before the turn (from
the turns' checkpoints where they changed since), and as expected what
happened: the tool calls in order with their arguments, their results,
how the turn ended and its answer. 'orca eval FILE' then passes as long
as the agent does what it did, and fails when a result no longer comes
out the same. The workspace's own path is written as ${WORKSPACE}.`,
		Example: `  orca eval add --from-session session_0123456789abcdef --out checks.eval.json
  orca eval add --from-session session_0123456789abcdef --turn 2 --out turn2.eval.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runEvalAdd(cmd, &f, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.session, "from-session", "", "the session `ID` to make a case of")
	fl.IntVar(&f.turn, "turn", 0, "take only turn `N` (from 1; default: every turn)")
	fl.StringVar(&f.out, "out", "", "write the case to `FILE` (*.eval.json)")
	fl.StringVarP(&f.workspace, "workspace", "w", ".", "the session's workspace `DIR`")
	fl.StringVar(&f.name, "name", "", "the case's name (default: the session's id)")
	fl.BoolVar(&f.force, "force", false, "replace FILE if it exists")
	return cmd
}

func runEvalAdd(cmd *cobra.Command, f *evalAddFlags, o options) error {
	switch {
	case f.session == "":
		return usageErrorf("--from-session ID: the session to make a case of ('orca sessions' lists them)")
	case f.out == "":
		return usageErrorf("--out FILE: where to write the case (a *.eval.json file, which 'orca eval' runs)")
	case f.turn < 0:
		return usageErrorf("--turn must be a turn's number, from 1, not %d", f.turn)
	}
	if _, err := os.Stat(f.out); err == nil && !f.force {
		return usageErrorf("%s exists: give another --out, or --force to replace it", f.out)
	}
	ctx := cmd.Context()
	st, root, err := existingStore(ctx, f.workspace, o)
	if err != nil {
		return err
	}
	if st == nil {
		return usageErrorf("workspace %s has no sessions: 'orca run' or 'orca chat' make them", root)
	}
	defer st.Close()
	if _, err := st.Session(ctx, f.session); err != nil {
		return usageErrorf("--from-session %s: %v", f.session, err)
	}
	rs, err := app.RewindStore(root, rewind.Options{})
	if err != nil {
		rs = nil // no checkpoints: the files as they are now
	}
	c, notes, err := eval.FromSession(ctx, st, eval.FromOptions{Session: f.session, Turn: f.turn, Workspace: root, Checkpoints: rs, Name: f.name})
	if err != nil {
		return usageErrorf("--from-session %s: %v", f.session, err)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	if err := os.WriteFile(f.out, append(b, '\n'), 0o644); err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "wrote %s: case %q, %d turn(s), %d file(s); run it with: orca eval %s\n", f.out, c.Name, len(c.Turns), len(c.Files), f.out)
	for _, n := range notes {
		fmt.Fprintf(cmd.ErrOrStderr(), "orca eval add: %s\n", n)
	}
	return nil
}
