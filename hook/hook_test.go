package hook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.uber.org/goleak"

	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/scope"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func decide(d *hook.Decision) hook.Handler {
	return hook.HandlerFunc(func(context.Context, hook.Payload) (*hook.Decision, error) { return d, nil })
}

func mustRegister(t *testing.T, r *hook.Registry, n hook.Name, name string, h hook.Handler, opts ...hook.Option) {
	t.Helper()
	if _, err := r.Register(n, name, h, opts...); err != nil {
		t.Fatal(err)
	}
}

func toolPayload(args string) *hook.PreToolUsePayload {
	return &hook.PreToolUsePayload{
		Common:   hook.Common{Scope: scope.Scope{RuntimeID: "rt", SessionID: "s", TurnID: "t"}, Cwd: "/w"},
		ToolCall: hook.ToolCall{ToolName: "Bash", ToolUseID: "u1", Arguments: json.RawMessage(args)},
	}
}

func TestRegisterRefusesWhatTheContractForbids(t *testing.T) {
	r := hook.NewRegistry()
	mustRegister(t, r, hook.Stop, "a", decide(nil))
	for _, tc := range []struct {
		n    hook.Name
		name string
		h    hook.Handler
		opts []hook.Option
		want string
	}{
		{"ON_TUESDAY", "x", decide(nil), nil, `unknown hook "ON_TUESDAY"`},
		{hook.Stop, "a", decide(nil), nil, `"a" is already registered`},
		{hook.Stop, "", decide(nil), nil, "needs a name"},
		{hook.Stop, "n", nil, nil, "nil handler"},
		{hook.Stop, "typed", hook.On(func(context.Context, *hook.PreToolUsePayload) (*hook.Decision, error) { return nil, nil }), nil, "takes the payload of PRE_TOOL_USE"},
		{hook.SessionEnd, "fc", decide(nil), []hook.Option{hook.FailClosed()}, "cannot be fail-closed"},
		{hook.Stop, "t", decide(nil), []hook.Option{hook.Timeout(-1)}, "timeout must be positive"},
	} {
		if _, err := r.Register(tc.n, tc.name, tc.h, tc.opts...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Register(%s) = %v, want %q", tc.n, err, tc.want)
		}
	}
	// The same name on another hook is fine.
	mustRegister(t, r, hook.PostVerify, "a", decide(nil))
}

func TestPriorityOrderAndChainedRewrites(t *testing.T) {
	r := hook.NewRegistry()
	var seen []string
	rewriter := func(name, add string) hook.Handler {
		return hook.On(func(ctx context.Context, p *hook.UserPromptSubmitPayload) (*hook.Decision, error) {
			seen = append(seen, name+":"+p.Prompt)
			return &hook.Decision{Updates: map[string]any{"prompt": p.Prompt + add}}, nil
		})
	}
	mustRegister(t, r, hook.UserPromptSubmit, "late", rewriter("late", "+late"), hook.Priority(10))
	mustRegister(t, r, hook.UserPromptSubmit, "tie1", rewriter("tie1", "+tie1"))
	mustRegister(t, r, hook.UserPromptSubmit, "early", rewriter("early", "+early"), hook.Priority(-10))
	mustRegister(t, r, hook.UserPromptSubmit, "tie2", rewriter("tie2", "+tie2"))
	p := &hook.UserPromptSubmitPayload{Prompt: "hi"}
	out := r.Run(context.Background(), p)
	want := []string{"early:hi", "tie1:hi+early", "tie2:hi+early+tie1", "late:hi+early+tie1+tie2"}
	if !slices.Equal(seen, want) {
		t.Errorf("handlers saw %v, want %v", seen, want)
	}
	if got := out.Payload.(*hook.UserPromptSubmitPayload).Prompt; got != "hi+early+tie1+tie2+late" || !out.Rewritten {
		t.Errorf("final prompt %q (rewritten %v)", got, out.Rewritten)
	}
	if p.Prompt != "hi" {
		t.Errorf("the caller's payload was modified in place: %q", p.Prompt)
	}
	if p.HookName != hook.UserPromptSubmit || p.Version != hook.Version {
		t.Errorf("Run did not stamp the payload: %+v", p.Common)
	}
}

