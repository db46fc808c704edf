package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/catalog"
	"github.com/orca-agent/orca/llm/anthropic"
	"github.com/orca-agent/orca/llm/openai"
)

// reply is one response of a fake model API: text, then, if tool is set,
// one call of that tool with input (JSON). finish, if set, is the
// response's stop reason (finish_reason) as the API spells it.
type reply struct {
	text, tool, input, finish string
	// rateLimited answers 429, to retry after 10 ms, in the API's form.
	rateLimited bool
	// inputTokens is the usage's prompt tokens (1000 if zero).
	inputTokens int
	// overloadedMidStream (Anthropic's API) ends the stream after the
	// text with an overloaded_error event, as the API does when it is
	// overloaded mid-answer.
	overloadedMidStream bool
}

// fakeModelAPI is an httptest server that speaks Anthropic's Messages API
// (POST /v1/messages) or OpenAI's Chat Completions (POST
// /v1/chat/completions) as a server-sent-event stream, in the wire format
// of the APIs (the same as llm/anthropic's and llm/openai's test servers,
// cut down): request n gets replies[n], starting over after the last one.
// It keeps the requests it received.
type fakeModelAPI struct {
	*httptest.Server
	anthropic bool
	replies   []reply
	// next, when set, answers each request instead of replies.
	next func(fakeRequest) reply
	// window, when set, is the largest request body the server takes,
	// in bytes: a larger one is refused as too long (400), in the API's
	// words, which name the window in tokens (four bytes each); refused
	// counts them.
	window  int
	refused int

	mu       sync.Mutex
	requests []fakeRequest
}

// fakeRequest is one request a fakeModelAPI received.
type fakeRequest struct {
	path   string
	header http.Header
	body   map[string]any
	raw    string
}

