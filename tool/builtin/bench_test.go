package builtin

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// BenchmarkGrep searches the Go distribution's source tree, as a model
// looking through a large repository would, with each of rgCases. When rg
// is installed, every iteration also runs rg on the same question (outside
// the timer, right after Grep, so both see the same load) and the
// benchmark reports Grep's wall time over rg's as "x-rg" and rg's own as
// "rg-ns/op". TestGrepAgreesWithRipgrep checks that the two find the same
// matches.
func BenchmarkGrep(b *testing.B) {
	fsys, dir := goSource(b)
	grep := &grepTool{fs: fsys}
	_, rgErr := exec.LookPath("rg")
	for _, c := range rgCases {
		b.Run(c.name, func(b *testing.B) {
			call := c.call(c.mode)
			r := grep.Execute(context.Background(), call)
			if r.IsError || r.Content == "" || strings.HasPrefix(r.Content, "No matches") {
				b.Fatalf("Grep failed: %.300s", r.Content)
			}
			args := c.rgArgs(c.mode)
			b.ReportAllocs()
			var orca, rg time.Duration
			for b.Loop() {
				start := time.Now()
				grep.Execute(context.Background(), call)
				orca += time.Since(start)
				if rgErr == nil {
					b.StopTimer()
					start = time.Now()
					runRg(b, dir, args)
					rg += time.Since(start)
					b.StartTimer()
				}
			}
			if rg > 0 {
				b.ReportMetric(float64(orca)/float64(rg), "x-rg")
				b.ReportMetric(float64(rg.Nanoseconds())/float64(b.N), "rg-ns/op")
			}
		})
	}
}
