package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/schedule"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tui"
)

type scheduleFlags struct {
	workspace string
	json      bool
}

type scheduleAddFlags struct {
	cron, tz, name, session, overlap, expires string
	every, catchUp                            time.Duration
	budget, cap                               float64
}

func newScheduleCmd(o options) *cobra.Command {
	var f scheduleFlags
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Scheduled runs: prompts orca serve fires on a timetable",
		Long: `Scheduled runs of the workspace's agent: a prompt, a timetable (a cron
expression in an IANA time zone, or an interval), and where each fire runs
(a session of its own, or an existing session's queue). They are kept in
the workspace's store, and 'orca serve' fires them: each fire is claimed in
the store once, however many servers share it (several orca serve on one
PostgreSQL store fire a schedule once per due time, and a server restarted
does not fire again what was fired). A fire due while the last one still
runs is skipped (unless --overlap allow); one found due later than its
catch-up window (the servers were down) is recorded missed, not run. A
fired prompt never approves anything: a call that needs a person parks
(orca approvals), and the fire ends with its turn.

  orca schedule add    add one (--cron or --every, and the prompt)
  orca schedule list   list them, with when each is due next
  orca schedule show   one, with its last fires
  orca schedule pause  stop firing one (its fires are recorded skipped)
  orca schedule resume go on firing it
  orca schedule run    fire one now, here, outside its timetable
  orca schedule rm     remove one and its fires' records`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return listSchedules(cmd.Context(), cmd.OutOrStdout(), &f, o)
		},
	}
	cmd.PersistentFlags().StringVarP(&f.workspace, "workspace", "w", ".", "workspace `DIR` whose schedules to manage")
	cmd.PersistentFlags().BoolVar(&f.json, "json", false, "print JSON instead of text")

	var af scheduleAddFlags
	add := &cobra.Command{
		Use:   "add (--cron EXPR | --every DURATION) [flags] PROMPT...",
		Short: "Add a schedule",
		Long: `Add a schedule that asks PROMPT (the arguments, joined by spaces) on a
timetable: --cron, a cron expression of five fields (minute, hour, day of
the month, month, day of the week) or a descriptor (@hourly, @daily,
@weekly, @monthly, @yearly), read in --tz (an IANA time zone; UTC if not
given); or --every, an interval of at least a minute, counted from now.
Each fire runs in a session of its own under --budget-usd, or, with
--session, goes to that session (into its queue when a turn runs). The
schedule stops firing once its fires have spent --cap-usd, and after
--expires (a time, RFC 3339, or a duration from now).

With --json, stdout is the schedule, as 'orca schedule show --json' prints
it.`,
		Example: `  orca schedule add --cron "0 9 * * 1-5" --tz Europe/Paris --name standup "Summarise yesterday's commits"
  orca schedule add --every 30m --budget-usd 0.50 --cap-usd 20 "Run the tests and fix what fails"
  orca schedule add --cron @daily --session session_0123456789abcdef "Go on with the migration"`,
		Args: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(strings.Join(args, " ")) == "" {
				return usageErrorf("orca schedule add needs the prompt each fire asks, after the flags")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return addSchedule(cmd, &f, &af, strings.Join(args, " "), o)
		},
	}
	fl := add.Flags()
	fl.StringVar(&af.cron, "cron", "", "cron `EXPR` of five fields (\"0 9 * * 1-5\") or a descriptor (@daily)")
	fl.DurationVar(&af.every, "every", 0, "fire every `DURATION` (at least 1m), from now")
	fl.StringVar(&af.tz, "tz", "", "IANA time `ZONE` the cron expression is read in (default UTC)")
	fl.StringVar(&af.name, "name", "", "the schedule's `ID` (letters, digits, _ - .; default: a random one)")
	fl.StringVar(&af.session, "session", "", "send each fire's prompt to session `ID` (default: each fire starts a session)")
	fl.Float64Var(&af.budget, "budget-usd", 0, "what one fire may spend, in `USD` (0: no cap of its own)")
	fl.Float64Var(&af.cap, "cap-usd", 0, "what all the fires may spend together, in `USD` (0: no cap)")
	fl.StringVar(&af.overlap, "overlap", "skip", "a fire due while the last one runs: `skip` it, or allow it")
	fl.DurationVar(&af.catchUp, "catch-up", 0, "how late a fire may still run (`DURATION`; default "+schedule.DefaultCatchUp.String()+")")
	fl.StringVar(&af.expires, "expires", "", "stop firing at `TIME` (RFC 3339) or after a DURATION from now")
	cmd.AddCommand(add)

	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the schedules, with when each is due next",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return listSchedules(cmd.Context(), cmd.OutOrStdout(), &f, o)
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "show ID",
		Short: "Show a schedule and its last fires",
		Args:  oneArg("the id of a schedule", "'orca schedule list' lists them"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return showSchedule(cmd.Context(), cmd.OutOrStdout(), &f, args[0], o)
		},
	})
	for _, paused := range []bool{true, false} {
		use, short := "pause ID", "Stop firing a schedule: its fires are recorded skipped until it is resumed"
		if !paused {
			use, short = "resume ID", "Go on firing a paused schedule, from its next due time"
		}
		cmd.AddCommand(&cobra.Command{
			Use:   use,
			Short: short,
			Args:  oneArg("the id of a schedule", "'orca schedule list' lists them"),
			RunE: func(cmd *cobra.Command, args []string) error {
				return pauseSchedule(cmd.Context(), cmd.OutOrStdout(), &f, args[0], paused, o)
			},
		})
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "rm ID",
		Short: "Remove a schedule and its fires' records (the sessions they ran in stay)",
		Args:  oneArg("the id of a schedule", "'orca schedule list' lists them"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return removeSchedule(cmd.Context(), cmd.OutOrStdout(), &f, args[0], o)
		},
	})
	cmd.AddCommand(newScheduleRunCmd(&f, o))
	return cmd
}