func newFakeModelAPI(t *testing.T, anthropicAPI bool, replies ...reply) *fakeModelAPI {
	t.Helper()
	f := &fakeModelAPI{anthropic: anthropicAPI, replies: replies}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeModelAPI) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	json.Unmarshal(raw, &body)
	f.mu.Lock()
	n := len(f.requests)
	req := fakeRequest{path: r.URL.Path, header: r.Header.Clone(), body: body, raw: string(raw)}
	f.requests = append(f.requests, req)
	tooLong := f.window > 0 && len(raw) > f.window
	var rp reply
	switch {
	case tooLong:
		f.refused++
	case f.next != nil:
		rp = f.next(req)
	default:
		rp = f.replies[n%len(f.replies)]
	}
	f.mu.Unlock()
	if tooLong {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		if f.anthropic {
			fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: %d tokens > %d maximum"}}`, len(raw)/4, f.window/4)
		} else {
			fmt.Fprintf(w, `{"error":{"message":"This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, f.window/4, len(raw)/4)
		}
		return
	}

	want := "/v1/chat/completions"
	if f.anthropic {
		want = "/v1/messages"
	}
	if r.Method != http.MethodPost || r.URL.Path != want {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"not_found_error","message":"no route %s %s"}}`, r.Method, r.URL.Path)
		return
	}
	if rp.rateLimited {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("retry-after-ms", "10")
		w.WriteHeader(http.StatusTooManyRequests)
		if f.anthropic {
			io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`)
		} else {
			io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
		}
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	model, _ := body["model"].(string)
	if f.anthropic {
		writeAnthropicStream(w, model, rp)
	} else {
		writeOpenAIStream(w, model, rp)
	}
}

// seen returns the requests received so far.
func (f *fakeModelAPI) seen() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.requests...)
}

type obj = map[string]any

// sse writes one server-sent event (no event line if typ is empty).
func sse(w io.Writer, typ string, data any) {
	b, _ := json.Marshal(data)
	if typ != "" {
		fmt.Fprintf(w, "event: %s\n", typ)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	w.(http.Flusher).Flush()
}

// pieces cuts s into pieces of at most n bytes, so that the client has
// deltas to join.
func pieces(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// writeAnthropicStream streams rp as the Messages API does: message_start,
// a content block per text and tool call (start, deltas, stop),
// message_delta with the stop reason and usage, message_stop.
func writeAnthropicStream(w io.Writer, model string, rp reply) {
	sse(w, "message_start", obj{"type": "message_start", "message": obj{
		"id": "msg_01", "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": obj{"input_tokens": cmp.Or(rp.inputTokens, 1000), "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1},
	}})
	sse(w, "ping", obj{"type": "ping"})
	i := 0
	if rp.text != "" {
		sse(w, "content_block_start", obj{"type": "content_block_start", "index": i, "content_block": obj{"type": "text", "text": ""}})
		for _, p := range pieces(rp.text, 7) {
			sse(w, "content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": obj{"type": "text_delta", "text": p}})
		}
		if rp.overloadedMidStream {
			sse(w, "error", obj{"type": "error", "error": obj{"type": "overloaded_error", "message": "Overloaded"}})
			return
		}
		sse(w, "content_block_stop", obj{"type": "content_block_stop", "index": i})
		i++
	}
	stop := "end_turn"
	if rp.tool != "" {
		stop = "tool_use"
		sse(w, "content_block_start", obj{"type": "content_block_start", "index": i,
			"content_block": obj{"type": "tool_use", "id": fmt.Sprintf("toolu_%02d", i), "name": rp.tool, "input": obj{}}})
		for _, p := range pieces(rp.input, 9) {
			sse(w, "content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": obj{"type": "input_json_delta", "partial_json": p}})
		}
		sse(w, "content_block_stop", obj{"type": "content_block_stop", "index": i})
	}
	stop = cmp.Or(rp.finish, stop)
	sse(w, "message_delta", obj{"type": "message_delta", "delta": obj{"stop_reason": stop, "stop_sequence": nil}, "usage": obj{"output_tokens": 50}})
	sse(w, "message_stop", obj{"type": "message_stop"})
}

// writeOpenAIStream streams rp as Chat Completions do: a chunk with the
// role, content pieces, the tool call (id and name, then argument pieces),
// a chunk with the finish reason, one with the usage, and [DONE].
func writeOpenAIStream(w io.Writer, model string, rp reply) {
	chunk := func(delta obj, finish any) obj {
		return obj{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1764460800, "model": model, "usage": nil,
			"choices": []obj{{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
	}
	sse(w, "", chunk(obj{"role": "assistant", "content": ""}, nil))
	for _, p := range pieces(rp.text, 6) {
		sse(w, "", chunk(obj{"content": p}, nil))
	}
	finish := "stop"
	if rp.tool != "" {
		finish = "tool_calls"
		sse(w, "", chunk(obj{"tool_calls": []obj{{"index": 0, "id": "call_1", "type": "function", "function": obj{"name": rp.tool, "arguments": ""}}}}, nil))
		for _, p := range pieces(rp.input, 8) {
			sse(w, "", chunk(obj{"tool_calls": []obj{{"index": 0, "function": obj{"arguments": p}}}}, nil))
		}
	}
	sse(w, "", chunk(obj{}, cmp.Or(rp.finish, finish)))
	sse(w, "", obj{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1764460800, "model": model, "choices": []obj{},
		"usage": obj{"prompt_tokens": cmp.Or(rp.inputTokens, 1000), "completion_tokens": 50, "total_tokens": cmp.Or(rp.inputTokens, 1000) + 50}})
	fmt.Fprint(w, "data: [DONE]\n\n")
	w.(http.Flusher).Flush()
}

// noEnv is an environment without ORCA_PROVIDER and ORCA_MODEL, whatever
// the test process's is.
func noEnv(string) string { return "" }

// writeReplies are a model's replies that write hello.txt, then answer.
var writeReplies = []reply{
	{text: "I'll write it.", tool: "Write", input: `{"file_path":"hello.txt","content":"hello from a real provider\n"}`},
	{text: "Wrote hello.txt."},
}

// checkWrote checks a run whose model answered with writeReplies: the file
// on disk, the Write call and the turn_completed line.
func checkWrote(t *testing.T, ws, stdout string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ws, "hello.txt"))
	if err != nil || string(b) != "hello from a real provider\n" {
		t.Errorf("hello.txt on disk: %q, %v", b, err)
	}
	evs := parseEvents(t, stdout)
	tools := toolEvents(evs)
	if len(tools) != 1 || tools[0].str("tool_name") != "Write" || tools[0]["is_error"] != false {
		t.Errorf("tool events: %v", tools)
	}
	last := evs[len(evs)-1]
	if last.str("name") != "turn_completed" || last.str("stop_reason") != "answered" || last.str("answer") != "Wrote hello.txt." ||
		last["iterations"] != 2.0 || last["tool_calls"] != 1.0 {
		t.Errorf("last event: %v", last)
	}
	if u, _ := last["usage"].(map[string]any); u["output_tokens"] != 100.0 {
		t.Errorf("turn_completed usage: %v", last["usage"])
	}
}

// orca run against Anthropic's API (a fake one): the runtime, its tools,
// policy and store work with a real client as with the scripted one.
func TestRunAnthropic(t *testing.T) {
	t.Setenv(anthropic.APIKeyEnv, "sk-ant-test")
	t.Setenv(anthropic.BaseURLEnv, "")
	api := newFakeModelAPI(t, true, writeReplies...)
	ws := t.TempDir()
	o := options{configDir: t.TempDir(), getenv: noEnv}
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "anthropic", "--base-url", api.URL,
		"-w", ws, "--permission-mode", "accept-edits", "--timeline", "--json", "Write hello.txt")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	checkWrote(t, ws, stdout)
	reqs := api.seen()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	first, second := reqs[0], reqs[1]
	key := first.header.Get("X-Api-Key") + first.header.Get("Authorization")
	if !strings.Contains(key, "sk-ant-test") || first.body["model"] != anthropic.DefaultModel || first.body["stream"] != true {
		t.Errorf("first request: key %q, model %v, stream %v", key, first.body["model"], first.body["stream"])
	}
	for _, want := range []string{`"name":"Write"`, "Write hello.txt"} {
		if !strings.Contains(first.raw, want) {
			t.Errorf("the first request lacks %s", want)
		}
	}
	if !strings.Contains(second.raw, `"tool_result"`) || !strings.Contains(second.raw, `"tool_use_id":"toolu_01"`) {
		t.Errorf("the second request does not carry the Write's result: %s", second.raw)
	}
	if !strings.Contains(stderr, "events.jsonl") {
		t.Errorf("stderr does not say where the timeline is: %s", stderr)
	}
}

// runOpenAI runs one turn of prompt with --provider openai against api
// (model qwen3-coder, accept-edits, --json, no API key) in a new
// workspace, and returns the workspace and stdout; the run must succeed.
func runOpenAI(t *testing.T, api *fakeModelAPI, prompt string) (ws, stdout string) {
	t.Helper()
	t.Setenv(openai.APIKeyEnv, "")
	ws = t.TempDir()
	o := options{configDir: t.TempDir(), getenv: noEnv}
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "openai", "--base-url", api.URL+"/v1", "--model", "qwen3-coder",
		"-w", ws, "--permission-mode", "accept-edits", "--json", prompt)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	return ws, stdout
}

// orca run against an OpenAI-compatible server at --base-url, such as a
// local model's: no API key needed.
func TestRunOpenAI(t *testing.T) {
	api := newFakeModelAPI(t, false, writeReplies...)
	ws, stdout := runOpenAI(t, api, "Write hello.txt")
	checkWrote(t, ws, stdout)
	reqs := api.seen()
	if len(reqs) != 2 || reqs[0].body["model"] != "qwen3-coder" || reqs[1].body["model"] != "qwen3-coder" {
		t.Fatalf("requests: %v", reqs)
	}
	if !strings.Contains(reqs[1].raw, `"tool_call_id":"call_1"`) {
		t.Errorf("the second request does not carry the Write's result: %s", reqs[1].raw)
	}
}

// The settings choose the provider, the model, the base URL and the prices;
// the environment's model loses to the settings', and a flag wins over
// both.
func TestRunProviderFromSettings(t *testing.T) {
	t.Setenv(openai.APIKeyEnv, "")
	api := newFakeModelAPI(t, false, writeReplies...)
	configDir := t.TempDir()
	os.MkdirAll(filepath.Join(configDir, "orca"), 0o755)
	settings := fmt.Sprintf(`{"provider": "openai", "model": "local-coder", "base_url": %q,
		"prices": {"local-coder": {"input": 1000, "output": 10000}, "flag-coder": {"input": 2000, "output": 20000}}}`, api.URL+"/v1")
	if err := os.WriteFile(filepath.Join(configDir, "orca", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ORCA_PROVIDER": "anthropic", "ORCA_MODEL": "claude-from-env"}
	o := options{configDir: configDir, getenv: func(k string) string { return env[k] }}
	ws := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		args = append([]string{"run", "-w", ws, "--permission-mode", "accept-edits", "--json"}, args...)
		stdout, stderr, code := orcaWith(t, t.Context(), o, "", append(args, "Write hello.txt")...)
		if code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		checkWrote(t, ws, stdout)
	}
	run("--session", "s-settings")
	run("--session", "s-flag", "--model", "flag-coder")
	reqs := api.seen()
	var models []string
	for _, r := range reqs {
		m, _ := r.body["model"].(string)
		models = append(models, m)
	}
	if got := strings.Join(models, " "); got != "local-coder local-coder flag-coder flag-coder" {
		t.Errorf("models asked: %s", got)
	}

	// The settings' prices cost the session: 2000 tokens in, 100 out.
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "sessions", "-w", ws, "--json")
	if code != 0 {
		t.Fatalf("sessions: exit %d: %s", code, stderr)
	}
	var list struct {
		Sessions []struct {
			ID     string `json:"id"`
			Totals struct {
				CostUSD float64 `json:"cost_usd"`
			} `json:"totals"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(stdout), &list); err != nil {
		t.Fatalf("sessions --json: %v\n%s", err, stdout)
	}
	want := map[string]float64{"s-settings": 2000*1000/1e6 + 100*10000/1e6, "s-flag": 2000*2000/1e6 + 100*20000/1e6}
	for _, s := range list.Sessions {
		if w, ok := want[s.ID]; !ok || fmt.Sprintf("%.4f", s.Totals.CostUSD) != fmt.Sprintf("%.4f", w) {
			t.Errorf("session %s cost $%.4f, want $%.4f", s.ID, s.Totals.CostUSD, w)
		}
	}
	if len(list.Sessions) != 2 {
		t.Errorf("sessions: %s", stdout)
	}
}

func TestRunProviderErrors(t *testing.T) {
	t.Setenv(anthropic.APIKeyEnv, "")
	t.Setenv(openai.APIKeyEnv, "")
	t.Setenv(openai.BaseURLEnv, "")
	sc := writeScript(t, `{"text": "hi"}`)
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		{"none chosen", nil, nil, []string{"no model provider chosen", "--provider NAME", "ORCA_PROVIDER", `"provider" in a settings file`, "anthropic, anthropic-vertex, openai, openai-responses, azure, gemini, vertex, bedrock and script", "--script FILE"}},
		{"unknown flag provider", nil, []string{"--provider", "mistral"}, []string{`unknown provider "mistral" (chosen by --provider)`, "anthropic, anthropic-vertex, openai, openai-responses, azure, gemini, vertex, bedrock and script"}},
		{"unknown env provider", map[string]string{"ORCA_PROVIDER": "mistral"}, nil, []string{`unknown provider "mistral" (chosen by ORCA_PROVIDER)`}},
		{"anthropic without a key", nil, []string{"--provider", "anthropic"}, []string{"ANTHROPIC_API_KEY"}},
		{"anthropic from env without a key", map[string]string{"ORCA_PROVIDER": "anthropic"}, nil, []string{"ANTHROPIC_API_KEY", "chosen by ORCA_PROVIDER"}},
		{"openai without a key", nil, []string{"--provider", "openai"}, []string{"OPENAI_API_KEY", "OPENAI_BASE_URL"}},
		{"script without a script", nil, []string{"--provider", "script"}, []string{"--script FILE"}},
		{"script from env without a script", map[string]string{"ORCA_PROVIDER": "script"}, nil, []string{"--script FILE", "chosen by ORCA_PROVIDER"}},
		{"script and base URL", nil, []string{"--script", sc, "--base-url", "http://localhost:1"}, []string{"--base-url is for the model providers (anthropic, anthropic-vertex, openai, openai-responses, azure, gemini, vertex, bedrock), not script"}},
		{"script with another provider", nil, []string{"--script", sc, "--provider", "openai", "--base-url", "http://localhost:1"}, []string{"--script is for the script provider", "openai"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options{configDir: t.TempDir(), getenv: func(k string) string { return tc.env[k] }}
			stdout, stderr, code := orcaWith(t, t.Context(), o, "", append(append([]string{"run", "-w", t.TempDir()}, tc.args...), "--json", "hello")...)
			if code != exitUsage || stdout != "" {
				t.Errorf("exit %d, want %d; stdout %q", code, exitUsage, stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q: %s", w, stderr)
				}
			}
		})
	}
	// chat says it as run does.
	o := options{configDir: t.TempDir(), getenv: noEnv}
	if _, stderr, code := orcaWith(t, t.Context(), o, "", "chat", "-w", t.TempDir()); code != exitUsage || !strings.Contains(stderr, "no model provider chosen") {
		t.Errorf("chat: exit %d: %s", code, stderr)
	}
	// --script wins over the environment's provider.
	o.getenv = func(k string) string { return map[string]string{"ORCA_PROVIDER": "anthropic"}[k] }
	if _, stderr, code := orcaWith(t, t.Context(), o, "", "run", "-w", t.TempDir(), "--script", sc, "--json", "hello"); code != 0 {
		t.Errorf("--script with ORCA_PROVIDER=anthropic: exit %d: %s", code, stderr)
	}
}

