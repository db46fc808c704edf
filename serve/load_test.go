package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/serve"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/sqlite"
)

// loadTime bounds one run of BenchmarkServeLoad whatever its count: the
// turns done by then are the ones measured.
const loadTime = 3 * time.Minute

// BenchmarkServeLoad is orca serve's load generator (docs/serve.md,
// "Load"): a fresh server per run, as orca serve wires it (the
// workspace's SQLite store, a checkpoint per turn), on 127.0.0.1, and N
// clients, one per session, each running turns one after another until
// the run's count (-benchtime Nx, shared by all) or loadTime is reached.
// A turn is a message posted and its events followed to turn_completed;
// its model (loadModel) answers at once with two Reads of small files,
// then with its answer: two model calls and two tool calls.
//
// sessions=N follows each turn on a stream of its own (GET
// …/turns/{turn}/events); followers=N keeps one stream of the session's
// events open per client for the whole run, opened before the first
// turn, each at the server's default stream cap (503s counts the streams
// it refused; the client tries again). stream-B is the memory the open
// streams hold, per stream (the heap and stacks they added, client's and
// server's both: an upper bound).
//
// turns/s and the p50 and p99 of one turn (post to turn_completed) are
// set beside what the store alone does in the same run, on the same
// machine (store-appends/s: BenchmarkAppendConcurrent's op=Append/sync=FULL,
// 64 writers on a fresh file): turns/append is their ratio.
func BenchmarkServeLoad(b *testing.B) {
	for _, lc := range []struct {
		name     string
		sessions int
		follow   bool
	}{{"sessions=100", 100, false}, {"followers=500", 500, true}, {"followers=1000", 1000, true}} {
		b.Run(lc.name, func(b *testing.B) { runLoad(b, lc.sessions, lc.follow) })
	}
}

