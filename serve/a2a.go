package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tool"
)

// A2APath is where the server speaks the Agent2Agent protocol (JSON-RPC
// over HTTP, protocol 1.0, on the protocol's Go SDK), and A2AV03Path the
// protocol's previous version (0.3); the agent card, at A2ACardPath (the
// protocol's well-known path), is read by the clients of both.
const (
	A2APath     = "/a2a"
	A2AV03Path  = "/a2a/v0.3"
	A2ACardPath = a2asrv.WellKnownAgentCardPath
)

// mountA2A serves A2A on s's mux: the card (public, as the protocol has
// it, but under the Host and Origin checks), and the JSON-RPC endpoint
// under the bearer token. An A2A context is an orca session (its id the
// session's), a task a turn of it.
func (s *Server) mountA2A() {
	handler := a2asrv.NewHandler(&a2aExecutor{s: s}, a2asrv.WithLogger(s.opts.Logger))
	rpc := a2asrv.NewJSONRPCHandler(handler)
	for path, h := range map[string]http.Handler{A2APath: rpc, A2AV03Path: a2av0.NewJSONRPCHandler(handler)} {
		s.mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !s.admitted(w, r, false) {
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxMessageBody)
			h.ServeHTTP(w, r)
		}))
	}
	s.mux.Handle(A2ACardPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.admitted(w, r, true) {
			return
		}
		// One card for the clients of both versions (the SDK writes the
		// fields of each).
		a2asrv.NewAgentCardHandler(a2av0.NewStaticAgentCardProducer(s.agentCard(r))).ServeHTTP(w, r)
	}))
}

// agentCard is the card of the live runtime, as reached by r: its name,
// its tools and skills as the card's skills, streaming (served), no push
// notifications (not served), the bearer token the endpoint requires.
func (s *Server) agentCard(r *http.Request) *a2a.AgentCard {
	rt := s.app.Runtime()
	def := rt.Definition()
	var skills []a2a.AgentSkill
	for _, name := range rt.Tools().Names() {
		tl, ok := rt.Tools().Lookup(name)
		if !ok {
			continue
		}
		desc, _, _ := strings.Cut(strings.TrimSpace(tl.Description()), "\n")
		desc = strings.TrimLeft(desc, "- ")
		tags := []string{"tool"}
		if tool.TraitsOf(tl).ReadOnly {
			tags = append(tags, "read-only")
		}
		skills = append(skills, a2a.AgentSkill{ID: "tool:" + name, Name: name, Description: desc, Tags: tags})
	}
	return &a2a.AgentCard{
		Name:        def.Name,
		Description: "orca, a coding agent, in the workspace " + s.app.Root() + ": it reads, edits and runs commands there under its permission rules and sandbox; a call its policy asks about waits (input-required) for a person's answer",
		Version:     "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface("http://"+r.Host+A2APath, a2a.TransportProtocolJSONRPC),
			{URL: "http://" + r.Host + A2AV03Path, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version}},
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		SecuritySchemes: a2a.NamedSecuritySchemes{"bearer": a2a.HTTPAuthSecurityScheme{Scheme: "Bearer",
			Description: "orca serve's token: $ORCA_SERVE_TOKEN, or the file orca serve names when it starts"}},
		SecurityRequirements: a2a.SecurityRequirementsOptions{{"bearer": a2a.SecuritySchemeScopes{}}},
		Skills:               skills,
	}
}

// a2aFollowers numbers the bus subscriptions of the tasks followed (a
// subscription's name is unique on the bus).
var a2aFollowers atomic.Uint64

// a2aExecutor runs A2A tasks as turns of orca sessions.
type a2aExecutor struct{ s *Server }

var _ a2asrv.AgentExecutor = (*a2aExecutor)(nil)

