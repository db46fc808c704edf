package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/serve"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const token = "test-token-0123456789"

// fixture is a server over an App on a scripted model, in a workspace of
// its own, on a loopback port.
type fixture struct {
	t      *testing.T
	ws     string
	model  *script.Client
	app    *app.App
	srv    *serve.Server
	http   *httptest.Server
	client *http.Client
}

func newFixture(t *testing.T, cfg app.Config, opts serve.Options) *fixture {
	t.Helper()
	f := &fixture{t: t, ws: t.TempDir(), model: script.New(), client: &http.Client{}}
	if cfg.Workspace != "" {
		f.ws = cfg.Workspace
	}
	cfg.Workspace, cfg.ConfigDir, cfg.Client, cfg.NoMCP = f.ws, "-", f.model, true
	if cfg.Approver == nil {
		cfg.Approver = policy.Parking{}
	}
	a, err := app.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.app = a
	opts.Token = token
	if opts.Poll == 0 {
		opts.Poll = 50 * time.Millisecond
	}
	if f.srv, err = serve.New(a, opts); err != nil {
		t.Fatal(err)
	}
	f.http = httptest.NewServer(f.srv)
	t.Cleanup(func() {
		f.http.CloseClientConnections()
		f.http.Close()
		if err := f.srv.Close(); err != nil {
			t.Errorf("server Close: %v", err)
		}
		if err := a.Close(); err != nil {
			t.Errorf("app Close: %v", err)
		}
	})
	return f
}

// do sends a request with the token and returns the status and body.
func (f *fixture) do(method, path, body string, header ...string) (int, string) {
	f.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(f.t.Context(), method, f.http.URL+path, r)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := f.client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// json decodes a body, failing the test on a status other than want.
func (f *fixture) json(method, path, body string, want int) map[string]any {
	f.t.Helper()
	code, out := f.do(method, path, body)
	if code != want {
		f.t.Fatalf("%s %s: %d, want %d: %s", method, path, code, want, out)
	}
	var m map[string]any
	if out != "" {
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			f.t.Fatalf("%s %s: %v: %s", method, path, err, out)
		}
	}
	return m
}

type sse struct {
	id   int64
	name string
	data map[string]any
}

// events reads an event stream until stop says so (or, with follow=false,
// until it ends).
func (f *fixture) events(path string, lastID string, stop func(sse) bool) []sse {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.t.Context(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.http.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		f.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	var out []sse
	var cur sse
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.name != "" {
				out = append(out, cur)
				if stop != nil && stop(cur) {
					return out
				}
			}
			cur = sse{}
		case strings.HasPrefix(line, "id: "):
			cur.id, _ = strconv.ParseInt(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			cur.name = line[7:]
		case strings.HasPrefix(line, "data: "):
			json.Unmarshal([]byte(line[6:]), &cur.data)
		}
	}
	if stop != nil && ctx.Err() != nil {
		f.t.Fatalf("GET %s: the stream did not bring the event waited for: %d events", path, len(out))
	}
	return out
}

func completed(e sse) bool { return e.name == "turn_completed" && e.data["depth"] == nil }

// completedTimes stops at the n-th turn_completed of the turn (a turn
// that parked and went on has one per attempt).
func completedTimes(n int) func(sse) bool {
	return func(e sse) bool {
		if completed(e) {
			n--
		}
		return n == 0
	}
}

