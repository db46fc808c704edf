package intercept_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/orca-agent/orca/intercept"
)

// A toy executor: the runtime is a name, the request a string, the result
// the string the delegate saw.
type echo struct{ calls atomic.Int32 }

func (e *echo) Execute(ctx context.Context, rt string, req string) (string, error) {
	e.calls.Add(1)
	return rt + ":" + req, nil
}

type fn = intercept.Func[string, string, string]
type next = intercept.Next[string, string, string]

// tagger appends its name to the request on the way in and to the result on
// the way out, so the order of the onion shows in both.
type tagger struct {
	name  string
	order int
}

func (t tagger) Order() int   { return t.order }
func (t tagger) Name() string { return t.name }
func (t tagger) Intercept(ctx context.Context, rt, req string, n next) (string, error) {
	res, err := n.Proceed(ctx, rt, req+">"+t.name)
	return res + "<" + t.name, err
}

func TestOneProceedRunsTheDelegate(t *testing.T) {
	d := &echo{}
	c := intercept.Wrap(d, fn(func(ctx context.Context, rt, req string, n next) (string, error) {
		return n.Proceed(ctx, rt, req)
	}))
	got, err := c.Execute(context.Background(), "rt", "hi")
	if err != nil || got != "rt:hi" || d.calls.Load() != 1 {
		t.Errorf("got %q, %v, %d delegate calls", got, err, d.calls.Load())
	}
}

func TestNoProceedBlocksTheRun(t *testing.T) {
	d := &echo{}
	inner := 0
	c := intercept.Wrap(d,
		fn(func(ctx context.Context, rt, req string, n next) (string, error) { return "blocked", nil }),
		intercept.Named("inner", 10, fn(func(ctx context.Context, rt, req string, n next) (string, error) {
			inner++
			return n.Proceed(ctx, rt, req)
		})),
	)
	got, err := c.Execute(context.Background(), "rt", "hi")
	if err != nil || got != "blocked" || d.calls.Load() != 0 || inner != 0 {
		t.Errorf("got %q, %v; delegate ran %d times, inner interceptor %d times", got, err, d.calls.Load(), inner)
	}
}

func TestSecondProceedFailsAndNeverReachesTheDelegate(t *testing.T) {
	d := &echo{}
	var second error
	c := intercept.Wrap(d, intercept.Named("greedy", 0, fn(func(ctx context.Context, rt, req string, n next) (string, error) {
		res, err := n.Proceed(ctx, rt, req)
		_, second = n.Proceed(ctx, rt, req)
		return res, err
	})))
	got, err := c.Execute(context.Background(), "rt", "hi")
	if err != nil || got != "rt:hi" {
		t.Fatalf("first proceed: %q, %v", got, err)
	}
	if !errors.Is(second, intercept.ErrProceedTwice) || !strings.Contains(second.Error(), "greedy") {
		t.Errorf("second proceed: %v", second)
	}
	if d.calls.Load() != 1 {
		t.Errorf("delegate ran %d times", d.calls.Load())
	}
}

func TestConcurrentProceedPassesOnce(t *testing.T) {
	for range 50 {
		d := &echo{}
		var failed atomic.Int32
		c := intercept.Wrap(d, fn(func(ctx context.Context, rt, req string, n next) (string, error) {
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					if _, err := n.Proceed(ctx, rt, req); errors.Is(err, intercept.ErrProceedTwice) {
						failed.Add(1)
					}
				})
			}
			wg.Wait()
			return "", nil
		}))
		c.Execute(context.Background(), "rt", "hi")
		if d.calls.Load() != 1 || failed.Load() != 7 {
			t.Fatalf("delegate ran %d times, %d calls refused; want 1 and 7", d.calls.Load(), failed.Load())
		}
	}
}

func TestOrderAndTies(t *testing.T) {
	d := &echo{}
	c := intercept.Wrap[string, string, string](d,
		tagger{"biz", 50},
		tagger{"auth", -50},
		tagger{"tie1", 0},
		tagger{"log", -1000},
		tagger{"tie2", 0},
	)
	got, _ := c.Execute(context.Background(), "rt", "req")
	want := "rt:req>log>auth>tie1>tie2>biz<biz<tie2<tie1<auth<log"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if names := c.Names(); !slices.Equal(names, []string{"log", "auth", "tie1", "tie2", "biz"}) {
		t.Errorf("names = %v", names)
	}
	ics := c.Interceptors()
	ics[0] = nil
	if c.Interceptors()[0] == nil {
		t.Error("Interceptors() exposes the chain's own slice")
	}
	if c.Delegate() != intercept.Executor[string, string, string](d) {
		t.Error("Delegate() is not the wrapped executor")
	}
}

