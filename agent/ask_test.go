package agent_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/sandbox"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/tool/builtin"
)

// fetchRuntime is a runtime of WebFetch alone over client, with pol, and
// the small model the alias haiku names.
func fetchRuntime(t *testing.T, client llm.Client, pol *policy.Policy, approvals agent.Approvals) *agent.Runtime {
	t.Helper()
	rt, err := agent.New(agent.Definition{Name: "web", Model: "big-1", ModelAliases: map[string]string{agent.SmallModelAlias: "small-1"},
		ToolProviders: []tool.Provider{builtin.WebProvider(builtin.WebOptions{})}},
		agent.Collaborators{Client: client, Workspace: t.TempDir(), Policy: pol, Approvals: approvals, Sandbox: &sandbox.Runner{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func site(t *testing.T, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func rules(t *testing.T, mode policy.Mode, allow ...string) *policy.Policy {
	t.Helper()
	rs, err := policy.ParseRules(allow, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.New(mode, rs)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A tool's question (WebFetch's prompt) goes to the small model, on a
// route of its own, without the conversation or its tools; the answer is
// the observation, and the question's usage is the turn's.
func TestToolAsksTheSmallModel(t *testing.T) {
	srv := site(t, "<p>The latest release is v9.1.</p>")
	client := script.New().
		Script("s", script.Call("WebFetch", map[string]string{"url": srv.URL, "prompt": "Which release is the latest?"}), script.Text("v9.1 it is")).
		Script(script.ToolRoute("s", "WebFetch"), script.Response{Text: "v9.1", Usage: &llm.Usage{InputTokens: 700, OutputTokens: 9}})
	rt := fetchRuntime(t, client, rules(t, policy.ModeDefault, "WebFetch(domain:127.0.0.1)"), nil)
	res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "Look it up."})
	if err != nil || res.StopReason != agent.StopAnswered {
		t.Fatalf("%+v, %v", res, err)
	}
	asked := client.CallsTo(script.ToolRoute("s", "WebFetch"))
	if len(asked) != 1 {
		t.Fatalf("%d questions", len(asked))
	}
	q := asked[0]
	if q.Model != "small-1" || len(q.Tools) != 0 || len(q.Messages) != 1 || !strings.Contains(q.System, "web page") ||
		!strings.Contains(q.Messages[0].Text(), "The latest release is v9.1.") || q.Metadata.Feature != llm.FeatureTool || q.Metadata.Component != "WebFetch" {
		t.Errorf("question: model %q, %d tools, %d messages, metadata %+v\n%s", q.Model, len(q.Tools), len(q.Messages), q.Metadata, q.Messages[0].Text())
	}
	obs := client.CallsTo("s")[1].Observations()
	if len(obs) != 1 || !strings.Contains(obs[0].Content, "<web-page-answer url=\""+srv.URL+"\">\nv9.1\n</web-page-answer>") {
		t.Errorf("observation %+v", obs)
	}
	if res.Usage.InputTokens != 700 || res.Usage.OutputTokens != 9 {
		t.Errorf("turn usage %+v: the question's is not counted", res.Usage)
	}
}

// The policy's rules, not its mode, let WebFetch reach an address in the
// user's network: bypass mode runs the call, the fetch is refused; a rule
// for the host, or an "always allow" approval kept for it, lets it through.
func TestToolChecksTheRules(t *testing.T) {
	srv := site(t, "<p>inside</p>")
	call := script.Call("WebFetch", map[string]string{"url": srv.URL})
	for _, c := range []struct {
		name    string
		pol     *policy.Policy
		approve []string // kept as approvals for the session
		fetched bool
	}{
		{"bypass", rules(t, policy.ModeBypass), nil, false},
		{"a rule for another host", rules(t, policy.ModeBypass, "WebFetch(domain:localhost)"), nil, false},
		{"a rule for the host", rules(t, policy.ModeDefault, "WebFetch(domain:127.0.0.1)"), nil, true},
		{"an approval kept", rules(t, policy.ModeBypass), []string{"WebFetch(domain:127.0.0.1)"}, true},
	} {
		client := script.New().Script("s", call, script.Text("ok"))
		approvals := &agent.MemoryApprovals{}
		rt := fetchRuntime(t, client, c.pol, approvals)
		if err := approvals.Grant(t.Context(), rt.ID(), "s", policy.ScopeSession, c.approve); err != nil {
			t.Fatal(err)
		}
		if _, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "Fetch."}); err != nil {
			t.Fatal(err)
		}
		obs := client.CallsTo("s")[1].Observations()
		got := len(obs) == 1 && !obs[0].IsError && strings.Contains(obs[0].Content, "\ninside\n")
		if got != c.fetched || (!got && !strings.Contains(obs[0].Content, "a permission rule must allow it, as WebFetch(domain:127.0.0.1)")) {
			b, _ := json.Marshal(obs)
			t.Errorf("%s: fetched %v, want %v: %s", c.name, got, c.fetched, b)
		}
	}
}

// searching is a model whose provider searches the web itself: it
// answers the conversation from script and a search from its own pages.
type searching struct {
	*script.Client
	mu       sync.Mutex
	searches []*llm.Request
}

func (s *searching) SearchesWeb(string) bool { return true }

func (s *searching) Generate(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	if req.WebSearch == nil {
		return s.Client.Generate(ctx, req, onDelta)
	}
	s.mu.Lock()
	s.searches = append(s.searches, req)
	s.mu.Unlock()
	return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("orca is an agent runtime.")}}, StopReason: llm.StopEndTurn,
		Usage: llm.Usage{InputTokens: 3000, OutputTokens: 40}, Sources: []llm.Source{{Title: "orca", URL: "https://github.com/orca-agent/orca"}}}, nil
}

// WebSearch with no backend configured asks the small model to search
// with its provider's own search: the request carries WebSearch and the
// domains, the pages come back as the observation, the tokens are the
// turn's.
func TestToolSearchesWithTheModel(t *testing.T) {
	c := &searching{Client: script.New().Script("s",
		script.Call("WebSearch", map[string]any{"query": "orca agent runtime", "blocked_domains": []string{"spam.example"}}), script.Text("found"))}
	rt := fetchRuntime(t, c, rules(t, policy.ModeDefault, "WebSearch"), nil)
	res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "What is orca?"})
	if err != nil || res.StopReason != agent.StopAnswered {
		t.Fatalf("%+v, %v", res, err)
	}
	if len(c.searches) != 1 || c.searches[0].Model != "small-1" || strings.Join(c.searches[0].WebSearch.Blocked, ",") != "spam.example" ||
		c.searches[0].Messages[0].Text() != "orca agent runtime" || len(c.searches[0].Tools) != 0 {
		t.Fatalf("searches %+v", c.searches)
	}
	obs := c.CallsTo("s")[1].Observations()
	if len(obs) != 1 || obs[0].IsError || !strings.Contains(obs[0].Content, "1. orca\n   https://github.com/orca-agent/orca") || !strings.Contains(obs[0].Content, "orca is an agent runtime.") {
		t.Errorf("observation %+v", obs)
	}
	if res.Usage.InputTokens != 3000 {
		t.Errorf("usage %+v", res.Usage)
	}
}