// A message starts a turn whose events stream live; the turn's state, the
// session's transcript and totals follow; the events replay after
// Last-Event-ID exactly from there.
func TestTurnThroughTheAPI(t *testing.T) {
	f := newFixture(t, app.Config{Mode: policy.ModeAcceptEdits}, serve.Options{})
	f.model.Script("s1",
		script.Call("Write", map[string]string{"file_path": "hello.txt", "content": "hello\n"}),
		script.Text("Wrote hello.txt."))
	if s := f.json("POST", "/v1/sessions", `{"id": "s1"}`, 201); s["id"] != "s1" {
		t.Fatalf("created %v", s)
	}
	started := f.json("POST", "/v1/sessions/s1/messages", `{"text": "write hello"}`, 202)
	turn, _ := started["turn_id"].(string)
	if !strings.HasPrefix(turn, "turn_") || started["queued"] != false {
		t.Fatalf("message: %v", started)
	}
	evs := f.events("/v1/sessions/s1/turns/"+turn+"/events", "", completed)
	var names []string
	for _, e := range evs {
		names = append(names, e.name)
		if e.data["turn_id"] != turn {
			t.Errorf("an event of another turn: %+v", e)
		}
	}
	if last := evs[len(evs)-1]; last.data["stop_reason"] != "answered" || last.data["answer"] != "Wrote hello.txt." {
		t.Errorf("turn_completed %v", last.data)
	}
	if !strings.Contains(strings.Join(names, " "), "turn_started iteration_started llm_call_started") || !strings.Contains(strings.Join(names, " "), "tool_exec_completed") {
		t.Errorf("events %v", names)
	}
	if b, err := os.ReadFile(filepath.Join(f.ws, "hello.txt")); err != nil || string(b) != "hello\n" {
		t.Errorf("hello.txt: %q, %v", b, err)
	}
	if st := f.json("GET", "/v1/sessions/s1/turns/"+turn, "", 200); st["status"] != "answered" || st["tool_calls"] != 1.0 {
		t.Errorf("turn %v", st)
	}
	s := f.json("GET", "/v1/sessions/s1", "", 200)
	if tr, _ := s["transcript"].([]any); len(tr) != 4 || s["running_turn"] != nil {
		t.Errorf("session %v", s)
	}
	if tot := f.json("GET", "/v1/sessions/s1/totals", "", 200); tot["tool_calls"] != 1.0 {
		t.Errorf("totals %v", tot)
	}
	if l := f.json("GET", "/v1/sessions", "", 200); len(l["sessions"].([]any)) != 1 {
		t.Errorf("sessions %v", l)
	}

	// All of the session's events, then the rest after the third one.
	all := f.events("/v1/sessions/s1/events?follow=false", "", nil)
	if len(all) < len(evs) {
		t.Fatalf("the session has %d events, its turn %d", len(all), len(evs))
	}
	rest := f.events("/v1/sessions/s1/events?follow=false", strconv.FormatInt(all[2].id, 10), nil)
	if len(rest) != len(all)-3 || rest[0].id != all[3].id {
		t.Errorf("after %d: %d events from %d, want %d from %d", all[2].id, len(rest), rest[0].id, len(all)-3, all[3].id)
	}
	for i := 1; i < len(all); i++ {
		if all[i].id <= all[i-1].id {
			t.Errorf("ids out of order: %d after %d", all[i].id, all[i-1].id)
		}
	}
}

