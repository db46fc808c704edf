package serve_test

import (
	"fmt"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/serve"
)

// BenchmarkServeTurns is the load test on loopback: 16 sessions at once,
// each posting messages one after another through the API and following
// each turn's events until turn_completed, on a model that answers at
// once (a tool call, then the answer), over the workspace's SQLite store.
// turns/s is the throughput; p99-ms the 99th percentile of one turn, post
// to turn_completed, which with this model is the API's own overhead plus
// the runtime's.
func BenchmarkServeTurns(b *testing.B) {
	const sessions = 16
	ws := b.TempDir()
	model := script.New()
	model.SetFallback(script.Text("done"))
	a, err := app.Open(b.Context(), app.Config{Workspace: ws, ConfigDir: "-", Client: model, NoMCP: true})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	srv, err := serve.New(a, serve.Options{Token: token, MaxStreams: 4 * sessions})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	c := &loadClient{base: hs.URL, http: hs.Client(), ctx: b.Context()}
	for i := range sessions {
		if _, err := c.post("/v1/sessions", fmt.Sprintf(`{"id": "s%d"}`, i), 201); err != nil {
			b.Fatal(err)
		}
	}
	var mu sync.Mutex
	var lat []time.Duration
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	next := make(chan struct{}, b.N)
	for range b.N {
		next <- struct{}{}
	}
	close(next)
	for i := range sessions {
		wg.Go(func() {
			for range next {
				t0 := time.Now()
				if err := c.turn(fmt.Sprintf("s%d", i)); err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				lat = append(lat, time.Since(t0))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "turns/s")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
}
