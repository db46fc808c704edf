package app_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm/anthropic"
	"github.com/orca-agent/orca/llm/provider"
	"github.com/orca-agent/orca/subagent"
)

// seenRequest is what a fake API kept of one request.
type seenRequest struct {
	model string
	tools []string
}

// fakeAPI fakes a provider's streaming API — Anthropic's Messages or
// OpenAI's Chat Completions — for turns that delegate: a parent asked to
// "delegate to NAME" calls Task for subagent NAME, then answers once it
// has the result; a fork (its system prompt is "You are NAME.") answers
// at once, and so does a parent asked anything else. It keeps the model
// and tools of every request, by who sent it ("parent" or the subagent's
// name).
type fakeAPI struct {
	*httptest.Server
	openai bool
	mu     sync.Mutex
	seen   map[string][]seenRequest
}

var (
	forkPrompt = regexp.MustCompile(`You are ([a-z0-9-]+)\.`)
	delegate   = regexp.MustCompile(`delegate to ([a-z0-9-]+)`)
)

func newFakeAPI(t *testing.T, openai bool) *fakeAPI {
	f := &fakeAPI{openai: openai, seen: map[string][]seenRequest{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

// base is the base URL to give the provider.
func (f *fakeAPI) base() string {
	if f.openai {
		return f.URL + "/v1"
	}
	return f.URL
}

func (f *fakeAPI) requests(who string) []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[who]
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Model string `json:"model"`
		Tools []struct {
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	seen := seenRequest{model: req.Model}
	for _, t := range req.Tools {
		seen.tools = append(seen.tools, cmp.Or(t.Name, t.Function.Name))
	}
	who, text, call := "parent", "", ""
	switch m := forkPrompt.FindSubmatch(body); {
	case m != nil:
		who, text = string(m[1]), string(m[1])+" done"
	case bytes.Contains(body, []byte(`"tool_result"`)) || bytes.Contains(body, []byte(`"role":"tool"`)):
		text = "all done"
	default:
		if m := delegate.FindSubmatch(body); m != nil {
			call = string(m[1])
		} else {
			text = "answered"
		}
	}
	f.mu.Lock()
	f.seen[who] = append(f.seen[who], seen)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	input, _ := json.Marshal(map[string]any{"description": "delegate", "prompt": "go", "subagent_type": call})
	send := func(event string, data any) {
		b, _ := json.Marshal(data)
		if event != "" {
			fmt.Fprintf(w, "event: %s\n", event)
		}
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	type obj = map[string]any
	if f.openai {
		chunk := func(delta obj, finish any) obj {
			return obj{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": req.Model,
				"choices": []obj{{"index": 0, "delta": delta, "finish_reason": finish}}}
		}
		send("", chunk(obj{"role": "assistant", "content": ""}, nil))
		finish := "stop"
		if call != "" {
			finish = "tool_calls"
			send("", chunk(obj{"tool_calls": []obj{{"index": 0, "id": "call_1", "type": "function", "function": obj{"name": "Task", "arguments": string(input)}}}}, nil))
		} else {
			send("", chunk(obj{"content": text}, nil))
		}
		send("", chunk(obj{}, finish))
		send("", obj{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": req.Model, "choices": []obj{},
			"usage": obj{"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}})
		fmt.Fprint(w, "data: [DONE]\n\n")
		return
	}
	send("message_start", obj{"type": "message_start", "message": obj{"id": "msg_1", "type": "message", "role": "assistant", "model": req.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": obj{"input_tokens": 10, "output_tokens": 1}}})
	stop := "end_turn"
	if call != "" {
		stop = "tool_use"
		send("content_block_start", obj{"type": "content_block_start", "index": 0, "content_block": obj{"type": "tool_use", "id": "toolu_1", "name": "Task", "input": obj{}}})
		send("content_block_delta", obj{"type": "content_block_delta", "index": 0, "delta": obj{"type": "input_json_delta", "partial_json": string(input)}})
	} else {
		send("content_block_start", obj{"type": "content_block_start", "index": 0, "content_block": obj{"type": "text", "text": ""}})
		send("content_block_delta", obj{"type": "content_block_delta", "index": 0, "delta": obj{"type": "text_delta", "text": text}})
	}
	send("content_block_stop", obj{"type": "content_block_stop", "index": 0})
	send("message_delta", obj{"type": "message_delta", "delta": obj{"stop_reason": stop, "stop_sequence": nil}, "usage": obj{"output_tokens": 2}})
	send("message_stop", obj{"type": "message_stop"})
}

// agentsDir writes subagent definitions, front matter by name, to the
// folder dir (a workspace's .orca/agents or .claude/agents, or the user's
// ~/.claude/agents).
func agentsDir(t *testing.T, dir string, defs map[string]string) {
	for name, front := range defs {
		write(t, dir, name+".md", "---\nname: "+name+"\ndescription: The "+name+" agent.\n"+front+"---\nYou are "+name+".\n")
	}
}

// delegateAll runs one turn of a new session per subagent, in which the
// parent delegates to it.
func delegateAll(t *testing.T, cfg app.Config, names ...string) {
	t.Helper()
	a, err := app.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, name := range names {
		s, err := a.Session(t.Context(), app.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := s.Run(t.Context(), "delegate to "+name); err != nil || res.Answer != "all done" {
			t.Fatalf("delegating to %s: %+v, %v", name, res, err)
		}
	}
}

// Claude Code users' subagent files, unchanged in Claude Code's folders,
// under Anthropic: model: sonnet reaches the API as the newest Sonnet's
// id, inherit as the parent's model, a full id or a name that is no alias
// as written; Claude Code's variables pin an alias, and the settings'
// modelAliases win over both; tools: [] sends no tools at all,
// disallowedTools all but those.
func TestSubagentModelsReachTheAPI(t *testing.T) {
	t.Setenv(anthropic.APIKeyEnv, "sk-test")
	api := newFakeAPI(t, false)
	ws, cfgDir, claude := t.TempDir(), t.TempDir(), t.TempDir()
	agentsDir(t, filepath.Join(ws, ".claude/agents"), map[string]string{
		"aliased":   "model: sonnet\n",
		"inherits":  "model: inherit\n",
		"pinned":    "model: claude-sonnet-4-5-20250929\n",
		"aliaslike": "model: sonnet[1m]\n",
		"bare":      "tools: []\n",
	})
	agentsDir(t, filepath.Join(claude, "agents"), map[string]string{
		"fast":     "model: haiku\n",
		"deep":     "model: opus\ndisallowedTools: Write, Edit, Bash\n",
		"readonly": "tools: Read, Grep, Glob\n",
	})
	env := map[string]string{"ANTHROPIC_DEFAULT_HAIKU_MODEL": "claude-haiku-4-5-20251001"}
	cfg := app.Config{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: claude, Getenv: func(k string) string { return env[k] },
		Model: app.ModelConfig{Provider: "anthropic", Model: "claude-opus-4-8", BaseURL: api.base()}}
	write(t, cfgDir, "orca/settings.json", `{"env": {"ANTHROPIC_DEFAULT_OPUS_MODEL": "claude-opus-5"}}`)
	delegateAll(t, cfg, "aliased", "inherits", "pinned", "aliaslike", "fast", "deep", "bare", "readonly")
	for who, want := range map[string]string{
		"parent":    "claude-opus-4-8",
		"aliased":   "claude-sonnet-5-5",
		"inherits":  "claude-opus-4-8",
		"pinned":    "claude-sonnet-4-5-20250929",
		"aliaslike": "sonnet[1m]",
		"fast":      "claude-haiku-4-5-20251001", // the environment's
		"deep":      "claude-opus-5",             // the settings' env block's
		"bare":      "claude-opus-4-8",
		"readonly":  "claude-opus-4-8",
	} {
		reqs := api.requests(who)
		if len(reqs) == 0 {
			t.Errorf("%s sent no request", who)
		}
		for _, r := range reqs {
			if r.model != want {
				t.Errorf("%s's request names model %q, want %q", who, r.model, want)
			}
		}
	}
	if r := api.requests("bare"); len(r) != 1 || len(r[0].tools) != 0 {
		t.Errorf("the subagent with tools: [] was sent tools: %+v", r)
	}
	parentTools := api.requests("parent")[0].tools
	if r := api.requests("aliased"); len(r) != 1 || !slices.Equal(sorted(r[0].tools), sorted(parentTools)) {
		t.Errorf("the subagent without a tools key was not sent its parent's tools %v: %+v", parentTools, r)
	}
	if r := api.requests("readonly"); len(r) != 1 || !slices.Equal(sorted(r[0].tools), []string{"Glob", "Grep", "Read"}) {
		t.Errorf("the subagent with tools: Read, Grep, Glob was sent %+v", r)
	}
	if r := api.requests("deep"); len(r) != 1 || len(r[0].tools) != len(parentTools)-3 ||
		slices.ContainsFunc(r[0].tools, func(n string) bool { return n == "Write" || n == "Edit" || n == "Bash" }) {
		t.Errorf("the subagent with disallowedTools: Write, Edit, Bash was sent %+v (its parent %v)", r, parentTools)
	}

	// The settings' table wins over the provider's and Claude Code's
	// variables; a project's applies untrusted, like its model.
	write(t, cfgDir, "orca/settings.json", `{"modelAliases": {"sonnet": "claude-sonnet-5"}}`)
	write(t, ws, ".orca/settings.json", `{"modelAliases": {"haiku": "claude-haiku-4-5"}}`)
	delegateAll(t, cfg, "aliased", "fast")
	for who, want := range map[string]string{"aliased": "claude-sonnet-5", "fast": "claude-haiku-4-5"} {
		if r := api.requests(who); r[len(r)-1].model != want {
			t.Errorf("with the settings' aliases, %s's request names model %q, want %q", who, r[len(r)-1].model, want)
		}
	}
}

// A local OpenAI-compatible server has only the model the user named: an
// alias runs on it, and the log says so once, naming the file and the
// alias.
func TestSubagentAliasOnALocalServer(t *testing.T) {
	api := newFakeAPI(t, true)
	ws := t.TempDir()
	agentsDir(t, filepath.Join(ws, ".claude/agents"), map[string]string{"aliased": "model: sonnet\n", "bare": "tools: []\n"})
	var log logBuffer
	delegateAll(t, app.Config{Workspace: ws, ConfigDir: "-", Getenv: func(string) string { return "" },
		Logger: slog.New(slog.NewTextHandler(&log, nil)),
		Model:  app.ModelConfig{Provider: "openai", Model: "qwen3-coder", BaseURL: api.base()}}, "aliased", "aliased", "bare")
	for _, who := range []string{"parent", "aliased", "bare"} {
		reqs := api.requests(who)
		if len(reqs) == 0 {
			t.Errorf("%s sent no request", who)
		}
		for _, r := range reqs {
			if r.model != "qwen3-coder" {
				t.Errorf("%s's request names model %q, want the user's qwen3-coder", who, r.model)
			}
		}
	}
	if r := api.requests("bare"); len(r) != 1 || len(r[0].tools) != 0 {
		t.Errorf("the subagent with tools: [] was sent tools: %+v", r)
	}
	out := log.String()
	if n := strings.Count(out, "subagent model alias"); n != 1 || !strings.Contains(out, "alias=sonnet") || !strings.Contains(out, "aliased.md") {
		t.Errorf("want one warning naming the file and the alias, got %d:\n%s", n, out)
	}
}

// Every alias of Claude Code's files has a model on the providers with a
// table of their own (all but Azure, whose models are the user's
// deployments).
func TestProvidersKnowEveryAlias(t *testing.T) {
	for _, p := range provider.Names() {
		if p == provider.Azure {
			continue
		}
		table := provider.ModelAliases(provider.Config{Provider: p}, nil, nil)
		for _, alias := range subagent.ModelAliases() {
			if table[alias] == "" {
				t.Errorf("%s has no model for %s: %v", p, alias, table)
			}
		}
		if len(table) != len(subagent.ModelAliases()) {
			t.Errorf("%s's table %v has names that are no alias", p, table)
		}
	}
}

// logBuffer collects a log, safe for the goroutines that write it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func sorted(names []string) []string { return slices.Sorted(slices.Values(names)) }

// Claude Code's settings choose the model by alias too ("model": "sonnet"
// in ~/.claude/settings.json): the request names what the alias stands
// for, through the same table as a subagent's — Claude Code's variables,
// from the environment or a settings file's env block, pin it; a full id
// is sent as written; a model orca was given wins.
func TestClaudeSettingsModelAlias(t *testing.T) {
	t.Setenv(anthropic.APIKeyEnv, "sk-test")
	api := newFakeAPI(t, false)
	for _, tc := range []struct {
		name, settings string
		env            map[string]string
		model          string // given to orca
		want           string
	}{
		{name: "Alias", settings: `{"model": "sonnet"}`, want: "claude-sonnet-5-5"},
		{name: "AliasPinnedByTheEnvironment", settings: `{"model": "haiku"}`,
			env: map[string]string{"ANTHROPIC_SMALL_FAST_MODEL": "claude-haiku-4-5"}, want: "claude-haiku-4-5"},
		{name: "AliasPinnedByTheEnvBlock", settings: `{"model": "opus", "env": {"ANTHROPIC_DEFAULT_OPUS_MODEL": "claude-opus-4-8"}}`,
			env: map[string]string{"ANTHROPIC_DEFAULT_OPUS_MODEL": "claude-opus-4-1"}, want: "claude-opus-4-8"},
		{name: "FullID", settings: `{"model": "claude-sonnet-4-5-20250929"}`, want: "claude-sonnet-4-5-20250929"},
		{name: "ModelGiven", settings: `{"model": "sonnet"}`, model: "claude-opus-4-8", want: "claude-opus-4-8"},
		// An alias given to orca itself (--model opus) stands for the same.
		{name: "AliasGiven", settings: `{}`, model: "opus", env: map[string]string{"ANTHROPIC_DEFAULT_OPUS_MODEL": "claude-opus-4-8"}, want: "claude-opus-4-8"},
		{name: "AliasInORCA_MODEL", settings: `{}`, env: map[string]string{"ORCA_MODEL": "sonnet"}, want: "claude-sonnet-5-5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claude := t.TempDir()
			write(t, claude, "settings.json", tc.settings)
			a, err := app.Open(t.Context(), app.Config{Workspace: t.TempDir(), ConfigDir: "-", ClaudeDir: claude,
				Getenv: func(k string) string { return tc.env[k] },
				Model:  app.ModelConfig{Provider: "anthropic", Model: tc.model, BaseURL: api.base()}})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			if got := a.Model().Model; got != tc.want {
				t.Errorf("Model() = %q, want %q", got, tc.want)
			}
			before := len(api.requests("parent"))
			s, err := a.Session(t.Context(), app.SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res, err := s.Run(t.Context(), "hello"); err != nil || res.Answer != "answered" {
				t.Fatalf("run: %+v, %v", res, err)
			}
			if r := api.requests("parent"); len(r) != before+1 || r[before].model != tc.want {
				t.Errorf("the request names model %+v, want %q", r[before:], tc.want)
			}
		})
	}
}
