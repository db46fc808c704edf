package serve_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/serve"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/toolset"
)

// TestAGUIWithTheOfficialClient: AG-UI's own client (@ag-ui/client's
// HttpAgent, from npm, which checks the event stream against the
// protocol) runs a turn with text and a tool call against orca serve,
// and the run ends on a call of the front end's tool; the tool's result,
// sent in the next run, continues the thread and reaches the model; a
// call parked for approval ends a run interrupted, and the resume entry
// approves it (the file is made); an abort interrupts a turn.
func TestAGUIWithTheOfficialClient(t *testing.T) {
	client, node := os.Getenv("ORCA_AGUI_CLIENT"), os.Getenv("ORCA_NODE22")
	if client == "" || node == "" {
		t.Skip("ORCA_AGUI_CLIENT and ORCA_NODE22 name no AG-UI client and node to run it")
	}
	cancelled := make(chan struct{}, 1)
	wait := tool.New("Wait", "Waits until cancelled.", func(ctx context.Context, in struct{}) (string, error) {
		<-ctx.Done()
		cancelled <- struct{}{}
		return "", ctx.Err()
	}, tool.ReadOnly())
	f := newFixture(t, app.Config{ToolProviders: append(toolset.Default(), tool.Static("wait", wait))}, serve.Options{})
	os.WriteFile(filepath.Join(f.ws, "a.txt"), []byte("hello from a.txt\n"), 0o644)
	f.model.Script("thread-1",
		script.Call("Read", map[string]string{"file_path": "a.txt"}),
		script.Response{Text: "a.txt says hello.", ToolCalls: []script.ToolCall{{Name: "pick_color", Input: json.RawMessage(`{"prompt":"Which colour?"}`)}}},
		script.Text("You picked teal."),
		script.Call("Bash", map[string]string{"command": "echo made > made.txt"}),
		script.Text("Made it."))
	f.model.Script("thread-2", script.Call("Wait", map[string]any{}), script.Text("never"))

	script, _ := filepath.Abs("testdata/agui-client.mjs")
	cmd := exec.CommandContext(t.Context(), node, script)
	cmd.Env = append(os.Environ(), "AGUI_CLIENT="+client, "BASE="+f.http.URL, "TOKEN="+token)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the client: %v\n%s\n%s", err, out, stderr.String())
	}
	var r struct {
		First, Second, Parked, Resumed, Aborted                       []string
		FirstError, SecondError, ResumedError, Unanswered, AbortError string
		Pending                                                       int
		AssistantCalls                                                []string
		Interrupts                                                    []struct {
			Reason, ToolCallID, Message string
			Schema                      bool
		}
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v: %s\n%s", err, out, stderr.String())
	}
	lines := func(s []string) string { return strings.Join(s, "\n") }
	want := `RUN_STARTED
TOOL_CALL_START Read
TOOL_CALL_ARGS {"file_path":"a.txt"}
TOOL_CALL_END
TOOL_CALL_RESULT 1	hello from a.txt
TEXT_MESSAGE_START
TEXT a.txt says hello.
TEXT_MESSAGE_END
TOOL_CALL_START pick_color
TOOL_CALL_ARGS {"prompt":"Which colour?"}
TOOL_CALL_END
RUN_FINISHED {"type":"success","pendingToolCallIds":["call_ID"]}`
	if got := lines(r.First); got != want || r.FirstError != "" || r.Pending != 1 || strings.Join(r.AssistantCalls, ",") != "Read,pick_color" {
		t.Errorf("the first run (error %q, %d pending, calls %v):\n%s\nwant:\n%s", r.FirstError, r.Pending, r.AssistantCalls, got, want)
	}
	want = "RUN_STARTED\nTEXT_MESSAGE_START\nTEXT You picked teal.\nTEXT_MESSAGE_END\nRUN_FINISHED {\"stopReason\":\"answered\"}"
	if got := lines(r.Second); got != want || r.SecondError != "" {
		t.Errorf("the second run (error %q):\n%s\nwant:\n%s", r.SecondError, got, want)
	}
	calls := f.model.CallsTo("thread-1")
	if len(calls) < 3 {
		t.Fatalf("%d model calls", len(calls))
	}
	if first := calls[0].Messages[0].Text(); !strings.Contains(first, `<context description="the page">`) {
		t.Errorf("the first prompt has no context entry: %q", first)
	}
	if !offered(calls[0].Tools, "pick_color") {
		t.Errorf("the front end's tool was not offered: %v", calls[0].Tools)
	}
	if got := resultOf(calls[2].Messages); got != "The user picked teal." {
		t.Errorf("the model saw the front end's result as %q", got)
	}
	if got := lines(r.Parked); !strings.HasPrefix(got, "RUN_STARTED\nTOOL_CALL_START Bash\nTOOL_CALL_ARGS {\"command\":\"echo made \\u003e made.txt\"}\nTOOL_CALL_END\n"+`RUN_FINISHED {"type":"interrupt","interrupts":[{"id":"park_ID","reason":"tool_approval",`) {
		t.Errorf("the parked run:\n%s", got)
	}
	if len(r.Interrupts) != 1 || r.Interrupts[0].Reason != "tool_approval" || !r.Interrupts[0].Schema || !strings.Contains(r.Interrupts[0].Message, "The Bash call") {
		t.Errorf("interrupts: %+v", r.Interrupts)
	}
	if !strings.Contains(r.Unanswered, "pending interrupt") {
		t.Errorf("a run past the interrupt: %q", r.Unanswered)
	}
	if got := lines(r.Resumed); !strings.Contains(got, "TOOL_CALL_START Bash") || !strings.Contains(got, "TEXT Made it.") || !strings.HasSuffix(got, `RUN_FINISHED {"stopReason":"answered"}`) || r.ResumedError != "" {
		t.Errorf("the resumed run (error %q):\n%s", r.ResumedError, got)
	}
	if b, err := os.ReadFile(filepath.Join(f.ws, "made.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("the approved call's file: %q %v", b, err)
	}
	if calls := f.model.CallsTo("thread-1"); len(calls) != 5 || !offered(calls[4].Tools, "pick_color") {
		t.Errorf("after the approval (%d model calls), the front end's tool is offered no more", len(calls))
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Errorf("the abort did not cancel the Wait call; the client saw:\n%s\n%s", lines(r.Aborted), r.AbortError)
	}
}

