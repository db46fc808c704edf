package temporal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/temporal"
)

// Unit level: the session workflow in the SDK's test environment (time
// is the environment's: timers fire at once when nothing else can run),
// its activities the real ones, over a real App on a scripted model.

type unit struct {
	t     *testing.T
	ws    string
	model *script.Client
	app   *app.App
	env   *testsuite.TestWorkflowEnvironment
	// activities are the activities started, in order.
	activities []string
}

func newUnit(t *testing.T, cfg app.Config, with ...func(*temporal.Activities)) *unit {
	t.Helper()
	u := &unit{t: t, ws: t.TempDir(), model: script.New()}
	cfg.Workspace, cfg.ConfigDir, cfg.ClaudeDir, cfg.Client, cfg.NoMCP = u.ws, "-", "-", u.model, true
	a, err := app.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Errorf("app Close: %v", err)
		}
	})
	u.app = a
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	u.env = suite.NewTestWorkflowEnvironment()
	acts := &temporal.Activities{App: a, Worker: "unit"}
	for _, f := range with {
		f(acts)
	}
	t.Cleanup(acts.Close)
	temporal.Register(u.env, acts)
	u.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		u.activities = append(u.activities, info.ActivityType.Name)
	})
	u.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		u.activities = append(u.activities, "local "+info.ActivityType.Name)
	})
	return u
}

// outcome is what an update said.
type outcome struct {
	rejected, err error
	res           temporal.TurnResult
	done          bool
}

// update sends an update after delay (workflow time) and keeps what it
// says in o.
func (u *unit) update(delay time.Duration, name, id string, arg any, o *outcome) {
	u.env.RegisterDelayedCallback(func() {
		u.env.UpdateWorkflow(name, id, &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { o.rejected, o.done = err, true },
			OnComplete: func(v any, err error) {
				o.err, o.done = err, true
				if err == nil {
					b, _ := json.Marshal(v)
					if err := json.Unmarshal(b, &o.res); err != nil {
						u.t.Errorf("update %s: result %v: %v", id, v, err)
					}
				}
			},
		}, arg)
	}, delay)
}

func (u *unit) run(in temporal.SessionInput) error {
	u.env.ExecuteWorkflow(temporal.WorkflowName, in)
	if !u.env.IsWorkflowCompleted() {
		u.t.Fatal("the workflow did not complete")
	}
	return u.env.GetWorkflowError()
}

func (u *unit) read(name string) string {
	b, _ := os.ReadFile(filepath.Join(u.ws, name))
	return string(b)
}

func (u *unit) records(session string) []store.Record {
	recs, err := u.app.Store().Records(u.t.Context(), session, store.RecordFilter{})
	if err != nil {
		u.t.Fatal(err)
	}
	return recs
}

// A turn is an update: it runs as activities, one a model call or a tool
// call, its records in the store, its result the update's; the workflow
// ends when idle.
func TestWorkflowRunsTurnsInOrder(t *testing.T) {
	u := newUnit(t, app.Config{Mode: policy.ModeBypass})
	u.model.Script("s1",
		script.Call("Bash", map[string]string{"command": "echo one >> log"}), script.Text("first done"),
		script.Text("second done"))
	var first, second outcome
	u.update(time.Second, temporal.TurnUpdate, "t1", temporal.TurnRequest{TurnID: "t1", Input: "write one"}, &first)
	u.update(time.Second, temporal.TurnUpdate, "t2", temporal.TurnRequest{TurnID: "t2", Input: "then two"}, &second)
	if err := u.run(temporal.SessionInput{SessionID: "s1", Options: temporal.Options{Idle: time.Hour}}); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	if first.err != nil || first.res.StopReason != "answered" || first.res.Answer != "first done" || first.res.ToolCalls != 1 || first.res.Steps != 3 || first.res.Retries != 0 || first.res.Worker != "unit" {
		t.Errorf("first turn: %+v", first)
	}
	if second.err != nil || second.res.Answer != "second done" {
		t.Errorf("second turn: %+v", second)
	}
	if got := u.read("log"); got != "one\n" {
		t.Errorf("the Bash call's file: %q", got)
	}
	recs := u.records("s1")
	if len(recs) != 6 || recs[0].TurnID != "t1" || recs[3].TurnID != "t1" || recs[4].TurnID != "t2" || recs[4].Message.Text() != "then two" {
		t.Errorf("records: %+v", recs)
	}
	if got, want := strings.Join(u.activities, " "), "orca.ModelCall orca.ToolCall orca.ModelCall orca.ModelCall"; got != want {
		t.Errorf("activities %s, want %s", got, want)
	}
	if info, _ := u.app.Store().Session(t.Context(), "s1"); info.Turns != 2 || info.LastPrompt != "then two" {
		t.Errorf("the session: %+v", info)
	}
}

