package tui

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/store"
)

// WriteSpending writes what a session spent against its budget, one
// dimension a line, as a table.
func WriteSpending(w io.Writer, t store.Totals, b budget.Limits) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	limit := func(set bool, s string) string {
		if !set {
			return "no cap"
		}
		return s
	}
	tok := strconv.FormatInt(t.Usage.Total(), 10)
	if parts := Tokens(t.Usage); len(parts) > 0 {
		tok += " (" + strings.Join(parts, " · ") + ")"
	}
	fmt.Fprintln(tw, "  \tspent\tbudget")
	fmt.Fprintf(tw, "  tokens\t%s\t%s\n", tok, limit(b.Tokens > 0, strconv.FormatInt(b.Tokens, 10)))
	fmt.Fprintf(tw, "  cost\t%s\t%s\n", USD(t.CostUSD), limit(b.CostUSD > 0, USD(b.CostUSD)))
	fmt.Fprintf(tw, "  tool calls\t%d\t%s\n", t.ToolCalls, limit(b.ToolCalls > 0, strconv.FormatInt(b.ToolCalls, 10)))
	fmt.Fprintf(tw, "  wall time\t%s\t%s\n", roundDuration(t.WallTime), limit(b.WallTime > 0, b.WallTime.String()))
	tw.Flush()
}

// roundDuration rounds d for people: to milliseconds below a second, to
// tenths of a second above.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

// USD writes a cost in dollars: cents, or more digits below a cent.
func USD(x float64) string {
	switch {
	case x == 0:
		return "$0"
	case x < 0.01:
		return "$" + strconv.FormatFloat(x, 'f', 4, 64)
	}
	return "$" + strconv.FormatFloat(x, 'f', 2, 64)
}