// A client that follows a session reconnects with Last-Event-ID in the
// middle of a turn and misses nothing; a client that goes away mid-turn
// does not stop it.
func TestReconnectMissesNothing(t *testing.T) {
	release := make(chan struct{})
	wait := tool.New("Wait", "Waits.", func(ctx context.Context, in struct{}) (string, error) {
		select {
		case <-release:
			return "waited", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}, tool.ReadOnly())
	f := newFixture(t, app.Config{ToolProviders: []tool.Provider{tool.Static("wait", wait)}}, serve.Options{})
	f.model.Script("s", script.Call("Wait", map[string]any{}), script.Text("done"))
	f.json("POST", "/v1/sessions", `{"id": "s"}`, 201)
	turn := f.json("POST", "/v1/sessions/s/messages", `{"text": "wait"}`, 202)["turn_id"].(string)
	// The first client goes once the call started.
	first := f.events("/v1/sessions/s/events", "", func(e sse) bool { return e.name == "tool_exec_started" })
	close(release)
	second := f.events("/v1/sessions/s/events", strconv.FormatInt(first[len(first)-1].id, 10), completed)
	if second[0].id <= first[len(first)-1].id || second[0].name == "tool_exec_started" {
		t.Errorf("resumed at %d %s after %d", second[0].id, second[0].name, first[len(first)-1].id)
	}
	whole := f.events("/v1/sessions/s/events?follow=false", "", nil)
	if len(first)+len(second) != len(whole) {
		t.Errorf("%d + %d events over two connections, %d in all", len(first), len(second), len(whole))
	}
	if st := f.json("GET", "/v1/sessions/s/turns/"+turn, "", 200); st["status"] != "answered" {
		t.Errorf("turn %v", st)
	}
}

// A running turn is interrupted by id; a second message while it runs is
// queued and runs after it.
func TestInterruptAndQueue(t *testing.T) {
	started := make(chan struct{}, 1)
	wait := tool.New("Wait", "Waits.", func(ctx context.Context, in struct{}) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	}, tool.ReadOnly())
	f := newFixture(t, app.Config{ToolProviders: []tool.Provider{tool.Static("wait", wait)}}, serve.Options{})
	f.model.Script("s", script.Call("Wait", map[string]any{}), script.Text("after the queued message"))
	f.json("POST", "/v1/sessions", `{"id": "s"}`, 201)
	turn := f.json("POST", "/v1/sessions/s/messages", `{"text": "wait"}`, 202)["turn_id"].(string)
	<-started
	if q := f.json("POST", "/v1/sessions/s/messages", `{"text": "and then this"}`, 202); q["queued"] != true || q["turn_id"] != turn {
		t.Errorf("second message: %v", q)
	}
	if code, body := f.do("POST", "/v1/sessions/s/turns/turn_nope/interrupt", ""); code != 409 {
		t.Errorf("interrupting a turn that is not running: %d %s", code, body)
	}
	f.json("POST", "/v1/sessions/s/turns/"+turn+"/interrupt", "", 202)
	evs := f.events("/v1/sessions/s/events", "", func(e sse) bool { return completed(e) && e.data["stop_reason"] == "answered" })
	var ends []string
	for _, e := range evs {
		if completed(e) {
			ends = append(ends, e.data["stop_reason"].(string))
		}
	}
	if strings.Join(ends, " ") != "interrupted answered" {
		t.Errorf("turns ended %v", ends)
	}
	if calls := f.model.CallsTo("s"); len(calls) != 2 || !strings.Contains(fmt.Sprint(calls[1].Messages), "and then this") {
		t.Errorf("the queued message did not reach the model: %d calls", len(calls))
	}
}

// parkABash starts a turn of a new session s whose Bash call (echo ran >
// ran.txt) the policy parks, then "ran it", and returns once it has parked.
func (f *fixture) parkABash() string {
	f.model.Script("s",
		script.Call("Bash", map[string]string{"command": "echo ran > ran.txt"}),
		script.Text("ran it"))
	f.json("POST", "/v1/sessions", `{"id": "s"}`, 201)
	turn := f.json("POST", "/v1/sessions/s/messages", `{"text": "run it"}`, 202)["turn_id"].(string)
	f.events("/v1/sessions/s/turns/"+turn+"/events", "", completed)
	return turn
}