// orca chat with a local OpenAI-compatible server: each line a turn, the
// --verify check after each, and the second turn sees the first.
func TestChatOpenAI(t *testing.T) {
	t.Setenv(openai.APIKeyEnv, "")
	api := newFakeModelAPI(t, false, append(writeReplies, reply{text: "It says hello."})...)
	ws := t.TempDir()
	o := options{configDir: t.TempDir(), getenv: noEnv}
	stdout, stderr, code := orcaWith(t, t.Context(), o, "Write hello.txt\nWhat does it say?\n", "chat", "--provider", "openai",
		"--base-url", api.URL+"/v1", "-w", ws, "--permission-mode", "accept-edits", "--verify", "test -f hello.txt")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"● Write hello.txt", "Wrote hello.txt.", "✓ verified: test -f hello.txt", "❯ What does it say?\n\nIt says hello.", "✓ answered"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	reqs := api.seen()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	if reqs[0].body["model"] != openai.DefaultModel {
		t.Errorf("model %v, want the default %s", reqs[0].body["model"], openai.DefaultModel)
	}
	if !strings.Contains(reqs[2].raw, "Wrote hello.txt.") || !strings.Contains(reqs[2].raw, "What does it say?") {
		t.Errorf("the second turn's request lacks the conversation: %s", reqs[2].raw)
	}
}

