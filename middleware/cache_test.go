package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
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
// inPlace edits assign a field of a block the caller shares: only the
// strict guard sees those.
var prefixEdits = []struct {
	name    string
	edit    func(q *llm.Request) *llm.Request
	want    string
	inPlace bool
}{
	{"system", func(q *llm.Request) *llm.Request { q.System += " Be brief."; return q }, "System changed", false},
	{"new request, other system", func(q *llm.Request) *llm.Request {
		c := *q
		c.System = "other"
		return &c
	}, "System changed", false},
	{"add a tool", func(q *llm.Request) *llm.Request {
		q.Tools = append(q.Tools, llm.ToolDefinition{Name: "Grep"})
		return q
	}, "Tools changed from 2 to 3", false},
	{"tool description", func(q *llm.Request) *llm.Request { q.Tools[1].Description = "x"; return q }, "Tools[1] (Bash) changed", false},
	{"tool schema bytes in place", func(q *llm.Request) *llm.Request { q.Tools[0].InputSchema[2] = 'T'; return q }, "Tools[0] (Read) changed", true},
	{"text in place", func(q *llm.Request) *llm.Request { q.Messages[0].Content[0].Text = "read b.txt"; return q }, "Messages[0] (user) changed", true},
	{"tool_use input bytes in place", func(q *llm.Request) *llm.Request {
		q.Messages[1].Content[1].Input[2] = 'P'
		return q
	}, "Messages[1] (assistant) changed", true},
	{"tool_use id", func(q *llm.Request) *llm.Request { q.Messages[1].Content[1].ID = "tu9"; return q }, "Messages[1] (assistant) changed", true},
	{"tool_use name", func(q *llm.Request) *llm.Request { q.Messages[1].Content[1].Name = "Bash"; return q }, "Messages[1] (assistant) changed", true},
	{"block added", func(q *llm.Request) *llm.Request {
		q.Messages[1].Content = append(q.Messages[1].Content, llm.TextBlock("more"))
		return q
	}, "Messages[1] (assistant) changed", false},
	{"tool_result tool_use_id", func(q *llm.Request) *llm.Request { q.Messages[2].Content[0].ToolUseID = "tu2"; return q }, "Messages[2] (user) changed", true},
	{"tool_result content", func(q *llm.Request) *llm.Request { q.Messages[2].Content[0].Content = "[redacted]"; return q }, "Messages[2] (user) changed", true},
	{"tool_result is_error", func(q *llm.Request) *llm.Request { q.Messages[2].Content[0].IsError = true; return q }, "Messages[2] (user) changed", true},
	{"role", func(q *llm.Request) *llm.Request { q.Messages[3].Role = llm.RoleUser; return q }, "Messages[3] (assistant) changed", false},
	{"history dropped", func(q *llm.Request) *llm.Request { q.Messages = q.Messages[2:]; return q }, "Messages[0] (user) changed", false},
	{"history truncated", func(q *llm.Request) *llm.Request { q.Messages = q.Messages[:2]; return q }, "Messages[2] (user) removed", false},
}

func TestCacheGuardRefusesPrefixChanges(t *testing.T) {
	for _, tc := range prefixEdits {
		for _, strict := range []bool{false, true} {
			if tc.inPlace && !strict {
				continue
			}
			name := tc.name
			if strict {
				name += "/strict"
			}
			t.Run(name, func(t *testing.T) { refused(t, tc.edit, tc.want, strict) })
		}
	}
}

// refused checks that the guard refuses edit, saying want, in each way a
// middleware can lack the right to make it.
func refused(t *testing.T, edit func(q *llm.Request) *llm.Request, want string, strict bool) {
	t.Helper()
	{
		{
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
				r.SetStrictCacheGuard(strict)
				var opts []middleware.Option
				if c.allow {
					opts = append(opts, middleware.AllowCacheInvalidation())
				}
				mustRegister(t)(r.RegisterLLMRequest("rewriter", func(ctx context.Context, q *llm.Request) (*llm.Request, error) {
					return edit(q), nil
				}, opts...))
				req := conversation()
				req.Metadata.CacheInvalidationReason = c.reason
				provider := 0
				_, err := callModel(r, req, &provider)
				checkNamed(t, err, middleware.LLMRequest, "rewriter", middleware.ErrCacheInvalidation)
				if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), c.why) {
					t.Errorf("allow=%v reason=%q: err = %v, want it to say %q and %q", c.allow, c.reason, err, want, c.why)
				}
				if provider != 0 {
					t.Errorf("the provider was called %d times after the guard refused", provider)
				}
			}
		}
	}
}

