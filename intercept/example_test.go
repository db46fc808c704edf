package intercept_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/orca-agent/orca/intercept"
)

// Metrics is a pass-through interceptor: it never builds a result, so it
// stays generic and works on any executor.
type Metrics[RT, Q, R any] struct {
	Runs, Failures atomic.Int64
	Busy           atomic.Int64 // nanoseconds spent in runs
}

// Order puts it in the infrastructure band, outside security checks.
func (m *Metrics[RT, Q, R]) Order() int { return -900 }

func (m *Metrics[RT, Q, R]) Intercept(ctx context.Context, rt RT, req Q, next intercept.Next[RT, Q, R]) (res R, err error) {
	start := time.Now()
	// In a defer, so that the run is counted even when an inner step fails.
	defer func() {
		m.Runs.Add(1)
		m.Busy.Add(int64(time.Since(start)))
		if err != nil {
			m.Failures.Add(1)
		}
	}()
	return next.Proceed(ctx, rt, req)
}

type upper struct{}

func (upper) Execute(ctx context.Context, rt string, req string) (string, error) {
	if req == "" {
		return "", fmt.Errorf("%s: empty request", rt)
	}
	return strings.ToUpper(req), nil
}

// A generic pass-through interceptor on a small executor; the same Metrics
// type wraps the agent executor too (see the agent package's examples).
func ExampleWrap() {
	m := &Metrics[string, string, string]{}
	exec := intercept.Wrap(upper{}, m) // type arguments inferred from the delegate

	out, _ := exec.Execute(context.Background(), "shouter", "hello")
	_, err := exec.Execute(context.Background(), "shouter", "")
	fmt.Println(out)
	fmt.Println(err)
	fmt.Println(m.Runs.Load(), "runs,", m.Failures.Load(), "failure")
	fmt.Println(exec.Names())
	// Output:
	// HELLO
	// shouter: empty request
	// 2 runs, 1 failure
	// [Metrics]
}
