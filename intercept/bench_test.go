package intercept_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/orca-agent/orca/intercept"
)

type pass struct{}

func (pass) Intercept(ctx context.Context, rt, req string, n next) (string, error) {
	return n.Proceed(ctx, rt, req)
}

type nop struct{}

func (nop) Execute(ctx context.Context, rt, req string) (string, error) { return req, nil }

// BenchmarkChain runs a no-op delegate behind N pass-through interceptors.
// The cost of one interceptor is (ns/op at N) - (ns/op at 0), divided by N.
func BenchmarkChain(b *testing.B) {
	for _, n := range []int{0, 1, 5, 20} {
		b.Run(fmt.Sprintf("interceptors=%d", n), func(b *testing.B) {
			ics := make([]intercept.Interceptor[string, string, string], n)
			for i := range ics {
				ics[i] = pass{}
			}
			c := intercept.Wrap(nop{}, ics...)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				c.Execute(ctx, "rt", "req")
			}
		})
	}
}
