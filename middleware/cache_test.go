package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/middleware"
)

// conversation returns a request in the middle of a turn: messages 0–3 are
// the cache-sensitive prefix, message 4 is the newest user turn.
func conversation() *llm.Request {
	return &llm.Request{
		Model:  "m1",
		System: "You are careful.",
		Tools: []llm.ToolDefinition{
			{Name: "Read", Description: "Reads a file.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			{Name: "Bash", Description: "Runs a command.", InputSchema: json.RawMessage(`{"type":"object","required":["cmd"]}`)},
		},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("read a.txt")}},
			{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("Reading."), llm.ToolUseBlock("tu1", "Read", json.RawMessage(`{"path":"a.txt"}`))}},
			{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock("tu1", "hello", false)}},
			{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("It says hello.")}},
			{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("and b.txt?")}},
		},
		MaxTokens: 1000,
		Metadata:  llm.Metadata{TraceID: "s1", Feature: llm.FeatureAgent},
	}
}

// prefixEdits change the cache-sensitive prefix, in place or by
// replacement; want is what the error must say changed.
var prefixEdits = []struct {
	name string
	edit func(q *llm.Request) *llm.Request
	want string
}{
	{"system", func(q *llm.Request) *llm.Request { q.System += " Be brief."; return q }, "System changed"},
	{"new request, other system", func(q *llm.Request) *llm.Request {
		c := *q
		c.System = "other"
		return &c
	}, "System changed"},
	{"add a tool", func(q *llm.Request) *llm.Request {
		q.Tools = append(q.Tools, llm.ToolDefinition{Name: "Grep"})
		return q
	}, "Tools changed from 2 to 3"},
	{"tool description", func(q *llm.Request) *llm.Request { q.Tools[1].Description = "x"; return q }, "Tools[1] (Bash) changed"},
	{"tool schema bytes in place", func(q *llm.Request) *llm.Request { q.Tools[0].InputSchema[2] = 'T'; return q }, "Tools[0] (Read) changed"},
	{"text in place", func(q *llm.Request) *llm.Request { q.Messages[0].Content[0].Text = "read b.txt"; return q }, "Messages[0] (user) changed"},
	{"tool_use input bytes in place", func(q *llm.Request) *llm.Request {
		q.Messages[1].Content[1].Input[2] = 'P'
		return q
	}, "Messages[1] (assistant) changed"},
	{"tool_use id", func(q *llm.Request) *llm.Request { q.Messages[1].Content[1].ID = "tu9"; return q }, "Messages[1] (assistant) changed"},
	{"tool_use name", func(q *llm.Request) *llm.Request { q.Messages[1].Content[1].Name = "Bash"; return q }, "Messages[1] (assistant) changed"},
	{"block added", func(q *llm.Request) *llm.Request {
		q.Messages[1].Content = append(q.Messages[1].Content, llm.TextBlock("more"))
		return q
	}, "Messages[1] (assistant) changed"},
	{"tool_result tool_use_id", func(q *llm.Request) *llm.Request { q.Messages[2].Content[0].ToolUseID = "tu2"; return q }, "Messages[2] (user) changed"},
	{"tool_result content", func(q *llm.Request) *llm.Request { q.Messages[2].Content[0].Content = "[redacted]"; return q }, "Messages[2] (user) changed"},
	{"tool_result is_error", func(q *llm.Request) *llm.Request { q.Messages[2].Content[0].IsError = true; return q }, "Messages[2] (user) changed"},
	{"role", func(q *llm.Request) *llm.Request { q.Messages[3].Role = llm.RoleUser; return q }, "Messages[3] (assistant) changed"},
	{"history dropped", func(q *llm.Request) *llm.Request { q.Messages = q.Messages[2:]; return q }, "Messages[0] (user) changed"},
	{"history truncated", func(q *llm.Request) *llm.Request { q.Messages = q.Messages[:2]; return q }, "Messages[2] (user) removed"},
}