func TestCacheGuardAllowsPrefixChangesWithOptionAndReason(t *testing.T) {
	for _, tc := range prefixEdits {
		t.Run(tc.name, func(t *testing.T) {
			r := middleware.NewRegistry()
			r.SetStrictCacheGuard(tc.inPlace)
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
	r.SetStrictCacheGuard(true) // the edits are made in place
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
		q.Messages[0] = llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("changed")}}
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

// By reference (the default), the guard sees a message replaced or
// re-sliced and takes a message rebuilt with the same content for the
// same; a middleware that edits in place a block it shares with the
// caller's transcript is caught by the strict guard, and the transcript
// is what it was for the caller to see.
func TestCacheGuardByReferenceAndStrict(t *testing.T) {
	rebuild := func(ctx context.Context, q *llm.Request) (*llm.Request, error) {
		for i, m := range q.Messages {
			q.Messages[i] = llm.Message{Role: m.Role, Content: append([]llm.Block(nil), m.Content...)}
		}
		return q, nil
	}
	for _, strict := range []bool{false, true} {
		r := middleware.NewRegistry()
		r.SetStrictCacheGuard(strict)
		mustRegister(t)(r.RegisterLLMRequest("rebuild", rebuild))
		if _, err := r.ApplyLLMRequest(context.Background(), conversation()); err != nil {
			t.Errorf("strict=%v: the same content rebuilt: %v", strict, err)
		}
	}
	r := middleware.NewRegistry()
	mustRegister(t)(r.RegisterLLMRequest("swap", func(ctx context.Context, q *llm.Request) (*llm.Request, error) {
		q.Messages[1] = q.Messages[3]
		return q, nil
	}))
	if _, err := r.ApplyLLMRequest(context.Background(), conversation()); !errors.Is(err, middleware.ErrCacheInvalidation) || !strings.Contains(err.Error(), "Messages[1] (assistant) changed") {
		t.Errorf("a message replaced: %v", err)
	}

	// The caller's transcript shares its blocks with the request, as the
	// agent's does: the strict guard catches the edit made through them.
	transcript := conversation().Messages
	r = middleware.NewRegistry()
	r.SetStrictCacheGuard(true)
	mustRegister(t)(r.RegisterLLMRequest("redact", func(ctx context.Context, q *llm.Request) (*llm.Request, error) {
		q.Messages[2].Content[0].Content = "[redacted]"
		return q, nil
	}))
	req := conversation()
	req.Messages = append([]llm.Message(nil), transcript...)
	_, err := r.ApplyLLMRequest(context.Background(), req)
	checkNamed(t, err, middleware.LLMRequest, "redact", middleware.ErrCacheInvalidation)
	if !strings.Contains(err.Error(), "Messages[2] (user) changed") {
		t.Errorf("err = %v", err)
	}
}

// longConversation is conversation() grown to about n messages: a prefix
// longer than what the guard keeps by reference.
func longConversation(n int) *llm.Request {
	req := conversation()
	for len(req.Messages) < n {
		req.Messages = append(req.Messages[:len(req.Messages)-1], conversation().Messages[1:]...)
	}
	return req
}

// On a conversation longer than what it keeps, the guard by reference
// still catches a prefix cut short, messages removed or inserted in
// place, the first or a newest message replaced, and Messages replaced by
// another slice anywhere it differs; a message in the middle replaced in
// place in the same slice is caught by the strict guard only.
func TestCacheGuardByReferenceOnALongConversation(t *testing.T) {
	edits := []struct {
		name     string
		edit     func(q *llm.Request)
		want     string // "" when it is no change, "-" when only strict sees it
		inStrict string
	}{
		{"first replaced", func(q *llm.Request) {
			q.Messages[0] = llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("x")}}
		}, "Messages[0] (user) changed", "Messages[0] (user) changed"},
		{"a newest replaced", func(q *llm.Request) { q.Messages[190] = llm.Message{Role: llm.RoleAssistant} }, "Messages[190] (assistant) changed", "Messages[190] (assistant) changed"},
		{"one removed in place", func(q *llm.Request) { q.Messages = append(q.Messages[:50], q.Messages[51:]...) }, "changed", "Messages[50]"},
		{"one inserted in place", func(q *llm.Request) {
			q.Messages = slices.Grow(q.Messages, 1)
			q.Messages = slices.Insert(q.Messages, 40, llm.Message{Role: llm.RoleUser})
		}, "changed", "Messages[40] ("},
		{"one inserted into another slice", func(q *llm.Request) {
			q.Messages = slices.Insert(q.Messages[:len(q.Messages):len(q.Messages)], 40, llm.Message{Role: llm.RoleUser})
		}, "Messages[40] (", "Messages[40] ("},
		{"cut short", func(q *llm.Request) { q.Messages = q.Messages[:100] }, "Messages[100] (", "Messages[100] ("},
		{"another slice, the middle rebuilt", func(q *llm.Request) {
			msgs := slices.Clone(q.Messages)
			msgs[60] = llm.Message{Role: msgs[60].Role, Content: []llm.Block{llm.TextBlock("summary")}}
			q.Messages = msgs
		}, "Messages[60] (", "Messages[60] ("},
		{"another slice, the same content", func(q *llm.Request) {
			msgs := make([]llm.Message, len(q.Messages))
			for i, m := range q.Messages {
				msgs[i] = llm.Message{Role: m.Role, Content: slices.Clone(m.Content)}
			}
			q.Messages = msgs
		}, "", ""},
		{"the middle replaced in place", func(q *llm.Request) { q.Messages[60] = llm.Message{Role: q.Messages[60].Role} }, "-", "Messages[60] ("},
	}
	for _, strict := range []bool{false, true} {
		for _, e := range edits {
			r := middleware.NewRegistry()
			r.SetStrictCacheGuard(strict)
			mustRegister(t)(r.RegisterLLMRequest("edit", func(ctx context.Context, q *llm.Request) (*llm.Request, error) {
				e.edit(q)
				return q, nil
			}))
			req := longConversation(200)
			if n := middleware.PrefixLen(req.Messages); n < 150 {
				t.Fatalf("prefix of %d messages", n)
			}
			want := e.want
			if strict {
				want = e.inStrict
			}
			_, err := r.ApplyLLMRequest(context.Background(), req)
			switch {
			case want == "-":
			case want == "" && err != nil:
				t.Errorf("strict=%v, %s: %v", strict, e.name, err)
			case want != "" && (!errors.Is(err, middleware.ErrCacheInvalidation) || !strings.Contains(err.Error(), want)):
				t.Errorf("strict=%v, %s: err = %v, want it to say %q", strict, e.name, err, want)
			}
		}
	}
}

