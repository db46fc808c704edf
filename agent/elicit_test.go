package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/elicit"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/tool"
)

const bookingSchema = `{"type": "object", "properties": {
	"city": {"type": "string"},
	"nights": {"type": "integer", "minimum": 1, "default": 2},
	"breakfast": {"type": "boolean", "default": true}}, "required": ["city"]}`

// elicitTurn runs one turn whose model calls Book, a tool that asks the
// person for a booking (as an MCP server would) and returns the answer as
// its observation; it returns the observation and the feed's elicitation
// and hook events.
func elicitTurn(t *testing.T, e elicit.Elicitor, hooks func(*hook.Registry), ctx context.Context) (string, []event.Event) {
	t.Helper()
	book := tool.New("Book", "Books a stay.", func(ctx context.Context, _ struct{}) (string, error) {
		form, err := elicit.ParseForm(json.RawMessage(bookingSchema))
		if err != nil {
			return "", err
		}
		el := elicit.From(ctx)
		if el == nil {
			return "", errors.New("no Elicitor in the call's context")
		}
		ans, err := el.Elicit(ctx, elicit.Request{Server: "hotel", Mode: elicit.ModeForm,
			Message: "Where to?", Schema: json.RawMessage(bookingSchema), Form: form})
		if err != nil {
			return "", err
		}
		content, _ := json.Marshal(ans.Content)
		return fmt.Sprintf("%s by %s %s %s", ans.Action, ans.By, content, ans.Reason), nil
	}, tool.Elicits())
	svc := agent.NewServices(nil)
	defer svc.Close()
	if hooks != nil {
		hooks(svc.Hooks)
	}
	model := script.New().Script("s", script.Call("Book", map[string]any{}), script.Text("done"))
	rt, err := agent.New(agent.Definition{Name: "elicit", ToolProviders: []tool.Provider{tool.Static("custom", book)}},
		agent.Collaborators{Client: model, Workspace: t.TempDir(), Elicitor: e, Services: svc})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var mu sync.Mutex
	var feed []event.Event
	take := func(ev event.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Data.(type) {
		case *event.ElicitationData, *event.HookFailedData, *event.HookMessageData:
			feed = append(feed, ev)
		}
	}
	var out string
	take2 := func(ev event.Event) {
		if d, ok := ev.Data.(*event.ToolData); ok {
			out = d.Output
		}
		take(ev)
	}
	res, err := agent.NewExecutor().Execute(ctx, rt, agent.Request{SessionID: "s", Input: "book", OnEvent: take2, OnBackgroundEvent: take})
	if (err != nil || res == nil) && ctx.Err() == nil {
		t.Fatalf("turn: %+v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	return out, feed
}

// With no one to ask and no hook, the question is declined, saying why;
// the feed tells it asked and answered, in the call's scope, the form's
// fields named.
func TestElicitationHeadlessDeclines(t *testing.T) {
	out, feed := elicitTurn(t, nil, nil, t.Context())
	if !strings.HasPrefix(out, "decline by none null Declined by orca: no one can answer the MCP server hotel's question") {
		t.Errorf("observation: %s", out)
	}
	if len(feed) != 2 || feed[0].Name != event.ElicitationRequested || feed[1].Name != event.ElicitationResolved {
		t.Fatalf("events: %v", feed)
	}
	asked, done := feed[0].Data.(*event.ElicitationData), feed[1].Data.(*event.ElicitationData)
	if asked.Server != "hotel" || asked.ToolUseID != "call_1_1" || asked.ToolName != "Book" || strings.Join(asked.Fields, ",") != "city,nights,breakfast" || asked.ID == "" || feed[0].SessionID != "s" || feed[0].TurnID == "" {
		t.Errorf("requested: %+v in %+v", asked, feed[0].Scope)
	}
	if done.ID != asked.ID || done.Action != "decline" || done.By != "none" || !strings.Contains(done.Reason, "no one can answer") || done.Fields != nil {
		t.Errorf("resolved: %+v", done)
	}
}

// A person who accepts without changing a field sends the schema's
// defaults (SEP-1034); values the person gave stay.
func TestElicitationDefaultsApplied(t *testing.T) {
	var asked elicit.Request
	person := elicit.Func(func(ctx context.Context, req elicit.Request) (elicit.Answer, error) {
		asked = req
		return elicit.Answer{Action: elicit.Accept, Content: map[string]any{"city": "Oslo"}}, nil
	})
	out, feed := elicitTurn(t, person, nil, t.Context())
	if want := `accept by user {"breakfast":true,"city":"Oslo","nights":2}`; strings.TrimSpace(out) != want {
		t.Errorf("observation %q, want %q", out, want)
	}
	if asked.Content["nights"] != int64(2) || asked.SessionID != "s" || asked.ID == "" {
		t.Errorf("the person was asked %+v", asked)
	}
	if d := feed[1].Data.(*event.ElicitationData); strings.Join(d.Fields, ",") != "breakfast,city,nights" || d.By != "user" {
		t.Errorf("resolved: %+v", d)
	}
	for _, ev := range feed {
		if b, _ := json.Marshal(ev); strings.Contains(string(b), "Oslo") {
			t.Errorf("an event holds the answer's value: %s", b)
		}
	}
}

// An ELICITATION hook answers before anyone is asked (its partial content
// completed by the defaults); one that only fills the form in leaves the
// question to the person, with its values; ELICITATION_RESULT sees the
// answer and may change it.
func TestElicitationHooks(t *testing.T) {
	asked := false
	person := elicit.Func(func(ctx context.Context, req elicit.Request) (elicit.Answer, error) {
		asked = true
		return elicit.Answer{Action: elicit.Accept, Content: req.Content}, nil
	})
	out, _ := elicitTurn(t, person, func(r *hook.Registry) {
		hook.Handle(r, "ci", func(ctx context.Context, p *hook.ElicitationPayload) (*hook.Decision, error) {
			if p.Server != "hotel" || p.Content["nights"] != int64(2) || !strings.Contains(string(p.RequestedSchema), "breakfast") {
				return nil, fmt.Errorf("payload %+v", p)
			}
			return &hook.Decision{Action: hook.Accept, Updates: map[string]any{"content": map[string]any{"city": "Rome"}}}, nil
		})
	}, t.Context())
	if want := `accept by hook:ci {"breakfast":true,"city":"Rome","nights":2}`; strings.TrimSpace(out) != want || asked {
		t.Errorf("observation %q (the person asked: %v), want %q", out, asked, want)
	}

	out, _ = elicitTurn(t, person, func(r *hook.Registry) {
		hook.Handle(r, "prefill", func(ctx context.Context, p *hook.ElicitationPayload) (*hook.Decision, error) {
			return &hook.Decision{Updates: map[string]any{"content": map[string]any{"city": "Lima", "nights": 5}}}, nil
		})
	}, t.Context())
	if want := `accept by user {"breakfast":true,"city":"Lima","nights":5}`; strings.TrimSpace(out) != want || !asked {
		t.Errorf("prefilled: %q (asked %v), want %q", out, asked, want)
	}

	var seen *hook.ElicitationResultPayload
	out, feed := elicitTurn(t, person, func(r *hook.Registry) {
		hook.Handle(r, "prefill", func(ctx context.Context, p *hook.ElicitationPayload) (*hook.Decision, error) {
			return &hook.Decision{Updates: map[string]any{"content": map[string]any{"city": "Lima"}}, Message: "filled in"}, nil
		})
		hook.Handle(r, "audit", func(ctx context.Context, p *hook.ElicitationResultPayload) (*hook.Decision, error) {
			seen = p
			return &hook.Decision{Action: hook.Decline, Reason: "Lima is not on the list"}, nil
		})
	}, t.Context())
	if want := "decline by hook:audit null Lima is not on the list"; strings.TrimSpace(out) != want {
		t.Errorf("result hook: %q, want %q", out, want)
	}
	if seen == nil || seen.Action != "accept" || seen.By != "user" || seen.Content["city"] != "Lima" || seen.Content["nights"] != int64(2) {
		t.Errorf("ELICITATION_RESULT saw %+v", seen)
	}
	if len(feed) != 3 || feed[1].Name != event.HookMessage {
		t.Errorf("events: %v", feed)
	}
}

// An answer that does not fit the form is declined, saying why, rather
// than sent; a question whose call ends before the answer is cancelled.
func TestElicitationBadAnswerAndCancel(t *testing.T) {
	liar := elicit.Func(func(ctx context.Context, req elicit.Request) (elicit.Answer, error) {
		return elicit.Answer{Action: elicit.Accept, Content: map[string]any{"city": "Oslo", "nights": 0}}, nil
	})
	out, _ := elicitTurn(t, liar, nil, t.Context())
	if !strings.HasPrefix(out, `decline by user null Declined by orca: the answer (by user) does not fit the form: field "nights": want at least 1`) {
		t.Errorf("observation: %s", out)
	}
	ctx, cancel := context.WithCancelCause(t.Context())
	gone := elicit.Func(func(ctx context.Context, req elicit.Request) (elicit.Answer, error) {
		cancel(errors.New("the call timed out"))
		<-ctx.Done()
		return elicit.Answer{}, ctx.Err()
	})
	out, feed := elicitTurn(t, gone, nil, ctx)
	if !strings.Contains(out, "cancel by none null Cancelled by orca: the call that asked ended before anyone answered (the call timed out)") ||
		len(feed) != 2 || feed[1].Data.(*event.ElicitationData).Action != "cancel" {
		t.Errorf("cancelled: %q %v", out, feed)
	}
}