func TestCacheGuardRefusesPrefixChanges(t *testing.T) {
	for _, tc := range prefixEdits {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range []struct {
				allow  bool
				reason string
				why    string
			}{
				{false, "", "not registered with AllowCacheInvalidation"},
				{false, "new instructions", "not registered with AllowCacheInvalidation"},
				{true, "", "no Metadata.CacheInvalidationReason"},
			} {
				r := middleware.NewRegistry()
				var opts []middleware.Option
				if c.allow {
					opts = append(opts, middleware.AllowCacheInvalidation())
				}
				mustRegister(t)(r.RegisterLLMRequest("rewriter", func(ctx context.Context, q *llm.Request) (*llm.Request, error) {
					return tc.edit(q), nil
				}, opts...))
				req := conversation()
				req.Metadata.CacheInvalidationReason = c.reason
				provider := 0
				_, err := callModel(r, req, &provider)
				checkNamed(t, err, middleware.LLMRequest, "rewriter", middleware.ErrCacheInvalidation)
				if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), c.why) {
					t.Errorf("allow=%v reason=%q: err = %v, want it to say %q and %q", c.allow, c.reason, err, tc.want, c.why)
				}
				if provider != 0 {
					t.Errorf("the provider was called %d times after the guard refused", provider)
				}
			}
		})
	}
}

func TestCacheGuardAllowsPrefixChangesWithOptionAndReason(t *testing.T) {
	for _, tc := range prefixEdits {
		t.Run(tc.name, func(t *testing.T) {
			r := middleware.NewRegistry()
			mustRegister(t)(r.RegisterLLMRequest("rewriter", func(ctx context.Context, q *llm.Request) (*llm.Request, error) {
				return tc.edit(q), nil
			}, middleware.AllowCacheInvalidation()))
			req := conversation()
			req.Metadata.CacheInvalidationReason = "skills reloaded"
			provider := 0
			if _, err := callModel(r, req, &provider); err != nil || provider != 1 {
				t.Errorf("err = %v, provider calls = %d", err, provider)
			}
		})
	}
}

func TestCacheGuardAlwaysAllowsTheNewestUserTurnAndWhatIsNotPrefix(t *testing.T) {
	edits := map[string]func(q *llm.Request){
		"append a block to the newest turn": func(q *llm.Request) {
			q.Messages[4].Content = append(q.Messages[4].Content, llm.TextBlock("<reminder>"))
		},
		"rewrite the newest turn in place": func(q *llm.Request) { q.Messages[4].Content[0].Text = "and c.txt?" },
		"replace the newest turn": func(q *llm.Request) {
			q.Messages[4] = llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("x")}}
		},
		"add a user message": func(q *llm.Request) {
			q.Messages = append(q.Messages, llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("p.s.")}})
		},
		"drop the newest turn": func(q *llm.Request) { q.Messages = q.Messages[:4] },
		"model, max tokens and metadata": func(q *llm.Request) {
			q.Model, q.MaxTokens, q.Metadata.Component = "m2", 5, "tagged"
		},
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			r := middleware.NewRegistry()
			mustRegister(t)(r.RegisterLLMRequest("editor", func(ctx context.Context, q *llm.Request) (*llm.Request, error) {
				edit(q)
				return q, nil
			}))
			if _, err := r.ApplyLLMRequest(context.Background(), conversation()); err != nil {
				t.Error(err)
			}
		})
	}
}

