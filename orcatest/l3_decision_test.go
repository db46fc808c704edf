package orcatest_test

import (
	"context"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/orcatest"
	"github.com/orca-agent/orca/policy"
)

// Every call that ran says what let it run and what rewrote it: an allow
// rule, a person, a hook that rewrote the input — the control plane's story
// of each call, in its completed event.
func TestL3_WhatDecidedEachCall(t *testing.T) {
	rules, err := policy.ParseRules([]string{"Write(allowed.txt)"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pol, _ := policy.New(policy.ModeDefault, rules)
	approver := policy.ApproverFunc(func(ctx context.Context, r policy.ApprovalRequest) (policy.Approval, error) {
		return policy.Approval{Allow: true, Scope: policy.ScopeOnce}, nil
	})
	n := orcatest.NewNode(t, orcatest.WithPolicy(pol, approver), orcatest.WithDefinition(agent.Definition{Name: "d"}))
	n.Services.Hooks.Register(hook.PreToolUse, "redirect", hook.On(func(ctx context.Context, p *hook.PreToolUsePayload) (*hook.Decision, error) {
		if p.ToolUseID != "w3" {
			return nil, nil
		}
		return &hook.Decision{Updates: map[string]any{"arguments": map[string]string{"file_path": "redirected.txt", "content": "x"}}}, nil
	}))
	r := script.Call("Write", map[string]string{"file_path": "allowed.txt", "content": "a"})
	r.ToolCalls[0].ID = "w1"
	r2 := script.Call("Write", map[string]string{"file_path": "asked.txt", "content": "b"})
	r2.ToolCalls[0].ID = "w2"
	r3 := script.Call("Write", map[string]string{"file_path": "asked-too.txt", "content": "c"})
	r3.ToolCalls[0].ID = "w3"
	r.ToolCalls = append(r.ToolCalls, r2.ToolCalls[0], r3.ToolCalls[0])
	n.Script("s", r, script.Text("done"))
	if res, err := n.Open("s").Run(t.Context(), "write"); err != nil || res.StopReason != agent.StopAnswered {
		t.Fatalf("%+v, %v", res, err)
	}
	got := map[string]*event.ToolData{}
	for _, e := range n.Events(event.ToolExecCompleted) {
		d := e.Data.(*event.ToolData)
		got[d.ToolUseID] = d
	}
	if d := got["w1"]; d == nil || d.AllowedBy.By != "policy" || d.AllowedBy.Rule != "Write(allowed.txt)" || len(d.RewrittenBy) != 0 {
		t.Errorf("w1: %+v", d)
	}
	if d := got["w2"]; d == nil || d.AllowedBy.By != "approver" || d.AllowedBy.Rule != "once" {
		t.Errorf("w2: %+v", d.AllowedBy)
	}
	if d := got["w3"]; d == nil || d.AllowedBy.By != "approver" || len(d.RewrittenBy) != 1 || d.RewrittenBy[0] != "hook:redirect" || n.ReadFile("redirected.txt") != "x" {
		t.Errorf("w3: %+v %v", d.AllowedBy, d.RewrittenBy)
	}
}
