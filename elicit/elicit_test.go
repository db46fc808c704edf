package elicit_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/orca-agent/orca/elicit"
)

// An answer is checked against its question: the action, content only
// with accept, none for a URL, and a form's fields.
func TestCheck(t *testing.T) {
	form, err := elicit.ParseForm(json.RawMessage(`{"properties": {"n": {"type": "integer"}}, "required": ["n"]}`))
	if err != nil {
		t.Fatal(err)
	}
	formReq := elicit.Request{Mode: elicit.ModeForm, Form: form}
	urlReq := elicit.Request{Mode: elicit.ModeURL, URL: "https://example.com/consent"}
	for _, c := range []struct {
		req elicit.Request
		ans elicit.Answer
		err string
	}{
		{formReq, elicit.Answer{Action: elicit.Accept, Content: map[string]any{"n": 3}}, ""},
		{formReq, elicit.Answer{Action: elicit.Accept}, `field "n": it is required`},
		{formReq, elicit.Answer{Action: elicit.Decline}, ""},
		{formReq, elicit.Answer{Action: elicit.Cancel, Content: map[string]any{"n": 3}}, "a cancel carries no content"},
		{formReq, elicit.Answer{Action: "maybe"}, `action "maybe"`},
		{urlReq, elicit.Answer{Action: elicit.Accept}, ""},
		{urlReq, elicit.Answer{Action: elicit.Accept, Content: map[string]any{"n": 3}}, "carries no content"},
	} {
		err := elicit.Check(c.req, c.ans)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%+v: %v, want %q", c.ans, err, c.err)
		}
	}
}

// Headless declines, saying why and what would answer; a context carries
// a turn's Elicitor to the tool call.
func TestHeadlessAndContext(t *testing.T) {
	ans, err := elicit.Headless{}.Elicit(context.Background(), elicit.Request{Server: "everything"})
	if err != nil || ans.Action != elicit.Decline || !strings.Contains(ans.Reason, "MCP server everything") || !strings.Contains(ans.Reason, "Elicitation hook") {
		t.Errorf("Headless: %+v, %v", ans, err)
	}
	if elicit.From(context.Background()) != nil {
		t.Error("a bare context carries an Elicitor")
	}
	ctx := elicit.With(context.Background(), elicit.Headless{})
	if _, ok := elicit.From(ctx).(elicit.Headless); !ok {
		t.Error("With/From lost the Elicitor")
	}
}

// What is kept of a URL leaves out what may hold a token.
func TestShownURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://auth.example.com/consent?state=s3cret&code=x#frag": "https://auth.example.com/consent",
		"https://user:pw@example.com/a":                             "https://example.com/a",
		"not a url":                                                 "",
		"":                                                          "",
	} {
		if got := elicit.ShownURL(in); got != want {
			t.Errorf("ShownURL(%q) = %q, want %q", in, got, want)
		}
	}
}
