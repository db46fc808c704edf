package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/orca-agent/orca/elicit"
	"github.com/orca-agent/orca/event"
)

// lines answers the Elicitor's reads with typed, one line each, then the
// end of the input.
func lines(typed ...string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		if len(typed) == 0 {
			return "", io.EOF
		}
		s := typed[0]
		typed = typed[1:]
		return s + "\n", nil
	}
}

func formRequest(t *testing.T, schema string) elicit.Request {
	t.Helper()
	f, err := elicit.ParseForm(json.RawMessage(schema))
	if err != nil {
		t.Fatal(err)
	}
	return elicit.Request{ID: "el_1", Server: "hotel", Mode: elicit.ModeForm, Message: "Where to?", Form: f, Content: f.Defaults()}
}

const hotelForm = `{"type": "object", "properties": {
	"city": {"type": "string", "title": "City", "description": "Where you stay"},
	"nights": {"type": "integer", "minimum": 1, "maximum": 30, "default": 2},
	"room": {"type": "string", "oneOf": [{"const": "s", "title": "Single"}, {"const": "d", "title": "Double"}], "default": "d"},
	"extras": {"type": "array", "items": {"type": "string", "enum": ["breakfast", "parking", "spa"]}},
	"email": {"type": "string", "format": "email"},
	"pets": {"type": "boolean", "default": false}}, "required": ["city"]}`

// A person fills the form in at the terminal: Enter keeps a default, a
// required field left empty and a value a field does not take are said
// and asked again, choices are taken by number or title, and the answer
// is sent once confirmed.
func TestElicitorFillsTheForm(t *testing.T) {
	var out bytes.Buffer
	e := &Elicitor{Out: &out, Read: lines(
		"y",      // answer it
		"",       // city: required
		"Oslo",   // city
		"0",      // nights: below its minimum
		"three",  // nights: not a number
		"",       // nights: keeps 2
		"single", // room: by title
		"1, 3",   // extras: by numbers
		"ada@",   // email: not one
		"-",      // email: left empty
		"",       // pets: keeps no
		"y",      // send
	)}
	ans, err := e.Elicit(t.Context(), formRequest(t, hotelForm))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(ans.Content)
	if ans.Action != elicit.Accept || string(b) != `{"city":"Oslo","extras":["breakfast","spa"],"nights":2,"pets":false,"room":"s"}` {
		t.Errorf("answer %s %s", ans.Action, b)
	}
	screen := out.String()
	for _, want := range []string{
		"? MCP server hotel asks", "Where to?", "[y] answer (6 fields) · [d] decline · [c] cancel ›",
		"City — Where you stay (required) ›", "✗ city is required.",
		"nights (a whole number, 1–30) [2] ›", "✗ want at least 1, got 0", `✗ want a whole number, such as 42; got "three"`,
		"1) Single   2) Double", "(1–2) [Double] ›", "✗ \"ada@\" is not an email address",
		"pets (y/n) [no] ›", "Send city = Oslo, nights = 2, room = Single, extras = breakfast, spa, pets = no?",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the screen lacks %q:\n%s", want, screen)
		}
	}
}

// Decline and cancel answer the question without a form; the end of the
// input cancels it, saying why; the edit of a filled-in form starts from
// what was typed.
func TestElicitorDeclineCancelEdit(t *testing.T) {
	req := formRequest(t, `{"properties": {"n": {"type": "integer", "default": 1}}}`)
	for _, c := range []struct {
		typed  []string
		action elicit.Action
		reason string
		n      any
	}{
		{[]string{"d"}, elicit.Decline, "The user declined.", nil},
		{[]string{"maybe", "decline"}, elicit.Decline, "The user declined.", nil},
		{[]string{"c"}, elicit.Cancel, "The user cancelled the question.", nil},
		{[]string{"y", "5", "e", "", "y"}, elicit.Accept, "", int64(5)},
		{[]string{"y", "5", "d"}, elicit.Decline, "The user declined.", nil},
		{[]string{"y"}, elicit.Cancel, "No answer came from the user (EOF).", nil},
	} {
		var out bytes.Buffer
		ans, err := (&Elicitor{Out: &out, Read: lines(c.typed...)}).Elicit(t.Context(), req)
		if err != nil || ans.Action != c.action || ans.Reason != c.reason || ans.Content["n"] != c.n {
			t.Errorf("%q: %+v, %v\n%s", c.typed, ans, err, out.String())
		}
	}
}