// schedulesOf opens the workspace's schedules; create makes its store.
func schedulesOf(ctx context.Context, f *scheduleFlags, create bool, o options) (app.ScheduleStore, string, string, error) {
	st, rt, root, err := app.Schedules(ctx, f.workspace, o.configDir, o.env, create)
	if err != nil {
		return nil, "", root, fromApp(err)
	}
	return st, rt, root, nil
}

// scheduleNamed returns schedule id, or a usage error saying there is none.
func scheduleNamed(ctx context.Context, f *scheduleFlags, id string, o options) (app.ScheduleStore, store.Schedule, error) {
	st, rt, root, err := schedulesOf(ctx, f, false, o)
	if err != nil {
		return nil, store.Schedule{}, err
	}
	if st == nil {
		return nil, store.Schedule{}, usageErrorf("workspace %s has no schedule %s: it has no store yet ('orca schedule add' adds one)", root, id)
	}
	sc, err := st.Schedule(ctx, rt, id)
	if errors.Is(err, store.ErrNotFound) {
		st.Close()
		return nil, sc, usageErrorf("workspace %s has no schedule %s: 'orca schedule list' lists its schedules", root, id)
	} else if err != nil {
		st.Close()
		return nil, sc, &exitError{code: exitTurn, err: fmt.Errorf("schedule %s: %w", id, err)}
	}
	return st, sc, nil
}

func addSchedule(cmd *cobra.Command, f *scheduleFlags, af *scheduleAddFlags, prompt string, o options) error {
	ctx, now := cmd.Context(), time.Now()
	req := schedule.Request{ID: af.name, Cron: af.cron, Every: af.every, TimeZone: af.tz, Prompt: prompt, SessionID: af.session,
		BudgetUSD: af.budget, CapUSD: af.cap, Overlap: af.overlap, CatchUp: af.catchUp}
	if af.expires != "" {
		t, err := schedule.ParseExpiry(af.expires, now)
		if err != nil {
			return usageErrorf("%v", err)
		}
		req.Expires = t
	}
	// Checked before the store is made: a mistyped flag leaves nothing.
	if _, err := req.Schedule("check", now); err != nil {
		return scheduleUsage(err)
	}
	st, rt, root, err := schedulesOf(ctx, f, true, o)
	if err != nil {
		return err
	}
	defer st.Close()
	sc, err := req.Schedule(rt, now)
	if err != nil {
		return scheduleUsage(err)
	}
	if sc.SessionID != "" {
		s, err := st.Session(ctx, sc.SessionID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return usageErrorf("--session %s: workspace %s has no such session ('orca sessions' lists them)", sc.SessionID, root)
		case err != nil:
			return &exitError{code: exitTurn, err: err}
		case s.RuntimeID != rt:
			return usageErrorf("--session %s: the session belongs to another agent or workspace (%s)", sc.SessionID, s.Workspace)
		}
	}
	if _, err := st.Schedule(ctx, rt, sc.ID); err == nil {
		return usageErrorf("--name %s: workspace %s has a schedule %s already ('orca schedule rm %s' removes it)", sc.ID, root, sc.ID, sc.ID)
	}
	if err := st.AddSchedule(ctx, sc); err != nil {
		return &exitError{code: exitTurn, err: fmt.Errorf("adding schedule %s: %w", sc.ID, err)}
	}
	v := schedule.ViewOf(sc, nil, now)
	if f.json {
		return writeJSON(cmd.OutOrStdout(), v)
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "Added schedule %s: %s, next at %s.\n'orca serve' fires it (any server of this workspace's store); 'orca schedule run %s' fires it now.\n",
		sc.ID, schedule.When(v), at(v.NextAt), sc.ID)
	return err
}