func TestBlockShortCircuitsAndPermissionBeatsAllow(t *testing.T) {
	r := hook.NewRegistry()
	ran := map[string]bool{}
	track := func(name string, d *hook.Decision) hook.Handler {
		return hook.HandlerFunc(func(context.Context, hook.Payload) (*hook.Decision, error) { ran[name] = true; return d, nil })
	}
	mustRegister(t, r, hook.PreToolUse, "allow", track("allow", &hook.Decision{Action: hook.Allow, Reason: "trusted"}), hook.Priority(1))
	mustRegister(t, r, hook.PreToolUse, "ask", track("ask", &hook.Decision{Action: hook.RequestPermission, Reason: "needs a ticket"}), hook.Priority(2))
	mustRegister(t, r, hook.PreToolUse, "allow2", track("allow2", &hook.Decision{Action: hook.Allow}), hook.Priority(3))
	out := r.Run(context.Background(), toolPayload(`{}`))
	if out.Action != hook.RequestPermission || out.By != "ask" || out.Reason != "needs a ticket" {
		t.Errorf("outcome = %+v, want request_permission by ask", out)
	}
	mustRegister(t, r, hook.PreToolUse, "block", track("block", &hook.Decision{Action: hook.Block, Reason: "no"}), hook.Priority(0))
	clear(ran)
	out = r.Run(context.Background(), toolPayload(`{}`))
	if out.Action != hook.Block || out.By != "block" || len(ran) != 1 {
		t.Errorf("outcome = %+v, ran %v; want block by the first handler, no other run", out, ran)
	}
}

// An MCP server's question: the first accept wins, a decline or a cancel
// stops the other handlers (as a block does), the content a handler
// rewrites is what the next one sees, and a fail-closed handler's failure
// declines.
func TestElicitationDecisions(t *testing.T) {
	payload := func() *hook.ElicitationPayload {
		return &hook.ElicitationPayload{Question: hook.Question{ID: "el_1", Server: "everything", Mode: "form"}, Content: map[string]any{"name": "Ada"}}
	}
	r := hook.NewRegistry()
	ran := map[string]bool{}
	track := func(name string, d *hook.Decision) hook.Handler {
		return hook.HandlerFunc(func(_ context.Context, p hook.Payload) (*hook.Decision, error) {
			ran[name] = true
			if name == "second" && p.(*hook.ElicitationPayload).Content["name"] != "Grace" {
				return nil, errors.New("the first handler's content was not passed on")
			}
			return d, nil
		})
	}
	mustRegister(t, r, hook.Elicitation, "first", track("first", &hook.Decision{Action: hook.Accept, Updates: map[string]any{"content": map[string]any{"name": "Grace"}}}), hook.Priority(1))
	mustRegister(t, r, hook.Elicitation, "second", track("second", &hook.Decision{Action: hook.Accept, Updates: map[string]any{"content": map[string]any{"name": "Linus"}}}), hook.Priority(2))
	out := r.Run(context.Background(), payload())
	if out.Action != hook.Accept || out.By != "first" || out.Payload.(*hook.ElicitationPayload).Content["name"] != "Linus" || len(out.Failures) > 0 {
		t.Errorf("accept: %+v", out)
	}
	mustRegister(t, r, hook.Elicitation, "no", track("no", &hook.Decision{Action: hook.Decline, Reason: "not this server"}), hook.Priority(0))
	clear(ran)
	out = r.Run(context.Background(), payload())
	if out.Action != hook.Decline || out.By != "no" || out.Reason != "not this server" || len(ran) != 1 {
		t.Errorf("decline: %+v, ran %v", out, ran)
	}
	r = hook.NewRegistry()
	mustRegister(t, r, hook.ElicitationResult, "content", decide(&hook.Decision{Updates: map[string]any{"content": "not an object"}}))
	mustRegister(t, r, hook.ElicitationResult, "block", decide(&hook.Decision{Action: hook.Block}))
	mustRegister(t, r, hook.ElicitationResult, "guard", hook.HandlerFunc(func(context.Context, hook.Payload) (*hook.Decision, error) {
		return nil, errors.New("audit log unreachable")
	}), hook.FailClosed())
	out = r.Run(context.Background(), &hook.ElicitationResultPayload{Question: hook.Question{Server: "x"}, Action: "accept", By: "user"})
	if out.Action != hook.Decline || out.By != "guard" || len(out.Failures) != 3 || !out.Failures[0].Violation || !out.Failures[1].Violation {
		t.Errorf("violations, then a fail-closed failure: %+v", out)
	}
}

