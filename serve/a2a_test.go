package serve_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/serve"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/toolset"
)

// TestA2AWithTheOfficialClient: the A2A protocol's own client (from npm)
// reads orca serve's agent card, streams a task that runs a turn with a
// tool call to its answer (status and artifact updates), gets the task;
// a second message answers a call parked for approval, and the task
// completes; a cancel mid-turn ends its task canceled. What the card does
// not offer (push notifications) is refused; an unknown task is an error.
func TestA2AWithTheOfficialClient(t *testing.T) {
	sdk, node := os.Getenv("ORCA_A2A_SDK"), os.Getenv("ORCA_NODE22")
	if sdk == "" || node == "" {
		t.Skip("ORCA_A2A_SDK and ORCA_NODE22 name no A2A SDK and node to run it")
	}
	started := make(chan struct{}, 1)
	wait := tool.New("Wait", "Waits until cancelled.", func(ctx context.Context, in struct{}) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	}, tool.ReadOnly())
	f := newFixture(t, app.Config{ToolProviders: append(toolset.Default(), tool.Static("wait", wait))}, serve.Options{})
	os.WriteFile(filepath.Join(f.ws, "a.txt"), []byte("hello from a.txt\n"), 0o644)
	f.model.Script("c1", script.Call("Read", map[string]string{"file_path": "a.txt"}), script.Text("a.txt says hello."))
	f.model.Script("c2", script.Call("Bash", map[string]string{"command": "echo made > made.txt"}), script.Text("Made it."))
	f.model.Script("c3", script.Call("Wait", map[string]any{}), script.Text("never"))
	f.model.Script("c4", script.Text("Hello from a 1.0 server."))

	script, _ := filepath.Abs("testdata/a2a-client.mjs")
	cmd := exec.CommandContext(t.Context(), node, script)
	cmd.Env = append(os.Environ(), "A2A_SDK="+sdk, "BASE="+f.http.URL, "TOKEN="+token)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the client: %v\n%s\n%s", err, out, stderr.String())
	}
	var r struct {
		Card struct {
			Name                string
			Capabilities        map[string]bool
			SupportedInterfaces []struct{ URL, ProtocolBinding string }
			SecuritySchemes     map[string]json.RawMessage
			Skills              []struct{ ID, Name string }
		}
		Stream1, Stream3 []brief
		Task1            struct {
			State     string
			Artifacts []string
		}
		Parked, Resumed brief
		Cancelled       string
		Push            string
		UnknownTask     string
		LegacyCard      struct{ URL, ProtocolVersion string }
		Legacy          brief
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.Card.Name != "orca" || !r.Card.Capabilities["streaming"] || r.Card.Capabilities["pushNotifications"] || len(r.Card.SupportedInterfaces) != 2 ||
		r.Card.SupportedInterfaces[0].URL != f.http.URL+serve.A2APath || r.Card.SecuritySchemes["bearer"] == nil {
		t.Errorf("card: %+v", r.Card)
	}
	got := func(bs []brief) string {
		var out []string
		for _, b := range bs {
			out = append(out, strings.TrimSpace(b.Kind+" "+strings.TrimPrefix(b.State, "TASK_STATE_")+" "+b.Text))
		}
		return strings.Join(out, "\n")
	}
	if s := got(r.Stream1); s != "task SUBMITTED\nstatusUpdate WORKING\nstatusUpdate WORKING Running Read a.txt\nartifactUpdate  a.txt says hello.\nstatusUpdate COMPLETED" {
		t.Errorf("the stream:\n%s", s)
	}
	if r.Task1.State != "TASK_STATE_COMPLETED" || strings.Join(r.Task1.Artifacts, "") != "a.txt says hello." {
		t.Errorf("the task: %+v", r.Task1)
	}
	if r.Parked.State != "TASK_STATE_INPUT_REQUIRED" || !strings.Contains(r.Parked.Text, `The Bash call park_`) || !strings.Contains(r.Parked.Text, `Reply "approve" to run it`) ||
		r.Resumed.State != "TASK_STATE_COMPLETED" || r.Resumed.TaskID != r.Parked.TaskID || strings.Join(r.Resumed.Artifacts, "") != "Made it." {
		t.Errorf("parked %+v, resumed %+v", r.Parked, r.Resumed)
	}
	if b, err := os.ReadFile(filepath.Join(f.ws, "made.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("the approved call's file: %q %v", b, err)
	}
	if s := got(r.Stream3); !strings.HasSuffix(s, "statusUpdate WORKING Running Wait\nstatusUpdate CANCELED") || r.Cancelled != "TASK_STATE_CANCELED" {
		t.Errorf("cancelled: %q\n%s", r.Cancelled, s)
	}
	select {
	case <-started:
	default:
		t.Error("the Wait call never ran")
	}
	if !strings.Contains(r.Push, "Push Notification is not supported") || !strings.Contains(r.UnknownTask, "task not found") {
		t.Errorf("push %q, unknown task %q", r.Push, r.UnknownTask)
	}

	// The protocol's previous version, on its own endpoint, by the SDK's
	// client of it.
	if r.LegacyCard.URL != f.http.URL+serve.A2AV03Path || r.LegacyCard.ProtocolVersion != "0.3" || r.Legacy.State != "TASK_STATE_COMPLETED" || strings.Join(r.Legacy.Artifacts, "") != "Hello from a 1.0 server." {
		t.Errorf("0.3: card read as one %v, %+v", r.LegacyCard, r.Legacy)
	}

	// The endpoint: the token, JSON, and a task of another context.
	task1 := r.Stream1[0].TaskID
	for _, c := range []struct {
		body, auth string
		code       int
		says       string
	}{
		{`{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}`, "", 401, "no bearer token"},
		{`{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}`, "wrong", 401, "the bearer token is wrong"},
		{`{"jsonrpc": "2.0", "id": 1, "method"`, token, 200, `"code":-32700`},
		{`{"jsonrpc": "2.0", "id": 2, "method": "NoSuchMethod", "params": {}}`, token, 200, `"code":-32601`},
		{`{"jsonrpc": "2.0", "id": 3, "method": "SendMessage", "params": {"message": {"messageId": "x1", "contextId": "c3", "taskId": "` + task1 + `", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}}`, token, 200, `"error"`},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", f.http.URL+serve.A2APath, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		if c.auth != "" {
			req.Header.Set("Authorization", "Bearer "+c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || !strings.Contains(string(b), c.says) {
			t.Errorf("%s: %d %s, want %d saying %s", c.body, resp.StatusCode, b, c.code, c.says)
		}
	}
}

type brief struct {
	Kind, State, Text, TaskID string
	Artifacts                 []string
}
