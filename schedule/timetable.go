// Package schedule says when scheduled runs are due, and fires them: a
// Timetable is a schedule's cron expression (in its IANA time zone) or
// interval, read by Parse; a Scheduler, which orca serve runs, finds the
// fires due, claims each in the store (store.Schedules: once per schedule
// and time, however many servers share the store) and runs the ones it
// claimed through a Firer.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	_ "time/tzdata" // a server's container may have no zoneinfo: the time zones go with orca

	"github.com/robfig/cron/v3"
)

// Timetable is when a schedule is due.
type Timetable interface {
	// Next returns the first time the schedule is due strictly after
	// after, in UTC.
	Next(after time.Time) time.Time
}

// MinInterval is the shortest interval a schedule may have.
const MinInterval = time.Minute

var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Parse reads spec, a cron expression of five fields (minute, hour, day of
// the month, month, day of the week: "*/15 9-17 * * 1-5") or a descriptor
// (@yearly, @monthly, @weekly, @daily, @hourly; "@every 90m", an interval of
// at least MinInterval), with zone the IANA time zone the expression is
// read in ("" is UTC). An interval counts from anchor (a schedule's
// creation), so that every process computes the same times. An error names
// the input and says what is wrong with it.
func Parse(spec, zone string, anchor time.Time) (Timetable, error) {
	loc := time.UTC
	if zone != "" {
		l, err := time.LoadLocation(zone)
		if err != nil || zone == "Local" {
			return nil, fmt.Errorf("time zone %q is not an IANA time zone (such as Europe/Paris or America/New_York)", zone)
		}
		loc = l
	}
	s := strings.TrimSpace(spec)
	switch {
	case s == "":
		return nil, errors.New("the schedule is empty: give a cron expression (\"0 9 * * 1-5\") or an interval (\"@every 30m\")")
	case strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ="):
		return nil, fmt.Errorf("cron expression %q: give its time zone on its own (--tz, or \"time_zone\"), not in the expression", spec)
	}
	if rest, ok := strings.CutPrefix(s, "@every"); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		switch {
		case err != nil:
			return nil, fmt.Errorf("interval %q: %v (want a duration such as 30m or 2h)", spec, err)
		case d < MinInterval:
			return nil, fmt.Errorf("interval %q: shorter than %v, the shortest a schedule may have", spec, MinInterval)
		case d%time.Second != 0:
			return nil, fmt.Errorf("interval %q: not a whole number of seconds", spec)
		}
		return every{d: d, anchor: anchor.UTC().Truncate(time.Second)}, nil
	}
	c, err := parser.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("cron expression %q: %v (want five fields: minute hour day-of-month month day-of-week, or a descriptor such as @daily)", spec, err)
	}
	t := onCron{s: c, loc: loc}
	if t.Next(anchor).IsZero() {
		return nil, fmt.Errorf("cron expression %q is never due (a date that does not exist?)", spec)
	}
	return t, nil
}

// onCron is a cron expression read in a time zone.
type onCron struct {
	s   cron.Schedule
	loc *time.Location
}

func (c onCron) Next(after time.Time) time.Time {
	t := c.s.Next(after.In(c.loc))
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// every is an interval counted from its anchor: anchor+d, anchor+2d, ….
type every struct {
	d      time.Duration
	anchor time.Time
}

func (e every) Next(after time.Time) time.Time {
	if after.Before(e.anchor) {
		return e.anchor.Add(e.d)
	}
	k := after.Sub(e.anchor)/e.d + 1
	return e.anchor.Add(k * e.d).UTC()
}