// A decision outside the contract is reported and ignored whole.
func TestViolationsAreIgnoredWhole(t *testing.T) {
	for _, tc := range []struct {
		name string
		hook hook.Name
		p    hook.Payload
		d    *hook.Decision
		want string
	}{
		{"action not allowed", hook.UserPromptSubmit, &hook.UserPromptSubmitPayload{Prompt: "x"}, &hook.Decision{Action: hook.Allow, Updates: map[string]any{"prompt": "changed"}}, `does not allow action "allow"`},
		{"unknown field", hook.UserPromptSubmit, &hook.UserPromptSubmitPayload{Prompt: "x"}, &hook.Decision{Updates: map[string]any{"prompt": "changed", "session_id": "evil"}}, `cannot rewrite "session_id"`},
		{"wrong type", hook.UserPromptSubmit, &hook.UserPromptSubmitPayload{Prompt: "x"}, &hook.Decision{Updates: map[string]any{"prompt": 42}}, "does not fit"},
		{"arguments not an object", hook.PreToolUse, toolPayload(`{"command":"ls"}`), &hook.Decision{Updates: map[string]any{"arguments": "rm -rf /"}}, "must be a JSON object"},
		{"revise without instruction", hook.Stop, &hook.StopPayload{}, &hook.Decision{Action: hook.Revise, Instruction: "  "}, "non-empty instruction"},
		{"context not allowed", hook.PermissionRequest, &hook.PermissionRequestPayload{ToolCall: hook.ToolCall{ToolName: "Bash", Arguments: []byte(`{}`)}}, &hook.Decision{Context: "psst"}, "cannot add context"},
		{"end outside a turn", hook.SessionEnd, &hook.SessionEndPayload{Reason: "other"}, &hook.Decision{EndTurn: "stop"}, "cannot end one"},
		{"compaction block not auto", hook.PreCompact, &hook.PreCompactPayload{Trigger: "manual"}, &hook.Decision{Action: hook.Block}, "only automatic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := hook.NewRegistry()
			mustRegister(t, r, tc.hook, "bad", decide(tc.d))
			before, _ := json.Marshal(tc.p)
			out := r.Run(context.Background(), tc.p)
			if out.Action != hook.Continue || out.Rewritten || len(out.Context) != 0 || out.EndTurn != "" {
				t.Errorf("violating decision had an effect: %+v", out)
			}
			after, _ := json.Marshal(out.Payload)
			if !bytes.Equal(before[bytes.Index(before, []byte(`,"runtime_id"`)):], after[bytes.Index(after, []byte(`,"runtime_id"`)):]) {
				t.Errorf("payload changed: %s -> %s", before, after)
			}
			if len(out.Failures) != 1 || !out.Failures[0].Violation || !errors.Is(out.Failures[0].Err, hook.ErrViolation) || !strings.Contains(out.Failures[0].Err.Error(), tc.want) {
				t.Errorf("failures = %+v, want a violation mentioning %q", out.Failures, tc.want)
			}
		})
	}
}

func TestFailuresAreIsolatedUnlessFailClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := hook.NewRegistry()
		mustRegister(t, r, hook.PreToolUse, "erring", hook.HandlerFunc(func(context.Context, hook.Payload) (*hook.Decision, error) {
			return nil, errors.New("database down")
		}))
		mustRegister(t, r, hook.PreToolUse, "panicking", hook.HandlerFunc(func(context.Context, hook.Payload) (*hook.Decision, error) {
			panic("nil map")
		}))
		mustRegister(t, r, hook.PreToolUse, "slow", hook.HandlerFunc(func(ctx context.Context, _ hook.Payload) (*hook.Decision, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}), hook.Timeout(5*time.Second))
		mustRegister(t, r, hook.PreToolUse, "ok", decide(&hook.Decision{Action: hook.Allow}))
		start := time.Now()
		out := r.Run(context.Background(), toolPayload(`{}`))
		if out.Action != hook.Allow || len(out.Failures) != 3 {
			t.Fatalf("outcome = %+v", out)
		}
		for i, want := range []string{"database down", "panic: nil map", "timed out after 5s"} {
			if !strings.Contains(out.Failures[i].Err.Error(), want) {
				t.Errorf("failure %d = %v, want %q", i, out.Failures[i].Err, want)
			}
		}
		if waited := time.Since(start); waited != 5*time.Second {
			t.Errorf("the slow hook held the run for %v", waited)
		}

		fc := hook.NewRegistry()
		mustRegister(t, fc, hook.PermissionRequest, "guard", hook.HandlerFunc(func(context.Context, hook.Payload) (*hook.Decision, error) {
			return nil, errors.New("policy service unreachable")
		}), hook.FailClosed())
		mustRegister(t, fc, hook.PermissionRequest, "later", decide(&hook.Decision{Action: hook.Allow}), hook.Priority(5))
		out = fc.Run(context.Background(), &hook.PermissionRequestPayload{})
		if out.Action != hook.Deny || out.By != "guard" || !strings.Contains(out.Reason, "policy service unreachable") || !out.Failures[0].FailClosed {
			t.Errorf("fail-closed outcome = %+v", out)
		}
	})
}

