package command_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/hook/command"
	"github.com/orca-agent/orca/llm"
)

// An http hook gets the input as a POST and answers with a decision in
// its body; headers name only the variables the entry allows; a status
// other than 2xx is a failure, not a decision.
func TestHTTPHook(t *testing.T) {
	t.Setenv("HOOK_TOKEN", "s3cret")
	t.Setenv("OTHER_SECRET", "leak")
	var (
		mu   sync.Mutex
		got  map[string]any
		auth string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		json.Unmarshal(body, &got)
		auth = r.Header.Get("Authorization")
		mu.Unlock()
		switch r.URL.Path {
		case "/deny":
			io.WriteString(w, `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no rm here"}}`)
		case "/empty":
		default:
			http.Error(w, "boom", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	headers := map[string]string{"Authorization": "Bearer $HOOK_TOKEN ${OTHER_SECRET}"}

	c, err := command.NewHTTP("PreToolUse", "Bash", srv.URL+"/deny", headers, []string{"HOOK_TOKEN"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Handle(t.Context(), preToolUse("Bash", `{"command":"rm -rf /"}`))
	if err != nil || d == nil || d.Action != hook.Block || d.Reason != "no rm here" {
		t.Fatalf("decision %+v, %v; want block", d, err)
	}
	mu.Lock()
	if got["tool_name"] != "Bash" || got["hook_event_name"] != "PreToolUse" || auth != "Bearer s3cret" || strings.Contains(auth, "leak") {
		t.Errorf("the server got %v with Authorization %q", got, auth)
	}
	mu.Unlock()

	c, _ = command.NewHTTP("PreToolUse", "", srv.URL+"/empty", nil, nil, 5*time.Second)
	if d, err := c.Handle(t.Context(), preToolUse("Bash", `{}`)); d != nil || err != nil {
		t.Errorf("an empty 2xx answer: %+v, %v; want no decision", d, err)
	}
	c, _ = command.NewHTTP("PreToolUse", "", srv.URL+"/fail", nil, nil, 5*time.Second)
	if d, err := c.Handle(t.Context(), preToolUse("Bash", `{}`)); d != nil || err == nil || !strings.Contains(err.Error(), "500") {
		t.Errorf("a 500: %+v, %v; want a failure naming the status", d, err)
	}
	if _, err := command.NewHTTP("PreToolUse", "", "file:///etc/passwd", nil, nil, 0); err == nil {
		t.Error("a file URL was accepted")
	}
}

// A prompt hook asks the model, with the input in place of $ARGUMENTS;
// ok false blocks a tool call and sends a Stop back to work with the
// reason; an answer that is not {"ok": …} is a failure.
func TestPromptHook(t *testing.T) {
	var (
		mu   sync.Mutex
		reqs []*llm.Request
	)
	answer := `{"ok": false, "reason": "run the tests first"}`
	client := llm.ClientFunc(func(ctx context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		reqs = append(reqs, req)
		return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("Here it is:\n" + answer)}}}, nil
	})
	m := &command.PromptModel{Client: client, Model: "small-model"}

	c, err := command.NewPrompt("PreToolUse", "Bash", "Is this command safe? $ARGUMENTS", "", m, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Handle(t.Context(), preToolUse("Bash", `{"command":"make deploy"}`))
	if err != nil || d == nil || d.Action != hook.Block || d.Reason != "run the tests first" {
		t.Fatalf("decision %+v, %v; want block with the model's reason", d, err)
	}
	if r := reqs[0]; r.Model != "small-model" || !strings.Contains(r.Messages[0].Text(), `"command":"make deploy"`) || strings.Contains(r.Messages[0].Text(), "$ARGUMENTS") {
		t.Errorf("request: model %q, text %q", r.Model, r.Messages[0].Text())
	}

	c, _ = command.NewPrompt("Stop", "", "Is the task done?", "judge", m, 5*time.Second)
	d, err = c.Handle(t.Context(), &hook.StopPayload{Common: common(), Answer: "done"})
	if err != nil || d == nil || d.Action != hook.Revise || d.Instruction != "run the tests first" {
		t.Fatalf("Stop: %+v, %v; want revise", d, err)
	}
	if r := reqs[1]; r.Model != "judge" || !strings.Contains(r.Messages[0].Text(), `"answer":"done"`) {
		t.Errorf("Stop request: model %q, text %q", r.Model, r.Messages[0].Text())
	}

	answer = `{"ok": true}`
	if d, err := c.Handle(t.Context(), &hook.StopPayload{Common: common(), Answer: "done"}); d != nil || err != nil {
		t.Errorf("ok true: %+v, %v", d, err)
	}
	answer = `I think it is fine.`
	if d, err := c.Handle(t.Context(), &hook.StopPayload{Common: common(), Answer: "done"}); d != nil || err == nil {
		t.Errorf("a prose answer: %+v, %v; want a failure", d, err)
	}
	c, _ = command.NewPrompt("Stop", "", "Is it done?", "", nil, time.Second)
	if _, err := c.Handle(t.Context(), &hook.StopPayload{Common: common()}); err == nil || !strings.Contains(err.Error(), "no model") {
		t.Errorf("without a model: %v", err)
	}
}