// Execute runs the turn a message asks for — or, for a task waiting for
// input (a call parked for approval), decides the call by the message
// ("approve", else denied with the message as its note) and goes on with
// the turn — and reports it: working, a status for each tool call, the
// answer as an artifact, and how it ended.
func (x *a2aExecutor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		s := x.s
		if ec.StoredTask == nil {
			// A new task is the first event.
			if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
		}
		text := textOf(ec.Message)
		e, err := s.entryOf(ctx, ec.ContextID, true)
		if err != nil {
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateRejected, agentSays(ec, err.Error())), nil)
			return
		}
		// Watching the session's tool calls starts before the turn does,
		// so that none is missed.
		w := x.watch(ec, e)
		defer w.stop()
		var turn string
		if ec.StoredTask != nil && ec.StoredTask.Status.State == a2a.TaskStateInputRequired {
			turn, err = s.a2aDecide(ctx, e, text)
		} else {
			turn, err = s.a2aStart(e, text)
		}
		if err != nil {
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateRejected, agentSays(ec, err.Error())), nil)
			return
		}
		x.follow(ctx, ec, e, turn, w, yield)
	}
}

// watcher collects the tool calls of a session's user turns as they start.
type watcher struct {
	mu    sync.Mutex
	calls []started
	wake  chan struct{}
	stop  func()
}

type started struct{ turn, what string }

// watch starts collecting e's tool calls.
func (x *a2aExecutor) watch(ec *a2asrv.ExecutorContext, e *entry) *watcher {
	w := &watcher{wake: make(chan struct{}, 1), stop: func() {}}
	sub, err := x.s.app.Services().Bus.SubscribeNames(fmt.Sprintf("a2a:%s:%d", ec.TaskID, a2aFollowers.Add(1)), []event.Name{event.ToolExecStarted}, func(ev event.Event) error {
		d, ok := ev.Data.(*event.ToolStartedData)
		if !ok || ev.Scope.SessionID != e.ls.ID() || ev.Scope.Depth > 0 {
			return nil
		}
		w.mu.Lock()
		w.calls = append(w.calls, started{ev.Scope.TurnID, strings.TrimSpace(d.ToolName + " " + d.Summary)})
		w.mu.Unlock()
		select {
		case w.wake <- struct{}{}:
		default:
		}
		return nil
	})
	if err == nil {
		w.stop = sub.Unsubscribe
	}
	return w
}

// take returns the calls of turn collected since the last take.
func (w *watcher) take(turn string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, c := range w.calls {
		if c.turn == turn {
			out = append(out, c.what)
		}
	}
	w.calls = nil
	return out
}