// A call the policy asks about parks the turn; the approval is listed,
// decided through the API, and the turn goes on under its id: the call
// runs, the model answers, and the session counts one turn.
func TestParkedApproval(t *testing.T) {
	f := newFixture(t, app.Config{}, serve.Options{})
	turn := f.parkABash()
	if st := f.json("GET", "/v1/sessions/s/turns/"+turn, "", 200); st["status"] != "awaiting_approval" {
		t.Fatalf("turn %v", st)
	}
	list := f.json("GET", "/v1/approvals", "", 200)["approvals"].([]any)
	if len(list) != 1 {
		t.Fatalf("approvals %v", list)
	}
	p := list[0].(map[string]any)
	if p["tool_name"] != "Bash" || p["session_id"] != "s" || p["status"] != "pending" {
		t.Errorf("parked %v", p)
	}
	// A message while the call waits: refused at once, naming the call,
	// not a turn that fails.
	if code, body := f.do("POST", "/v1/sessions/s/messages", `{"text": "and then?"}`); code != 409 || !strings.Contains(body, `"code":"awaiting_approval"`) || !strings.Contains(body, p["id"].(string)) {
		t.Errorf("a message while parked: %d %s", code, body)
	}
	if code, body := f.do("POST", "/v1/approvals/"+p["id"].(string), `{"note": "no decision"}`); code != 400 || !strings.Contains(body, `"field":"approve"`) {
		t.Errorf("without approve: %d %s", code, body)
	}
	if d := f.json("POST", "/v1/approvals/"+p["id"].(string), `{"approve": true, "note": "fine"}`, 200); d["status"] != "approved" || d["decided_by"] != "api" || d["resumed"] != true {
		t.Errorf("decided %v", d)
	}
	if code, _ := f.do("POST", "/v1/approvals/"+p["id"].(string), `{"approve": false}`); code != 409 {
		t.Errorf("deciding twice: %d", code)
	}
	// The turn's events go on after its first turn_completed (parked).
	evs := f.events("/v1/sessions/s/turns/"+turn+"/events", "", completedTimes(2))
	if last := evs[len(evs)-1]; last.data["stop_reason"] != "answered" || last.data["answer"] != "ran it" {
		t.Errorf("the turn ended %v", last.data)
	}
	if b, err := os.ReadFile(filepath.Join(f.ws, "ran.txt")); err != nil || string(b) != "ran\n" {
		t.Errorf("the approved call: %q, %v", b, err)
	}
	if st := f.json("GET", "/v1/sessions/s/turns/"+turn, "", 200); st["status"] != "answered" || st["answer"] != "ran it" {
		t.Errorf("the turn %v", st)
	}
	if s := f.json("GET", "/v1/sessions/s", "", 200); s["turns"] != 1.0 || s["parked"] != nil {
		t.Errorf("the session: turns %v, parked %v", s["turns"], s["parked"])
	}
}

// A parked call decided through the store (orca approve, another server)
// is seen by the server, which goes on with the turn as if decided here.
func TestParkedCallDecidedElsewhere(t *testing.T) {
	f := newFixture(t, app.Config{}, serve.Options{Poll: 20 * time.Millisecond})
	turn := f.parkABash()
	list := f.json("GET", "/v1/approvals", "", 200)["approvals"].([]any)
	if len(list) != 1 {
		t.Fatalf("approvals %v", list)
	}
	id := list[0].(map[string]any)["id"].(string)
	if _, err := f.app.Store().SetParkStatus(t.Context(), id, store.ParkApproved, "ana", ""); err != nil {
		t.Fatal(err)
	}
	evs := f.events("/v1/sessions/s/turns/"+turn+"/events", "", completedTimes(2))
	if last := evs[len(evs)-1]; last.data["stop_reason"] != "answered" {
		t.Errorf("the turn ended %v", last.data)
	}
	if b, err := os.ReadFile(filepath.Join(f.ws, "ran.txt")); err != nil || string(b) != "ran\n" {
		t.Errorf("the approved call: %q, %v", b, err)
	}
}

// A decision posted here and the same decision seen in the store race
// (the browser test met it): whichever goes on with the turn first, the
// other says the turn went on too — not "a turn is running", which sent
// the page's user to post a message the turn did not need.
func TestDecisionSeenTwiceSaysTheTurnWentOn(t *testing.T) {
	f := newFixture(t, app.Config{}, serve.Options{})
	turn := f.parkABash()
	calls, err := f.app.Store().ParkedCalls(t.Context(), store.ParkFilter{SessionID: "s"})
	if err != nil || len(calls) != 1 {
		t.Fatalf("parked %v, %v", calls, err)
	}
	p, err := f.app.Store().SetParkStatus(t.Context(), calls[0].ID, store.ParkApproved, "ana", "")
	if err != nil {
		t.Fatal(err)
	}
	first, second := f.srv.GoOn(t.Context(), p), f.srv.GoOn(t.Context(), p)
	if !first || !second {
		t.Errorf("going on: %v, then %v; want true twice", first, second)
	}
	evs := f.events("/v1/sessions/s/turns/"+turn+"/events", "", completedTimes(2))
	if last := evs[len(evs)-1]; last.data["stop_reason"] != "answered" {
		t.Errorf("the turn ended %v", last.data)
	}
	if got := f.model.CallsTo("s"); len(got) != 2 {
		t.Errorf("%d model calls, want 2: the turn went on once", len(got))
	}
}

