package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/schedule"
	"github.com/orca-agent/orca/temporal"
)

// schedFlags are what every schedule subcommand takes.
type schedFlags struct {
	conn
	asJSON bool
}

func (s *schedFlags) flags(cmd *cobra.Command) {
	s.conn.flags(cmd)
	cmd.Flags().BoolVar(&s.asJSON, "json", false, "print JSON")
}

func (s *schedFlags) client(ctx context.Context, stderr io.Writer) (*temporal.Client, func(), error) {
	cl, err := s.dial(ctx, quiet(stderr))
	if err != nil {
		return nil, nil, err
	}
	return &temporal.Client{Temporal: cl, TaskQueue: s.queue}, cl.Close, nil
}

// failed is err as the command ends with it: a schedule the task queue has
// not is a usage error (2), anything else a failure (1).
func failed(err error) error {
	if errors.Is(err, temporal.ErrNoSchedule) {
		return err
	}
	return &exitError{code: exitTurn, err: err}
}

func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func next(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.Local().Format("2006-01-02 15:04:05 MST")
}

func newSchedule() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Scheduled runs as Temporal Schedules: add, list, show, pause, resume, run, rm",
		Long: `Scheduled runs of the task queue's agent as Temporal Schedules: Temporal
keeps the timetable (a cron expression in an IANA time zone, or an
interval) and starts a fire once per due time, with the overlap policy
(skip, or allow), the catch-up window and the end the schedule says. Each
fire asks for one turn, in a session of its own or in --session's, and
runs on the workers (orca-temporal worker); a call that needs approval
parks (orca-temporal approve), the fire never decides it. A schedule's
budget per fire and cap are orca serve's (orca schedule), not these.`,
	}
	var s schedFlags
	var cron, tz, name, session, overlap, expires string
	var every, catchUp time.Duration
	add := &cobra.Command{
		Use:   "add (--cron EXPR | --every DURATION) [flags] PROMPT...",
		Short: "Add a schedule",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			now := time.Now()
			req := schedule.Request{ID: name, Cron: cron, Every: every, TimeZone: tz, Prompt: strings.Join(args, " "), SessionID: session, Overlap: overlap, CatchUp: catchUp}
			if expires != "" {
				t, err := schedule.ParseExpiry(expires, now)
				if err != nil {
					return err
				}
				req.Expires = t
			}
			sc, err := req.Schedule("temporal", now)
			var fe *schedule.FieldError
			if errors.As(err, &fe) {
				flag := schedule.Flags[fe.Field]
				return fmt.Errorf("%s: %s", flag, fe.Msg)
			} else if err != nil {
				return err
			}
			c, done, err := s.client(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer done()
			if err := c.AddSchedule(cmd.Context(), sc); err != nil {
				return failed(err)
			}
			v, err := c.Schedule(cmd.Context(), sc.ID)
			if err != nil {
				return failed(err)
			}
			if s.asJSON {
				return printJSON(cmd.OutOrStdout(), v)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "Added schedule %s (Temporal Schedule %s): %s, next at %s.\n", sc.ID, c.ScheduleID(sc.ID), schedule.When(v), next(v.NextAt))
			return err
		},
	}
	s.flags(add)
	f := add.Flags()
	f.StringVar(&cron, "cron", "", "cron `EXPR` of five fields, or a descriptor (@daily)")
	f.DurationVar(&every, "every", 0, "fire every `DURATION` (at least 1m), from now")
	f.StringVar(&tz, "tz", "", "IANA time `ZONE` the cron expression is read in (default UTC)")
	f.StringVar(&name, "name", "", "the schedule's `ID` (default: a random one)")
	f.StringVar(&session, "session", "", "send each fire's prompt to session `ID` (default: each fire starts a session)")
	f.StringVar(&overlap, "overlap", "skip", "a fire due while the last one runs: `skip` it, or allow it")
	f.DurationVar(&catchUp, "catch-up", 0, "how late a fire may still run (`DURATION`; default "+schedule.DefaultCatchUp.String()+")")
	f.StringVar(&expires, "expires", "", "stop firing at `TIME` (RFC 3339) or after a DURATION from now")

	var ls schedFlags
	list := &cobra.Command{
		Use:   "list",
		Short: "List the task queue's schedules",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, done, err := ls.client(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer done()
			all, err := c.Schedules(cmd.Context())
			if err != nil {
				return failed(err)
			}
			out := cmd.OutOrStdout()
			if ls.asJSON {
				return printJSON(out, map[string]any{"schedules": all})
			}
			if len(all) == 0 {
				_, err := fmt.Fprintf(out, "No schedules on task queue %s: 'orca-temporal schedule add' adds one.\n", ls.queue)
				return err
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tWHEN\tSTATE\tNEXT\tPROMPT")
			for _, v := range all {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.ID, schedule.When(v), v.State, next(v.NextAt), v.Prompt)
			}
			return tw.Flush()
		},
	}
	ls.flags(list)

	var sh schedFlags
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show a schedule and its recent fires",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, done, err := sh.client(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer done()
			v, err := c.Schedule(cmd.Context(), args[0])
			if err != nil {
				return failed(err)
			}
			out := cmd.OutOrStdout()
			if sh.asJSON {
				return printJSON(out, v)
			}
			fmt.Fprintf(out, "Schedule %s: %s, %s; next at %s.\nPrompt: %s\n", v.ID, schedule.When(v), v.State, next(v.NextAt), v.Prompt)
			if len(v.Fires) == 0 {
				_, err := fmt.Fprintln(out, "No fires yet.")
				return err
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "DUE\tSTATUS\tSESSION\tNOTE")
			for _, fv := range v.Fires {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", fv.At.Local().Format("2006-01-02 15:04:05"), fv.Status, fv.SessionID, fv.Note)
			}
			return tw.Flush()
		},
	}
	sh.flags(show)

	cmd.AddCommand(add, list, show)
	for _, op := range []struct {
		use, short, done string
		do               func(c *temporal.Client, ctx context.Context, id string) error
	}{
		{"pause ID", "Pause a schedule", "Paused", func(c *temporal.Client, ctx context.Context, id string) error { return c.PauseSchedule(ctx, id, true) }},
		{"resume ID", "Resume a paused schedule", "Resumed", func(c *temporal.Client, ctx context.Context, id string) error { return c.PauseSchedule(ctx, id, false) }},
		{"run ID", "Fire a schedule now (its overlap policy holds)", "Fired", (*temporal.Client).FireSchedule},
		{"rm ID", "Remove a schedule (its fires' sessions stay)", "Removed", (*temporal.Client).DeleteSchedule},
	} {
		var of schedFlags
		sub := &cobra.Command{
			Use:   op.use,
			Short: op.short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, done, err := of.client(cmd.Context(), cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				defer done()
				if err := op.do(c, cmd.Context(), args[0]); err != nil {
					return failed(err)
				}
				if of.asJSON {
					return printJSON(cmd.OutOrStdout(), map[string]string{"schedule": args[0], "done": strings.ToLower(op.done)})
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s schedule %s.\n", op.done, args[0])
				return err
			},
		}
		of.flags(sub)
		cmd.AddCommand(sub)
	}
	return cmd
}