// A group of read-only calls runs in the activity of the step before it
// (the model call that asked for it, or the call before it), on the
// session open there: no activity of its own, each call once, its
// results shown to the model — whether the worker keeps the session
// between steps or not.
func TestWorkflowReadsRunWithTheirStep(t *testing.T) {
	reads := []script.ToolCall{
		{ID: "r1", Name: "Read", Input: json.RawMessage(`{"file_path":"a.txt"}`)},
		{ID: "r2", Name: "Read", Input: json.RawMessage(`{"file_path":"a.txt"}`)}}
	write := script.ToolCall{ID: "w1", Name: "Bash", Input: json.RawMessage(`{"command":"echo one >> log"}`)}
	for _, c := range []struct {
		name  string
		queue string // the worker's own (keeps the session between steps)
		calls []script.ToolCall
		steps int
		want  string
	}{
		{"after the model call", "unit/own", reads, 3, "orca.ModelCall orca.ModelCall"},
		{"after a tool call", "unit/own", append([]script.ToolCall{write}, reads...), 4, "orca.ModelCall orca.ToolCall orca.ModelCall"},
		{"nothing kept between steps", "", reads, 3, "orca.ModelCall orca.ModelCall"},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := newUnit(t, app.Config{Mode: policy.ModeBypass}, func(a *temporal.Activities) { a.Queue = c.queue })
			if err := os.WriteFile(filepath.Join(u.ws, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			u.model.Script("s1", script.Response{ToolCalls: c.calls}, script.Text("read"))
			var o outcome
			u.update(time.Second, temporal.TurnUpdate, "t1", temporal.TurnRequest{TurnID: "t1", Input: "read a"}, &o)
			if err := u.run(temporal.SessionInput{SessionID: "s1", Options: temporal.Options{Idle: time.Hour}}); err != nil {
				t.Fatalf("workflow: %v", err)
			}
			if o.err != nil || o.res.Answer != "read" || o.res.ToolCalls != len(c.calls) || o.res.Steps != c.steps || o.res.Retries != 0 {
				t.Errorf("turn: %+v", o)
			}
			if got := strings.Join(u.activities, " "); got != c.want {
				t.Errorf("activities %s, want %s", got, c.want)
			}
			// The reads ran once each, and the model was shown them.
			var results int
			for _, r := range u.records("s1") {
				for _, b := range r.Message.Content {
					if b.Type == llm.BlockToolResult && strings.Contains(b.Content, "alpha") {
						results++
					}
				}
			}
			if results != 2 {
				t.Errorf("%d read results recorded", results)
			}
			if len(c.calls) > 2 && u.read("log") != "one\n" {
				t.Errorf("the Bash call's file: %q", u.read("log"))
			}
			calls := u.model.Calls()
			if len(calls) != 2 || !strings.Contains(fmt.Sprint(calls[1].Messages), "alpha") {
				t.Errorf("the model's second call: %+v", calls)
			}
		})
	}
}

