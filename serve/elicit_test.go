package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/elicit"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/serve"
	"github.com/orca-agent/orca/tool"
)

// script1 calls Book, then answers.
var script1 = []script.Response{script.Call("Book", map[string]any{}), script.Text("Booked.")}

// book is a tool that asks the person for a booking, as an MCP server's
// tool would, and returns the answer as its observation.
var book = tool.New("Book", "Books a stay.", func(ctx context.Context, _ struct{}) (string, error) {
	const schema = `{"type": "object", "properties": {"city": {"type": "string"}, "nights": {"type": "integer", "minimum": 1, "default": 2}}, "required": ["city"]}`
	form, err := elicit.ParseForm(json.RawMessage(schema))
	if err != nil {
		return "", err
	}
	e := elicit.From(ctx)
	if e == nil {
		return "", errors.New("no Elicitor")
	}
	ans, err := e.Elicit(ctx, elicit.Request{Server: "hotel", Mode: elicit.ModeForm, Message: "Where to?", Schema: json.RawMessage(schema), Form: form})
	if err != nil {
		return "", err
	}
	content, _ := json.Marshal(ans.Content)
	return fmt.Sprintf("%s by %s %s %s", ans.Action, ans.By, content, ans.Reason), nil
}, tool.Elicits())

// A question asked during a turn waits for a client that follows the
// session: the page (or any client) lists it with its form, a wrong
// answer is a 400 naming the field, the answer (the defaults filled in)
// goes to the server and the turn goes on; a question no client could
// see is declined at once, saying why.
func TestElicitationThroughTheAPI(t *testing.T) {
	els := serve.NewElicitations()
	f := newFixture(t, app.Config{Mode: policy.ModeBypass, Elicitor: els, ToolProviders: []tool.Provider{tool.Static("custom", book)}}, serve.Options{Elicitations: els})
	f.model.Script("s1", script1...)
	f.json("POST", "/v1/sessions", `{"id": "s1"}`, 201)
	open, asked := make(chan struct{}), make(chan string, 1)
	done := make(chan []sse, 1)
	go func() {
		first := true
		done <- f.events("/v1/sessions/s1/events", "", func(e sse) bool {
			if first {
				first = false
				close(open)
			}
			if e.name == "elicitation_requested" {
				asked <- e.data["id"].(string)
			}
			return completed(e)
		})
	}()
	<-open // session_started: the stream follows the session
	f.json("POST", "/v1/sessions/s1/messages", `{"text": "book"}`, 202)
	var id string
	select {
	case id = <-asked:
	case evs := <-done:
		for _, e := range evs {
			t.Logf("%s %v", e.name, e.data)
		}
		t.Fatal("the turn ended, no question asked")
	}
	list := f.json("GET", "/v1/elicitations?session=s1", "", 200)["elicitations"].([]any)
	if len(list) != 1 {
		t.Fatalf("waiting: %v", list)
	}
	q := list[0].(map[string]any)
	fields, _ := q["fields"].([]any)
	if q["id"] != id || q["server"] != "hotel" || q["message"] != "Where to?" || q["tool_name"] != "Book" || len(fields) != 2 ||
		q["content"].(map[string]any)["nights"] != 2.0 || fields[0].(map[string]any)["required"] != true {
		t.Errorf("the question: %v", q)
	}
	if l := f.json("GET", "/v1/elicitations?session=other", "", 200)["elicitations"].([]any); len(l) != 0 {
		t.Errorf("another session's list: %v", l)
	}
	for body, field := range map[string]string{
		`{"action": "accept", "content": {"city": "Oslo", "nights": 0}}`:  "content.nights",
		`{"action": "accept", "content": {"nights": 3}}`:                  "content.city",
		`{"action": "accept", "content": {"city": "Oslo", "pets": true}}`: "content.pets",
		`{"action": "maybe"}`:                                "action",
		`{"action": "decline", "content": {"city": "Oslo"}}`: "content",
	} {
		code, out := f.do("POST", "/v1/elicitations/"+id, body)
		if code != 400 || !strings.Contains(out, `"field":"`+field+`"`) {
			t.Errorf("%s: %d %s, want a 400 naming %s", body, code, out, field)
		}
	}
	got := f.json("POST", "/v1/elicitations/"+id, `{"action": "accept", "content": {"city": "Oslo"}, "by": "web"}`, 200)
	if got["action"] != "accept" || got["content"].(map[string]any)["nights"] != 2.0 {
		t.Errorf("answered: %v", got)
	}
	if code, _ := f.do("POST", "/v1/elicitations/"+id, `{"action": "decline"}`); code != 404 {
		t.Errorf("answered twice: %d", code)
	}
	evs := <-done
	var out, by string
	for _, e := range evs {
		switch e.name {
		case "tool_exec_completed":
			out, _ = e.data["output"].(string)
		case "elicitation_resolved":
			by, _ = e.data["by"].(string)
		}
	}
	if want := `accept by web {"city":"Oslo","nights":2}`; strings.TrimSpace(out) != want || by != "web" {
		t.Errorf("the call saw %q (by %q), want %q", out, by, want)
	}

	// No one follows s2: declined at once, saying why.
	f.model.Script("s2", script1...)
	f.json("POST", "/v1/sessions", `{"id": "s2"}`, 201)
	turn := f.json("POST", "/v1/sessions/s2/messages", `{"text": "book"}`, 202)["turn_id"].(string)
	deadline := time.Now().Add(30 * time.Second)
	for f.json("GET", "/v1/sessions/s2/turns/"+turn, "", 200)["status"] == "running" {
		if time.Now().After(deadline) {
			t.Fatal("the turn of s2 did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
	all := f.events("/v1/sessions/s2/events?follow=false", "", nil)
	out = ""
	for _, e := range all {
		if e.name == "tool_exec_completed" {
			out, _ = e.data["output"].(string)
		}
	}
	if !strings.HasPrefix(out, "decline by none null Declined by orca serve: no client follows the session's events (GET /v1/sessions/s2/events)") {
		t.Errorf("s2's call saw %q", out)
	}
}