func TestReviseCollectsInstructionsAndBeatsAccept(t *testing.T) {
	r := hook.NewRegistry()
	mustRegister(t, r, hook.PostVerify, "a", decide(&hook.Decision{Action: hook.Accept}))
	mustRegister(t, r, hook.PostVerify, "b", decide(&hook.Decision{Action: hook.Revise, Instruction: "add a test"}))
	mustRegister(t, r, hook.PostVerify, "c", decide(&hook.Decision{Action: hook.Revise, Instruction: "update the docs"}))
	out := r.Run(context.Background(), &hook.PostVerifyPayload{})
	if out.Action != hook.Revise || out.Instruction != "add a test\n\nupdate the docs" || out.By != "b" {
		t.Errorf("outcome = %+v", out)
	}
}

func TestContextIsCollected(t *testing.T) {
	r := hook.NewRegistry()
	mustRegister(t, r, hook.TurnStart, "git", decide(&hook.Decision{Context: "branch: main"}))
	mustRegister(t, r, hook.TurnStart, "jira", decide(&hook.Decision{Context: "ticket: ORC-7"}))
	if out := r.Run(context.Background(), &hook.TurnStartPayload{}); !slices.Equal(out.Context, []string{"branch: main", "ticket: ORC-7"}) {
		t.Errorf("context = %v", out.Context)
	}
}

func TestUnregisterAndConcurrentUse(t *testing.T) {
	r := hook.NewRegistry()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			un, err := r.Register(hook.Stop, string(rune('a'+i)), decide(nil))
			if err != nil {
				t.Error(err)
				return
			}
			r.Run(context.Background(), &hook.StopPayload{})
			un()
		})
	}
	wg.Wait()
	if r.Has(hook.Stop) || len(r.Handlers(hook.Stop)) != 0 {
		t.Errorf("handlers left: %v", r.Handlers(hook.Stop))
	}
}