// The parallel setting reaches the provider: --max-parallel-tools 1, or
// the settings' maxParallelTools: 1, asks the model for one tool call per
// response; by default the API's own default (parallel) stands.
func TestMaxParallelToolsReachesTheProvider(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings string
		args     []string
		one      bool
	}{
		{"default", "", nil, false},
		{"flag", "", []string{"--max-parallel-tools", "1"}, true},
		{"settings", `{"maxParallelTools": 1}`, nil, true},
		{"flag over settings", `{"maxParallelTools": 1}`, []string{"--max-parallel-tools", "4"}, false},
	} {
		ws := t.TempDir()
		if tc.settings != "" {
			writeFileAt(t, ws, ".orca/settings.json", tc.settings)
		}
		api := newClaudeAPI(t, say("ok"))
		run := runClaude(t, ws, api, "hi", tc.args...)
		run.answered(t, "ok")
		if got := bytes.Contains(api.bodies[0], []byte(`"disable_parallel_tool_use":true`)); got != tc.one {
			t.Errorf("%s: disable_parallel_tool_use sent %v:\n%.300s", tc.name, got, api.bodies[0])
		}
	}
}

// /model NAME in orca chat: the session's next turns ask for that model,
// an alias resolved through the provider's table; /model alone says which.
func TestChatSwitchesModel(t *testing.T) {
	t.Setenv(anthropic.APIKeyEnv, "sk-ant-test")
	t.Setenv(anthropic.BaseURLEnv, "")
	api := newClaudeAPI(t, say("one"), say("two"), say("three"))
	ws := t.TempDir()
	input := "hello\n/model opus\nagain\n/model claude-haiku-5-5\nonce more\n/model\n/exit\n"
	stdout, stderr, code := orcaWith(t, t.Context(), options{configDir: t.TempDir(), getenv: noEnv}, input,
		"chat", "--provider", "anthropic", "--base-url", api.URL, "-w", ws, "--session", "m")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	reqs := api.requests(t)
	opus := catalog.Default().Aliases("anthropic")["opus"]
	if len(reqs) != 3 || reqs[0].model != anthropic.DefaultModel || reqs[1].model != opus || reqs[2].model != "claude-haiku-5-5" {
		var got []string
		for _, r := range reqs {
			got = append(got, r.model)
		}
		t.Fatalf("models asked for: %v (opus is %s)", got, opus)
	}
	for _, want := range []string{"Model: anthropic opus (" + opus + "), from the next turn of this session on.", "Model: anthropic claude-haiku-5-5\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

// A server that gives every tool call the same id (this fake one sends
// call_1 each time, as some OpenAI-compatible servers do) still gets a
// conversation whose calls have ids of their own, each result paired with
// its call: sent as it came, the third request would hold two calls
// call_1, which the providers refuse.
func TestRunServerRepeatsToolCallIDs(t *testing.T) {
	api := newFakeModelAPI(t, false,
		reply{tool: "Write", input: `{"file_path":"a.txt","content":"a\n"}`},
		reply{tool: "Write", input: `{"file_path":"b.txt","content":"b\n"}`},
		reply{text: "Wrote both."},
	)
	ws, stdout := runOpenAI(t, api, "Write a.txt and b.txt")
	var ids []string
	for _, ev := range toolEvents(parseEvents(t, stdout)) {
		ids = append(ids, ev.str("tool_use_id"))
	}
	if want := []string{"call_1", "call_1_2"}; !slices.Equal(ids, want) {
		t.Errorf("tool_exec_completed ids %q, want %q", ids, want)
	}
	reqs := api.seen()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	var calls, results []string
	for _, m := range reqs[2].body["messages"].([]any) {
		m := m.(map[string]any)
		for _, tc := range asSlice(m["tool_calls"]) {
			calls = append(calls, tc.(map[string]any)["id"].(string))
		}
		if id, ok := m["tool_call_id"].(string); ok {
			results = append(results, id)
		}
	}
	if want := []string{"call_1", "call_1_2"}; !slices.Equal(calls, want) || !slices.Equal(results, want) {
		t.Errorf("the third request's calls %q and results %q, want %q for both\n%s", calls, results, want, reqs[2].raw)
	}
	for _, f := range []string{"a.txt", "b.txt"} {
		if _, err := os.Stat(filepath.Join(ws, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// A response cut off at the output token limit (--max-tokens, sent to the
// provider) while it wrote a file runs none of its calls: the file is not
// written, half or at all, and the model is told why. An answer cut off
// there ends the run as max_tokens, exit 1. Both APIs' spellings.
func TestRunResponseCutOffAtMaxTokens(t *testing.T) {
	for _, api := range []struct {
		name      string
		anthropic bool
		provider  string
		finish    string
		limit     string // the request's field for --max-tokens
	}{
		{"openai", false, "openai", "length", "max_completion_tokens"},
		{"anthropic", true, "anthropic", "max_tokens", "max_tokens"},
	} {
		t.Run(api.name, func(t *testing.T) {
			t.Setenv(openai.APIKeyEnv, "")
			t.Setenv(anthropic.APIKeyEnv, "sk-ant-test")
			t.Setenv(anthropic.BaseURLEnv, "")
			fake := newFakeModelAPI(t, api.anthropic,
				reply{text: "Writing it.", tool: "Write", input: `{"file_path":"notes.md","content":"# Notes\nline one\nline tw`, finish: api.finish},
				reply{text: "It is too long, so here it is inst", finish: api.finish},
			)
			ws := t.TempDir()
			base := fake.URL
			if !api.anthropic {
				base += "/v1"
			}
			o := options{configDir: t.TempDir(), getenv: noEnv}
			stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", api.provider, "--base-url", base, "--model", "m",
				"-w", ws, "--permission-mode", "accept-edits", "--max-tokens", "300", "--json", "Write notes.md")
			if code != exitTurn {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitTurn, stdout, stderr)
			}
			if _, err := os.Stat(filepath.Join(ws, "notes.md")); !os.IsNotExist(err) {
				t.Errorf("notes.md: %v, want none", err)
			}
			if strings.Contains(stderr, "listener failed") {
				t.Errorf("an event was lost:\n%s", stderr)
			}
			evs := parseEvents(t, stdout)
			var blocked []string
			for _, ev := range evs {
				if ev.str("name") == "tool_blocked" {
					blocked = append(blocked, ev.str("tool_name")+" by "+ev.str("by"))
				}
			}
			if want := []string{"Write by max_tokens"}; !slices.Equal(blocked, want) {
				t.Errorf("tool_blocked %q, want %q", blocked, want)
			}
			last := evs[len(evs)-1]
			if last.str("stop_reason") != "max_tokens" || last.str("answer") != "It is too long, so here it is inst" ||
				last.str("reason") != "the answer was cut off at the output token limit (300 tokens)" {
				t.Errorf("last event: %v", last)
			}
			reqs := fake.seen()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			if reqs[0].body[api.limit] != 300.0 {
				t.Errorf("first request's %s: %v, want 300\n%s", api.limit, reqs[0].body[api.limit], reqs[0].raw)
			}
			if !strings.Contains(reqs[1].raw, "cut off at the output token limit (300 tokens)") {
				t.Errorf("the second request does not tell the model why its call did not run:\n%s", reqs[1].raw)
			}
			if !strings.Contains(stderr, "max_tokens") {
				t.Errorf("stderr does not say how the turn ended:\n%s", stderr)
			}
		})
	}
}

// Claude Code's apiKeyHelper: with no key in the environment, the user's
// settings' helper is run (in the workspace) and its output is the key of
// each request, for the time CLAUDE_CODE_API_KEY_HELPER_TTL_MS says; a
// project's helper runs only in a trusted workspace, and an untrusted
// one's says it was not applied.
func TestRunAPIKeyHelper(t *testing.T) {
	t.Setenv(anthropic.APIKeyEnv, "")
	t.Setenv(anthropic.AuthTokenEnv, "")
	t.Setenv(anthropic.BaseURLEnv, "")
	// Each run prints the next key: sk-helper-1, sk-helper-2…
	helper := `n=$(cat runs 2>/dev/null || echo 0); n=$((n+1)); echo $n > runs; echo sk-helper-$n`

	ws, cfg := t.TempDir(), t.TempDir()
	writeFileAt(t, cfg, "orca/settings.json", fmt.Sprintf(`{"apiKeyHelper": %q}`, helper))
	api := newClaudeAPI(t, use("Read", map[string]string{"file_path": "runs"}), say("Read it."))
	o := options{configDir: cfg, getenv: noEnv}
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "anthropic", "--base-url", api.URL, "-w", ws, "hi")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	api.mu.Lock()
	keys := slices.Clone(api.keys)
	api.mu.Unlock()
	// Two model calls within five minutes: one run of the helper.
	if !slices.Equal(keys, []string{"sk-helper-1", "sk-helper-1"}) || readFile(t, ws, "runs") != "1\n" {
		t.Errorf("the requests' keys: %q; the helper's runs: %q", keys, readFile(t, ws, "runs"))
	}

	// A TTL that is not a number is a usage error naming the variable
	// (TestKeyLivesItsTTL, in llm/anthropic, has what a TTL does).
	o.getenv = func(k string) string {
		if k == "CLAUDE_CODE_API_KEY_HELPER_TTL_MS" {
			return "soon"
		}
		return ""
	}
	_, stderr, code = orcaWith(t, t.Context(), o, "", "run", "--provider", "anthropic", "--base-url", api.URL, "-w", ws, "hi")
	if code != exitUsage || !strings.Contains(stderr, `CLAUDE_CODE_API_KEY_HELPER_TTL_MS="soon"`) {
		t.Errorf("a TTL that is not a number: exit %d, %s", code, stderr)
	}

	// A project's helper, in a workspace not trusted: not run, and said.
	other, cfg2 := t.TempDir(), t.TempDir()
	writeFileAt(t, other, ".claude/settings.json", fmt.Sprintf(`{"apiKeyHelper": %q}`, helper))
	_, stderr, code = orcaWith(t, t.Context(), options{configDir: cfg2, getenv: noEnv}, "", "run", "--provider", "anthropic", "--base-url", api.URL, "-w", other, "hi")
	if code != exitUsage || !strings.Contains(stderr, "apiKeyHelper") || !strings.Contains(stderr, "not trusted") || !strings.Contains(stderr, "no API key") || fileExists(filepath.Join(other, "runs")) {
		t.Errorf("an untrusted project's helper: exit %d\n%s", code, stderr)
	}
	// Trusted, it runs.
	api2 := newClaudeAPI(t, say("Trusted."))
	_, stderr, code = orcaWith(t, t.Context(), options{configDir: cfg2, getenv: noEnv}, "", "run", "--provider", "anthropic", "--base-url", api2.URL, "-w", other, "--trust", "hi")
	if code != 0 || len(api2.keys) != 1 || api2.keys[0] != "sk-helper-1" {
		t.Errorf("a trusted project's helper: exit %d, keys %q\n%s", code, api2.keys, stderr)
	}
}
