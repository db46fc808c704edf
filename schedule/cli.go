package schedule

import (
	"fmt"
	"strings"
	"time"
)

// Flags names each field of a Request as the command lines take it (orca
// schedule add, orca-temporal schedule add): a FieldError's Field, said as
// its flag.
var Flags = map[string]string{"id": "--name", "cron": "--cron", "every": "--every", "time_zone": "--tz", "prompt": "the prompt",
	"session_id": "--session", "budget_usd": "--budget-usd", "cap_usd": "--cap-usd", "overlap": "--overlap", "catch_up": "--catch-up", "expires_at": "--expires"}

// ParseExpiry reads an --expires value: a time (RFC 3339) or a duration
// from now.
func ParseExpiry(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--expires %q: want a time (RFC 3339: 2027-01-31T18:00:00+01:00) or a duration from now (72h)", s)
}

// When is v's timetable as a person reads it: "every 30m0s", or the cron
// expression and its zone.
func When(v View) string {
	if rest, ok := strings.CutPrefix(v.Spec, "@every "); ok {
		return "every " + rest
	}
	if v.TimeZone != "" {
		return fmt.Sprintf("%q in %s", v.Spec, v.TimeZone)
	}
	return fmt.Sprintf("%q (UTC)", v.Spec)
}