func offered(defs []llm.ToolDefinition, name string) bool {
	for _, d := range defs {
		if d.Name == name {
			return true
		}
	}
	return false
}

// resultOf is the content of the first tool result in msgs' last message
// that has one.
func resultOf(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, b := range msgs[i].Content {
			if b.Type == llm.BlockToolResult {
				return b.Content
			}
		}
	}
	return ""
}

// TestAGUIBadInput: what is wrong with a run's input is an HTTP error
// naming it, before any event; a thread cannot answer another thread's
// interrupt, nor learn of it; the token, Host and Origin checks hold.
func TestAGUIBadInput(t *testing.T) {
	f := newFixture(t, app.Config{}, serve.Options{})
	f.model.Script("a", script.Call("Bash", map[string]string{"command": "echo x > x.txt"}), script.Text("done"))
	code, body := f.do("POST", serve.AGUIPath, `{"threadId":"a","runId":"r1","messages":[{"id":"u1","role":"user","content":"make x"}]}`)
	if code != 200 || !strings.Contains(body, `"type":"interrupt"`) {
		t.Fatalf("the parking run: %d %s", code, body)
	}
	park := body[strings.Index(body, `"id":"park_`)+6:]
	park = park[:strings.IndexByte(park, '"')]

	for _, c := range []struct {
		name, method, body string
		header             []string
		code               int
		says               string
	}{
		{"no token", "POST", `{"threadId":"b","runId":"r","messages":[]}`, []string{"Authorization", ""}, 401, "no bearer token"},
		{"wrong token", "POST", `{"threadId":"b","runId":"r","messages":[]}`, []string{"Authorization", "Bearer nope"}, 401, "the bearer token is wrong"},
		{"foreign origin", "POST", `{"threadId":"b","runId":"r","messages":[]}`, []string{"Origin", "https://evil.example"}, 403, "https://evil.example are not allowed"},
		{"GET", "GET", "", nil, 405, "AG-UI runs are POSTed"},
		{"malformed", "POST", `{"threadId":"b","runId"`, nil, 400, "not JSON"},
		{"no thread", "POST", `{"runId":"r","messages":[]}`, nil, 400, "threadId: the thread"},
		{"no run id", "POST", `{"threadId":"b","messages":[]}`, nil, 400, "runId"},
		{"orca's tool", "POST", `{"threadId":"b","runId":"r","messages":[{"id":"u","role":"user","content":"hi"}],"tools":[{"name":"Read","description":"x"}]}`, nil, 400, "tools[0].name: Read is one of orca's own tools"},
		{"bad tool name", "POST", `{"threadId":"b","runId":"r","messages":[],"tools":[{"name":"a b","description":"x"}]}`, nil, 400, `tools[0].name: "a b" is not a tool name`},
		{"bad schema", "POST", `{"threadId":"b","runId":"r","messages":[],"tools":[{"name":"t","description":"x","parameters":{"type":"nonsense"}}]}`, nil, 400, "tools[0].parameters"},
		{"another thread's interrupt", "POST", `{"threadId":"b","runId":"r","messages":[],"resume":[{"interruptId":"` + park + `","status":"resolved","payload":{"approved":true}}]}`, nil, 404, `thread b has no open interrupt "` + park + `"`},
		{"a bad payload", "POST", `{"threadId":"a","runId":"r","messages":[],"resume":[{"interruptId":"` + park + `","status":"resolved","payload":{"yes":1}}]}`, nil, 400, `resume[0].payload: want {"approved": true|false`},
		{"past the interrupt", "POST", `{"threadId":"a","runId":"r","messages":[{"id":"u2","role":"user","content":"and?"}]}`, nil, 409, "thread a waits on interrupt " + park},
		{"a result for no call", "POST", `{"threadId":"c","runId":"r","messages":[{"id":"t","role":"tool","toolCallId":"call_9","content":"x"}]}`, nil, 400, `messages[0].toolCallId: thread c has no call "call_9"`},
		{"nothing to do", "POST", `{"threadId":"c","runId":"r","messages":[{"id":"m","role":"assistant","content":"hi"}]}`, nil, 400, "the run has nothing to do"},
		{"a url image", "POST", `{"threadId":"c","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"image","source":{"type":"url","value":"http://x/y.png"}}]}]}`, nil, 400, "messages[0].content[0].source: orca takes a image's bytes"},
	} {
		code, body := f.do(c.method, serve.AGUIPath, c.body, c.header...)
		var e struct{ Error struct{ Message string } }
		if json.Unmarshal([]byte(body), &e) == nil && e.Error.Message != "" {
			body = e.Error.Message
		}
		if code != c.code || !strings.Contains(body, c.says) {
			t.Errorf("%s: %d %s, want %d saying %s", c.name, code, body, c.code, c.says)
		}
		if strings.Contains(body, "make x") || strings.Contains(body, "x.txt") {
			t.Errorf("%s: the answer shows thread a's call: %s", c.name, body)
		}
	}
	// A new thread from a front end that had a conversation: the model
	// reads it before the new message, with the run's state.
	f.model.Script("d", script.Text("ok"))
	code, body = f.do("POST", serve.AGUIPath, `{"threadId":"d","runId":"r","state":{"page":"billing"},"messages":[{"id":"o1","role":"user","content":"old question"},{"id":"o2","role":"assistant","content":"old answer"},{"id":"n1","role":"user","content":[{"type":"text","text":"new question"}]}]}`)
	if code != 200 || !strings.Contains(body, `"stopReason":"answered"`) {
		t.Fatalf("the new thread: %d %s", code, body)
	}
	if got := f.model.CallsTo("d")[0].Messages[0].Text(); !strings.Contains(got, "<conversation>") || !strings.Contains(got, "user: old question\nassistant: old answer\n</conversation>\n\nnew question") || !strings.Contains(got, `{"page":"billing"}`) {
		t.Errorf("the new thread's prompt: %q", got)
	}
	// The same messages again: taken, nothing to do.
	code, body = f.do("POST", serve.AGUIPath, `{"threadId":"d","runId":"r2","messages":[{"id":"o1","role":"user","content":"old question"},{"id":"o2","role":"assistant","content":"old answer"},{"id":"n1","role":"user","content":"new question"}]}`)
	if code != 400 || !strings.Contains(body, "nothing to do") {
		t.Errorf("a run sent again: %d %s", code, body)
	}

	// Nothing was decided, and thread a's call still runs when a decides.
	if _, err := os.Stat(filepath.Join(f.ws, "x.txt")); err == nil {
		t.Fatal("x.txt was made before anyone approved")
	}
	code, body = f.do("POST", serve.AGUIPath, `{"threadId":"a","runId":"r2","messages":[],"resume":[{"interruptId":"`+park+`","status":"resolved","payload":{"approved":true}}]}`)
	if code != 200 || !strings.Contains(body, `"stopReason":"answered"`) {
		t.Fatalf("the resume: %d %s", code, body)
	}
	if b, err := os.ReadFile(filepath.Join(f.ws, "x.txt")); err != nil || string(b) != "x\n" {
		t.Errorf("x.txt: %q %v", b, err)
	}
}
