package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/toolset"
	"github.com/orca-agent/orca/workspace"
)

// notified records the notifications in the bench's trail.
type notified struct{ log *trail }

func (n notified) Notify(note hook.Notification) {
	s := "notify:" + note.Type + ":" + note.Message + ":" + note.SessionID
	if note.ErrorType != "" {
		s += ":" + note.ErrorType + ":" + note.ErrorMessage
	}
	n.log.add(s)
}

// withNotifier replaces the bench's runtime with one that tells a
// recording Notifier.
func (b *bench) withNotifier(pol *policy.Policy, approver policy.Approver) {
	fs, err := workspace.OpenLocal(b.root)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { fs.Close() })
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "pipeline", SystemPrompt: "sys"}, agent.Collaborators{
		Client: b.model, FS: fs, Services: b.svc, Policy: pol, Approver: approver, Notifier: notified{b.log},
	})
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { rt.Close() })
	b.rt = rt
}

// The Notifier hears that a call needs the user just before the approver
// asks, and only then: not when a PERMISSION_REQUEST hook decided, nor
// when no one is there to ask (policy.Headless), nor for a call the
// policy allows.
func TestNotifierHearsWhenAPersonIsAsked(t *testing.T) {
	pol, err := policy.New(policy.ModeDefault, policy.Rules{Allow: []policy.Rule{{Tool: "Write", Pattern: "allowed.txt"}}})
	if err != nil {
		t.Fatal(err)
	}
	write := func(id, file string) script.Response {
		return script.Response{ToolCalls: []script.ToolCall{{ID: id, Name: "Write", Input: json.RawMessage(`{"file_path":"` + file + `","content":"x"}`)}}}
	}
	var b *bench
	asked := policy.ApproverFunc(func(ctx context.Context, req policy.ApprovalRequest) (policy.Approval, error) {
		b.log.add("approver:" + req.ToolUseID)
		return policy.Approval{Allow: true, Scope: policy.ScopeOnce}, nil
	})

	b = newBench(t, pol, asked)
	b.withNotifier(pol, asked)
	b.model.Script("s1", write("w1", "allowed.txt"), write("w2", "asked.txt"), script.Text("ok"))
	b.run("s1", "go")
	if got, want := b.log.get(), []string{"notify:permission_prompt:orca needs your permission to use Write:s1", "approver:w2"}; !slices.Equal(got, want) {
		t.Errorf("asked by an approver:\n got %v\nwant %v", got, want)
	}

	// A PERMISSION_REQUEST hook that decides: no person is asked.
	b = newBench(t, pol, asked)
	b.withNotifier(pol, asked)
	b.hook(hook.PermissionRequest, "yes", hook.On(func(context.Context, *hook.PermissionRequestPayload) (*hook.Decision, error) {
		return &hook.Decision{Action: hook.Allow, Reason: "fine"}, nil
	}))
	b.model.Script("s2", write("w3", "asked.txt"), script.Text("ok"))
	b.run("s2", "go")
	if got := b.log.get(); len(got) != 0 {
		t.Errorf("with a PERMISSION_REQUEST hook that allows: %v, want nothing", got)
	}

	// No one to ask.
	b = newBench(t, pol, nil)
	b.withNotifier(pol, nil)
	b.model.Script("s3", write("w4", "asked.txt"), script.Text("ok"))
	b.run("s3", "go")
	if got := b.log.get(); len(got) != 0 {
		t.Errorf("headless: %v, want nothing", got)
	}
	if b.file("asked.txt") == "x" {
		t.Errorf("headless: the call ran")
	}
}

// A turn that the provider ends (here: authentication) is a StopFailure,
// in Claude Code's error types; a turn that ends otherwise is not.
func TestNotifierHearsAProviderFailure(t *testing.T) {
	b := newBench(t, nil, nil)
	b.withNotifier(nil, nil)
	b.model.Script("s1", script.Response{Error: &script.Error{Kind: llm.KindAuthentication, Message: "bad key"}})
	b.run("s1", "go")
	const failure = "model call (iteration 1, attempt 1): llm: authentication: bad key"
	want := "notify:stop_failure:orca's turn failed: " + failure + ":s1:authentication_failed:" + failure
	if got := b.log.get(); len(got) != 1 || got[0] != want {
		t.Errorf("heard %q\nwant [%q]", got, want)
	}

	b = newBench(t, nil, nil)
	b.withNotifier(nil, nil)
	b.model.Script("s2", script.Text("fine"))
	b.run("s2", "go")
	if got := b.log.get(); len(got) != 0 {
		t.Errorf("an answered turn: %v", got)
	}
}
