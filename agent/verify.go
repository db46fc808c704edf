package agent

import (
	"fmt"
	"time"

	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/tool"
)

// verify runs after the model answered: the built-in verification command
// (if the definition has one), then POST_VERIFY hooks, which accept or
// revise. It returns more=true when the turn goes back to work (an
// instruction was added), else how the turn ends: answered, or escalated
// when a failed verification was accepted or could not be fixed within
// MaxRevisions consecutive revisions. Earlier tool calls are never run
// again: a revision is a new iteration of the same turn.
func (t *turn) verify(answer string) (StopReason, bool) {
	def := &t.rt.def
	hooks := t.rt.hooks.Has(hook.PostVerify)
	if def.Verify == "" && !hooks {
		return StopAnswered, false
	}
	var v *hook.Verification
	if def.Verify != "" {
		v = t.runVerification()
		t.res.Verification = v
	}
	action, by, instruction := hook.Continue, "", ""
	if hooks {
		out := t.runHook(&hook.PostVerifyPayload{Common: t.common(), Answer: answer, Verification: v, Revisions: t.revisions})
		action, by, instruction = out.Action, out.By, out.Instruction
	}
	failed := v != nil && !v.Passed
	if action == hook.Continue && failed {
		// No hook decided: a failed verification is a revision with its
		// output as the instruction.
		action, by = hook.Revise, "verification"
		instruction = fmt.Sprintf("The verification command `%s` failed after your answer. Fix the problem, then answer again.\n\n%s", v.Command, v.Output)
	}
	switch {
	case action == hook.Revise && t.revisions < def.MaxRevisions && t.res.Iterations < def.MaxIterations:
		t.revisions++
		t.instruct(hook.PostVerify, by, instruction)
		return "", true
	case failed && action == hook.Accept:
		t.res.Reason = fmt.Sprintf("verification `%s` failed and %s accepted it", v.Command, by)
		return StopEscalated, false
	case failed:
		t.res.Reason = fmt.Sprintf("verification `%s` still failed after %d revisions", v.Command, t.revisions)
		return StopEscalated, false
	case action == hook.Revise:
		t.res.Reason = fmt.Sprintf("POST_VERIFY asked for more than %d revisions", def.MaxRevisions)
		return StopEscalated, false
	}
	return StopAnswered, false
}

// runVerification runs the verification command through the registry's
// command runner (the Bash tool), so that it gets the same process handling
// (its own process group, output cap, timeout) as the agent's commands.
func (t *turn) runVerification() *hook.Verification {
	cmd := t.rt.def.Verify
	runner, _ := t.rt.tools.CommandRunner() // New refused a Verify without one
	start := time.Now()
	r := tool.Run(t.ctx, runner, &tool.Call{ID: "verify", Name: runner.Name(), Input: runner.CommandInput(cmd, "built-in verification"), Scope: t.res.Scope})
	v := &hook.Verification{Command: cmd, Passed: !r.IsError, Output: r.Content}
	t.emit(event.VerificationCompleted, &event.VerificationData{Command: cmd, Passed: v.Passed, Output: r.Content, Duration: time.Since(start)})
	return v
}

// continuations are what sent the turn back to work, and what ended it.
type continuations struct {
	// stops and revisions count consecutive STOP continuations and
	// verification revisions.
	stops, revisions int
	// ended is why a hook ended the turn (hook.Decision.EndTurn); the
	// turn ends as blocked at the next boundary.
	ended string
}