// A typed result through the API: the turn's state and turn_completed
// carry the checked value.
func TestOutputSchemaThroughTheAPI(t *testing.T) {
	f := newFixture(t, app.Config{}, serve.Options{})
	f.model.Script("s", script.Output(`{"n": 3}`))
	f.json("POST", "/v1/sessions", `{"id": "s"}`, 201)
	turn := f.json("POST", "/v1/sessions/s/messages", `{"text": "count", "output_schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}`, 202)["turn_id"].(string)
	evs := f.events("/v1/sessions/s/turns/"+turn+"/events", "", completed)
	if out, _ := json.Marshal(evs[len(evs)-1].data["output"]); string(out) != `{"n":3}` {
		t.Errorf("turn_completed output %s", out)
	}
	if st := f.json("GET", "/v1/sessions/s/turns/"+turn, "", 200); fmt.Sprint(st["output"]) != "map[n:3]" {
		t.Errorf("turn %v", st)
	}
}

// Budgets and compaction.
func TestBudgetAndCompact(t *testing.T) {
	f := newFixture(t, app.Config{}, serve.Options{})
	f.model.Script("s", script.Text("a1"), script.Text("a2"), script.Text("a3"))
	f.model.Script(script.CompactionRoute("s"), script.Text("the summary"))
	f.json("POST", "/v1/sessions", `{"id": "s"}`, 201)
	if b := f.json("PUT", "/v1/sessions/s/budget", `{"tool_calls": 5, "wall_time_ms": 60000}`, 200); b["tool_calls"] != 5.0 || b["wall_time_ms"] != 60000.0 || b["tokens"] != 0.0 {
		t.Errorf("budget %v", b)
	}
	if b := f.json("GET", "/v1/sessions/s/budget", "", 200); b["tool_calls"] != 5.0 {
		t.Errorf("budget read back %v", b)
	}
	for _, text := range []string{"q1", "q2", "q3"} {
		turn := f.json("POST", "/v1/sessions/s/messages", `{"text": "`+text+`"}`, 202)["turn_id"].(string)
		f.events("/v1/sessions/s/turns/"+turn+"/events", "", completed)
	}
	if c := f.json("POST", "/v1/sessions/s/compact", `{"instructions": "keep q2"}`, 200); c["compacted"] != true {
		t.Errorf("compact %v", c)
	}
	if p := f.model.CallsTo(script.CompactionRoute("s")); len(p) != 1 || !strings.Contains(fmt.Sprint(p[0].Messages), "keep q2") {
		t.Errorf("the summariser's calls %d", len(p))
	}
}

