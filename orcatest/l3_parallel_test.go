package orcatest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/orcatest"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/toolset"
)

// L3: the calls of one response — read-only ones at once, the others in
// the model's order.

// probes are test tools that log when each call starts and ends: Probe is
// read-only, Poke changes things. A call's behaviour is the test's wait.
type probes struct {
	mu       sync.Mutex
	log      []string
	inflight int
	peak     int
	wait     func(ctx context.Context, id string) error
}

type probeIn struct {
	ID string `json:"id"`
}

func (p *probes) call(ctx context.Context, in probeIn) (string, error) {
	p.mu.Lock()
	p.log = append(p.log, "start "+in.ID)
	p.inflight++
	p.peak = max(p.peak, p.inflight)
	p.mu.Unlock()
	var err error
	if p.wait != nil {
		err = p.wait(ctx, in.ID)
	}
	p.mu.Lock()
	p.log = append(p.log, "end "+in.ID)
	p.inflight--
	p.mu.Unlock()
	if err != nil {
		return "", err
	}
	return "probed " + in.ID, nil
}

func (p *probes) provider() tool.Provider {
	return tool.Static("probes",
		tool.New("Probe", "Reads something.", p.call, tool.ReadOnly()),
		tool.New("Poke", "Changes something.", p.call))
}

// note adds entry to the log.
func (p *probes) note(entry string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log = append(p.log, entry)
}

// index is where entry first appears in the log (-1 if it does not).
func (p *probes) index(entry string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Index(p.log, entry)
}