// A URL question shows the whole URL, which orca does not open: yes
// accepts, with no content.
func TestElicitorURL(t *testing.T) {
	var out bytes.Buffer
	req := elicit.Request{ID: "el_2", Server: "auth", Mode: elicit.ModeURL, Message: "Sign in to continue", URL: "https://auth.example/consent?state=abc"}
	ans, err := (&Elicitor{Out: &out, Read: lines("y")}).Elicit(t.Context(), req)
	if err != nil || ans.Action != elicit.Accept || ans.Content != nil {
		t.Errorf("%+v, %v", ans, err)
	}
	if s := out.String(); !strings.Contains(s, "https://auth.example/consent?state=abc") || !strings.Contains(s, "orca does not open it") {
		t.Errorf("screen:\n%s", s)
	}
}

// The question waits for its elicitation_requested event to be drawn
// (the gate), and ends, unanswered, with its call.
func TestElicitorWaitsForTheGateAndTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := NewApprovalGate()
		var out bytes.Buffer
		req := formRequest(t, `{"properties": {"n": {"type": "integer"}}}`)
		req.TurnID = "t1"
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			_, err := (&Elicitor{Out: &out, Ready: gate.Wait, Read: func(ctx context.Context) (string, error) {
				<-ctx.Done()
				return "", ctx.Err()
			}}).Elicit(ctx, req)
			done <- err
		}()
		synctest.Wait()
		if out.Len() > 0 {
			t.Fatalf("asked before its event was drawn:\n%s", out.String())
		}
		gate.Show(func(event.Event) {})(event.Event{Name: event.ElicitationRequested, Data: &event.ElicitationData{ID: "el_1"}})
		synctest.Wait()
		if !strings.Contains(out.String(), "[y] answer") {
			t.Fatalf("not asked once drawn:\n%s", out.String())
		}
		cancel()
		if err := <-done; err == nil {
			t.Error("a question whose call ended returned no error")
		}
	})
}

// What a hook answered, or no one could, is drawn under the call; what a
// person answered at the terminal is not drawn again.
func TestRenderElicitation(t *testing.T) {
	var out bytes.Buffer
	r := NewText(t.Context(), &out, Options{})
	r.Render(event.Event{Name: event.ToolExecStarted, Data: &event.ToolStartedData{ToolUseID: "c1", ToolName: "mcp__hotel__book", Input: json.RawMessage(`{}`)}})
	r.Render(event.Event{Name: event.ElicitationRequested, Data: &event.ElicitationData{ID: "el_1", Server: "hotel", Mode: "form", Message: "Where to?", Fields: []string{"city"}}})
	r.Render(event.Event{Name: event.ElicitationResolved, Data: &event.ElicitationData{ID: "el_1", Server: "hotel", Mode: "form", Message: "Where to?", Action: "accept", By: "hook:ci", Fields: []string{"city", "nights"}}})
	r.Render(event.Event{Name: event.ElicitationResolved, Data: &event.ElicitationData{ID: "el_2", Server: "auth", Mode: "url", URL: "https://auth.example/consent", Action: "decline", By: "none", Reason: "no one can answer"}})
	r.Render(event.Event{Name: event.ElicitationResolved, Data: &event.ElicitationData{ID: "el_3", Server: "hotel", Mode: "form", Action: "accept", By: "user"}})
	r.Close()
	want := "● mcp__hotel__book\n  ? MCP server hotel asked: Where to?\n  ◆ accepted by hook ci (city, nights)\n" +
		"  ? MCP server auth asked to open https://auth.example/consent\n  ✗ declined: no one can answer\n"
	if got := out.String(); got != want {
		t.Errorf("drawn:\n%s\nwant:\n%s", got, want)
	}
}