// Bad input: each a clear error naming what is wrong, nothing changed.
func TestBadInput(t *testing.T) {
	f := newFixture(t, app.Config{}, serve.Options{MaxBody: 4096, MaxMessageBody: 4096})
	f.json("POST", "/v1/sessions", `{"id": "s"}`, 201)
	for _, tc := range []struct {
		method, path, body string
		code               int
		want               []string
	}{
		{"POST", "/v1/sessions/s/messages", `{"text": `, 400, []string{"not JSON"}},
		{"POST", "/v1/sessions/s/messages", `{"text": "hi", "txet": 1}`, 400, []string{`"field":"txet"`, "unknown field"}},
		{"POST", "/v1/sessions/s/messages", `{"text": 7}`, 400, []string{`"field":"text"`, "want string"}},
		{"POST", "/v1/sessions/s/messages", `{"text": "  "}`, 400, []string{`"field":"text"`, "empty"}},
		{"POST", "/v1/sessions/s/messages", ``, 400, []string{"empty"}},
		{"POST", "/v1/sessions/s/messages", `{"text": "a"} {"text": "b"}`, 400, []string{"more than one"}},
		{"POST", "/v1/sessions/s/messages", `{"text": "` + strings.Repeat("x", 5000) + `"}`, 413, []string{"over 4096 bytes"}},
		{"POST", "/v1/sessions/s/messages", `{"text": "hi", "output_schema": {"type": "array"}}`, 400, []string{`"field":"output_schema"`, "object schema"}},
		{"POST", "/v1/sessions/nope/messages", `{"text": "hi"}`, 404, []string{"no session nope"}},
		{"POST", "/v1/sessions", `{"id": "a b"}`, 400, []string{`"field":"id"`}},
		{"POST", "/v1/sessions", `{"id": "s"}`, 409, []string{"exists"}},
		{"GET", "/v1/sessions?limit=0", ``, 400, []string{`"field":"limit"`}},
		{"GET", "/v1/sessions/s/events?after=x", ``, 400, []string{`"field":"after"`}},
		{"GET", "/v1/sessions/s/events?follow=maybe", ``, 400, []string{`"field":"follow"`}},
		{"PUT", "/v1/sessions/s/budget", `{"tokens": -1}`, 400, []string{`"field":"tokens"`}},
		// More milliseconds than a time.Duration holds overflowed to a
		// negative limit and was refused as one.
		{"PUT", "/v1/sessions/s/budget", `{"wall_time_ms": 9223372036854775807}`, 400, []string{`"field":"wall_time_ms"`, "at most 9223372036854"}},
		{"PUT", "/v1/sessions/s/budget", `{"wall_time_ms": 9223372036855}`, 400, []string{`"field":"wall_time_ms"`, "at most"}}, // the first that wraps
		{"GET", "/v1/sessions/s/turns/turn_x", ``, 404, []string{"turn_x"}},
		{"POST", "/v1/approvals/park_x", `{"approve": true}`, 404, []string{"park_x"}},
		{"GET", "/v1/nothing", ``, 404, []string{"openapi"}},
		{"DELETE", "/v1/sessions/nope", ``, 404, []string{"nope"}},
		{"PATCH", "/v1/sessions", `{}`, 405, []string{`"code":"method_not_allowed"`, "takes GET, HEAD, POST"}},
		{"DELETE", "/v1/sessions/s/messages", ``, 405, []string{"takes POST"}},
		{"PUT", "/v1/sessions/s/turns/turn_x/events", ``, 405, []string{"takes GET, HEAD"}},
		{"POST", "/v1/sessions/s/nothing", ``, 404, []string{"no POST /v1/sessions/s/nothing"}},
	} {
		code, body := f.do(tc.method, tc.path, tc.body)
		if code != tc.code {
			t.Errorf("%s %s %.40s: %d, want %d: %s", tc.method, tc.path, tc.body, code, tc.code, body)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s %s %.40s: %s lacks %q", tc.method, tc.path, tc.body, body, w)
			}
		}
	}
	// The refused budgets changed nothing.
	if b := f.json("GET", "/v1/sessions/s/budget", "", 200); b["tokens"] != 0.0 || b["wall_time_ms"] != 0.0 {
		t.Errorf("budget after refused changes %v", b)
	}
	if b := f.json("PUT", "/v1/sessions/s/budget", `{"wall_time_ms": 9223372036854}`, 200); b["wall_time_ms"] != 9223372036854.0 {
		t.Errorf("the longest wall time a budget holds: %v", b)
	}
	// A 405 says which methods the path takes, in the Allow header too.
	req, _ := http.NewRequestWithContext(t.Context(), "PATCH", f.http.URL+"/v1/sessions/s/budget", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if resp, err := f.client.Do(req); err != nil || resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD, PUT" {
		t.Errorf("PATCH budget: %v, %+v", err, resp)
	} else {
		resp.Body.Close()
	}
	if calls := f.model.Calls(); len(calls) != 0 {
		t.Errorf("the model was called %d times", len(calls))
	}
}

