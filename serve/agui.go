package serve

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/media"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tool"
)

// AGUIPath is where the server speaks AG-UI (protocol 1.0): POST a run's
// input (RunAgentInput), read the run's events as Server-Sent Events. An
// AG-UI thread is an orca session (its id the session's), a run a turn of
// it — or the rest of a turn that stopped for the front end: a call of a
// tool it offered (the run ends with the call pending; the next run's
// tool message is its result), or a call parked for a person's approval
// (the run ends interrupted; the next run's resume entry decides it).
const AGUIPath = "/agui"

// aguiInput is AG-UI's RunAgentInput. Its objects are open: fields orca
// does not read are ignored, not refused.
type aguiInput struct {
	ThreadID string          `json:"threadId"`
	RunID    string          `json:"runId"`
	State    json.RawMessage `json:"state"`
	Messages []aguiMessage   `json:"messages"`
	Tools    []aguiTool      `json:"tools"`
	Context  []struct {
		Description string `json:"description"`
		Value       string `json:"value"`
	} `json:"context"`
	// ForwardedProps are the front end's for its agent server: orca reads
	// none of them.
	ForwardedProps json.RawMessage `json:"forwardedProps"`
	Resume         []struct {
		InterruptID string          `json:"interruptId"`
		Status      string          `json:"status"`
		Payload     json.RawMessage `json:"payload"`
	} `json:"resume"`
}

