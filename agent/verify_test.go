package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/toolset"
)

// STOP hooks may keep the agent working, but not forever: the payload
// says how often they already did, and a cap applies.
func TestStopHookIsCapped(t *testing.T) {
	b := newBench(t, nil, nil)
	b.rt = b.runtimeWith(agent.Definition{Name: "capped", MaxContinuations: 2})
	var seen []int
	b.hook(hook.Stop, "never-satisfied", hook.On(func(ctx context.Context, p *hook.StopPayload) (*hook.Decision, error) {
		seen = append(seen, p.Continued)
		return &hook.Decision{Action: hook.Revise, Instruction: "do more"}, nil
	}))
	b.model.Script("s", script.Text("1"), script.Text("2"), script.Text("3"), script.Text("4"))
	res := b.run("s", "go")
	if res.StopReason != agent.StopAnswered || res.Answer != "3" || len(seen) != 3 || seen[2] != 2 || !strings.Contains(res.Reason, "the cap") {
		t.Errorf("result %s %q, stop hook saw %v", res.StopReason, res.Answer, seen)
	}
}

func verifyRuntime(t *testing.T, b *bench, cmd string) *agent.Runtime {
	return b.runtimeWith(agent.Definition{Name: "v", Verify: cmd})
}

// A failed verification sends the agent back with its output; a fix ends
// the turn answered.
func TestVerificationRevisesUntilItPasses(t *testing.T) {
	b := newBench(t, nil, nil)
	rt := verifyRuntime(t, b, `test -f fixed.txt || { echo "fixed.txt is missing"; exit 1; }`)
	b.model.Script("s", script.Text("done (not really)"), write("w", "fixed.txt", "ok"), script.Text("done"))
	res, _ := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go"})
	if res.StopReason != agent.StopAnswered || res.Answer != "done" || res.Verification == nil || !res.Verification.Passed {
		t.Fatalf("result %s %q %+v", res.StopReason, res.Answer, res.Verification)
	}
	second := b.model.CallsTo("s")[1].Messages
	if last := second[len(second)-1].Text(); !strings.Contains(last, "fixed.txt is missing") || !strings.Contains(last, "exit code: 1") {
		t.Errorf("revision instruction: %q", last)
	}
	if b.file("fixed.txt") != "ok" {
		t.Error("the fix was not written once")
	}
}

func TestVerificationEscalates(t *testing.T) {
	b := newBench(t, nil, nil)
	rt := verifyRuntime(t, b, "exit 3")
	b.model.Script("s", script.Text("a"), script.Text("b"), script.Text("c"))
	res, _ := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go"})
	if res.StopReason != agent.StopEscalated || !strings.Contains(res.Reason, "still failed after 2 revisions") || len(b.model.CallsTo("s")) != 3 {
		t.Errorf("result %s %q after %d calls", res.StopReason, res.Reason, len(b.model.CallsTo("s")))
	}
}

// POST_VERIFY sees the verification; accepting a failed one escalates;
// revise needs an instruction.
func TestPostVerifyHooks(t *testing.T) {
	b := newBench(t, nil, nil)
	rt := verifyRuntime(t, b, "echo broken; exit 1")
	var got *hook.PostVerifyPayload
	b.hook(hook.PostVerify, "reviewer", hook.On(func(ctx context.Context, p *hook.PostVerifyPayload) (*hook.Decision, error) {
		got = p
		return &hook.Decision{Action: hook.Accept}, nil
	}))
	b.model.Script("s", script.Text("shipped"))
	res, _ := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go"})
	if res.StopReason != agent.StopEscalated || !strings.Contains(res.Reason, "reviewer accepted") {
		t.Errorf("accepting a failure: %s %q", res.StopReason, res.Reason)
	}
	if got == nil || got.Verification == nil || got.Verification.Passed || !strings.Contains(got.Verification.Output, "broken") || got.Answer != "shipped" {
		t.Errorf("payload %+v", got)
	}
}

func TestPostVerifyWithoutCommand(t *testing.T) {
	b := newBench(t, nil, nil)
	n := 0
	b.hook(hook.PostVerify, "docs", hook.On(func(ctx context.Context, p *hook.PostVerifyPayload) (*hook.Decision, error) {
		n++
		if n == 1 {
			return &hook.Decision{Action: hook.Revise, Instruction: "update the changelog"}, nil
		}
		return &hook.Decision{Action: hook.Accept}, nil
	}))
	b.model.Script("s", script.Text("done"), script.Text("changelog updated"))
	res := b.run("s", "go")
	if res.StopReason != agent.StopAnswered || res.Answer != "changelog updated" {
		t.Errorf("result %s %q", res.StopReason, res.Answer)
	}
}

func TestVerifyNeedsACommandRunner(t *testing.T) {
	b := newBench(t, nil, nil)
	rt, err := agent.New(agent.Definition{Name: "x", Verify: "true", ToolProviders: toolset.Default()}, agent.Collaborators{Client: b.model, FS: b.rt.FS()})
	if err != nil {
		t.Fatalf("default providers include Bash: %v", err)
	}
	rt.Close()
	_, err = agent.New(agent.Definition{Name: "x", Verify: "true", ToolProviders: []tool.Provider{}}, agent.Collaborators{Client: b.model, FS: b.rt.FS()})
	if err == nil || !strings.Contains(err.Error(), "needs a tool that runs commands") {
		t.Errorf("error = %v", err)
	}
}