// The token, the origin and the host are checked before anything else; the
// OpenAPI document needs no token.
func TestAuthOriginHost(t *testing.T) {
	f := newFixture(t, app.Config{}, serve.Options{AllowedOrigins: []string{"https://ui.example"}})
	for _, tc := range []struct {
		name   string
		header []string
		path   string
		code   int
	}{
		{"no token", []string{"Authorization", ""}, "/v1/sessions", 401},
		{"wrong token", []string{"Authorization", "Bearer nope"}, "/v1/sessions", 401},
		{"basic auth", []string{"Authorization", "Basic dXNlcjpwYXNz"}, "/v1/sessions", 401},
		{"token in the query of a non-stream", []string{"Authorization", ""}, "/v1/sessions?access_token=" + token, 401},
		{"another origin", []string{"Origin", "https://evil.example"}, "/v1/sessions", 403},
		{"cross-site without origin", []string{"Sec-Fetch-Site", "cross-site"}, "/v1/sessions", 403},
		{"an allowed origin", []string{"Origin", "https://ui.example"}, "/v1/sessions", 200},
		{"the same origin", []string{"Origin", f.http.URL}, "/v1/sessions", 200},
		{"a rebinding host", []string{"Host", "evil.example"}, "/v1/sessions", 421},
		{"the document without a token", []string{"Authorization", ""}, "/v1/openapi.json", 200},
		{"an unknown path without a token", []string{"Authorization", ""}, "/v1/secret", 401},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", f.http.URL+tc.path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		for i := 0; i+1 < len(tc.header); i += 2 {
			switch {
			case tc.header[i] == "Host":
				req.Host = tc.header[i+1]
			case tc.header[i+1] == "":
				req.Header.Del(tc.header[i])
			default:
				req.Header.Set(tc.header[i], tc.header[i+1])
			}
		}
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s: %d, want %d: %s", tc.name, resp.StatusCode, tc.code, b)
		}
	}
	if _, err := serve.New(f.app, serve.Options{}); err == nil {
		t.Error("a server without a token was made")
	}
}