func runLoad(b *testing.B, sessions int, follow bool) {
	ws := b.TempDir()
	for _, f := range []string{"a.txt", "b.txt"} {
		if err := os.WriteFile(filepath.Join(ws, f), []byte("hello\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	a, err := app.Open(b.Context(), app.Config{Workspace: ws, ConfigDir: "-", ClaudeDir: "-", Client: loadModel(), NoMCP: true, Checkpoints: true})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	srv, err := serve.New(a, serve.Options{Token: token})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv) // 127.0.0.1
	defer hs.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 2 * sessions}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(b.Context(), loadTime)
	defer cancel()
	lc := &loadClient{base: hs.URL, http: &http.Client{Transport: tr}, ctx: ctx}
	for i := range sessions {
		if _, err := lc.post("/v1/sessions", fmt.Sprintf(`{"id": "s%d"}`, i), 201); err != nil {
			b.Fatal(err)
		}
	}

	// The followers' streams, open before the first turn.
	streams := make([]*follower, sessions)
	var streamBytes, streamGoroutines float64
	var mem0 runtime.MemStats
	g0 := runtime.NumGoroutine()
	if follow {
		runtime.GC()
		runtime.ReadMemStats(&mem0)
		var wg sync.WaitGroup
		for i := range sessions {
			streams[i] = &follower{c: lc, session: fmt.Sprintf("s%d", i)}
			wg.Go(func() {
				if err := streams[i].open(); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		if b.Failed() {
			return
		}
		var mem1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&mem1)
		held := int64(mem1.HeapInuse+mem1.StackInuse) - int64(mem0.HeapInuse+mem0.StackInuse)
		streamBytes = float64(held) / float64(sessions)
		streamGoroutines = float64(runtime.NumGoroutine()-g0) / float64(sessions)
		defer func() {
			for _, f := range streams {
				f.close()
			}
		}()
	}

	var mu sync.Mutex
	lat := make([]time.Duration, 0, b.N)
	next := make(chan struct{}, b.N)
	for range b.N {
		next <- struct{}{}
	}
	close(next)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			for range next {
				if ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				var err error
				if follow {
					err = streams[i].turn()
				} else {
					err = lc.turn(fmt.Sprintf("s%d", i))
				}
				if err != nil {
					if ctx.Err() == nil {
						b.Error(err)
					}
					return
				}
				d := time.Since(t0)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if len(lat) < b.N {
		b.Logf("%d of %d turns in %v (the run's time bound)", len(lat), b.N, loadTime)
	}
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	rate := float64(len(lat)) / elapsed.Seconds()
	b.ReportMetric(rate, "turns/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lc.refused.Load()), "503s")
	if follow {
		// (Reported here: ResetTimer drops metrics reported before it.)
		b.ReportMetric(streamBytes, "stream-B")
		b.ReportMetric(streamGoroutines, "goroutines/stream")
	}
	b.ReportMetric(0, "ns/op")

	appends := storeAppends(b)
	b.ReportMetric(appends, "store-appends/s")
	b.ReportMetric(rate/appends, "turns/append")
}

// storeAppends is BenchmarkAppendConcurrent's op=Append/sync=FULL on a
// fresh file: 64 writers appending one record each time, 100 appends
// each; it returns appends/s.
func storeAppends(b *testing.B) float64 {
	const writers, each = 64, 100
	s, err := sqlite.Open(filepath.Join(b.TempDir(), "orca.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for w := range writers {
		if _, err := s.Provision(ctx, store.Session{ID: fmt.Sprint("s", w), RuntimeID: "r1"}); err != nil {
			b.Fatal(err)
		}
	}
	rec := store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
		llm.TextBlock("I'll read the file first."),
		llm.ToolUseBlock("toolu_1", "Read", []byte(`{"file_path": "internal/pkg1/file.go", "limit": 200}`)),
	}}}
	var wg sync.WaitGroup
	start := time.Now()
	for w := range writers {
		wg.Go(func() {
			for range each {
				if _, err := s.Append(ctx, fmt.Sprint("s", w), rec); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return writers * each / time.Since(start).Seconds()
}

// loadModel answers a message with two Reads (a.txt, b.txt), and their
// results with its answer: what a scripted model does, without keeping
// every call as script.Client does.
func loadModel() llm.Client {
	var n atomic.Int64
	return llm.ClientFunc(func(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
		if last := req.Messages[len(req.Messages)-1]; slices.ContainsFunc(last.Content, func(b llm.Block) bool { return b.Type == llm.BlockToolResult }) {
			return &llm.Response{Model: "load", StopReason: llm.StopEndTurn, Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("done")}}}, nil
		}
		id := n.Add(1)
		return &llm.Response{Model: "load", StopReason: llm.StopToolUse, Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.ToolUseBlock(fmt.Sprint("r", id, "a"), "Read", []byte(`{"file_path": "a.txt"}`)),
			llm.ToolUseBlock(fmt.Sprint("r", id, "b"), "Read", []byte(`{"file_path": "b.txt"}`)),
		}}}, nil
	})
}

// loadClient is the load generator's client: errors, not test failures;
// a 503 is counted and tried again.
type loadClient struct {
	base    string
	http    *http.Client
	ctx     context.Context
	refused atomic.Int64
}

func (c *loadClient) do(method, path, body string, header http.Header) (*http.Response, error) {
	for {
		var r io.Reader
		if body != "" {
			r = strings.NewReader(body)
		}
		req, err := http.NewRequestWithContext(c.ctx, method, c.base+path, r)
		if err != nil {
			return nil, err
		}
		for k, v := range header {
			req.Header[k] = v
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := c.http.Do(req)
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
			return resp, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		c.refused.Add(1)
		select {
		case <-c.ctx.Done():
			return nil, c.ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *loadClient) post(path, body string, want int) ([]byte, error) {
	resp, err := c.do("POST", path, body, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return nil, fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, b)
	}
	return b, nil
}

// message posts a message to session and returns its turn's id.
func (c *loadClient) message(session string) (string, error) {
	b, err := c.post("/v1/sessions/"+session+"/messages", `{"text": "go"}`, 202)
	if err != nil {
		return "", err
	}
	var started struct {
		TurnID string `json:"turn_id"`
	}
	if err := json.Unmarshal(b, &started); err != nil || started.TurnID == "" {
		return "", fmt.Errorf("message: %s", b)
	}
	return started.TurnID, nil
}

// turn posts a message to session and follows the turn's own events
// until its turn_completed.
func (c *loadClient) turn(session string) error {
	id, err := c.message(session)
	if err != nil {
		return err
	}
	resp, err := c.do("GET", "/v1/sessions/"+session+"/turns/"+id+"/events", "", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("turn %s's events: %s", id, resp.Status)
	}
	r := bufio.NewReaderSize(resp.Body, 4096)
	for {
		line, err := readLine(r)
		if err != nil {
			return fmt.Errorf("turn %s: the stream ended without turn_completed: %w", id, err)
		}
		if string(line) == "event: turn_completed\n" {
			return nil
		}
	}
}

// follower is a client that follows its session's events on one stream,
// reconnecting (Last-Event-ID) if it ends.
type follower struct {
	c       *loadClient
	session string
	body    io.ReadCloser
	r       *bufio.Reader
	last    string // the last event id read
}

// open opens the stream and reads its first line (the retry hint): the
// server has taken it.
func (f *follower) open() error {
	var h http.Header
	if f.last != "" {
		h = http.Header{"Last-Event-ID": {f.last}}
	}
	resp, err := f.c.do("GET", "/v1/sessions/"+f.session+"/events", "", h)
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		resp.Body.Close()
		return fmt.Errorf("%s's events: %s", f.session, resp.Status)
	}
	f.body, f.r = resp.Body, bufio.NewReaderSize(resp.Body, 4096)
	if _, err := readLine(f.r); err != nil {
		f.close()
		return fmt.Errorf("%s's events: %w", f.session, err)
	}
	return nil
}

func (f *follower) close() {
	if f.body != nil {
		f.body.Close()
		f.body = nil
	}
}

// turn posts a message and reads the session's stream until the turn's
// turn_completed.
func (f *follower) turn() error {
	id, err := f.c.message(f.session)
	if err != nil {
		return err
	}
	want := []byte(`"turn_id":"` + id + `"`)
	completed := false
	for {
		line, err := readLine(f.r)
		if err != nil {
			if f.c.ctx.Err() != nil {
				return err
			}
			f.close()
			if err := f.open(); err != nil {
				return err
			}
			continue
		}
		switch {
		case bytes.HasPrefix(line, []byte("id: ")):
			f.last = string(bytes.TrimSpace(line[4:]))
		case string(line) == "event: turn_completed\n":
			completed = true
		case completed && bytes.HasPrefix(line, []byte("data: ")):
			if bytes.Contains(line, want) {
				return nil
			}
			completed = false
		}
	}
}

// readLine returns a line of r, its first 4 KiB only (the rest read and
// dropped): what the clients look at is at the start of a line.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	line = bytes.Clone(line)
	for errors.Is(err, bufio.ErrBufferFull) {
		_, err = r.ReadSlice('\n')
	}
	return line, err
}