// Bad turns are refused before they reach the history, naming what is
// wrong.
func TestWorkflowRefusesBadTurns(t *testing.T) {
	u := newUnit(t, app.Config{})
	var empty, big outcome
	u.update(time.Second, temporal.TurnUpdate, "t1", temporal.TurnRequest{TurnID: "t1"}, &empty)
	u.update(time.Second, temporal.TurnUpdate, "t2", temporal.TurnRequest{TurnID: "t2", Input: strings.Repeat("x", temporal.MaxInput+1)}, &big)
	if err := u.run(temporal.SessionInput{SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	if empty.rejected == nil || !strings.Contains(empty.rejected.Error(), "turn t1 has no input") {
		t.Errorf("empty input: %+v", empty)
	}
	if big.rejected == nil || !strings.Contains(big.rejected.Error(), "put it in a file of the workspace") {
		t.Errorf("big input: %+v", big)
	}
	if len(u.model.Calls()) != 0 {
		t.Error("the model was asked")
	}
}

// A call the policy asks about parks the turn; a decision update goes on
// with it: the call runs once, with its arguments, and the turn answers.
// A turn asked for meanwhile is refused, saying why.
func TestWorkflowParksAndDecides(t *testing.T) {
	u := newUnit(t, app.Config{Approver: policy.Parking{}})
	u.model.Script("s1", script.Call("Bash", map[string]string{"command": "echo approved >> ran"}), script.Text("it ran"))
	var parked, meanwhile, decided outcome
	u.update(time.Second, temporal.TurnUpdate, "t1", temporal.TurnRequest{TurnID: "t1", Input: "run it"}, &parked)
	u.update(2*time.Second, temporal.TurnUpdate, "t2", temporal.TurnRequest{TurnID: "t2", Input: "anything"}, &meanwhile)
	u.env.RegisterDelayedCallback(func() {
		if parked.res.Parked == nil {
			t.Errorf("the turn did not park: %+v", parked)
			return
		}
		if got := u.read("ran"); got != "" {
			t.Errorf("the parked call ran: %q", got)
		}
		u.update(0, temporal.DecideUpdate, "d1", temporal.Decision{ParkID: parked.res.Parked.ID, Approve: true, By: "ana"}, &decided)
	}, 3*time.Second)
	if err := u.run(temporal.SessionInput{SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	if parked.res.StopReason != "awaiting_approval" || parked.res.Parked.ToolName != "Bash" {
		t.Errorf("parked turn: %+v", parked)
	}
	if meanwhile.rejected == nil || !strings.Contains(meanwhile.rejected.Error(), "waits for a decision on "+parked.res.Parked.ID) {
		t.Errorf("a turn while parked: %+v", meanwhile)
	}
	if decided.err != nil || decided.res.TurnID != "t1" || decided.res.StopReason != "answered" || decided.res.Answer != "it ran" {
		t.Errorf("decided turn: %+v", decided)
	}
	if got := u.read("ran"); got != "approved\n" {
		t.Errorf("the approved call: %q", got)
	}
	calls, _ := u.app.Store().ParkedCalls(t.Context(), store.ParkFilter{SessionID: "s1"})
	if len(calls) != 1 || calls[0].DecidedBy != "ana" {
		t.Errorf("parked calls: %+v", calls)
	}
}

// A turn shows the model images by reference: their bytes, put in the
// store for the session, are read back by the turn's first step (and its
// first again after a park), the model is sent them, and no later step's
// input names them. A digest the store does not keep fails the turn,
// naming it; malformed references are refused before the history.
func TestWorkflowTurnShowsAttachments(t *testing.T) {
	u := newUnit(t, app.Config{Approver: policy.Parking{}})
	u.model.Script("s1", script.Call("Bash", map[string]string{"command": "echo seen >> ran"}), script.Text("a square"))
	data := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte("square"), 100)...)
	img := &llm.Media{MediaType: llm.MediaPNG, Data: data, Digest: llm.DigestOf(data), Size: int64(len(data)), Name: "square.png", Width: 8, Height: 8}
	if err := u.app.Store().PutAttachments(t.Context(), "s1", []*llm.Media{img}); err != nil {
		t.Fatal(err)
	}
	var steps []temporal.StepInput
	u.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		var in temporal.StepInput
		if info.ActivityType.Name != temporal.ParkActivity && args.Get(&in) == nil {
			steps = append(steps, in)
		}
	})
	unknown := llm.DigestOf([]byte("never put"))
	ref := func(digest string) []llm.Attachment {
		return []llm.Attachment{{MediaType: llm.MediaPNG, Digest: digest, Size: 9, Name: "x.png"}}
	}
	var parked, decided, missing, noDigest, badDigest, many outcome
	u.update(time.Second, temporal.TurnUpdate, "t1", temporal.TurnRequest{TurnID: "t1", Input: "what is it?", Attachments: llm.Attachments([]*llm.Media{img})}, &parked)
	u.env.RegisterDelayedCallback(func() {
		if parked.res.Parked == nil {
			t.Errorf("the turn did not park: %+v", parked)
			return
		}
		u.update(0, temporal.DecideUpdate, "d1", temporal.Decision{ParkID: parked.res.Parked.ID, Approve: true}, &decided)
	}, 3*time.Second)
	u.update(4*time.Second, temporal.TurnUpdate, "t2", temporal.TurnRequest{TurnID: "t2", Input: "and this?", Attachments: ref(unknown)}, &missing)
	u.update(4*time.Second, temporal.TurnUpdate, "t3", temporal.TurnRequest{TurnID: "t3", Input: "x", Attachments: ref("")}, &noDigest)
	u.update(4*time.Second, temporal.TurnUpdate, "t4", temporal.TurnRequest{TurnID: "t4", Input: "x", Attachments: ref("sha256:ABC")}, &badDigest)
	u.update(4*time.Second, temporal.TurnUpdate, "t5", temporal.TurnRequest{TurnID: "t5", Input: "x", Attachments: slices.Repeat(ref(img.Digest), temporal.MaxAttachments+1)}, &many)
	if err := u.run(temporal.SessionInput{SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	if decided.err != nil || decided.res.Answer != "a square" || u.read("ran") != "seen\n" {
		t.Fatalf("the turn: %+v, then %+v", parked, decided)
	}
	calls := u.model.CallsTo("s1")
	if len(calls) != 2 {
		t.Fatalf("%d model calls", len(calls))
	}
	for i, c := range calls {
		if m := c.Messages[0]; len(m.Content) < 2 || !m.Content[1].Media.Equal(img) {
			t.Errorf("model call %d was sent %s, not the image", i+1, dump(c.Messages[:1]))
		}
	}
	// t1's model call and its call, which parks; the decided turn's first
	// step again (the approved call) and its answer; t2's first step.
	if len(steps) != 5 {
		t.Fatalf("%d steps: %+v", len(steps), steps)
	}
	for i, in := range steps[:4] {
		first := i == 0 || i == 2
		if first != (in.Progress.Steps == 0) || first != (len(in.Request.Attachments) == 1 && in.Request.Attachments[0].Digest == img.Digest) {
			t.Errorf("step %d of t1 (progress %+v) names attachments %+v", i+1, in.Progress, in.Request.Attachments)
		}
	}
	if missing.err == nil || !strings.Contains(missing.err.Error(), unknown) || !strings.Contains(missing.err.Error(), "Client.Store") {
		t.Errorf("a turn naming a digest the store does not keep: %+v", missing)
	}
	for what, o := range map[string]outcome{"no digest": noDigest, `digest "sha256:ABC" is not`: badDigest, "shows 21 attachments": many} {
		if o.rejected == nil || !strings.Contains(o.rejected.Error(), what) {
			t.Errorf("%s: %+v", what, o)
		}
	}
	recs := u.records("s1")
	if m := recs[0].Message; len(m.Content) < 2 || !m.Content[1].Media.Equal(img) {
		t.Errorf("the turn's first record: %s", dump([]llm.Message{m}))
	}
}

// A decision taken in the store (orca approve, orca serve) is found by
// the workflow's poll, and the turn goes on without any update.
func TestWorkflowFindsADecisionInTheStore(t *testing.T) {
	u := newUnit(t, app.Config{Approver: policy.Parking{}})
	u.model.Script("s1", script.Call("Bash", map[string]string{"command": "echo denied >> ran"}), script.Text("understood"))
	var parked outcome
	u.update(time.Second, temporal.TurnUpdate, "t1", temporal.TurnRequest{TurnID: "t1", Input: "run it"}, &parked)
	u.env.RegisterDelayedCallback(func() {
		if parked.res.Parked == nil {
			t.Errorf("the turn did not park: %+v", parked)
			return
		}
		if _, err := u.app.Store().SetParkStatus(t.Context(), parked.res.Parked.ID, store.ParkDenied, "bo", "not today"); err != nil {
			t.Error(err)
		}
	}, 10*time.Second)
	if err := u.run(temporal.SessionInput{SessionID: "s1", Options: temporal.Options{PollParked: time.Minute, Idle: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	if got := u.read("ran"); got != "" {
		t.Errorf("the denied call ran: %q", got)
	}
	recs := u.records("s1")
	last := recs[len(recs)-1]
	if last.TurnID != "t1" || last.Message.Text() != "understood" {
		t.Errorf("the turn did not go on: %+v", recs)
	}
	if res := recs[len(recs)-2].Message.Content[0]; !strings.Contains(res.Content, "not today") {
		t.Errorf("the denial the model saw: %+v", res)
	}
}

// After TurnsPerRun turns the workflow continues as new.
func TestWorkflowContinuesAsNew(t *testing.T) {
	u := newUnit(t, app.Config{})
	u.model.Script("s1", script.Text("a"), script.Text("b"))
	var first, second outcome
	u.update(time.Second, temporal.TurnUpdate, "t1", temporal.TurnRequest{TurnID: "t1", Input: "one"}, &first)
	u.update(time.Second, temporal.TurnUpdate, "t2", temporal.TurnRequest{TurnID: "t2", Input: "two"}, &second)
	err := u.run(temporal.SessionInput{SessionID: "s1", Options: temporal.Options{TurnsPerRun: 2}})
	if !workflow.IsContinueAsNewError(err) {
		t.Fatalf("workflow error %v, want continue-as-new", err)
	}
	if first.res.Answer != "a" || second.res.Answer != "b" {
		t.Errorf("turns: %+v %+v", first, second)
	}
}

// A turn may ask for its answer as a JSON value of a schema: the model is
// asked for it, and the value is the result's Output.
func TestWorkflowTypedAnswer(t *testing.T) {
	u := newUnit(t, app.Config{Mode: policy.ModeBypass})
	u.model.Script("s1", script.Output(map[string]int{"n": 3}))
	var got outcome
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	u.update(time.Second, temporal.TurnUpdate, "t1", temporal.TurnRequest{TurnID: "t1", Input: "count", OutputSchema: schema}, &got)
	if err := u.run(temporal.SessionInput{SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	if got.err != nil || got.res.StopReason != "answered" || string(got.res.Output) != `{"n":3}` {
		t.Errorf("typed turn: %+v", got)
	}
	if call := u.model.Calls()[0]; call.Output == nil || !strings.Contains(string(call.Output.Schema), `"required":["n"]`) {
		t.Errorf("the model was not asked for the schema: %+v", call.Output)
	}
}

// A turn cannot continue as new: one whose history grows past 4 ×
// MaxHistory runs the rest of its steps as one activity, its counts going
// on, every call once, and counted as one turn.
func TestWorkflowLongTurnRunsItsRestAsOne(t *testing.T) {
	u := newUnit(t, app.Config{Mode: policy.ModeBypass})
	var responses []script.Response
	for i := range 6 {
		responses = append(responses, script.Call("Bash", map[string]string{"command": fmt.Sprintf("echo %d >> log", i)}))
	}
	u.model.Script("s1", append(responses, script.Text("six"))...)
	// Four steps in, the history is past 4 × MaxHistory.
	u.env.SetOnActivityCompletedListener(func(*activity.Info, converter.EncodedValue, error) {
		if len(u.activities) == 4 {
			u.env.SetCurrentHistoryLength(4*6 + 1)
		}
	})
	var got outcome
	u.update(time.Second, temporal.TurnUpdate, "t1", temporal.TurnRequest{TurnID: "t1", Input: "count"}, &got)
	err := u.run(temporal.SessionInput{SessionID: "s1", Options: temporal.Options{MaxHistory: 6, Idle: time.Hour}})
	if err != nil && !workflow.IsContinueAsNewError(err) {
		t.Fatal(err)
	}
	if got.err != nil || got.res.Answer != "six" || got.res.ToolCalls != 6 || got.res.Iterations != 7 {
		t.Fatalf("the turn: %+v", got)
	}
	if log := u.read("log"); log != "0\n1\n2\n3\n4\n5\n" {
		t.Errorf("the calls ran: %q", log)
	}
	// 13 steps one by one; here four, then the rest in one.
	if got, want := strings.Join(u.activities, " "), "orca.ModelCall orca.ToolCall orca.ModelCall orca.ToolCall orca.ModelCall"; got != want {
		t.Errorf("activities %s, want %s", got, want)
	}
	if info, _ := u.app.Store().Session(t.Context(), "s1"); info.Turns != 1 {
		t.Errorf("the session counted %d turns", info.Turns)
	}
}

// A workflow that ran its groups of read-only calls as local activities
// replays as it ran, now that such a group runs with the step before it:
// testdata/history-reads-in-place.json is the history of two turns of
// BenchmarkServerTurns (four Reads a turn, each a local activity) run by
// orca at c74e8c0 on the Temporal CLI's dev server 1.5.1.
func TestWorkflowReplaysReadsInPlace(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(temporal.SessionWorkflow, workflow.RegisterOptions{Name: temporal.WorkflowName})
	if err := r.ReplayWorkflowHistoryFromJSONFile(log.NewStructuredLogger(quietLogger()), "testdata/history-reads-in-place.json"); err != nil {
		t.Fatal(err)
	}
}

// A later step goes to the workflow's own task queue for the worker that
// keeps the session (StepInput.Keeper: the server may hand it back to the
// worker of the workflow task, eager activity execution); when another
// worker takes it, that worker runs nothing, and this step and the
// run's later ones go to the keeper's own queue.
func TestWorkflowSendsStepsToTheirKeeper(t *testing.T) {
	for _, handOff := range []bool{false, true} {
		t.Run(fmt.Sprintf("handed off %v", handOff), func(t *testing.T) {
			var acts *temporal.Activities
			u := newUnit(t, app.Config{Mode: policy.ModeBypass}, func(a *temporal.Activities) { a.Queue, acts = "unit/own", a })
			var sent []string // each step's task queue and keeper
			step := func(ctx context.Context, in temporal.StepInput) (temporal.StepResult, error) {
				sent = append(sent, activity.GetInfo(ctx).TaskQueue+">"+in.Keeper)
				if handOff && in.Keeper != "" {
					// Another worker took it (its own queue is not the keeper's).
					return (&temporal.Activities{App: u.app, Queue: "unit/other"}).Step(ctx, in)
				}
				return acts.Step(ctx, in)
			}
			u.env.OnActivity(temporal.ModelActivity, mock.Anything, mock.Anything).Return(step)
			u.env.OnActivity(temporal.ToolActivity, mock.Anything, mock.Anything).Return(step)
			u.model.Script("s1", script.Call("Bash", map[string]string{"command": "echo one >> log"}),
				script.Call("Bash", map[string]string{"command": "echo two >> log"}), script.Text("done"))
			var o outcome
			u.update(time.Second, temporal.TurnUpdate, "t1", temporal.TurnRequest{TurnID: "t1", Input: "write"}, &o)
			if err := u.run(temporal.SessionInput{SessionID: "s1", Options: temporal.Options{Idle: time.Hour}}); err != nil {
				t.Fatalf("workflow: %v", err)
			}
			if o.err != nil || o.res.Answer != "done" || o.res.Steps != 5 || o.res.Retries != 0 {
				t.Errorf("turn: %+v", o)
			}
			if got := u.read("log"); got != "one\ntwo\n" {
				t.Errorf("the Bash calls' file: %q", got)
			}
			own, keeper := "default-test-taskqueue>", "default-test-taskqueue>unit/own"
			want := []string{own, keeper, keeper, keeper, keeper}
			if handOff {
				// The first step sent for the keeper reached another worker.
				want = []string{own, keeper, "unit/own>", "unit/own>", "unit/own>", "unit/own>"}
			}
			if !slices.Equal(sent, want) {
				t.Errorf("steps sent to %q, want %q", sent, want)
			}
			if n := len(u.model.Calls()); n != 3 {
				t.Errorf("%d model calls", n)
			}
		})
	}
}