// The newest user turn is the trailing run of user messages: several tool
// results after the last assistant message are all editable, and a request
// that ends with an assistant message has all of it in the prefix.
func TestCacheGuardPrefixEndsBeforeTheTrailingUserMessages(t *testing.T) {
	r := middleware.NewRegistry()
	target := 0
	mustRegister(t)(r.RegisterLLMRequest("editor", func(ctx context.Context, q *llm.Request) (*llm.Request, error) {
		q.Messages[target].Content[0].Text += "!"
		return q, nil
	}))
	req := conversation()
	req.Messages = append(req.Messages[:4], // ends with the assistant's text
		llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock("a", "1", false)}},
		llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock("b", "2", false)}})
	for _, target = range []int{4, 5} {
		if _, err := r.ApplyLLMRequest(context.Background(), req); err != nil {
			t.Errorf("editing Messages[%d] of the trailing user run: %v", target, err)
		}
	}
	req = conversation()
	req.Messages = req.Messages[:4]
	target = 3
	_, err := r.ApplyLLMRequest(context.Background(), req)
	if !errors.Is(err, middleware.ErrCacheInvalidation) || !strings.Contains(err.Error(), "Messages[3]") {
		t.Errorf("editing the final assistant message: %v", err)
	}
}

// A middleware cannot grant itself the reason: it must be on the request
// the runtime passed in.
func TestCacheGuardIgnoresAReasonSetByMiddleware(t *testing.T) {
	r := middleware.NewRegistry()
	mustRegister(t)(r.RegisterLLMRequest("sneaky", func(ctx context.Context, q *llm.Request) (*llm.Request, error) {
		q.Metadata.CacheInvalidationReason = "because I say so"
		q.System = "new"
		return q, nil
	}, middleware.AllowCacheInvalidation()))
	_, err := r.ApplyLLMRequest(context.Background(), conversation())
	checkNamed(t, err, middleware.LLMRequest, "sneaky", middleware.ErrCacheInvalidation)
}

// Each middleware is judged against the output of the one before it: after
// an allowed change, a later middleware that leaves the new prefix alone
// passes, and one that changes it again is refused by name.
func TestCacheGuardJudgesEachMiddlewareAgainstItsInput(t *testing.T) {
	r := middleware.NewRegistry()
	mustRegister(t)(r.RegisterLLMRequest("reload", func(ctx context.Context, q *llm.Request) (*llm.Request, error) {
		q.System = "reloaded"
		return q, nil
	}, middleware.AllowCacheInvalidation(), middleware.Priority(1)))
	mustRegister(t)(r.RegisterLLMRequest("reminder", func(ctx context.Context, q *llm.Request) (*llm.Request, error) {
		if q.System != "reloaded" {
			t.Errorf("reminder saw system %q", q.System)
		}
		last := &q.Messages[len(q.Messages)-1]
		last.Content = append(last.Content, llm.TextBlock("<reminder>"))
		return q, nil
	}, middleware.Priority(2)))
	req := conversation()
	req.Metadata.CacheInvalidationReason = "skills reloaded"
	got, err := r.ApplyLLMRequest(context.Background(), req)
	if err != nil || got.System != "reloaded" || len(got.Messages[4].Content) != 2 {
		t.Fatalf("got %+v, %v", got, err)
	}

	mustRegister(t)(r.RegisterLLMRequest("meddler", func(ctx context.Context, q *llm.Request) (*llm.Request, error) {
		q.Messages[0].Content[0].Text = "changed"
		return q, nil
	}, middleware.Priority(3)))
	req = conversation()
	req.Metadata.CacheInvalidationReason = "skills reloaded"
	_, err = r.ApplyLLMRequest(context.Background(), req)
	checkNamed(t, err, middleware.LLMRequest, "meddler", middleware.ErrCacheInvalidation)
	if !strings.Contains(err.Error(), "Messages[0] (user) changed") {
		t.Errorf("err = %v", err)
	}
}

// callModel makes a model call the way the agent loop does: the
// llm_request chain once, then the llm_execution chain around the provider.
func callModel(r *middleware.Registry, req *llm.Request, providerCalls *int) (*llm.Response, error) {
	ctx := context.Background()
	req, err := r.ApplyLLMRequest(ctx, req)
	if err != nil {
		return nil, err
	}
	resp, _, err := r.ExecuteLLM(ctx, req, func(ctx context.Context, q *llm.Request) (*llm.Response, error) {
		*providerCalls++
		return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant}}, nil
	})
	return resp, err
}
