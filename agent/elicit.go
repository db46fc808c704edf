package agent

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/orca-agent/orca/elicit"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/tool"
)

// An MCP server's question for the person (elicit.Request) goes through
// the runtime in this order, whoever answers:
//
//	elicitation_requested
//	→ ELICITATION hooks (one may answer: accept, decline, cancel; or fill the form in)
//	→ the Elicitor (Collaborators.Elicitor: the person; none: declined, saying why)
//	→ an accepted form completed with the schema's defaults, and checked
//	→ ELICITATION_RESULT hooks (which may change the answer)
//	→ elicitation_resolved
//
// The runtime's own answer is never an error: a question that could not be
// asked is cancelled, saying why, so that the server hears an answer.

// callElicitor is the Elicitor the runtime hands a call of a tool that
// elicits (tool.Traits.Elicits), through its context: the runtime's, in
// the call's turn — its scope, its hooks' payloads and its feed. The
// question comes on the tool's goroutine (an MCP server's request, read by
// the SDK), so the events go where progress goes: the bus and
// Request.OnBackgroundEvent, which a live session serialises into its feed.
type callElicitor struct {
	t *turn
	// id and name are the call's.
	id, name string
	// common is the turn's hook envelope, taken on the turn's goroutine
	// when the call started.
	common hook.Common
}

// withElicitor returns ctx with the turn's Elicitor, for call, of a tool
// that elicits.
func (t *turn) withElicitor(ctx context.Context, call *tool.Call) context.Context {
	c := t.rt.common(t.res.Scope)
	if t.rt.hooks.Has(hook.Elicitation) || t.rt.hooks.Has(hook.ElicitationResult) {
		c = t.common()
	}
	return elicit.With(ctx, &callElicitor{t: t, id: call.ID, name: call.Name, common: c})
}

// Elicit asks req in the call's turn: its scope, and the call (unless req
// names one).
func (e *callElicitor) Elicit(ctx context.Context, req elicit.Request) (elicit.Answer, error) {
	t := e.t
	req.Scope = t.res.Scope
	if req.ToolUseID == "" {
		req.ToolUseID, req.ToolName = e.id, e.name
	}
	return t.rt.elicit(ctx, req, e.common, func(name event.Name, data any) {
		now := time.Now()
		if t.e.Now != nil {
			now = t.e.Now()
		}
		ev := event.Event{Name: name, Time: now, Scope: t.res.Scope, Data: data}
		if t.rt.bus.Watched() {
			t.rt.bus.Publish(ev)
		}
		if f := t.req.OnBackgroundEvent; f != nil {
			f(ev)
		}
	}), nil
}

// Elicitor returns the runtime's Elicitor for the questions a server asks
// outside any tool call of a turn (its request scope's runtime the
// runtime's, no session): the same hooks and Elicitor as in a call, the
// events on the bus only.
func (r *Runtime) Elicitor() elicit.Elicitor {
	return elicit.Func(func(ctx context.Context, req elicit.Request) (elicit.Answer, error) {
		if req.RuntimeID == "" {
			req.RuntimeID = r.id
		}
		return r.elicit(ctx, req, r.common(req.Scope), func(name event.Name, data any) {
			if r.bus.Watched() {
				r.bus.Publish(event.Event{Name: name, Time: time.Now(), Scope: req.Scope, Data: data})
			}
		}), nil
	})
}

// elicit takes req through the hooks and the Elicitor (see the order
// above), telling emit its events, and returns the answer for the server.
func (r *Runtime) elicit(ctx context.Context, req elicit.Request, c hook.Common, emit func(event.Name, any)) elicit.Answer {
	start := time.Now()
	if req.ID == "" {
		req.ID = newID("el")
	}
	if req.Mode == "" {
		req.Mode = elicit.ModeForm
	}
	if req.Mode == elicit.ModeForm && req.Form == nil {
		f, err := elicit.ParseForm(req.Schema)
		if err != nil {
			f = &elicit.Form{}
		}
		req.Form = f
	}
	if req.Mode == elicit.ModeForm && req.Content == nil {
		req.Content = req.Form.Defaults()
	}
	data := event.ElicitationData{ID: req.ID, Server: req.Server, ToolUseID: req.ToolUseID, ToolName: req.ToolName,
		Mode: string(req.Mode), Message: req.Message, URL: elicit.ShownURL(req.URL)}
	if req.Form != nil {
		data.Fields = req.Form.Names()
	}
	asked := data
	emit(event.ElicitationRequested, &asked)

	q := hook.Question{ID: req.ID, Server: req.Server, ToolName: req.ToolName, ToolUseID: req.ToolUseID, Mode: string(req.Mode),
		Message: req.Message, RequestedSchema: req.Schema, URL: req.URL, ElicitationID: req.ElicitationID}
	var ans elicit.Answer
	answered := false
	if r.hooks.Has(hook.Elicitation) {
		out := r.runElicitationHook(ctx, &hook.ElicitationPayload{Common: c, Question: q, Content: req.Content}, req.ToolUseID, emit)
		content := out.Payload.(*hook.ElicitationPayload).Content
		switch out.Action {
		case hook.Accept, hook.Decline, hook.Cancel:
			ans, answered = hookAnswer(out, hook.Elicitation, content), true
		default:
			if out.Rewritten {
				req.Content = content // the form, filled in for the person
			}
		}
	}
	if !answered {
		ans = r.ask(ctx, req)
	}
	ans = settle(req, ans)
	if r.hooks.Has(hook.ElicitationResult) {
		p := &hook.ElicitationResultPayload{Common: c, Question: q, Action: string(ans.Action), Content: ans.Content, By: ans.By, Reason: ans.Reason}
		out := r.runElicitationHook(ctx, p, req.ToolUseID, emit)
		content := out.Payload.(*hook.ElicitationResultPayload).Content
		switch out.Action {
		case hook.Accept, hook.Decline, hook.Cancel:
			ans = settle(req, hookAnswer(out, hook.ElicitationResult, content))
		default:
			if out.Rewritten && ans.Action == elicit.Accept {
				ans.Content, ans.By = content, "hook:"+out.RewrittenBy[len(out.RewrittenBy)-1]
				ans = settle(req, ans)
			}
		}
	}
	done := data
	done.Fields = sortedKeys(ans.Content)
	done.Action, done.By, done.Reason, done.Duration = string(ans.Action), ans.By, ans.Reason, time.Since(start)
	emit(event.ElicitationResolved, &done)
	return ans
}

