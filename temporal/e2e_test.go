package temporal_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/anthropic"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/serve"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/temporal"
)

const inDoubt = "may or may not have taken effect"

// A turn through the CLI parks at a call the policy asks about; approve
// goes on with it on the worker; the call ran once; the worker's events
// are in the store for whoever watches from elsewhere (orca serve).
func TestServerTurnParksAndIsApprovedThroughTheCLI(t *testing.T) {
	model := newFakeModel(t, func(step int) (string, []fakeCall) {
		if step == 0 {
			return "", []fakeCall{{"Bash", map[string]string{"command": "echo approved >> ran"}}}
		}
		return "it ran", nil
	})
	c := newCluster(t, model, temporal.Options{})
	c.start("w1")
	out, stderr, code := c.orca("run", "--session", "s1", "--turn-id", "t1", "--json", "run it")
	var parked temporal.TurnResult
	if code != 3 || json.Unmarshal([]byte(out), &parked) != nil || parked.Parked == nil {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "orca-temporal approve --session s1 "+parked.Parked.ID) {
		t.Errorf("run does not say how to go on:\n%s", stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(c.ws, "ran")); len(b) != 0 {
		t.Fatalf("the parked call ran: %q", b)
	}
	// Asking again for the same turn gets the same turn.
	again, _, code := c.orca("run", "--session", "s1", "--turn-id", "t1", "--json", "run it")
	if code != 3 || again != out {
		t.Errorf("the same turn asked again: exit %d\n%s", code, again)
	}
	// Its id with another prompt is not another turn: refused.
	if _, stderr, code := c.orca("run", "--session", "s1", "--turn-id", "t1", "--json", "something else"); code != 2 || !strings.Contains(stderr, "asked for before with another input") {
		t.Errorf("the same turn id, another prompt: exit %d\n%s", code, stderr)
	}
	out, stderr, code = c.orca("approve", "--session", "s1", parked.Parked.ID)
	if code != 0 || out != "it ran\n" {
		t.Fatalf("approve: exit %d\n%s\n%s", code, out, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(c.ws, "ran")); string(b) != "approved\n" {
		t.Errorf("the approved call: %q", b)
	}
	st := c.store()
	calls, _ := st.ParkedCalls(t.Context(), store.ParkFilter{SessionID: "s1"})
	if len(calls) != 1 || calls[0].Status != store.ParkStarted {
		t.Errorf("parked calls: %+v", calls)
	}
	// The turn that parked and went on is one turn.
	if info, err := st.Session(t.Context(), "s1"); err != nil || info.Turns != 1 || info.LastPrompt != "run it" {
		t.Errorf("the session: %+v, %v", info, err)
	}
	rows, err := st.(store.Observations).Observations(t.Context(), store.ObservationFilter{SessionID: "s1", TurnID: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rows {
		names = append(names, r.Name)
	}
	if !slices.Contains(names, "tool_exec_completed") || slices.Index(names, "turn_completed") < 0 {
		t.Errorf("the worker's observation rows: %v", names)
	}
	if again, _, code := c.orca("approve", "--session", "s1", parked.Parked.ID); code != 0 || again != out {
		t.Errorf("the same decision asked again: exit %d\n%s", code, again)
	}
	if _, stderr, code := c.orca("deny", "--session", "s1", parked.Parked.ID); code == 0 || !strings.Contains(stderr, "has no call waiting for a decision") {
		t.Errorf("denying an approved call: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := c.orca("approve", "--session", "nosuch", "park_x"); code != 1 || !strings.Contains(stderr, "session nosuch, parked call park_x: no workflow runs it on task queue "+c.queue) {
		t.Errorf("approving in a session with no workflow: exit %d\n%s", code, stderr)
	}
}

// A durable turn shows the model an image by reference: the client puts
// its bytes in the workers' store, the turn carries its digest, and the
// worker sends the model the bytes — which are in no payload of the
// workflow's history, where the digest is. A turn naming a digest the
// store does not keep fails, naming it.
func TestServerTurnShowsAnImageByReference(t *testing.T) {
	model := newFakeModel(t, func(int) (string, []fakeCall) { return "a test pattern", nil })
	model.setRecord(true)
	c := newCluster(t, model, temporal.Options{})
	c.start("w1")
	c.client.Store = c.store()
	data := make([]byte, 48<<10)
	rng := rand.NewChaCha8([32]byte{42})
	rng.Read(data)
	img := &llm.Media{MediaType: llm.MediaPNG, Data: append([]byte("\x89PNG\r\n\x1a\n"), data...), Name: "pattern.png", Width: 64, Height: 48}
	digest := llm.DigestOf(img.Data)
	b64 := base64.StdEncoding.EncodeToString(img.Data)
	res, err := c.client.Turn(t.Context(), "img", temporal.TurnRequest{TurnID: "t1", Input: "what is it?"}, img)
	if err != nil || res.StopReason != "answered" || res.Answer != "a test pattern" {
		t.Fatalf("turn: %+v, %v", res, err)
	}
	if img.Digest != "" {
		t.Errorf("Turn changed the caller's media: %v", img)
	}

	// The model was sent the bytes.
	bodies := model.requestBodies()
	if len(bodies) != 1 {
		t.Fatalf("%d model requests", len(bodies))
	}
	var sent struct {
		Messages []struct {
			Content []struct {
				Type   string `json:"type"`
				Source struct {
					Type      string `json:"type"`
					MediaType string `json:"media_type"`
					Data      string `json:"data"`
				} `json:"source"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(bodies[0], &sent); err != nil {
		t.Fatal(err)
	}
	var shown int
	for _, m := range sent.Messages {
		for _, b := range m.Content {
			if b.Type == "image" && b.Source.Type == "base64" && b.Source.MediaType == llm.MediaPNG && b.Source.Data == b64 {
				shown++
			}
		}
	}
	if shown != 1 {
		t.Errorf("the model was sent the image %d times", shown)
	}

	// The workflow's history names the image, by digest alone.
	named := 0
	events := 0
	it := c.client.Temporal.GetWorkflowHistory(t.Context(), temporal.WorkflowID(c.queue, "img"), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		events++
		raw, err := proto.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, data[:64]) || bytes.Contains(raw, data[len(data)-64:]) || bytes.Contains(raw, []byte(b64[:64])) || bytes.Contains(raw, []byte(b64[len(b64)/2:len(b64)/2+64])) {
			t.Errorf("history event %d (%s) holds the image's bytes", e.GetEventId(), e.GetEventType())
		}
		if bytes.Contains(raw, []byte(digest)) {
			named++
		}
	}
	if named == 0 {
		t.Errorf("none of the history's %d events names the image's digest: the test looked in the wrong place", events)
	}

	// The transcript shows it by digest, its bytes kept once.
	recs, err := c.store().Records(t.Context(), "img", store.RecordFilter{})
	if err != nil || len(recs) != 2 || len(recs[0].Message.Content) < 2 {
		t.Fatalf("records: %+v, %v", recs, err)
	}
	if m := recs[0].Message.Content[1].Media; m == nil || m.Digest != digest || !bytes.Equal(m.Data, img.Data) || m.Name != "pattern.png" || m.Width != 64 {
		t.Errorf("the recorded image: %v", m)
	}

	// A digest the store does not keep for the session fails the turn.
	unknown := llm.DigestOf([]byte("never put"))
	_, err = c.client.Turn(t.Context(), "img", temporal.TurnRequest{TurnID: "t2", Input: "and this?",
		Attachments: []llm.Attachment{{MediaType: llm.MediaPNG, Digest: unknown, Size: 9}}})
	if err == nil || !strings.Contains(err.Error(), unknown) {
		t.Errorf("a turn naming a digest the store does not keep: %v", err)
	}
	// Nor does a turn with media, from a client without a store, start.
	c.client.Store = nil
	if _, err := c.client.Turn(t.Context(), "img", temporal.TurnRequest{TurnID: "t3", Input: "and this?"}, img); err == nil || !strings.Contains(err.Error(), "no store") {
		t.Errorf("a turn with media from a client without a store: %v", err)
	}
	if len(model.requestBodies()) != 1 {
		t.Errorf("the model was asked again")
	}
}

// The crash test. Two workers; the one running the turn is killed with
// SIGKILL at random points — while the model answers, while a tool runs,
// just after either — and replaced, many times. Every turn completes on
// whichever worker is left; a counter file that a non-idempotent tool
// (Bash) appends to shows that no call took effect twice; each turn's
// transcript is a local run's, but for calls a kill left in doubt, which
// say so to the model.
//
// ORCA_TEST_CRASH_ROUNDS (2) turns are run; ORCA_TEST_CRASH_SEED replays
// the kills of a failed run (its seed is logged).
func TestServerCrashNeverRepeatsASideEffect(t *testing.T) {
	const steps = 8
	rounds := 2
	if n, err := strconv.Atoi(os.Getenv("ORCA_TEST_CRASH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("ORCA_TEST_CRASH_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("ORCA_TEST_CRASH_SEED=%d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	var rngMu sync.Mutex
	chance := func(p float64) bool {
		rngMu.Lock()
		defer rngMu.Unlock()
		return rng.Float64() < p
	}
	pause := func(max time.Duration) time.Duration {
		rngMu.Lock()
		defer rngMu.Unlock()
		return time.Duration(rng.Int64N(int64(max)))
	}
	reply := func(round int) func(step int) (string, []fakeCall) {
		return func(step int) (string, []fakeCall) {
			if step < steps {
				return "", []fakeCall{{"Bash", map[string]string{"command": fmt.Sprintf("sleep 0.2; echo r%d-%d >> counter", round, step)}}}
			}
			return fmt.Sprintf("counted to %d", steps), nil
		}
	}
	model := newFakeModel(t, nil)
	c := newCluster(t, model, temporal.Options{Heartbeat: 2 * time.Second, RetryMax: 2 * time.Second, MaxAttempts: 200})
	next := 0
	startOne := func() {
		next++
		c.start(fmt.Sprintf("w%d", next), "--permission-mode", "bypass")
	}
	startOne()
	startOne()

	// Kills run on a goroutine of their own (a replacement starts before
	// the next), at most one at a time and a few per turn.
	var kills sync.WaitGroup
	var killMu sync.Mutex
	killed, budget := 0, 0
	kill := func(caller string, after time.Duration, where string) {
		killMu.Lock()
		if budget == 0 {
			killMu.Unlock()
			return
		}
		budget--
		killMu.Unlock()
		kills.Add(1)
		go func() {
			defer kills.Done()
			time.Sleep(after)
			if c.kill(caller) {
				killMu.Lock()
				killed++
				killMu.Unlock()
				t.Logf("killed %s %s", caller, where)
				startOne()
			}
		}()
	}
	model.setBefore(func(caller string, step int) {
		if chance(0.2) {
			kill(caller, 0, fmt.Sprintf("while the model answers step %d", step))
			time.Sleep(300 * time.Millisecond) // the answer never reaches it
		}
	})
	model.setAfter(func(caller string, step int) {
		if step < steps && chance(0.35) {
			d := pause(500 * time.Millisecond)
			kill(caller, d, fmt.Sprintf("%v after the model answered step %d (its tool takes 200ms)", d, step))
		}
	})

	local := localTranscript(t, reply)
	attempts := 0
	for round := range rounds {
		killMu.Lock()
		budget = 4
		killMu.Unlock()
		model.setReply(reply(round))
		sessionID := fmt.Sprintf("crash-%d", round)
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		res, err := c.client.Turn(ctx, sessionID, temporal.TurnRequest{TurnID: "t1", Input: "count"})
		cancel()
		kills.Wait()
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if res.StopReason != "answered" || res.Answer != fmt.Sprintf("counted to %d", steps) {
			t.Fatalf("round %d: %+v", round, res)
		}
		attempts += res.Retries
		checkCrashTranscript(t, c, round, sessionID, local(round), steps)
	}
	killMu.Lock()
	t.Logf("%d rounds, %d kills, %d steps run again, %d workers started", rounds, killed, attempts, c.started)
	if killed == 0 {
		t.Errorf("no worker was killed (seed %d): the test proved nothing", seed)
	}
	killMu.Unlock()
}

// checkCrashTranscript compares round's durable transcript with the local
// one and the counter file with both.
func checkCrashTranscript(t *testing.T, c *cluster, round int, sessionID string, local []llm.Message, steps int) {
	t.Helper()
	counter, _ := os.ReadFile(filepath.Join(c.ws, "counter"))
	lines := map[string]int{}
	for _, l := range strings.Fields(string(counter)) {
		lines[l]++
	}
	recs, err := c.store().Records(t.Context(), sessionID, store.RecordFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []llm.Message
	for _, r := range recs {
		// Results are recorded one by one: join them as a session does.
		if n := len(msgs); n > 0 && resultsOnly(r.Message) && resultsOnly(msgs[n-1]) {
			msgs[n-1].Content = append(msgs[n-1].Content, r.Message.Content...)
			continue
		}
		msgs = append(msgs, r.Message)
	}
	if len(msgs) != len(local) {
		t.Fatalf("round %d: %d messages, a local run has %d:\n%s", round, len(msgs), len(local), dump(msgs))
	}
	doubts := 0
	for i := range msgs {
		got, want := msgs[i], local[i]
		if got.Role != want.Role || len(got.Content) != len(want.Content) {
			t.Fatalf("round %d, message %d: %s\nlocal: %s", round, i, dump(msgs[i:i+1]), dump(local[i:i+1]))
		}
		for j, b := range got.Content {
			w := want.Content[j]
			switch b.Type {
			case llm.BlockToolUse:
				if b.Name != w.Name || string(b.Input) != string(w.Input) {
					t.Errorf("round %d, message %d: call %s %s, local %s %s", round, i, b.Name, b.Input, w.Name, w.Input)
				}
			case llm.BlockToolResult:
				line := fmt.Sprintf("r%d-%d", round, i/2-1)
				switch {
				case strings.Contains(b.Content, inDoubt):
					doubts++
					if lines[line] > 1 {
						t.Errorf("round %d: %s, in doubt, took effect %d times", round, line, lines[line])
					}
				case b.Content != w.Content:
					t.Errorf("round %d, message %d: result %q, local %q", round, i, b.Content, w.Content)
				case lines[line] != 1:
					t.Errorf("round %d: %s reported done, took effect %d times", round, line, lines[line])
				}
			default:
				if b.Text != w.Text {
					t.Errorf("round %d, message %d: %q, local %q", round, i, b.Text, w.Text)
				}
			}
		}
	}
	for l, n := range lines {
		if strings.HasPrefix(l, fmt.Sprintf("r%d-", round)) && n > 1 {
			t.Errorf("round %d: %s took effect %d times", round, l, n)
		}
	}
	t.Logf("round %d: %d calls, %d left in doubt by a kill", round, steps, doubts)
}

// localTranscript runs each round's turn in this process, with no worker
// and no kill: what a durable turn's transcript must equal.
func localTranscript(t *testing.T, reply func(round int) func(int) (string, []fakeCall)) func(round int) []llm.Message {
	return func(round int) []llm.Message {
		t.Helper()
		model := newFakeModel(t, reply(round))
		client, err := anthropic.New(anthropic.APIKey("local"), anthropic.BaseURL(model.URL))
		if err != nil {
			t.Fatal(err)
		}
		a, err := app.Open(t.Context(), app.Config{Workspace: t.TempDir(), ConfigDir: "-", ClaudeDir: "-", NoMCP: true, Client: client,
			Mode: policy.ModeBypass, SystemPrompt: app.DefaultSystemPrompt})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		ls, err := a.Session(t.Context(), app.SessionOptions{ID: "local"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ls.Run(t.Context(), "count", session.WithTurnID("t1")); err != nil {
			t.Fatal(err)
		}
		return ls.Transcript()
	}
}

// A turn of 500 tool calls: each model call is an activity, and each
// group of read-only calls that run at once (10 a response here) runs in
// the activity of the model call that asked for it, on the session open
// there: 51 activities, a few events each, well inside Temporal's limits,
// the transcript and the tool results in the store, not in the history.
func TestServerTurnOf500ToolCalls(t *testing.T) {
	model := newFakeModel(t, func(step int) (string, []fakeCall) {
		if step < 500 {
			calls := make([]fakeCall, 10)
			for i := range calls {
				calls[i] = fakeCall{"Read", map[string]string{"file_path": "data.txt"}}
			}
			return "", calls
		}
		return "read it 500 times", nil
	})
	c := newCluster(t, model, temporal.Options{})
	if err := os.WriteFile(filepath.Join(c.ws, "data.txt"), []byte("some data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.start("w1", "--max-iterations", "60")
	res, err := c.client.Turn(t.Context(), "big", temporal.TurnRequest{TurnID: "t1", Input: "read it"})
	if err != nil || res.StopReason != "answered" || res.ToolCalls != 500 || res.Iterations != 51 {
		t.Fatalf("turn: %+v, %v", res, err)
	}
	steps := map[string]int{}
	var events int
	var size int
	it := c.client.Temporal.GetWorkflowHistory(t.Context(), temporal.WorkflowID(c.queue, "big"), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		events++
		size += proto.Size(e)
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			steps[a.GetActivityType().GetName()]++
		}
		if m := e.GetMarkerRecordedEventAttributes(); m != nil && m.GetMarkerName() == "LocalActivity" {
			var la struct{ ActivityType string }
			if err := converter.GetDefaultDataConverter().FromPayloads(m.GetDetails()["data"], &la); err != nil {
				t.Fatal(err)
			}
			steps[la.ActivityType]++
		}
	}
	if steps[temporal.ModelActivity] != 51 || len(steps) != 1 {
		t.Errorf("activities: %v", steps)
	}
	if events > 8*51 || size > 2<<20 {
		t.Errorf("the workflow's history has %d events, %d bytes", events, size)
	} else {
		t.Logf("a turn of 500 tool calls: 51 activities (each model call, with the reads its answer asked for), %d events, %d bytes in the workflow's history", events, size)
	}
	recs, _ := c.store().Records(t.Context(), "big", store.RecordFilter{})
	if len(recs) < 500 {
		t.Errorf("%d records", len(recs))
	}
}

func resultsOnly(m llm.Message) bool {
	if m.Role != llm.RoleUser || len(m.Content) == 0 {
		return false
	}
	for _, b := range m.Content {
		if b.Type != llm.BlockToolResult {
			return false
		}
	}
	return true
}

func dump(msgs []llm.Message) string {
	b, _ := json.MarshalIndent(msgs, "", " ")
	return string(b)
}

// An interrupt is a signal: the running tool is cancelled, the turn ends
// interrupted with its results recorded, and the session's next turn
// runs.
func TestServerInterrupt(t *testing.T) {
	asked := make(chan struct{}, 1)
	model := newFakeModel(t, func(step int) (string, []fakeCall) {
		if step == 0 {
			return "", []fakeCall{{"Bash", map[string]string{"command": "sleep 60; echo late >> ran"}}}
		}
		return "after the interrupt", nil
	})
	model.setAfter(func(_ string, step int) {
		if step == 0 {
			asked <- struct{}{}
		}
	})
	c := newCluster(t, model, temporal.Options{Heartbeat: 2 * time.Second})
	c.start("w1", "--permission-mode", "bypass")
	done := c.turnAsync("s1", temporal.TurnRequest{TurnID: "t1", Input: "wait"})
	<-asked
	// The heartbeats say which call runs: Temporal shows a durable turn
	// call by call.
	var prog temporal.Progress
	for deadline := time.Now().Add(30 * time.Second); len(prog.Running) == 0 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		d, err := c.client.Temporal.DescribeWorkflow(t.Context(), temporal.WorkflowID(c.queue, "s1"), "")
		if err != nil {
			t.Fatal(err)
		}
		if pa := d.RawResponse.GetPendingActivities(); len(pa) == 1 && pa[0].GetHeartbeatDetails() != nil {
			if err := converter.GetDefaultDataConverter().FromPayloads(pa[0].GetHeartbeatDetails(), &prog); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(prog.Running) != 1 || !strings.HasPrefix(prog.Running[0], "Bash toolu_0_0") || prog.ToolCalls != 1 || prog.Iterations != 1 || prog.TurnID != "t1" {
		t.Errorf("the heartbeat's progress: %+v", prog)
	}
	if _, stderr, code := c.orca("interrupt", "--session", "s1"); code != 0 {
		t.Fatalf("interrupt: exit %d\n%s", code, stderr)
	}
	got := <-done
	if got.err != nil || got.res.StopReason != "interrupted" {
		t.Fatalf("interrupted turn: %+v, %v", got.res, got.err)
	}
	if b, _ := os.ReadFile(filepath.Join(c.ws, "ran")); len(b) != 0 {
		t.Errorf("the interrupted command went on: %q", b)
	}
	recs, _ := c.store().Records(t.Context(), "s1", store.RecordFilter{})
	if n := len(recs); n < 3 || recs[n-1].Message.Content[0].Type != llm.BlockToolResult {
		t.Errorf("the interrupted call's result is not recorded: %+v", recs)
	}
	res, err := c.client.Turn(t.Context(), "s1", temporal.TurnRequest{TurnID: "t2", Input: "go on"})
	if err != nil || res.Answer != "after the interrupt" {
		t.Errorf("the next turn: %+v, %v", res, err)
	}
}

// The session's budget is in the store: the worker that goes on with a
// turn after another died spends what is left, not a budget of its own —
// and a call that a kill left in doubt counts.
func TestServerBudgetAcrossWorkers(t *testing.T) {
	var once sync.Once
	model := newFakeModel(t, func(int) (string, []fakeCall) { return "hello", nil })
	c := newCluster(t, model, temporal.Options{Heartbeat: 2 * time.Second, RetryMax: 2 * time.Second})
	c.start("w1", "--permission-mode", "bypass")
	c.start("w2", "--permission-mode", "bypass")
	// The session's first turn provisions it; then its budget is set, as
	// orca run --budget-tool-calls or orca serve would.
	st := c.store()
	if _, err := c.client.Turn(t.Context(), "b1", temporal.TurnRequest{TurnID: "t0", Input: "hi"}); err != nil {
		t.Fatal(err)
	}
	if err := st.SetBudget(t.Context(), "b1", &budget.Limits{ToolCalls: 3}); err != nil {
		t.Fatal(err)
	}
	model.setReply(func(step int) (string, []fakeCall) {
		if step < 10 {
			return "", []fakeCall{{"Bash", map[string]string{"command": fmt.Sprintf("sleep 0.2; echo %d >> counter", step)}}}
		}
		return "done", nil
	})
	model.setAfter(func(caller string, step int) {
		if step == 1 {
			once.Do(func() {
				go func() {
					time.Sleep(100 * time.Millisecond) // while the second call runs
					if c.kill(caller) {
						t.Logf("killed %s during the second call", caller)
					}
				}()
			})
		}
	})
	res, err := c.client.Turn(t.Context(), "b1", temporal.TurnRequest{TurnID: "t1", Input: "count to ten"})
	if err != nil || res.StopReason != "budget_exhausted" || res.Retries < 1 {
		t.Fatalf("turn: %+v, %v", res, err)
	}
	tot, err := st.Totals(t.Context(), "b1")
	if err != nil || tot.ToolCalls != 3 {
		t.Errorf("tool calls the session spent: %d, %v", tot.ToolCalls, err)
	}
	counter, _ := os.ReadFile(filepath.Join(c.ws, "counter"))
	if n := len(strings.Fields(string(counter))); n > 3 {
		t.Errorf("%d calls took effect, the budget is 3:\n%s", n, counter)
	}
}

// orca serve's event stream of a session shows a turn that a worker in
// another process runs, from the observation rows it writes to the
// shared store, as it runs.
func TestServerEventsAcrossWorkers(t *testing.T) {
	model := newFakeModel(t, func(step int) (string, []fakeCall) { return "hello", nil })
	c := newCluster(t, model, temporal.Options{})
	c.start("w1", "--permission-mode", "bypass")
	if _, err := c.client.Turn(t.Context(), "s1", temporal.TurnRequest{TurnID: "t1", Input: "hi"}); err != nil {
		t.Fatal(err)
	}
	// orca serve, in this process, over the workers' store and workspace.
	a, err := app.Open(t.Context(), app.Config{Workspace: c.ws, ConfigDir: "-", ClaudeDir: "-", NoMCP: true, StoreDSN: c.dsn,
		Client: script.New(), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	srv, err := serve.New(a, serve.Options{Token: "a-token-of-twenty-chars", Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer func() { hs.CloseClientConnections(); hs.Close(); srv.Close() }()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", hs.URL+"/v1/sessions/s1/events", nil)
	req.Header.Set("Authorization", "Bearer a-token-of-twenty-chars")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("events: %s %s", resp.Status, b)
	}
	defer resp.Body.Close()
	model.setReply(func(step int) (string, []fakeCall) {
		if step == 0 {
			return "", []fakeCall{{"Bash", map[string]string{"command": "echo from a worker"}}}
		}
		return "seen", nil
	})
	done := c.turnAsync("s1", temporal.TurnRequest{TurnID: "t2", Input: "run it"})
	var names []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Name   string `json:"name"`
			TurnID string `json:"turn_id"`
			Answer string `json:"answer"`
		}
		if json.Unmarshal([]byte(data), &ev) != nil || ev.TurnID != "t2" {
			continue
		}
		names = append(names, ev.Name)
		if ev.Name == "turn_completed" {
			if ev.Answer != "seen" {
				t.Errorf("turn_completed: %s", data)
			}
			break
		}
	}
	if !slices.Contains(names, "tool_exec_completed") || !slices.Contains(names, "turn_completed") || names[0] != "turn_started" || slices.Index(names[1:], "turn_started") >= 0 {
		t.Errorf("the stream showed %v of the worker's turn", names)
	}
	if got := <-done; got.err != nil {
		t.Error(got.err)
	}
	// The worker kept the session open between the turn's three steps:
	// opened once a turn (SESSION_START, session_started), not once a step.
	rows, err := c.store().(store.Observations).Observations(t.Context(), store.ObservationFilter{SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	opened := 0
	for _, r := range rows {
		if r.Name == "session_started" {
			opened++
		}
	}
	if opened != 2 {
		t.Errorf("the session was opened %d times for two turns", opened)
	}
}

// A worker that is stopped (SIGTERM: a redeploy) takes no new turn and
// no new step: the step it runs ends within --stop-timeout, and the turn's
// next step goes to another worker — it does not end interrupted, and no
// call is in doubt.
func TestServerWorkerStopHandsTheTurnOver(t *testing.T) {
	stopNow := make(chan string, 1)
	var mu sync.Mutex
	var callers []string
	model := newFakeModel(t, func(step int) (string, []fakeCall) {
		switch step {
		case 0:
			return "", []fakeCall{{"Bash", map[string]string{"command": "sleep 0.5; echo a >> log"}}}
		case 1:
			return "", []fakeCall{{"Bash", map[string]string{"command": "sleep 0.5; echo b >> log"}}}
		}
		return "done", nil
	})
	model.setAfter(func(caller string, step int) {
		mu.Lock()
		callers = append(callers, caller)
		mu.Unlock()
		if step == 0 {
			stopNow <- caller
		}
	})
	c := newCluster(t, model, temporal.Options{Heartbeat: 2 * time.Second, RetryMax: time.Second})
	c.start("w1", "--permission-mode", "bypass", "--stop-timeout", "2s")
	done := c.turnAsync("s1", temporal.TurnRequest{TurnID: "t1", Input: "two steps"})
	first := <-stopNow
	c.start("w2", "--permission-mode", "bypass")
	if code := c.term(first); code != 0 {
		t.Errorf("the stopped worker exited %d", code)
	}
	got := <-done
	if got.err != nil || got.res.StopReason != "answered" || got.res.Answer != "done" || got.res.Steps != 5 {
		t.Fatalf("the turn: %+v, %v", got.res, got.err)
	}
	if b, _ := os.ReadFile(filepath.Join(c.ws, "log")); string(b) != "a\nb\n" {
		t.Errorf("log: %q (each call once, the first on the stopped worker, the second after it)", b)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(callers) != 3 || callers[0] != "w1" || callers[1] != "w2" || callers[2] != "w2" {
		t.Errorf("the model calls came from %v", callers)
	}
}
