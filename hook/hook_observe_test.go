package hook_test

import (
	"context"
	"errors"
	"testing"

	"github.com/orca-agent/orca/hook"
)

// An observer is told of every handler's run — one that decided nothing
// too — with the run's scope, in the handlers' order; removed, it is told
// nothing more.
func TestObserveToldOfEveryRun(t *testing.T) {
	r := hook.NewRegistry()
	quiet := hook.HandlerFunc(func(context.Context, hook.Payload) (*hook.Decision, error) { return nil, nil })
	blocks := hook.HandlerFunc(func(context.Context, hook.Payload) (*hook.Decision, error) {
		return &hook.Decision{Action: hook.Block, Reason: "no"}, nil
	})
	fails := hook.HandlerFunc(func(context.Context, hook.Payload) (*hook.Decision, error) {
		return nil, errors.New("broken")
	})
	for _, h := range []struct {
		name string
		h    hook.Handler
	}{{"a-quiet", quiet}, {"b-fails", fails}, {"c-blocks", blocks}} {
		if _, err := r.Register(hook.PreToolUse, h.name, h.h); err != nil {
			t.Fatal(err)
		}
	}
	var ran []hook.Ran
	r.Observe(func(x hook.Ran) { ran = append(ran, x) })
	p := &hook.PreToolUsePayload{}
	p.SessionID, p.TurnID = "s1", "t1"
	if out := r.Run(t.Context(), p); out.Action != hook.Block {
		t.Fatalf("outcome %v", out.Action)
	}
	if len(ran) != 3 || ran[0].Handler != "a-quiet" || ran[0].Decision != nil || ran[0].Err != nil || ran[0].TurnID != "t1" || ran[0].Hook != hook.PreToolUse ||
		ran[1].Err == nil || ran[2].Decision == nil || ran[2].Decision.Action != hook.Block {
		t.Fatalf("told %+v", ran)
	}
	r.Observe(nil)
	r.Run(t.Context(), p)
	if len(ran) != 3 {
		t.Errorf("told after its removal: %d", len(ran))
	}
}

// applier is for the payloads of one tool only.
type applier struct {
	tool  string
	calls *int
}

func (a applier) Applies(p hook.Payload) bool {
	return p.(*hook.PreToolUsePayload).ToolName == a.tool
}

func (a applier) Handle(context.Context, hook.Payload) (*hook.Decision, error) {
	*a.calls++
	return nil, nil
}

// An Applier is called, and fires, only for the payloads it is for.
func TestApplierFiresOnlyForItsPayloads(t *testing.T) {
	r := hook.NewRegistry()
	calls := 0
	if _, err := r.Register(hook.PreToolUse, "writes", applier{tool: "Write", calls: &calls}); err != nil {
		t.Fatal(err)
	}
	var ran []string
	r.Observe(func(x hook.Ran) { ran = append(ran, x.Handler) })
	for _, tool := range []string{"Read", "Write", "Bash"} {
		p := &hook.PreToolUsePayload{}
		p.ToolName = tool
		r.Run(t.Context(), p)
	}
	if calls != 1 || len(ran) != 1 {
		t.Errorf("called %d times, told of %v: want once, for Write", calls, ran)
	}
}