// Random conversations and random edits of them: the strict guard refuses
// exactly the edits that change the prefix's value; the guard by reference
// never refuses one that does not, and refuses every one it promises to
// see (the slice replaced or cut, a message inserted or removed, the first
// or one of the 32 newest replaced).
func TestCacheGuardRandomEdits(t *testing.T) {
	conv := func(n int) []llm.Message {
		msgs := make([]llm.Message, 0, n+4)
		for i := range n {
			role := llm.RoleUser
			if i%2 == 1 {
				role = llm.RoleAssistant
			}
			msgs = append(msgs, llm.Message{Role: role, Content: []llm.Block{llm.TextBlock(fmt.Sprint("m", i)), llm.ToolUseBlock(fmt.Sprint("t", i), "Read", json.RawMessage(`{"n":1}`))}})
		}
		return append(msgs, llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("newest")}})
	}
	deep := func(msgs []llm.Message) []llm.Message {
		out := make([]llm.Message, len(msgs))
		for i, m := range msgs {
			c := slices.Clone(m.Content)
			for j := range c {
				c[j].Input = slices.Clone(c[j].Input)
			}
			out[i] = llm.Message{Role: m.Role, Content: c}
		}
		return out
	}
	const ops = 9
	rng := rand.New(rand.NewPCG(7, 11))
	for iter := range 3000 {
		n, op := rng.IntN(90), rng.IntN(ops)
		for _, strict := range []bool{false, true} {
			msgs := conv(n)
			k := middleware.PrefixLen(msgs)
			i := 0
			if k > 0 {
				i = int(uint64(iter*7919) % uint64(k))
			}
			before := deep(msgs[:k])
			var seen bool // the edit is one the guard by reference promises to see
			r := middleware.NewRegistry()
			r.SetStrictCacheGuard(strict)
			mustRegister(t)(r.RegisterLLMRequest("edit", func(ctx context.Context, q *llm.Request) (*llm.Request, error) {
				last := &q.Messages[len(q.Messages)-1]
				switch {
				case op == 1:
					last.Content = append(last.Content, llm.TextBlock("<reminder>"))
				case k == 0, op == 0:
				case op == 2: // replaced in place
					q.Messages[i] = llm.Message{Role: q.Messages[i].Role, Content: []llm.Block{llm.TextBlock("other")}}
					seen = i == 0 || i >= k-32
				case op == 3: // rebuilt with the same content
					q.Messages[i] = llm.Message{Role: q.Messages[i].Role, Content: slices.Clone(q.Messages[i].Content)}
				case op == 4: // a shared block edited in place
					q.Messages[i].Content[0].Text += "!"
				case op == 5: // removed in place
					q.Messages = append(q.Messages[:i], q.Messages[i+1:]...)
					seen = true
				case op == 6: // another slice, one message changed
					c := slices.Clone(q.Messages)
					c[i] = llm.Message{Role: c[i].Role}
					q.Messages, seen = c, true
				case op == 7: // another slice, the same content
					q.Messages = deep(q.Messages)
				case op == 8: // cut short
					q.Messages, seen = q.Messages[:i], true
				}
				return q, nil
			}))
			req := &llm.Request{System: "s", Messages: msgs}
			got, err := r.ApplyLLMRequest(context.Background(), req)
			var after []llm.Message
			if err == nil {
				after = got.Messages
			} else {
				after = req.Messages // the refused edit is not undone
			}
			changed := len(after) < k || !slices.EqualFunc(before, after[:k], llm.Message.Equal)
			what := fmt.Sprintf("iteration %d: op %d on message %d of a prefix of %d, strict=%v", iter, op, i, k, strict)
			switch {
			case err != nil && !errors.Is(err, middleware.ErrCacheInvalidation):
				t.Fatalf("%s: %v", what, err)
			case strict && changed != (err != nil):
				t.Fatalf("%s: changed %v, refused: %v", what, changed, err)
			case !changed && err != nil:
				t.Fatalf("%s: nothing changed, refused: %v", what, err)
			case !strict && seen && changed && err == nil:
				t.Fatalf("%s: changed and not refused", what)
			}
		}
	}
}