// Every payload, as sent, satisfies its hook's published schema.
func TestPayloadsSatisfyTheirSchemas(t *testing.T) {
	samples := []hook.Payload{
		&hook.SessionStartPayload{Source: "new"},
		&hook.SessionEndPayload{Reason: "closed"},
		&hook.UserPromptSubmitPayload{Prompt: "fix it"},
		&hook.TurnStartPayload{Input: "fix it"},
		toolPayload(`{"command":"ls"}`),
		&hook.PermissionRequestPayload{ToolCall: hook.ToolCall{ToolName: "Edit", ToolUseID: "u", Arguments: json.RawMessage(`{}`)}, Reason: "edits ask"},
		&hook.ElicitationPayload{Question: hook.Question{ID: "el_1", Server: "everything", Mode: "form", Message: "Your name?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","default":"Ada"}}}`)}, Content: map[string]any{"name": "Ada"}},
		&hook.ElicitationResultPayload{Question: hook.Question{ID: "el_1", Server: "auth", Mode: "url", Message: "Sign in", URL: "https://example.com/a", ElicitationID: "e1"},
			Action: "decline", By: "none", Reason: "no one to ask"},
		&hook.PostToolUsePayload{ToolCall: hook.ToolCall{ToolName: "Read", ToolUseID: "u", Arguments: json.RawMessage(`{}`)}, Output: "1\tx"},
		&hook.PostToolUseFailurePayload{ToolCall: hook.ToolCall{ToolName: "Read", ToolUseID: "u", Arguments: json.RawMessage(`{}`)}, Error: "missing"},
		&hook.PreCompactPayload{Trigger: "auto"},
		&hook.SubagentStartPayload{Agent: "explorer", Prompt: "look"},
		&hook.SubagentStopPayload{Agent: "explorer", Answer: "found"},
		&hook.StopPayload{Answer: "done", Iterations: 3},
		&hook.PostVerifyPayload{Answer: "done", Verification: &hook.Verification{Command: "go test ./...", Passed: true}},
	}
	r := hook.NewRegistry()
	for _, p := range samples {
		r.Run(context.Background(), p) // stamps hook and version
		CheckPayload(t, p)
	}
}

// CheckPayload validates p's JSON against its hook's schema.
func CheckPayload(t *testing.T, p hook.Payload) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(hook.Schema(p.Hook())))
	if err != nil {
		t.Fatalf("%s schema: %v", p.Hook(), err)
	}
	c := jsonschema.NewCompiler()
	c.AddResource("payload.json", doc)
	sch, err := c.Compile("payload.json")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(p)
	v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err := sch.Validate(v); err != nil {
		t.Errorf("%s payload %s does not satisfy its schema: %v", p.Hook(), raw, err)
	}
}

// Handle registers a handler of one payload type on that payload's hook.
func TestHandleRegistersOnThePayloadsHook(t *testing.T) {
	r := hook.NewRegistry()
	un, err := hook.Handle(r, "guard", func(ctx context.Context, p *hook.PreToolUsePayload) (*hook.Decision, error) {
		return &hook.Decision{Action: hook.Block, Reason: "no " + p.ToolName}, nil
	}, hook.Priority(5))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Handlers(hook.PreToolUse); !slices.Equal(got, []string{"guard"}) {
		t.Errorf("PRE_TOOL_USE handlers %v", got)
	}
	if out := r.Run(context.Background(), toolPayload(`{}`)); out.Action != hook.Block || out.Reason != "no Bash" {
		t.Errorf("outcome %+v", out)
	}
	un()
	if r.Has(hook.PreToolUse) {
		t.Error("still registered")
	}
	if _, err := hook.Handle(r, "", func(context.Context, *hook.StopPayload) (*hook.Decision, error) { return nil, nil }); err == nil {
		t.Error("a handler without a name was registered")
	}
}

// Defer wins over a permission request and an allow, whatever the order;
// a block still wins over it.
func TestDeferPrecedence(t *testing.T) {
	r := hook.NewRegistry()
	mustRegister(t, r, hook.PreToolUse, "allow", decide(&hook.Decision{Action: hook.Allow}))
	mustRegister(t, r, hook.PreToolUse, "ask", decide(&hook.Decision{Action: hook.RequestPermission, Reason: "ask"}))
	mustRegister(t, r, hook.PreToolUse, "defer", decide(&hook.Decision{Action: hook.Defer, Reason: "a person decides"}))
	mustRegister(t, r, hook.PreToolUse, "ask-again", decide(&hook.Decision{Action: hook.RequestPermission, Reason: "ask again"}))
	out := r.Run(context.Background(), toolPayload(`{}`))
	if out.Action != hook.Defer || out.By != "defer" || out.Reason != "a person decides" {
		t.Fatalf("outcome = %+v, want defer by the defer handler", out)
	}
	mustRegister(t, r, hook.PreToolUse, "block", decide(&hook.Decision{Action: hook.Block, Reason: "no"}))
	if out := r.Run(context.Background(), toolPayload(`{}`)); out.Action != hook.Block || out.By != "block" {
		t.Fatalf("outcome = %+v, want block", out)
	}
}

// A decision that ends the turn stops the handlers after it and carries
// its reason; messages for the user are kept, in order, from every
// handler that ran.
func TestEndTurnShortCircuits(t *testing.T) {
	r := hook.NewRegistry()
	var ran []string
	note := func(name string, d *hook.Decision) hook.Handler {
		return hook.HandlerFunc(func(context.Context, hook.Payload) (*hook.Decision, error) {
			ran = append(ran, name)
			return d, nil
		})
	}
	mustRegister(t, r, hook.PostToolUse, "warn", note("warn", &hook.Decision{Message: "formatted main.go"}))
	mustRegister(t, r, hook.PostToolUse, "end", note("end", &hook.Decision{EndTurn: "tests are red", Message: "stopping"}))
	mustRegister(t, r, hook.PostToolUse, "later", note("later", &hook.Decision{Context: "never"}))
	out := r.Run(context.Background(), &hook.PostToolUsePayload{ToolCall: hook.ToolCall{ToolName: "Write", Arguments: []byte(`{}`)}})
	if out.EndTurn != "tests are red" || out.By != "end" || len(out.Context) != 0 {
		t.Errorf("outcome = %+v, want the turn ended by end", out)
	}
	if want := []hook.Message{{Handler: "warn", Text: "formatted main.go"}, {Handler: "end", Text: "stopping"}}; !reflect.DeepEqual(out.Messages, want) {
		t.Errorf("messages = %+v, want %+v", out.Messages, want)
	}
	if !reflect.DeepEqual(ran, []string{"warn", "end"}) {
		t.Errorf("ran %v, want warn and end only", ran)
	}
}

// Handlers of one hook point that share a timeout share one context: a
// handler that waits on it is ended at its timeout all the same, and is
// a failure; a handler that keeps the context after it answered finds it
// done once Run returned.
func TestHandlersShareTheirPointsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := hook.NewRegistry()
		var kept context.Context
		want := 2 * time.Second
		mustRegister(t, r, hook.PreToolUse, "quick", hook.HandlerFunc(func(ctx context.Context, _ hook.Payload) (*hook.Decision, error) {
			kept = ctx
			if d, ok := ctx.Deadline(); !ok || d != time.Now().Add(want) {
				t.Errorf("deadline %v, %v; want in %v", d, ok, want)
			}
			return nil, ctx.Err()
		}), hook.Timeout(2*time.Second))
		mustRegister(t, r, hook.PreToolUse, "waiting", hook.HandlerFunc(func(ctx context.Context, _ hook.Payload) (*hook.Decision, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}), hook.Timeout(2*time.Second))
		start := time.Now()
		out := r.Run(context.Background(), toolPayload(`{}`))
		if waited := time.Since(start); waited != 2*time.Second {
			t.Errorf("the run took %v", waited)
		}
		if len(out.Failures) != 1 || out.Failures[0].Handler != "waiting" || !strings.Contains(out.Failures[0].Err.Error(), "timed out after 2s") {
			t.Errorf("failures %+v", out.Failures)
		}
		select {
		case <-kept.Done():
		default:
			t.Error("a context kept after Run returned is not done")
		}
		if kept.Err() == nil {
			t.Error("its Err is nil")
		}
		// Run on a context that ends first: the handlers get it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		want = time.Second
		start = time.Now()
		out = r.Run(ctx, toolPayload(`{}`))
		if waited := time.Since(start); waited != time.Second || len(out.Failures) != 1 {
			t.Errorf("under a shorter context: %v, %+v", waited, out.Failures)
		}
	})
}

// A handler may ask for its context's Done, or hand the context to a
// goroutine that asks for it as the run ends: whichever comes first, the
// context is done once Run returned, and nothing races (go test -race).
func TestContextAskedForDoneAsTheRunEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := hook.NewRegistry()
		var wg sync.WaitGroup
		var kept []context.Context
		mustRegister(t, r, hook.PreToolUse, "handing", hook.HandlerFunc(func(ctx context.Context, _ hook.Payload) (*hook.Decision, error) {
			if len(kept)%2 == 0 {
				ctx.Done() // armed now; the other half as the run ends, or not at all
			}
			kept = append(kept, ctx)
			wg.Go(func() { <-ctx.Done() })
			return nil, nil
		}), hook.Timeout(time.Hour))
		start := time.Now()
		for range 200 {
			r.Run(context.Background(), toolPayload(`{}`))
		}
		wg.Wait()
		if waited := time.Since(start); waited != 0 {
			t.Errorf("the kept contexts were done %v after the runs, at their deadline, not at the runs' end", waited)
		}
		for i, ctx := range kept {
			if ctx.Err() != context.Canceled {
				t.Fatalf("run %d: the kept context's Err is %v, want context.Canceled", i, ctx.Err())
			}
		}
	})
}

// A MayBlock handler that never returns is left behind at its timeout.
func TestMayBlockHandlerIsLeftAtItsTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := hook.NewRegistry()
		release := make(chan struct{})
		mustRegister(t, r, hook.PreToolUse, "stuck", hook.HandlerFunc(func(context.Context, hook.Payload) (*hook.Decision, error) {
			<-release // ignores its context
			return nil, nil
		}), hook.Timeout(3*time.Second), hook.MayBlock())
		start := time.Now()
		out := r.Run(context.Background(), toolPayload(`{}`))
		if waited := time.Since(start); waited != 3*time.Second || len(out.Failures) != 1 || !strings.Contains(out.Failures[0].Err.Error(), "timed out after 3s") {
			t.Errorf("%v, %+v", waited, out.Failures)
		}
		close(release)
		synctest.Wait()
	})
}

// The shared context keeps the run's values, and tells its cause.
func TestPointContextValuesAndCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type key struct{}
		r := hook.NewRegistry()
		mustRegister(t, r, hook.PreToolUse, "waits", hook.HandlerFunc(func(ctx context.Context, _ hook.Payload) (*hook.Decision, error) {
			if ctx.Value(key{}) != "v" {
				t.Errorf("value %v before Done", ctx.Value(key{}))
			}
			child, cancel := context.WithCancel(ctx)
			defer cancel()
			<-child.Done()
			if ctx.Value(key{}) != "v" || !errors.Is(context.Cause(ctx), context.DeadlineExceeded) || !errors.Is(child.Err(), context.DeadlineExceeded) {
				t.Errorf("after the deadline: value %v, cause %v, child %v", ctx.Value(key{}), context.Cause(ctx), child.Err())
			}
			return nil, nil
		}), hook.Timeout(time.Second))
		r.Run(context.WithValue(context.Background(), key{}, "v"), toolPayload(`{}`))
	})
}

// A run in a caller's Frame behaves as Run: the same deadline, and a
// context kept after the run is done. The Frame given again is not used
// again: the kept context stays done, and the second run gets a live one.
func TestRunInFrame(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := hook.NewRegistry()
		var kept []context.Context
		mustRegister(t, r, hook.PreToolUse, "keeper", hook.HandlerFunc(func(ctx context.Context, _ hook.Payload) (*hook.Decision, error) {
			if d, ok := ctx.Deadline(); !ok || d != time.Now().Add(time.Second) {
				t.Errorf("deadline %v, %v; want in 1s", d, ok)
			}
			if ctx.Err() != nil {
				t.Errorf("run %d: the handler's context is done already: %v", len(kept)+1, ctx.Err())
			}
			kept = append(kept, ctx)
			return &hook.Decision{Action: hook.Block, Reason: "no"}, nil
		}), hook.Timeout(time.Second))
		var f hook.Frame
		for run := range 2 {
			out := r.RunIn(context.Background(), &f, toolPayload(`{}`))
			if out.Action != hook.Block || out.By != "keeper" || len(out.Failures) != 0 {
				t.Errorf("run %d: %+v", run+1, out)
			}
		}
		if len(kept) != 2 || kept[0] == kept[1] {
			t.Fatalf("the two runs shared a context")
		}
		for i, ctx := range kept {
			if ctx.Err() == nil {
				t.Errorf("the context of run %d is not done after it", i+1)
			}
		}
	})
}

// Each in-process handler's time is its own: it starts when the one
// before it ended (or ran aside), its deadline is its timeout from then,
// and only its own time counts against that timeout.
func TestHandlersTimesAreTheirOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := hook.NewRegistry()
		const timeout = 5 * time.Second
		sleeper := func(name string, d time.Duration, opts ...hook.Option) {
			mustRegister(t, r, hook.PreToolUse, name, hook.HandlerFunc(func(ctx context.Context, _ hook.Payload) (*hook.Decision, error) {
				if dl, ok := ctx.Deadline(); !ok || dl != time.Now().Add(timeout) {
					t.Errorf("%s: deadline %v, %v; want %v from its start", name, dl, ok, timeout)
				}
				time.Sleep(d) // ignores its context, as a careless handler does
				return nil, nil
			}), append(opts, hook.Timeout(timeout))...)
		}
		sleeper("a", 3*time.Second)
		sleeper("b", 3*time.Second)                      // 6 s after the point began, 3 s after it did
		sleeper("aside", 2*time.Second, hook.MayBlock()) // on a goroutine of its own
		sleeper("c", 4*time.Second)
		sleeper("late", 6*time.Second)
		start := time.Now()
		out := r.Run(context.Background(), toolPayload(`{}`))
		if waited := time.Since(start); waited != 18*time.Second {
			t.Errorf("the run took %v", waited)
		}
		if len(out.Failures) != 1 || out.Failures[0].Handler != "late" || !strings.Contains(out.Failures[0].Err.Error(), "timed out after 5s (it answered after 6s)") {
			t.Errorf("failures %+v; want only late's timeout", out.Failures)
		}
	})
}