// A session of another runtime (another agent over the same store) is
// refused, not opened.
func TestOtherRuntimesSession(t *testing.T) {
	f := newFixture(t, app.Config{}, serve.Options{})
	other, err := app.Open(t.Context(), app.Config{Workspace: f.ws, ConfigDir: "-", Client: f.model, NoMCP: true, Name: "other", Store: f.app.Store()})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ls, err := other.Session(t.Context(), app.SessionOptions{ID: "theirs"})
	if err != nil {
		t.Fatal(err)
	}
	ls.Close(t.Context())
	for _, path := range []string{"/v1/sessions/theirs", "/v1/sessions/theirs/events", "/v1/sessions/theirs/totals"} {
		if code, body := f.do("GET", path, ""); code != 403 || !strings.Contains(body, "another agent or workspace") {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
	}
	if code, _ := f.do("DELETE", "/v1/sessions/theirs", ""); code != 403 {
		t.Errorf("DELETE: %d", code)
	}
}

// Delete removes a session; one with a turn running is refused.
func TestDeleteSession(t *testing.T) {
	f := newFixture(t, app.Config{}, serve.Options{})
	f.model.Script("s", script.Text("hi"))
	f.json("POST", "/v1/sessions", `{"id": "s"}`, 201)
	turn := f.json("POST", "/v1/sessions/s/messages", `{"text": "hi"}`, 202)["turn_id"].(string)
	f.events("/v1/sessions/s/turns/"+turn+"/events", "", completed)
	if code, body := f.do("DELETE", "/v1/sessions/s", ""); code != 204 {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	if code, _ := f.do("GET", "/v1/sessions/s", ""); code != 404 {
		t.Errorf("GET after DELETE: %d", code)
	}
	if l := f.json("GET", "/v1/sessions", "", 200); len(l["sessions"].([]any)) != 0 {
		t.Errorf("sessions %v", l)
	}
}

// A hundred clients follow one session's turn and each gets every event;
// the stream cap refuses the one over it.
func TestManyFollowers(t *testing.T) {
	release := make(chan struct{})
	wait := tool.New("Wait", "Waits.", func(ctx context.Context, in struct{}) (string, error) {
		<-release
		return "ok", nil
	}, tool.ReadOnly())
	f := newFixture(t, app.Config{ToolProviders: []tool.Provider{tool.Static("wait", wait)}}, serve.Options{MaxStreams: 100})
	f.model.Script("s", script.Call("Wait", map[string]any{}), script.Text("done"))
	f.json("POST", "/v1/sessions", `{"id": "s"}`, 201)
	f.json("POST", "/v1/sessions/s/messages", `{"text": "go"}`, 202)
	f.events("/v1/sessions/s/events", "", func(e sse) bool { return e.name == "tool_exec_started" })
	var wg sync.WaitGroup
	counts := make([]int, 100)
	ready := make(chan struct{}, 100)
	for i := range counts {
		wg.Go(func() {
			counts[i] = len(f.events("/v1/sessions/s/events", "", func(e sse) bool {
				if e.name == "tool_exec_started" {
					ready <- struct{}{}
				}
				return completed(e)
			}))
		})
	}
	for range counts {
		<-ready
	}
	if code, body := f.do("GET", "/v1/sessions/s/events", ""); code != 503 || !strings.Contains(body, "100 event streams") {
		t.Errorf("the 101st stream: %d %s", code, body)
	}
	close(release)
	wg.Wait()
	whole := len(f.events("/v1/sessions/s/events?follow=false", "", nil))
	for i, n := range counts {
		if n != whole {
			t.Errorf("client %d got %d events of %d", i, n, whole)
			break
		}
	}
}

// A stream woken by the server's own rows reads them from its writer
// (observe.Rows.Recent), not from the store: following a session for
// three turns reads the store when the stream opens and once more (the
// writer keeps its rows once asked), not at each batch — and brings
// what the store has.
func TestStreamReadsTheServersOwnRowsFromItsWriter(t *testing.T) {
	st := &sessionReads{Memory: store.NewMemory()}
	t.Cleanup(func() { st.Close() })
	f := newFixture(t, app.Config{Store: st}, serve.Options{Poll: time.Hour})
	f.model.Script("s", script.Text("one"), script.Text("two"), script.Text("three"))
	f.json("POST", "/v1/sessions", `{"id": "s"}`, 201)
	followed := make(chan []sse)
	go func() { followed <- f.events("/v1/sessions/s/events", "", completedTimes(3)) }()
	for range 3 {
		turn := f.json("POST", "/v1/sessions/s/messages", `{"text": "go"}`, 202)["turn_id"].(string)
		for f.json("GET", "/v1/sessions/s/turns/"+turn, "", 200)["status"] == "running" {
			time.Sleep(time.Millisecond)
		}
	}
	evs := <-followed
	if n := f.srv.Reads(); n > 2 {
		t.Errorf("the stream read the store %d times over 3 turns, want at most 2", n)
	}
	// Nor is the store asked whose the session is: the server has it open.
	before := st.n.Load()
	whole := f.events("/v1/sessions/s/events?follow=false", "", nil)
	if n := st.n.Load() - before; n != 0 {
		t.Errorf("a stream of a session the server has open read the session %d times", n)
	}
	if len(evs) != len(whole) {
		t.Fatalf("followed %d events, the store has %d", len(evs), len(whole))
	}
	for i := range evs {
		if evs[i].id != whole[i].id || evs[i].name != whole[i].name {
			t.Errorf("event %d: %d %s, the store's %d %s", i, evs[i].id, evs[i].name, whole[i].id, whole[i].name)
		}
	}
}

// sessionReads is a store that counts the reads of a session.
type sessionReads struct {
	*store.Memory
	n atomic.Int64
}

func (s *sessionReads) Session(ctx context.Context, id string) (store.Session, error) {
	s.n.Add(1)
	return s.Memory.Session(ctx, id)
}