// ask asks the runtime's Elicitor (Collaborators.Elicitor), telling the
// Notifier that a question waits for the person; with none, the question
// is declined, saying why.
func (r *Runtime) ask(ctx context.Context, req elicit.Request) elicit.Answer {
	if r.elicitor == nil {
		ans, _ := elicit.Headless{}.Elicit(ctx, req)
		return ans
	}
	if r.notifier != nil {
		c := r.common(req.Scope)
		if ts := r.transcripts; ts != nil && req.SessionID != "" {
			c.TranscriptPath = ts.lastPath(req.SessionID)
		}
		r.notifier.Notify(hook.Notification{Common: c, Type: hook.NotifyElicitation, Title: "orca",
			Message: fmt.Sprintf("The MCP server %s asks for your input", req.Server)})
	}
	ans, err := r.elicitor.Elicit(ctx, req)
	switch {
	case ctx.Err() != nil:
		return elicit.Answer{Action: elicit.Cancel, By: "none",
			Reason: fmt.Sprintf("Cancelled by orca: the call that asked ended before anyone answered (%v).", context.Cause(ctx))}
	case err != nil:
		return elicit.Answer{Action: elicit.Cancel, By: "none", Reason: fmt.Sprintf("Cancelled by orca: asking the person failed: %v.", err)}
	}
	if ans.By == "" {
		ans.By = "user"
	}
	return ans
}

// hookAnswer is the answer a hook gave (out.Action: accept, decline or
// cancel), its content with accept.
func hookAnswer(out hook.Outcome, n hook.Name, content map[string]any) elicit.Answer {
	ans := elicit.Answer{Action: elicit.Action(out.Action), By: "hook:" + out.By, Reason: out.Reason}
	if ans.Action == elicit.Accept {
		ans.Content, ans.Reason = content, ""
	} else if ans.Reason == "" {
		ans.Reason = fmt.Sprintf("The %s hook %s answered %s.", n, out.By, out.Action)
	}
	return ans
}

// settle makes ans an answer the server takes: an accepted form completed
// with the schema's defaults (SEP-1034), no content with anything else;
// an answer that does not fit the question is declined, saying why,
// rather than sent for the server to refuse.
func settle(req elicit.Request, ans elicit.Answer) elicit.Answer {
	switch {
	case ans.Action != elicit.Accept:
		ans.Content = nil
	case req.Mode == elicit.ModeURL:
		ans.Content = nil
	case req.Form != nil:
		ans.Content = req.Form.Complete(ans.Content)
	}
	if err := elicit.Check(req, ans); err != nil {
		return elicit.Answer{Action: elicit.Decline, By: ans.By,
			Reason: fmt.Sprintf("Declined by orca: the answer (by %s) does not fit the form: %v.", cmp.Or(ans.By, "user"), err)}
	}
	return ans
}

// runElicitationHook runs an elicitation hook with p, reporting its
// failures and messages as events of the call (toolUseID).
func (r *Runtime) runElicitationHook(ctx context.Context, p hook.Payload, toolUseID string, emit func(event.Name, any)) hook.Outcome {
	out := r.hooks.Run(ctx, p)
	for _, f := range out.Failures {
		emit(event.HookFailed, &event.HookFailedData{ToolUseID: toolUseID, Hook: string(f.Hook), Handler: f.Handler, Error: f.Err.Error(), Violation: f.Violation, FailClosed: f.FailClosed})
		LogViolation(r.logger, f)
	}
	for _, m := range out.Messages {
		emit(event.HookMessage, &event.HookMessageData{ToolUseID: toolUseID, Hook: string(p.Hook()), Handler: m.Handler, Message: m.Text})
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
