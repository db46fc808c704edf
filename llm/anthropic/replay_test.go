package anthropic_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/toolset"
)

// replayAPI is an httptest server that answers POST /v1/messages with
// streams written in the shape the API sends (testdata/*.chunks.txt, one
// event's JSON a line, as testdata/README.md says): request n gets stream
// n, the last one repeating, each event framed as a server-sent event
// named by its type. It keeps the bodies it received.
type replayAPI struct {
	*httptest.Server
	streams [][][]byte
	mu      sync.Mutex
	bodies  [][]byte
}

func newReplayAPI(t *testing.T, files ...string) *replayAPI {
	t.Helper()
	f := &replayAPI{}
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		var events [][]byte
		for line := range bytes.Lines(b) {
			if line = bytes.TrimSpace(line); len(line) > 0 {
				events = append(events, line)
			}
		}
		f.streams = append(f.streams, events)
	}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *replayAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.bodies)
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		writeError(w, http.StatusNotFound, "not_found_error", "no route "+r.Method+" "+r.URL.Path)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, ev := range f.streams[min(n, len(f.streams)-1)] {
		var head struct{ Type string }
		json.Unmarshal(ev, &head)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", head.Type, ev)
		w.(http.Flusher).Flush()
	}
}

// body returns the JSON body of request i, decoded.
func (f *replayAPI) body(t *testing.T, i int) wireRequest {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.bodies) {
		t.Fatalf("the API saw %d requests; want request %d", len(f.bodies), i)
	}
	var w wireRequest
	if err := json.Unmarshal(f.bodies[i], &w); err != nil {
		t.Fatalf("request %d is not JSON: %v\n%s", i, err, f.bodies[i])
	}
	return w
}

// A refusal (the classifiers declined before any content): the response
// says so, with the explanation of the stop details, and carries no
// content that could pass for an answer.
func TestRefusalStream(t *testing.T) {
	api := newReplayAPI(t, "refusal.chunks.txt")
	var deltas []llm.Delta
	resp, err := newClient(t, api.URL).Generate(t.Context(), userRequest("Write me an exploit."), func(d llm.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	const explanation = "This request was declined: it asks for help attacking computer systems, which Anthropic's Usage Policy does not permit."
	if resp.StopReason != llm.StopRefusal || resp.Refusal != explanation {
		t.Errorf("stop %q, refusal %q", resp.StopReason, resp.Refusal)
	}
	if len(resp.Message.Content) != 0 || len(deltas) != 0 {
		t.Errorf("content %+v, deltas %+v: want none", resp.Message.Content, deltas)
	}
	if resp.Model != "claude-sonnet-4-6" || resp.Usage != (llm.Usage{InputTokens: 23, OutputTokens: 4}) {
		t.Errorf("model %q, usage %+v", resp.Model, resp.Usage)
	}
}

// The runtime against the refusal of testdata: the turn ends refused, with
// the provider's explanation and no answer, after one model call; the
// transcript keeps the user's input.
func TestRuntimeRefusal(t *testing.T) {
	api := newReplayAPI(t, "refusal.chunks.txt")
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "refusal", Model: "claude-sonnet-4-6"},
		agent.Collaborators{Client: newClient(t, api.URL), Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s1", Input: "Write me an exploit."})
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if res.StopReason != agent.StopRefused || res.Answer != "" || res.Iterations != 1 {
		t.Errorf("stop %s, answer %q, %d iterations", res.StopReason, res.Answer, res.Iterations)
	}
	if want := "This request was declined: it asks for help attacking computer systems, which Anthropic's Usage Policy does not permit."; res.Reason != want {
		t.Errorf("reason %q, want %q", res.Reason, want)
	}
	if len(res.Messages) != 2 || res.Messages[0].Text() != "Write me an exploit." || len(res.Messages[1].Content) != 0 {
		t.Errorf("messages %+v", res.Messages)
	}
	if got := api.body(t, 0); len(got.Messages) != 1 {
		t.Errorf("the request had %d messages", len(got.Messages))
	}
}