type Unnamed[T any] struct{}

func (Unnamed[T]) Intercept(ctx context.Context, rt, req string, n next) (string, error) {
	return n.Proceed(ctx, rt, req)
}

func TestDefaultNameIsTheTypeName(t *testing.T) {
	c := intercept.Wrap[string, string, string](&echo{}, &Unnamed[int]{}, Unnamed[string]{})
	if got := c.Names(); !slices.Equal(got, []string{"Unnamed", "Unnamed"}) {
		t.Errorf("names = %v", got)
	}
}

func TestEmptyChainCallsTheDelegateDirectly(t *testing.T) {
	d := &echo{}
	c := intercept.Wrap(d)
	got, err := c.Execute(context.Background(), "rt", "hi")
	if err != nil || got != "rt:hi" {
		t.Errorf("got %q, %v", got, err)
	}
	if allocs := testing.AllocsPerRun(100, func() { c.Execute(context.Background(), "rt", "hi") }); allocs > 1 {
		t.Errorf("empty chain allocates %v times per run; it should add nothing to the delegate's own", allocs)
	}
}

var errDenied = errors.New("denied")

func TestErrorsPropagateUnchanged(t *testing.T) {
	boom := errors.New("delegate failed")
	failing := intercept.Executor[string, string, string](execFunc(func(context.Context, string, string) (string, error) { return "", boom }))
	c := intercept.Wrap(failing, tagger{"a", 0}, tagger{"b", 1})
	if _, err := c.Execute(context.Background(), "rt", "x"); err != boom {
		t.Errorf("error = %v, want the delegate's error itself", err)
	}
	c = intercept.Wrap[string, string, string](&echo{}, tagger{"outer", 0}, intercept.Named("auth", 1, fn(func(context.Context, string, string, next) (string, error) {
		return "", errDenied
	})))
	if _, err := c.Execute(context.Background(), "rt", "x"); err != errDenied {
		t.Errorf("error = %v, want the interceptor's error itself", err)
	}
}

type execFunc func(context.Context, string, string) (string, error)

func (f execFunc) Execute(ctx context.Context, rt, req string) (string, error) {
	return f(ctx, rt, req)
}

// An inner failure skips the outer interceptor's post-processing written
// after Proceed, while its deferred cleanup still runs: the pattern the
// package documentation prescribes.
func TestInnerFailureSkipsPostProcessingButNotDefer(t *testing.T) {
	var log []string
	outer := fn(func(ctx context.Context, rt, req string, n next) (string, error) {
		defer func() { log = append(log, "deferred cleanup") }()
		res, err := n.Proceed(ctx, rt, req)
		if err != nil {
			return res, err
		}
		log = append(log, "post-processing")
		return res, nil
	})
	inner := intercept.Named("inner", 1, fn(func(ctx context.Context, rt, req string, n next) (string, error) {
		res, err := n.Proceed(ctx, rt, req)
		if err == nil {
			err = errors.New("inner post-processing failed") // e.g. the result could not be shaped
		}
		return res, err
	}))
	_, err := intercept.Wrap[string, string, string](&echo{}, outer, inner).Execute(context.Background(), "rt", "x")
	if err == nil || !strings.Contains(err.Error(), "inner post-processing failed") {
		t.Fatalf("error = %v", err)
	}
	if !slices.Equal(log, []string{"deferred cleanup"}) {
		t.Errorf("outer ran %v; want only its deferred cleanup", log)
	}
}

func TestInterceptorsTransformRequestAndResult(t *testing.T) {
	c := intercept.Wrap[string, string, string](&echo{}, fn(func(ctx context.Context, rt, req string, n next) (string, error) {
		res, err := n.Proceed(ctx, "other-rt", strings.ToUpper(req))
		return "[" + res + "]", err
	}))
	if got, _ := c.Execute(context.Background(), "rt", "hi"); got != "[other-rt:HI]" {
		t.Errorf("got %q", got)
	}
}

func TestNilInterceptorsAreSkipped(t *testing.T) {
	c := intercept.Wrap[string, string, string](&echo{}, nil, tagger{"a", 0}, nil)
	if got, _ := c.Execute(context.Background(), "rt", "x"); got != "rt:x>a<a" {
		t.Errorf("got %q", got)
	}
}