// a2aStart starts a turn of e with text, as a message to the API does.
func (s *Server) a2aStart(e *entry, text string) (string, error) {
	if strings.TrimSpace(text) == "" {
		return "", fmt.Errorf("the message has no text")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.busy {
		return "", fmt.Errorf("context %s has a task running: cancel it, or wait for it to end", e.ls.ID())
	}
	parked, err := s.app.Store().ParkedCalls(context.Background(), store.ParkFilter{SessionID: e.ls.ID(), Status: store.ParkPending})
	if err != nil {
		return "", err
	}
	if len(parked) > 0 {
		return "", fmt.Errorf("context %s waits for a decision on its parked %s call %s: answer its task (approve or deny)", e.ls.ID(), parked[0].ToolName, parked[0].ID)
	}
	e.setBusy(true)
	id := session.NewTurnID()
	e.track(&turnState{ID: id, Status: "running", StartedAt: time.Now().UTC()})
	s.wg.Add(1)
	go s.run(e, id, text, nil)
	return id, nil
}

// a2aDecide decides e's parked call by a person's answer and goes on with
// its turn.
func (s *Server) a2aDecide(ctx context.Context, e *entry, answer string) (string, error) {
	parked, err := s.app.Store().ParkedCalls(ctx, store.ParkFilter{SessionID: e.ls.ID(), Status: store.ParkPending})
	if err != nil {
		return "", err
	}
	if len(parked) == 0 {
		return "", fmt.Errorf("context %s has no call waiting for a decision", e.ls.ID())
	}
	status, note := store.ParkDenied, strings.TrimSpace(answer)
	if approves(answer) {
		status, note = store.ParkApproved, ""
	}
	p, err := s.app.Store().SetParkStatus(ctx, parked[0].ID, status, "a2a", note)
	if err != nil {
		return "", err
	}
	s.goOn(ctx, p)
	return p.TurnID, nil
}

// approves reports whether a person's answer approves a call.
func approves(answer string) bool {
	switch strings.ToLower(strings.Trim(strings.TrimSpace(answer), ".!")) {
	case "approve", "approved", "yes", "y", "allow", "ok", "run it":
		return true
	}
	return false
}

// follow reports turn of e until it ends: a working status for each tool
// call the turn makes (w collects them), then the answer as an artifact
// and the end.
func (x *a2aExecutor) follow(ctx context.Context, ec *a2asrv.ExecutorContext, e *entry, turn string, w *watcher, yield func(a2a.Event, error) bool) {
	s := x.s
	if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
		return
	}
	e.mu.Lock()
	idle := e.idle
	e.mu.Unlock()
	flush := func() bool {
		for _, c := range w.take(turn) {
			if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, agentSays(ec, "Running "+c)), nil) {
				return false
			}
		}
		return true
	}
	for done := false; !done; {
		select {
		case <-w.wake:
		case <-idle:
			// The turn's last events reach the watcher first.
			_ = s.app.Services().Bus.Flush(ctx)
			done = true
		case <-ctx.Done():
			return
		}
		if !flush() {
			return
		}
	}
	e.mu.Lock()
	var t turnState
	if p := e.turns[turn]; p != nil {
		t = *p
	}
	e.mu.Unlock()
	if t.Answer != "" {
		if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart(t.Answer)), nil) {
			return
		}
	}
	yield(x.ended(ctx, ec, e, t), nil)
}

// ended is the status a turn's end gives its task.
func (x *a2aExecutor) ended(ctx context.Context, ec *a2asrv.ExecutorContext, e *entry, t turnState) *a2a.TaskStatusUpdateEvent {
	switch agent.StopReason(t.Status) {
	case agent.StopAnswered, agent.StopCompacted:
		return a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil)
	case agent.StopAwaitingApproval:
		parked, _ := x.s.app.Store().ParkedCalls(ctx, store.ParkFilter{SessionID: e.ls.ID(), Status: store.ParkPending})
		msg := "A call waits for a person's approval."
		if len(parked) > 0 {
			p := parked[0]
			msg = fmt.Sprintf("The %s call %s (%s) waits for a person's approval: %s. Reply \"approve\" to run it, or anything else to deny it (your reply is its reason); or decide it with POST /v1/approvals/%s.", p.ToolName, p.ID, compact(p.Input), strings.TrimSuffix(p.Reason, "."), p.ID)
		}
		return a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, agentSays(ec, msg))
	case agent.StopInterrupted:
		return a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil)
	case agent.StopRefused:
		return a2a.NewStatusUpdateEvent(ec, a2a.TaskStateRejected, agentSays(ec, t.Reason))
	}
	why := t.Error
	if why == "" {
		why = strings.TrimSpace("the turn ended as " + t.Status + ": " + t.Reason)
	}
	return a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, agentSays(ec, why))
}

// Cancel interrupts the task's turn.
func (x *a2aExecutor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		x.s.mu.Lock()
		e := x.s.sessions[ec.ContextID]
		x.s.mu.Unlock()
		if e != nil {
			e.ls.Interrupt(e.ls.CurrentTurn())
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// compact is JSON input on one line, as written (not HTML-escaped).
func compact(in json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, in) != nil {
		return string(in)
	}
	return b.String()
}

// textOf is a message's text parts, joined.
func textOf(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	var parts []string
	for _, p := range m.Parts {
		if t := p.Text(); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n\n")
}

// agentSays is a message of the agent in the task.
func agentSays(ec *a2asrv.ExecutorContext, text string) *a2a.Message {
	return a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(text))
}