// scheduleUsage is a schedule.Request's error as the CLI says it: a usage
// error naming the flag.
func scheduleUsage(err error) error {
	var fe *schedule.FieldError
	if errors.As(err, &fe) {
		return usageErrorf("%s: %s", cmpStr(schedule.Flags[fe.Field], fe.Field), fe.Msg)
	}
	return usageErrorf("%v", err)
}

func cmpStr(s, or string) string {
	if s != "" {
		return s
	}
	return or
}

func at(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.Local().Format("2006-01-02 15:04:05 MST")
}

func listSchedules(ctx context.Context, out io.Writer, f *scheduleFlags, o options) error {
	st, rt, root, err := schedulesOf(ctx, f, false, o)
	if err != nil {
		return err
	}
	views := []schedule.View{}
	if st != nil {
		defer st.Close()
		all, err := st.Schedules(ctx, rt)
		if err != nil {
			return &exitError{code: exitTurn, err: fmt.Errorf("listing the schedules of %s: %w", root, err)}
		}
		now := time.Now()
		for _, sc := range all {
			fires, err := st.Fires(ctx, rt, sc.ID, 1)
			if err != nil {
				return &exitError{code: exitTurn, err: err}
			}
			views = append(views, schedule.ViewOf(sc, fires, now))
		}
	}
	if f.json {
		return writeJSON(out, map[string]any{"workspace": root, "schedules": views})
	}
	if len(views) == 0 {
		_, err := fmt.Fprintf(out, "No schedules in %s: 'orca schedule add' adds one.\n", root)
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tWHEN\tSTATE\tNEXT\tLAST FIRE\tSPENT\tPROMPT")
	for _, v := range views {
		last := "-"
		if len(v.Fires) > 0 {
			last = v.Fires[0].At.Local().Format("2006-01-02 15:04") + " " + v.Fires[0].Status
		}
		spent := tui.USD(v.SpentUSD)
		if v.CapUSD > 0 {
			spent += " of " + tui.USD(v.CapUSD)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.ID, schedule.When(v), v.State, at(v.NextAt), last, spent, tui.OneLine(v.Prompt, 50))
	}
	return tw.Flush()
}

func showSchedule(ctx context.Context, out io.Writer, f *scheduleFlags, id string, o options) error {
	st, sc, err := scheduleNamed(ctx, f, id, o)
	if err != nil {
		return err
	}
	defer st.Close()
	fires, err := st.Fires(ctx, sc.RuntimeID, sc.ID, 50)
	if err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	v := schedule.ViewOf(sc, fires, time.Now())
	if f.json {
		return writeJSON(out, v)
	}
	fmt.Fprintf(out, "Schedule %s: %s, %s; next at %s.\nPrompt: %s\n", v.ID, schedule.When(v), v.State, at(v.NextAt), v.Prompt)
	where := "a session of its own each fire"
	if v.SessionID != "" {
		where = "session " + v.SessionID
	}
	fmt.Fprintf(out, "Runs in: %s. Overlap: %s. Catch-up: %s. Spent: %s", where, v.Overlap, v.CatchUp, tui.USD(v.SpentUSD))
	if v.CapUSD > 0 {
		fmt.Fprintf(out, " of %s", tui.USD(v.CapUSD))
	}
	if v.BudgetUSD > 0 {
		fmt.Fprintf(out, " (at most %s a fire)", tui.USD(v.BudgetUSD))
	}
	if v.ExpiresAt != nil {
		fmt.Fprintf(out, ". Expires %s", at(v.ExpiresAt))
	}
	fmt.Fprintln(out, ".")
	if len(v.Fires) == 0 {
		_, err := fmt.Fprintln(out, "\nNo fires yet.")
		return err
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DUE\tSTATUS\tSESSION\tSPENT\tNOTE")
	for _, fv := range v.Fires {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", fv.At.Local().Format("2006-01-02 15:04:05"), fv.Status, cmpStr(fv.SessionID, "-"), tui.USD(fv.SpentUSD), tui.OneLine(fv.Note, 70))
	}
	return tw.Flush()
}

func pauseSchedule(ctx context.Context, out io.Writer, f *scheduleFlags, id string, paused bool, o options) error {
	st, sc, err := scheduleNamed(ctx, f, id, o)
	if err != nil {
		return err
	}
	defer st.Close()
	sc.Paused = paused
	if err := st.UpdateSchedule(ctx, sc); err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	fires, err := st.Fires(ctx, sc.RuntimeID, sc.ID, 1)
	if err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	v := schedule.ViewOf(sc, fires, time.Now())
	v.Fires = nil
	if f.json {
		return writeJSON(out, v)
	}
	if paused {
		_, err = fmt.Fprintf(out, "Paused schedule %s: its fires are recorded skipped until 'orca schedule resume %s'.\n", id, id)
	} else {
		_, err = fmt.Fprintf(out, "Resumed schedule %s: next at %s.\n", id, at(v.NextAt))
	}
	return err
}

func removeSchedule(ctx context.Context, out io.Writer, f *scheduleFlags, id string, o options) error {
	st, sc, err := scheduleNamed(ctx, f, id, o)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.DeleteSchedule(ctx, sc.RuntimeID, sc.ID); err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	if f.json {
		return writeJSON(out, map[string]any{"removed": id})
	}
	_, err = fmt.Fprintf(out, "Removed schedule %s and its fires' records (the sessions they ran in stay).\n", id)
	return err
}

func newScheduleRunCmd(sf *scheduleFlags, o options) *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "run [flags] ID",
		Short: "Fire a schedule now, here, outside its timetable",
		Long: `Fire schedule ID now, in this process, whatever its timetable and whether
it is paused (not if it has spent its cap): the fire is recorded like the
server's, and runs the prompt with the model, workspace and permissions
chosen as for 'orca run'. A call that needs approval parks ('orca
approvals'); the fire ends with its turn. It exits 0 when the fire is done,
1 when it failed.

With --json, stdout is the fire, as 'orca schedule show --json' lists them.`,
		Args: oneArg("the id of a schedule", "'orca schedule list' lists them"),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, name := range []string{"session", "continue", "fork-session"} {
				if cmd.Flags().Changed(name) {
					return usageErrorf("--%s does not apply to orca schedule run: where a fire runs is the schedule's (orca schedule add --session)", name)
				}
			}
			sf.workspace = f.workspace // -w is the agent's flag here
			return runSchedule(cmd, sf, &f, args[0], o)
		},
	}
	addAgentFlags(cmd, &f)
	return cmd
}

