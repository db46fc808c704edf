package agent_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/sandbox"
	"github.com/orca-agent/orca/toolset"
)

// A tool a deny rule names outright — by its name, an alias, its MCP
// server — is not offered to the model, as in Claude Code; a deny rule
// with a pattern leaves the tool offered (its other calls may run).
func TestToolsDeniedOutrightAreNotOffered(t *testing.T) {
	for _, tc := range []struct {
		deny []string
		gone []string
	}{
		{nil, nil},
		{[]string{"Bash"}, []string{"Bash"}},
		{[]string{"Agent", "WebFetch"}, []string{"Task", "WebFetch"}}, // Task's alias
		{[]string{"WebFetch(domain:example.com)"}, nil},
		{[]string{"Bash(rm *)", "Write(secrets/**)"}, nil},
		{[]string{"TaskOutput(*)", "Edit"}, []string{"AgentOutput", "Edit"}},
	} {
		rules, err := policy.ParseRules(nil, tc.deny, nil)
		if err != nil {
			t.Fatal(err)
		}
		pol, err := policy.New(policy.ModeBypass, rules)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var offered [][]string
		client := llm.ClientFunc(func(ctx context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Response, error) {
			var names []string
			for _, d := range req.Tools {
				names = append(names, d.Name)
			}
			mu.Lock()
			offered = append(offered, names)
			mu.Unlock()
			return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("ok")}}, StopReason: llm.StopEndTurn}, nil
		})
		rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "offer"}, agent.Collaborators{Client: client, Workspace: t.TempDir(), Policy: pol,
			Sandbox: &sandbox.Runner{Disabled: true}})
		if err != nil {
			t.Fatal(err)
		}
		all := rt.Tools().Names()
		for range 2 { // the second call is served from the cache
			if res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "hi"}); err != nil || res.StopReason != agent.StopAnswered {
				t.Fatalf("%v: %+v, %v", tc.deny, res, err)
			}
		}
		rt.Close()
		want := slices.DeleteFunc(slices.Clone(all), func(n string) bool { return slices.Contains(tc.gone, n) })
		for i, got := range offered {
			if !slices.Equal(got, want) {
				t.Errorf("deny %v, call %d: offered %v, want %v", tc.deny, i+1, got, want)
			}
		}
	}
}