type aguiMessage struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"toolCallId"`
	Error      string          `json:"error"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"toolCalls"`
}

type aguiTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// aguiApproval is what a resume entry of an approval's interrupt carries
// (its responseSchema).
var aguiApproval = json.RawMessage(`{"type":"object","properties":{"approved":{"type":"boolean","description":"true runs the call, false denies it"},"note":{"type":"string","description":"why: the model reads it when the call is denied"}},"required":["approved"]}`)

// mountAGUI serves AG-UI on s's mux, under the token, Host and Origin
// checks of the rest of the API.
func (s *Server) mountAGUI() {
	s.mux.Handle(AGUIPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.admitted(w, r, false) {
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeError(w, &apiError{status: http.StatusMethodNotAllowed, code: "method_not_allowed", msg: fmt.Sprintf("%s %s: AG-UI runs are POSTed (a RunAgentInput)", r.Method, AGUIPath)})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxMessageBody)
		if err := s.aguiRun(w, r); err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				ae = &apiError{status: http.StatusInternalServerError, code: "internal", msg: err.Error()}
			}
			writeError(w, ae)
		}
	}))
}

// aguiRun runs what an AG-UI run asks for, streaming its events. What is
// wrong with the input is an HTTP error (the client throws it); once the
// run has started, a failure is its RUN_ERROR.
func (s *Server) aguiRun(w http.ResponseWriter, r *http.Request) error {
	var in aguiInput
	if err := decodeWith(r, &in, false); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(in.ThreadID) == "":
		return badRequest("threadId", "threadId: the thread (an orca session) is required")
	case strings.TrimSpace(in.RunID) == "":
		return badRequest("runId", "runId: the run's id is required")
	}
	tools, err := s.aguiTools(in.Tools)
	if err != nil {
		return err
	}
	e, err := s.entryOf(r.Context(), in.ThreadID, true)
	if err != nil {
		return err
	}
	f := &aguiFeed{s: s, thread: in.ThreadID, run: in.RunID, started: map[string]bool{}, wake: make(chan struct{}, 1)}
	f.stateful = len(bytes.TrimSpace(in.State)) == 0 || string(bytes.TrimSpace(in.State)) == "null" || bytes.TrimSpace(in.State)[0] == '{'
	// The session's events are watched before its turn starts, so that
	// none is missed.
	sub, err := s.app.Services().Bus.SubscribePrefix(fmt.Sprintf("agui:%s:%d", in.ThreadID, aguiRuns.Add(1)), "", f.add, event.Buffer(1<<16))
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	turn, err := s.aguiStart(r.Context(), e, &in, tools)
	if err != nil {
		return err
	}
	f.open(w)
	f.send(map[string]any{"type": "RUN_STARTED", "threadId": in.ThreadID, "runId": in.RunID})
	f.follow(r.Context(), e, turn)
	return nil
}

// aguiRuns numbers the bus subscriptions of the runs followed.
var aguiRuns atomic.Uint64

// aguiTools are the front end's tools as the turn offers them.
func (s *Server) aguiTools(in []aguiTool) ([]agent.ClientTool, error) {
	var out []agent.ClientTool
	seen := map[string]bool{}
	for i, t := range in {
		field := fmt.Sprintf("tools[%d]", i)
		switch {
		case !toolName(t.Name):
			return nil, badRequest(field+".name", "%s.name: %q is not a tool name a model takes (1 to 64 letters, digits, _ or -)", field, t.Name)
		case seen[t.Name]:
			return nil, badRequest(field+".name", "%s.name: %s is offered twice", field, t.Name)
		}
		if _, ours := s.app.Runtime().Tools().Lookup(t.Name); ours {
			return nil, badRequest(field+".name", "%s.name: %s is one of orca's own tools: give the front end's another name", field, t.Name)
		}
		seen[t.Name] = true
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 || string(bytes.TrimSpace(params)) == "null" {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		schema, err := tool.CompileSchema(t.Name, params)
		if err != nil {
			return nil, badRequest(field+".parameters", "%s.parameters: %v", field, err)
		}
		out = append(out, agent.ClientTool{Name: t.Name, Description: t.Description, Schema: schema})
	}
	return out, nil
}

// toolName reports whether name is a tool name every provider takes.
func toolName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// aguiStart starts what the run asks of thread e, and returns the turn
// that does it: resume entries decide the calls parked for approval; tool
// messages answer the calls the thread's last turn left for the front
// end; user messages the thread has not taken are a turn's input (with
// the run's context and state). A turn that went on after the front end
// answered takes the run's new user messages after it.
func (s *Server) aguiStart(ctx context.Context, e *entry, in *aguiInput, tools []agent.ClientTool) (string, error) {
	st := s.app.Store()
	parked, err := st.ParkedCalls(ctx, store.ParkFilter{SessionID: e.ls.ID(), Status: store.ParkPending})
	if err != nil {
		return "", err
	}
	if len(in.Resume) > 0 {
		return s.aguiResume(ctx, e, in, parked, tools)
	}
	if len(parked) > 0 {
		p := parked[0]
		return "", &apiError{status: http.StatusConflict, code: "interrupted", field: "resume", msg: fmt.Sprintf(
			"thread %s waits on interrupt %s (the %s call %s asks a person's approval): answer it with a resume entry", e.ls.ID(), p.ID, p.ToolName, p.ToolUseID)}
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.busy {
		return "", &apiError{status: http.StatusConflict, code: "thread_busy", msg: fmt.Sprintf("thread %s has a run going: wait for it to end, or abort it", e.ls.ID())}
	}
	if e.taken == nil {
		e.taken = map[string]bool{}
	}
	left, calls := e.ls.ClientCalls()
	waiting := map[string]bool{}
	for _, c := range calls {
		waiting[c.ID] = true
	}
	// What is new: the messages after the conversation's last assistant
	// message, the thread has not taken.
	from := len(in.Messages)
	for from > 0 && in.Messages[from-1].Role != "assistant" {
		from--
	}
	var results []llm.Block
	var texts []string
	var shown []*llm.Media
	var ids []string
	for i := from; i < len(in.Messages); i++ {
		m := in.Messages[i]
		field := fmt.Sprintf("messages[%d]", i)
		if m.ID != "" && e.taken[m.ID] {
			continue
		}
		switch m.Role {
		case "tool":
			if !waiting[m.ToolCallID] {
				return "", badRequest(field+".toolCallId", "%s.toolCallId: thread %s has no call %q waiting for the front end's result", field, e.ls.ID(), m.ToolCallID)
			}
			text, _, err := aguiContent(m.Content, field, false)
			if err != nil {
				return "", err
			}
			isErr := m.Error != ""
			if isErr {
				text = strings.TrimSpace(m.Error + "\n" + text)
			}
			results = append(results, llm.ToolResultBlock(m.ToolCallID, text, isErr))
			delete(waiting, m.ToolCallID)
		case "user":
			text, media, err := aguiContent(m.Content, field, true)
			if err != nil {
				return "", err
			}
			if strings.TrimSpace(text) != "" || len(media) > 0 {
				texts, shown = append(texts, text), append(shown, media...)
			}
		default:
			continue
		}
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
	}
	if len(results) == 0 && len(texts) == 0 {
		why := "its last messages are neither a user's the thread has not taken nor tool messages answering the calls it waits on, and it has no resume entry"
		if len(calls) > 0 {
			why = fmt.Sprintf("thread %s waits for the front end's result of %s (a tool message with its toolCallId), or a user's message", e.ls.ID(), callNames(calls))
		}
		return "", badRequest("messages", "the run has nothing to do: %s", why)
	}
	if len(results) > 0 && len(shown) > 0 {
		return "", badRequest("messages", "images and documents cannot join a turn that goes on after the front end's results: send them in a run of their own")
	}
	text := strings.Join(texts, "\n\n")
	for _, m := range shown {
		text += "\n\n" + media.Attached(m, "")
	}
	if len(results) > 0 {
		// The turn the front end answered goes on; the new messages are
		// queued into it.
		if text != "" {
			e.ls.Runtime().Queues().Enqueue(e.ls.ID(), text)
		}
		for _, id := range ids {
			e.taken[id] = true
		}
		s.aguiGo(e, left, "", false, session.Retry(), session.WithResults(results...), session.WithClientTools(tools...))
		return left, nil
	}
	if len(e.ls.Transcript()) == 0 {
		text = earlier(in.Messages[:from]) + text
	}
	text += aguiExtras(in)
	for _, id := range ids {
		e.taken[id] = true
	}
	id := session.NewTurnID()
	s.aguiGo(e, id, text, true, session.WithClientTools(tools...), session.WithMedia(shown...))
	return id, nil
}

// aguiGo runs turn id of e (e.mu is held, e is not busy).
func (s *Server) aguiGo(e *entry, id, text string, fresh bool, opts ...session.RunOption) {
	e.setBusy(true)
	t := e.turns[id]
	if t == nil || fresh {
		t = &turnState{ID: id, StartedAt: time.Now().UTC()}
		e.track(t)
	}
	t.Status, t.EndedAt = "running", nil
	s.wg.Add(1)
	go s.run(e, id, text, t.output, opts...)
}

// aguiResume decides the thread's parked call by the run's resume entry,
// and goes on with its turn, the front end's tools offered.
func (s *Server) aguiResume(ctx context.Context, e *entry, in *aguiInput, parked []store.ParkedCall, tools []agent.ClientTool) (string, error) {
	e.mu.Lock()
	busy := e.busy
	e.mu.Unlock()
	if busy {
		return "", &apiError{status: http.StatusConflict, code: "thread_busy", msg: fmt.Sprintf("thread %s has a run going: wait for it to end, or abort it", e.ls.ID())}
	}
	var turn string
	for i, r := range in.Resume {
		field := fmt.Sprintf("resume[%d]", i)
		j := slices.IndexFunc(parked, func(p store.ParkedCall) bool { return p.ID == r.InterruptID })
		if j < 0 {
			return "", &apiError{status: http.StatusNotFound, code: "not_found", field: field + ".interruptId", msg: fmt.Sprintf("%s.interruptId: thread %s has no open interrupt %q", field, e.ls.ID(), r.InterruptID)}
		}
		status, note := store.ParkDenied, "The user cancelled the approval."
		switch r.Status {
		case "cancelled":
		case "resolved":
			var a struct {
				Approved *bool  `json:"approved"`
				Note     string `json:"note"`
			}
			if err := json.Unmarshal(r.Payload, &a); err != nil || a.Approved == nil {
				return "", badRequest(field+".payload", `%s.payload: want {"approved": true|false, "note": "…"} (the interrupt's responseSchema)`, field)
			}
			note = a.Note
			if *a.Approved {
				status = store.ParkApproved
			}
		default:
			return "", badRequest(field+".status", "%s.status: want resolved or cancelled, got %q", field, r.Status)
		}
		p, err := s.app.Store().SetParkStatus(ctx, parked[j].ID, status, "ag-ui", note)
		if err != nil {
			return "", err
		}
		s.goOn(ctx, p, session.WithClientTools(tools...))
		turn = p.TurnID
	}
	return turn, nil
}