func runSchedule(cmd *cobra.Command, sf *scheduleFlags, f *agentFlags, id string, o options) error {
	ctx := cmd.Context()
	st, sc, err := scheduleNamed(ctx, sf, id, o)
	if err != nil {
		return err
	}
	st.Close()
	cfg, err := f.check(cmd, o)
	if err != nil {
		return err
	}
	cfg.Approver = policy.Parking{}
	a, err := openApp(ctx, cfg, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer a.Close()
	schedules, ok := a.Store().(store.Schedules)
	if !ok {
		return &exitError{code: exitTurn, err: fmt.Errorf("the session store (%T) keeps no schedules", a.Store())}
	}
	fire, err := schedule.FireNow(ctx, schedules, sc, "orca schedule run", time.Now(), a.FireSchedule)
	if err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	v := schedule.ViewOf(sc, []store.Fire{fire}, time.Now()).Fires[0]
	if sf.json {
		if err := writeJSON(cmd.OutOrStdout(), v); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(cmd.OutOrStdout(), "Fired schedule %s: %s in session %s, spent %s.\n", id, v.Status, cmpStr(v.SessionID, "-"), tui.USD(v.SpentUSD))
		if v.Note != "" {
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", v.Note)
		}
	}
	if fire.Status == store.FireFailed {
		return &exitError{code: exitTurn, err: fmt.Errorf("schedule %s's fire failed: %s", id, fire.Error)}
	}
	return nil
}
