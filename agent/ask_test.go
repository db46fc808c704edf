package agent_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
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