// barrier returns a wait that holds each call until n calls are in it at
// once; a call still alone after a minute fails the test instead of
// hanging it (calls run one after another never meet).
func barrier(t *testing.T, n int) func(ctx context.Context, id string) error {
	var mu sync.Mutex
	arrived := 0
	all := make(chan struct{})
	return func(ctx context.Context, id string) error {
		mu.Lock()
		if arrived++; arrived == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return nil
		case <-time.After(time.Minute):
			t.Errorf("call %s: %d calls never ran at once", id, n)
			return errors.New("alone")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func calls(name string, ids ...string) script.Response {
	var r script.Response
	for _, id := range ids {
		r.ToolCalls = append(r.ToolCalls, script.ToolCall{ID: id, Name: name, Input: []byte(`{"id":"` + id + `"}`)})
	}
	return r
}

func probeNode(t *testing.T, p *probes, def agent.Definition, opts ...orcatest.Option) *orcatest.Node {
	def.Name = "p"
	def.ToolProviders = append(toolset.Default(), p.provider())
	return orcatest.NewNode(t, append(opts, orcatest.WithDefinition(def))...)
}

// Eight read-only calls run at once (a barrier of eight is met), end in
// the reverse order, and come back — to the model and into the store — in
// the order the model asked; every event names its call.
func TestL3_ParallelReadsRunAtOnce(t *testing.T) {
	p := &probes{}
	meet := barrier(t, 8)
	ended := make([]chan struct{}, 8)
	for i := range ended {
		ended[i] = make(chan struct{})
	}
	p.wait = func(ctx context.Context, id string) error {
		if err := meet(ctx, id); err != nil {
			return err
		}
		var i int
		fmt.Sscanf(id, "r%d", &i)
		if i < 7 {
			<-ended[i+1] // the last asked ends first
		}
		p.note("done " + id) // before the next one may go on
		close(ended[i])
		return nil
	}
	n := probeNode(t, p, agent.Definition{})
	ids := []string{"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"}
	n.Script("s", calls("Probe", ids...), script.Text("done"))
	if res, err := n.Open("s").Run(t.Context(), "read them all"); err != nil || res.StopReason != agent.StopAnswered || res.ToolCalls != 8 {
		t.Fatalf("turn: %+v, %v", res, err)
	}
	if p.index("done r7") > p.index("done r0") || p.index("done r0") < 0 {
		t.Errorf("the calls did not end in reverse: %v", p.log)
	}
	sent := n.LLM.CallsTo("s")[1].Messages
	var got []string
	for _, b := range sent[len(sent)-1].Content {
		got = append(got, b.ToolUseID+"="+b.Content)
	}
	want := make([]string, 8)
	for i, id := range ids {
		want[i] = id + "=probed " + id
	}
	if !slices.Equal(got, want) {
		t.Errorf("results sent %v, want %v", got, want)
	}
	var stored []string
	for _, b := range storedResults(t, n, "s") {
		stored = append(stored, b.ToolUseID)
	}
	if !slices.Equal(stored, ids) {
		t.Errorf("results stored in the order %v", stored)
	}
	for _, e := range n.Events(event.ToolExecStarted, event.ToolExecCompleted, event.ToolExecFailed) {
		var id string
		switch d := e.Data.(type) {
		case *event.ToolStartedData:
			id = d.ToolUseID
		case *event.ToolData:
			id = d.ToolUseID
		}
		if !slices.Contains(ids, id) {
			t.Errorf("%s names no call: %+v", e.Name, e.Data)
		}
	}
}

// Reads, a write, reads, a write: the reads next to each other run at
// once; a write waits for the reads before it, and the reads after it wait
// for it — the model's order of changes holds.
func TestL3_WritesKeepTheirPlace(t *testing.T) {
	p := &probes{}
	first, second := barrier(t, 2), barrier(t, 2)
	p.wait = func(ctx context.Context, id string) error {
		switch id {
		case "a", "b":
			return first(ctx, id)
		case "d", "e":
			return second(ctx, id)
		}
		return nil
	}
	n := probeNode(t, p, agent.Definition{})
	r := calls("Probe", "a", "b")
	r.ToolCalls = append(r.ToolCalls, calls("Poke", "c").ToolCalls...)
	r.ToolCalls = append(r.ToolCalls, calls("Probe", "d", "e").ToolCalls...)
	r.ToolCalls = append(r.ToolCalls, calls("Poke", "f").ToolCalls...)
	n.Script("s", r, script.Text("done"))
	if res := n.Run(t.Context(), "s", "go"); res.StopReason != agent.StopAnswered || res.ToolCalls != 6 {
		t.Fatalf("turn: %s, %d calls, %v", res.StopReason, res.ToolCalls, res.Err)
	}
	for _, before := range [][2]string{
		{"end a", "start c"}, {"end b", "start c"},
		{"end c", "start d"}, {"end c", "start e"},
		{"end d", "start f"}, {"end e", "start f"},
	} {
		if p.index(before[0]) > p.index(before[1]) {
			t.Errorf("%q came after %q: %v", before[0], before[1], p.log)
		}
	}
}

// At most MaxParallelTools calls run at once; 1 runs them one after
// another and asks the model for one call per response.
func TestL3_ParallelLimit(t *testing.T) {
	for _, limit := range []int{3, 1} {
		p := &probes{}
		full := make(chan struct{})
		p.wait = func(ctx context.Context, id string) error {
			p.mu.Lock()
			if p.inflight == limit && limit > 1 {
				select {
				case <-full:
				default:
					close(full)
				}
			}
			p.mu.Unlock()
			if limit == 1 {
				return nil
			}
			select {
			case <-full:
				return nil
			case <-time.After(time.Minute):
				return errors.New("never full")
			}
		}
		n := probeNode(t, p, agent.Definition{MaxParallelTools: limit})
		n.Script("s", calls("Probe", "1", "2", "3", "4", "5", "6", "7"), script.Text("done"))
		if res := n.Run(t.Context(), "s", "go"); res.StopReason != agent.StopAnswered {
			t.Fatalf("limit %d: %s, %v", limit, res.StopReason, res.Err)
		}
		if p.peak != limit {
			t.Errorf("limit %d: %d calls ran at once", limit, p.peak)
		}
		if one := n.LLM.CallsTo("s")[0].OneToolCall; one != (limit == 1) {
			t.Errorf("limit %d: the request's OneToolCall is %v", limit, one)
		}
	}
}

// Calls that need approval are asked about one at a time, in the model's
// order, before any of them runs; those allowed then run at once, the one
// denied does not.
func TestL3_ParallelApprovalsOneAtATime(t *testing.T) {
	p := &probes{wait: nil}
	meet := barrier(t, 3)
	p.wait = meet
	var mu sync.Mutex
	var asked []string
	asking := 0
	approver := policy.ApproverFunc(func(ctx context.Context, r policy.ApprovalRequest) (policy.Approval, error) {
		mu.Lock()
		asking++
		if asking > 1 {
			t.Errorf("two approvals asked at once")
		}
		asked = append(asked, r.ToolUseID)
		mu.Unlock()
		defer func() { mu.Lock(); asking--; mu.Unlock() }()
		if p.index("start "+r.ToolUseID) >= 0 {
			t.Errorf("%s ran before it was approved", r.ToolUseID)
		}
		return policy.Approval{Allow: r.ToolUseID != "x"}, nil
	})
	rules, err := policy.ParseRules(nil, nil, []string{"Probe"})
	if err != nil {
		t.Fatal(err)
	}
	pol, _ := policy.New(policy.ModeDefault, rules)
	n := probeNode(t, p, agent.Definition{}, orcatest.WithPolicy(pol, approver))
	n.Script("s", calls("Probe", "a", "x", "b", "c"), script.Text("done"))
	if res := n.Run(t.Context(), "s", "go"); res.StopReason != agent.StopAnswered {
		t.Fatalf("%s, %v", res.StopReason, res.Err)
	}
	if strings.Join(asked, " ") != "a x b c" {
		t.Errorf("asked %v", asked)
	}
	if p.index("start x") >= 0 {
		t.Errorf("the denied call ran: %v", p.log)
	}
	if obs := n.Observation("s", "x"); !obs.IsError {
		t.Errorf("x: %+v", obs)
	}
}

// Cancelling the turn stops every running call; none is left behind
// (goleak checks the goroutines at the end of the package).
func TestL3_ParallelCancel(t *testing.T) {
	p := &probes{}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var once sync.Once
	p.wait = func(c context.Context, id string) error {
		p.mu.Lock()
		if p.inflight == 4 {
			once.Do(cancel)
		}
		p.mu.Unlock()
		<-c.Done()
		return c.Err()
	}
	n := probeNode(t, p, agent.Definition{})
	n.Script("s", calls("Probe", "1", "2", "3", "4"), script.Text("never"))
	res := n.Run(ctx, "s", "go")
	if res.StopReason != agent.StopFailed || !errors.Is(res.Err, context.Canceled) {
		t.Errorf("turn: %s, %v", res.StopReason, res.Err)
	}
	if p.peak != 4 || p.inflight != 0 {
		t.Errorf("%d ran at once, %d still running", p.peak, p.inflight)
	}
}

// The tool-call budget counts each call once: of six read-only calls in
// one response with four left, four run and two are not run.
func TestL3_ParallelBudget(t *testing.T) {
	p := &probes{}
	n := probeNode(t, p, agent.Definition{Budget: budget.Limits{ToolCalls: 4}})
	n.Script("s", calls("Probe", "1", "2", "3", "4", "5", "6"), script.Text("done"))
	res, err := n.Open("s").Run(t.Context(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if res.ToolCalls != 4 || p.index("start 5") >= 0 || p.index("start 6") >= 0 {
		t.Errorf("%d calls counted: %v", res.ToolCalls, p.log)
	}
	if obs := storedResults(t, n, "s"); len(obs) != 6 || !strings.Contains(obs[4].Content, "budget is exhausted") || obs[3].IsError {
		t.Errorf("results %+v", obs)
	}
	tot, err := n.Store.Totals(t.Context(), "s")
	if err != nil || tot.ToolCalls != 4 {
		t.Errorf("stored totals %+v, %v", tot, err)
	}
}

// storedResults are the tool results in the store's records of session,
// in order.
func storedResults(t *testing.T, n *orcatest.Node, session string) []llm.Block {
	t.Helper()
	recs, err := n.Store.Records(t.Context(), session, store.RecordFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []llm.Block
	for _, r := range recs {
		for _, b := range r.Message.Content {
			if b.Type == llm.BlockToolResult {
				out = append(out, b)
			}
		}
	}
	return out
}

// A call of a group parked for a person: the calls admitted before it run
// and are recorded, it and those after it wait (the session is parked).
func TestL3_ParallelParked(t *testing.T) {
	p := &probes{}
	n := probeNode(t, p, agent.Definition{})
	n.Services.Hooks.Register(hook.PreToolUse, "defer-x", hook.On(func(ctx context.Context, pl *hook.PreToolUsePayload) (*hook.Decision, error) {
		if pl.ToolUseID == "x" {
			return &hook.Decision{Action: hook.Defer, Reason: "ops decides"}, nil
		}
		return nil, nil
	}))
	n.Script("s", calls("Probe", "a", "b", "x", "c"), script.Text("done"))
	res, _ := n.Open("s").Run(t.Context(), "go")
	if res == nil || res.StopReason != agent.StopAwaitingApproval || res.Parked == nil || res.Parked.ToolUseID != "x" || res.ToolCalls != 2 {
		t.Fatalf("%+v", res)
	}
	var ids []string
	for _, b := range storedResults(t, n, "s") {
		ids = append(ids, b.ToolUseID)
	}
	if strings.Join(ids, " ") != "a b" || p.index("start a") < 0 || p.index("start b") < 0 || p.index("start x") >= 0 || p.index("start c") >= 0 {
		t.Errorf("stored %v, ran %v", ids, p.log)
	}
}