// aguiContent is a message's content: a string, or parts (text; images
// and documents whose bytes it carries, when media is true).
func aguiContent(raw json.RawMessage, field string, withMedia bool) (string, []*llm.Media, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text, nil, nil
	}
	var parts []struct {
		Type   string `json:"type"`
		Text   string `json:"text"`
		Source struct {
			Type     string `json:"type"`
			Value    string `json:"value"`
			MimeType string `json:"mimeType"`
		} `json:"source"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, badRequest(field+".content", "%s.content: want a string or an array of parts", field)
	}
	var b strings.Builder
	var shown []*llm.Media
	for k, p := range parts {
		pf := fmt.Sprintf("%s.content[%d]", field, k)
		switch {
		case p.Type == "text":
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(p.Text)
		case (p.Type == "image" || p.Type == "document") && withMedia:
			if p.Source.Type != "data" {
				return "", nil, badRequest(pf+".source", "%s.source: orca takes a %s's bytes (a data source), not a %s source", pf, p.Type, p.Source.Type)
			}
			data, err := base64.StdEncoding.DecodeString(p.Source.Value)
			if err != nil {
				return "", nil, badRequest(pf+".source.value", "%s.source.value: not base64: %v", pf, err)
			}
			m, _, err := media.Prepare(data, fmt.Sprintf("%s-%d", p.Type, k+1))
			if err != nil {
				return "", nil, badRequest(pf, "%s: %v", pf, err)
			}
			shown = append(shown, m)
		default:
			return "", nil, badRequest(pf+".type", "%s.type: orca takes text parts here, and images and documents in a user's message, not %q", pf, p.Type)
		}
	}
	return b.String(), shown, nil
}

// earlier is a new thread's conversation before its new messages (a
// front end that had one), for the model to read.
func earlier(msgs []aguiMessage) string {
	var b strings.Builder
	for _, m := range msgs {
		text, _, _ := aguiContent(m.Content, "", false)
		for _, c := range m.ToolCalls {
			text = strings.TrimSpace(text + fmt.Sprintf("\n(called %s %s)", c.Function.Name, c.Function.Arguments))
		}
		if strings.TrimSpace(text) == "" || m.Role == "activity" || m.Role == "reasoning" {
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", m.Role, text)
	}
	if b.Len() == 0 {
		return ""
	}
	return "<conversation>\nThe conversation so far, as the front end kept it:\n" + b.String() + "</conversation>\n\n"
}

// aguiExtras are the run's context entries and the front end's state, as
// the model reads them after the user's words.
func aguiExtras(in *aguiInput) string {
	var b strings.Builder
	for _, c := range in.Context {
		fmt.Fprintf(&b, "\n\n<context description=%q>\n%s\n</context>", c.Description, c.Value)
	}
	if s := bytes.TrimSpace(in.State); len(s) > 0 && string(s) != "null" && string(s) != "{}" {
		fmt.Fprintf(&b, "\n\n<state>\nThe application's state, as its front end shows it:\n%s\n</state>", s)
	}
	return b.String()
}

// callNames names calls, for people.
func callNames(calls []llm.Block) string {
	var out []string
	for _, c := range calls {
		out = append(out, fmt.Sprintf("%s (%s)", c.Name, c.ID))
	}
	return strings.Join(out, ", ")
}

// aguiFeed turns a thread's events into the AG-UI events of a run.
type aguiFeed struct {
	s           *Server
	thread, run string
	// stateful: the front end's state is an object, which STATE_DELTA
	// can add the agent's plan to.
	stateful bool

	mu     sync.Mutex
	queue  []event.Event
	wake   chan struct{}
	w      http.ResponseWriter
	rc     *http.ResponseController
	buf    bytes.Buffer
	broken bool

	text    string // the open text message's id
	said    bool   // the model call streamed text
	parent  string // the last assistant message's id
	started map[string]bool
}

// add takes an event of the bus (on the bus's goroutine: it only queues).
func (f *aguiFeed) add(ev event.Event) error {
	if ev.Scope.Depth > 0 || ev.Scope.SessionID != f.thread {
		return nil
	}
	f.mu.Lock()
	f.queue = append(f.queue, ev)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
	return nil
}

func (f *aguiFeed) open(w http.ResponseWriter) {
	f.w, f.rc = w, http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
}

// send writes one AG-UI event, and sends what is written.
func (f *aguiFeed) send(ev map[string]any) {
	// The type first, for people reading the stream.
	typ, _ := ev["type"].(string)
	delete(ev, "type")
	ev["timestamp"] = time.Now().UnixMilli()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		f.s.opts.Logger.Warn("orca serve: an AG-UI event", "type", typ, "err", err)
		return
	}
	fmt.Fprintf(&f.buf, "data: {\"type\":%q,%s\n", typ, b.Bytes()[1:]) // Encode ended the line
}

// flush sends what is written; a client gone is remembered.
func (f *aguiFeed) flush() {
	if f.buf.Len() == 0 || f.broken {
		f.buf.Reset()
		return
	}
	f.rc.SetWriteDeadline(time.Now().Add(f.s.opts.WriteTimeout))
	_, err := f.w.Write(f.buf.Bytes())
	f.buf.Reset()
	if err == nil {
		err = f.rc.Flush()
	}
	if err != nil {
		f.broken = true
	}
}

// follow streams turn of e until it ends, then how it ended. A client
// that goes (AG-UI's abort) interrupts the turn.
func (f *aguiFeed) follow(ctx context.Context, e *entry, turn string) {
	s := f.s
	f.flush()
	e.mu.Lock()
	idle := e.idle
	e.mu.Unlock()
	heartbeat := time.NewTicker(s.opts.Heartbeat)
	defer heartbeat.Stop()
	for done := false; !done; {
		select {
		case <-f.wake:
		case <-idle:
			// The turn's last events reach the feed first.
			_ = s.app.Services().Bus.Flush(ctx)
			done = true
		case <-heartbeat.C:
			f.buf.WriteString(": keep-alive\n\n")
		case <-ctx.Done():
			e.ls.Interrupt(e.ls.CurrentTurn())
			return
		case <-s.ctx.Done():
			f.send(map[string]any{"type": "RUN_ERROR", "message": "the server is shutting down", "code": "closing"})
			f.flush()
			return
		}
		f.mu.Lock()
		q := f.queue
		f.queue = nil
		f.mu.Unlock()
		for _, ev := range q {
			f.event(ev)
		}
		f.flush()
		if f.broken {
			e.ls.Interrupt(e.ls.CurrentTurn())
			return
		}
	}
	f.end(ctx, e, turn)
	f.flush()
}

// event turns one of the thread's events into AG-UI's.
func (f *aguiFeed) event(ev event.Event) {
	switch d := ev.Data.(type) {
	case *event.LLMDeltaData:
		if d.Delta.Type == llm.DeltaText && d.Delta.Text != "" {
			f.say(d.Delta.Text)
		}
	case *event.LLMCallData:
		if ev.Name == event.LLMCallCompleted && !f.said && d.Text != "" {
			f.say(d.Text)
		}
		if ev.Name != event.LLMCallStarted {
			f.closeText()
			f.said = false
		}
	case *event.ToolStartedData:
		f.call(d.ToolUseID, d.ToolName, d.Input)
	case *event.ToolData:
		f.call(d.ToolUseID, d.ToolName, d.Input)
		f.result(d.ToolUseID, d.Output)
		if d.ToolName == "TodoWrite" && ev.Name == event.ToolExecCompleted && f.stateful {
			var todos struct {
				Todos json.RawMessage `json:"todos"`
			}
			if json.Unmarshal(d.Input, &todos) == nil && len(todos.Todos) > 0 {
				f.send(map[string]any{"type": "STATE_DELTA", "delta": []map[string]any{{"op": "add", "path": "/todos", "value": todos.Todos}}})
			}
		}
	case *event.ToolBlockedData:
		f.call(d.ToolUseID, d.ToolName, d.Input)
		f.result(d.ToolUseID, d.Reason)
	}
}

// say adds text to the open text message, opening one if none is.
func (f *aguiFeed) say(text string) {
	if f.text == "" {
		f.text = newID("msg")
		f.parent = f.text
		f.send(map[string]any{"type": "TEXT_MESSAGE_START", "messageId": f.text, "role": "assistant"})
	}
	f.said = true
	f.send(map[string]any{"type": "TEXT_MESSAGE_CONTENT", "messageId": f.text, "delta": text})
}

func (f *aguiFeed) closeText() {
	if f.text != "" {
		f.send(map[string]any{"type": "TEXT_MESSAGE_END", "messageId": f.text})
		f.text = ""
	}
}

// call tells of a tool call once: its start, its arguments and its end.
func (f *aguiFeed) call(id, name string, input json.RawMessage) {
	if f.started[id] {
		return
	}
	f.started[id] = true
	f.closeText()
	start := map[string]any{"type": "TOOL_CALL_START", "toolCallId": id, "toolCallName": name}
	if f.parent != "" {
		start["parentMessageId"] = f.parent
	}
	f.send(start)
	if args := compact(input); args != "" {
		f.send(map[string]any{"type": "TOOL_CALL_ARGS", "toolCallId": id, "delta": args})
	}
	f.send(map[string]any{"type": "TOOL_CALL_END", "toolCallId": id})
}

func (f *aguiFeed) result(id, content string) {
	f.send(map[string]any{"type": "TOOL_CALL_RESULT", "messageId": newID("result"), "toolCallId": id, "content": content, "role": "tool"})
}

// end says how the run ended: the calls left for the front end, the
// approval it is interrupted for, cancelled, failed, or finished.
func (f *aguiFeed) end(ctx context.Context, e *entry, turn string) {
	f.closeText()
	e.mu.Lock()
	var t turnState
	if p := e.turns[turn]; p != nil {
		t = *p
	}
	e.mu.Unlock()
	finished := map[string]any{"type": "RUN_FINISHED", "threadId": f.thread, "runId": f.run}
	switch agent.StopReason(t.Status) {
	case agent.StopClientTools:
		_, calls := e.ls.ClientCalls()
		var pending []string
		for _, c := range calls {
			f.call(c.ID, c.Name, c.Input)
			pending = append(pending, c.ID)
		}
		finished["outcome"] = map[string]any{"type": "success", "pendingToolCallIds": pending}
	case agent.StopAwaitingApproval:
		parked, err := f.s.app.Store().ParkedCalls(ctx, store.ParkFilter{SessionID: e.ls.ID(), Status: store.ParkPending})
		if err != nil || len(parked) == 0 {
			f.send(map[string]any{"type": "RUN_ERROR", "code": "failed", "message": fmt.Sprintf("the turn stopped for an approval, and its parked call cannot be read: %v", err)})
			return
		}
		var interrupts []map[string]any
		for _, p := range parked {
			interrupts = append(interrupts, map[string]any{
				"id": p.ID, "reason": "tool_approval", "toolCallId": p.ToolUseID, "responseSchema": aguiApproval,
				"message":  fmt.Sprintf("The %s call (%s) waits for your approval: %s.", p.ToolName, compact(p.Input), strings.TrimSuffix(p.Reason, ".")),
				"metadata": map[string]any{"toolName": p.ToolName, "input": p.Input, "rules": p.Rules},
			})
		}
		finished["outcome"] = map[string]any{"type": "interrupt", "interrupts": interrupts}
	case agent.StopInterrupted:
		finished["outcome"] = map[string]any{"type": "cancelled"}
	case agent.StopFailed, "":
		why := t.Error
		if why == "" {
			why = "the turn failed"
		}
		f.send(map[string]any{"type": "RUN_ERROR", "code": "failed", "message": why})
		return
	default:
		result := map[string]any{"stopReason": t.Status}
		if t.Reason != "" {
			result["reason"] = t.Reason
		}
		if len(t.Output) > 0 {
			result["output"] = t.Output
		}
		finished["result"] = result
	}
	f.send(finished)
}

// newID is a fresh id for a message of the stream.
func newID(prefix string) string {
	var b [8]byte
	rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}
