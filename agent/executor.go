package agent

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/intercept"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/tool"
)

// StopReason says how a turn ended.
type StopReason string

// How a turn can end.
const (
	// StopAnswered: the model answered without asking for a tool. An
	// empty response (no text, no tool call) is sent back once
	// (EmptyResponseNote): a second one in a row is the answer.
	StopAnswered StopReason = "answered"
	// StopMaxIterations: the model was still asking for tools when the
	// iteration limit was reached (the tools of the last response ran).
	StopMaxIterations StopReason = "max_iterations"
	// StopFailed: the turn could not go on (a provider error that retries
	// did not cure, a cancelled context); Result.Err says why.
	StopFailed StopReason = "failed"
	// StopBlocked: the run was refused before the model was asked (by an
	// interceptor or a USER_PROMPT_SUBMIT hook), or a hook ended the turn
	// (hook.Decision.EndTurn, Claude Code's continue: false); Result.Reason
	// says why.
	StopBlocked StopReason = "blocked"
	// StopBudgetExhausted: the session reached a budget;
	// Result.BudgetDimension names which.
	StopBudgetExhausted StopReason = "budget_exhausted"
	// StopInterrupted: the turn was interrupted (its context was cancelled
	// with ErrInterrupted as the cause).
	StopInterrupted StopReason = "interrupted"
	// StopCompacted: the request was a manual compaction (Request.Compact);
	// the model was asked for nothing but the summary.
	StopCompacted StopReason = "compacted"
	// StopEscalated: the turn finished but its verification failed and
	// was accepted anyway (by a POST_VERIFY hook) or could not be fixed
	// within the revision cap: a person should look.
	StopEscalated StopReason = "escalated"
	// StopAwaitingApproval: the approver parked a call (policy.Approval's
	// Park): the turn stopped before it, Result.Parked describes it, and
	// the calls after it in the same message did not run either.
	StopAwaitingApproval StopReason = "awaiting_approval"
	// StopRefused: the model refused to go on (its response stopped with
	// llm.StopRefusal: a provider's safety classifier, a refusal message).
	// Result.Reason says what the provider said of it; Answer is empty,
	// whatever text came before the refusal (it is in Messages), and tool
	// calls of the refused response did not run.
	StopRefused StopReason = "refused"
	// StopMaxTokens: the model's answer was cut off at the output token
	// limit (Definition.MaxTokens, or what an llm_request middleware
	// asked for): Answer holds what it wrote, unverified, and Output is
	// empty; Result.Reason says so. A response cut off while it called
	// tools does not end the turn: its calls do not run (their input may
	// be cut short too) — each is refused (a ToolBlocked event by
	// "max_tokens") and the model is told to make them again with less in
	// each. A response that used exactly the limit counts as cut off when it
	// calls tools, whatever the provider says of it.
	StopMaxTokens StopReason = "max_tokens"
	// StopPaused: a step of a turn run step by step (Request.Step) ended
	// before the turn's next effect; the turn goes on with a Continue
	// request that carries Result.Progress.
	StopPaused StopReason = "paused"
	// StopClientTools: the model called tools the caller runs
	// (Request.ClientTools, a front end's tools): the turn stopped at the
	// first of those calls, Result.ClientCalls are the response's calls of
	// them from there on, and no call after it ran. The session's next
	// turn answers them (session.WithResults) and goes on with the calls
	// after them.
	StopClientTools StopReason = "client_tools"
)

// ClientTool is a tool the caller runs, not the runtime (a front end's:
// AG-UI's): offered to the model for one turn (Request.ClientTools). A
// call of it with input its Schema refuses is answered so, and the model
// may call again; a valid one ends the turn as StopClientTools. The
// runtime's policy and hooks are about what runs in it, and see none of
// these calls; its tools' names come first (a ClientTool by the name of
// one is never called).
type ClientTool struct {
	Name, Description string
	// Schema checks a call's input; its Raw is what the model is shown.
	Schema *tool.Schema
}

// Progress is where a turn run step by step stands (Request.Step,
// Result.Progress): the loop's counts, which go on from step to step.
type Progress struct {
	// Steps is how many steps of the turn have ended.
	Steps int `json:"steps"`
	// Iterations counts the turn's model calls (MaxIterations caps it).
	Iterations int `json:"iterations"`
	// Stops, Revisions and Corrections count the STOP continuations,
	// verification revisions and output corrections in a row (their caps
	// hold across steps).
	Stops       int `json:"stops,omitempty"`
	Revisions   int `json:"revisions,omitempty"`
	Corrections int `json:"corrections,omitempty"`
	// CallsPending: the step ended before every tool call of the last
	// response had started; those without a result never started (the
	// next step runs them, session.CallsNotStarted).
	CallsPending bool `json:"calls_pending,omitempty"`
	// ReadsNext: the next step of those calls is a group of read-only
	// calls that run at once — quick, and safe to run again, so that a
	// durable engine may run it in place (a local activity) rather than
	// dispatch it.
	ReadsNext bool `json:"reads_next,omitempty"`
	// TraceParent is the W3C traceparent of the turn's first step, which a
	// tracing interceptor sets (telemetry): the later steps join its
	// trace, wherever they run.
	TraceParent string `json:"trace_parent,omitempty"`
	// Rest makes the next step run the rest of the turn, its counts going
	// on (an engine whose history would outgrow its limit otherwise).
	Rest bool `json:"rest,omitempty"`
}

// Parked is the call a turn stopped before (StopAwaitingApproval).
type Parked struct {
	ToolUseID, ToolName string
	Input               json.RawMessage
	// Reason is the policy's; Rules the rules it suggested.
	Reason string
	Rules  []string
	// TraceParent is the W3C traceparent of the turn that parked, set by a
	// tracing interceptor (Request.OnEnd sees it): the session keeps it
	// with the parked call for the turn that resumes it.
	TraceParent string
}

// ErrInterrupted is the cause a turn's context is cancelled with to
// interrupt it (context.WithCancelCause): the turn then ends as
// StopInterrupted at the next safe point, the running tool cancelled.
var ErrInterrupted = errors.New("turn interrupted")

// Request asks for one turn of a session.
type Request struct {
	// SessionID names the conversation; it is the trace id of every model
	// call and the key of per-session tool state. Required.
	SessionID string
	// TurnID names this turn; generated if empty.
	TurnID string
	// Input is the user's message.
	Input string
	// Media are images and documents the user shows the model with Input
	// (attached files), after its text.
	Media []*llm.Media
	// Context is added to the input as context blocks (what SESSION_START
	// hooks added, for the session's first turn).
	Context []string
	// History is the conversation before this turn. It is not modified.
	History []llm.Message
	// OnEvent, if set, receives this execution's events in order, those of
	// its foreground subagent forks among them, on the goroutine that runs
	// the turn: the per-execution stream. (The runtime's bus receives them
	// too.)
	OnEvent func(event.Event)
	// OnBackgroundEvent, if set, receives the events of the background
	// forks the execution starts (Task with run_in_background), on their
	// own goroutines, as they happen — also after the turn has ended —
	// and the tool_progress events of its calls (tool.Report), on the
	// goroutines of the tools that report, while the calls run. A live
	// session sends both to its one event feed, serialised.
	OnBackgroundEvent func(event.Event)

	// Resume are tool calls of History's last assistant message that a
	// crash left unanswered and that may run again (idempotent tools, and
	// calls a person approved while the session was parked): the turn runs
	// them first, through the whole pipeline, and their results join the
	// message that answers that assistant message.
	Resume []llm.Block
	// Approved are the tool use ids of Resume calls a person approved
	// (a parked call): the policy's ask for them is answered yes.
	Approved map[string]bool
	// ClientTools are offered to the model with the runtime's tools, for
	// this turn: the caller runs their calls (StopClientTools).
	ClientTools []ClientTool
	// Record, if set, receives every message the turn adds to the
	// conversation, in order, as soon as the message is final — before the
	// model call that sends it, or as the model's answer arrives — with
	// what the turn has spent so far, so that a session writes its
	// transcript and its totals as the turn goes (a crash loses neither).
	// Messages final at the same moment come in one call, for one write:
	// the results of calls that ended together, a message and those
	// added after it before the next model call. It is called from the
	// turn's goroutine, one call at a time; the slice is the turn's, to
	// be copied if kept after Record returns. An error fails the turn.
	//
	// An answer without tool calls comes as the turn ends, marked
	// Recorded.Ending, for the caller to write with the turn's end (a
	// crash before it costs the model call, which a retry of the turn
	// makes again) — unless STOP hooks or a verification run after it:
	// they may take long, and it comes before them. An answer with calls
	// comes before they run, so that a crash knows they started — but
	// with their first results when a crash may run each of them again
	// unasked (tools that are read-only and idempotent, whose calls run
	// at once: Read, Glob, Grep): a crash before them costs the model
	// call.
	Record func([]Recorded) error
	// OnCompact, if set, receives the whole conversation each time it is
	// compacted during the turn (a summary followed by the newest turns
	// verbatim); it replaces everything recorded before. An error fails
	// the turn.
	OnCompact func(history []llm.Message) error
	// Budget overrides the definition's budget for this turn's session
	// (nil: the definition's).
	Budget *budget.Limits
	// TraceParent is the W3C traceparent of the trace this turn continues:
	// a session gives the turn that resumes a parked call the parked
	// turn's (store.ParkedCall.TraceParent), for tracing interceptors; the
	// runtime itself does not read it.
	TraceParent string
	// Model is the model of this turn's calls, over the definition's (a
	// name Definition.ModelAliases has stands for its model); "": the
	// definition's. Subagent forks keep their own.
	Model string
	// Output asks this turn for its answer as a JSON value of a schema
	// (see Output), over the definition's; nil: the definition's.
	Output *Output
	// OnEnd, if set, receives the turn's result once it is final, before
	// the turn_completed event: what a session keeps of the turn (totals,
	// a parked call, the messages Record was given with Ending) is
	// written by then, so that whoever sees the event finds it. It is
	// called on the turn's goroutine.
	OnEnd func(*Result)
	// Spent is what the session had spent before this turn.
	Spent budget.Spent
	// PromptTokens is the size of History in tokens if known (from the
	// last call's usage), for deciding when to compact; 0 means estimate.
	PromptTokens int64
	// Account, if set, receives what background forks started by this
	// turn spent when they finish (after the turn itself may have ended),
	// so that the invoking session's totals include them.
	Account func(spent budget.Spent, usage llm.Usage)
	// fork is set by the runtime for its own forks: no caller can make an
	// execution a fork.
	fork *forkInfo

	// Continue goes on with a turn that an earlier attempt began (a worker
	// died during it, a parked call was decided since): History ends with
	// what that attempt recorded, its input among it, so no input message
	// is added and neither USER_PROMPT_SUBMIT nor TURN_START hooks run
	// again (Input is the turn's input, for the record). The turn goes on
	// from where History ends: Resume's calls first, then the model —
	// unless History ends with the model's answer, which is then the
	// turn's (StopAnswered, the model not asked again; STOP hooks and
	// verification are not run again).
	Continue bool

	// Step makes the execution one step of the turn: it ends as
	// StopPaused before it would start a second effect — a model call, a
	// tool call, or a group of read-only calls that run at once — with
	// Result.Progress saying where the turn stands. The next step is a
	// Continue request whose Step is that Progress: it emits no second
	// turn_started (a paused step emits no turn_completed), and the loop's
	// counts go on. Hooks, policy, middleware and events run in the step
	// whose effect they are about; a step is an execution, so an
	// interceptor chain wraps each step (Step tells a later one: Steps >
	// 0). A durable engine runs each model call and each tool call of a
	// turn as an activity of its own so.
	Step *Progress

	// Compact makes this a manual compaction (the /compact command)
	// instead of a turn: History is summarised, with Input as the
	// instructions for the summary; the model is asked nothing else. It
	// goes through the interceptors like a turn, and emits only the
	// compaction's events. The result is StopCompacted (StopFailed if the
	// summariser failed) with the new conversation in Transcript
	// (Compacted set), or History and the reason nothing was compacted in
	// Reason.
	Compact bool
}

// Result says what a turn did.
type Result struct {
	// Scope is the execution's identity: its runtime, session, turn and
	// execution (and, for a subagent fork, its depth and parent).
	scope.Scope
	StopReason StopReason
	// Parked is the call the turn stopped before (StopAwaitingApproval).
	Parked *Parked
	// ClientCalls are the tool uses of Request.ClientTools the turn
	// stopped at (StopClientTools), in the response's order: the caller
	// runs them and gives their results to the next turn.
	ClientCalls []llm.Block
	// Answer is the text of the model's final message when the turn was
	// answered, and empty otherwise (text that came with tool calls is in
	// Messages). With an Output, it is the value's JSON.
	Answer string
	// Output is the structured answer, compact JSON that holds to the
	// turn's Output schema, when the turn asked for one and was answered
	// (Decode decodes it); nil otherwise.
	Output json.RawMessage
	// Reason says why a blocked turn was blocked, why a turn was
	// escalated or cut off (StopMaxTokens), or what the provider said of a
	// refusal.
	Reason string
	// Verification is the last built-in verification of the turn, if one
	// ran.
	Verification *hook.Verification
	// BudgetDimension names the budget a StopBudgetExhausted turn reached.
	BudgetDimension budget.Dimension
	// Spent is what this turn spent, its foreground forks included (add
	// it to the session's totals; ToolCalls below counts the turn's own
	// calls only).
	Spent budget.Spent
	// Messages are the messages this turn added to the conversation: the
	// user's input, then each assistant message and the tool results that
	// answer it. Every tool use has its result, whatever the ending.
	Messages []llm.Message
	// Compacted says the conversation was compacted during the turn; then
	// Messages start with the compacted history, and Transcript is the
	// whole conversation to continue with.
	Compacted bool
	// Transcript is the conversation after the turn: History (or its
	// compaction) followed by the turn's messages.
	Transcript []llm.Message
	// PromptTokens is the size of the last prompt sent, from the
	// provider's usage (pass it as the next turn's Request.PromptTokens).
	PromptTokens int64
	Usage        llm.Usage
	Iterations   int
	ToolCalls    int
	// Progress is where a turn run step by step (Request.Step) stands
	// after this step: pass it as the next step's Request.Step.
	Progress Progress
	// Err is why the turn failed (StopFailed only).
	Err error
}

// Executor runs turns. The zero value is ready to use; an Executor is safe
// for concurrent use, on one runtime or many. One turn, end to end (the
// interceptors of an intercept chain come before all of it):
//
//	USER_PROMPT_SUBMIT, TURN_START hooks
//	loop, until an answer, a refusal, the iteration limit, a budget, an interrupt, an error,
//	or an answer cut off at the output token limit:
//	  compaction past the threshold (PRE_COMPACT, the summariser's model call)
//	  model call: llm_request middleware → llm_execution middleware → the client
//	              (llm_execution again on every retry)
//	  each tool call of the response, in order (none of a response cut off at
//	  the output token limit: each is refused, StopMaxTokens says why):
//	    tool_request middleware → registry lookup → schema validation →
//	    PRE_TOOL_USE (a rewrite is validated again) → policy and approval
//	    (from the tool's traits; PERMISSION_REQUEST, the approver) →
//	    tool_execution middleware → the tool (a Forker for tools that fork;
//	    the turn's Elicitor for tools that elicit: ELICITATION, the person,
//	    ELICITATION_RESULT) → POST_TOOL_USE or POST_TOOL_USE_FAILURE
//	  the observations go back into the next prompt
//	STOP (may send the agent back to work), then verification and POST_VERIFY
//
// Events are emitted at every step, to Request.OnEvent and the runtime's
// bus; none of them can change the run.
type Executor struct {
	// Now returns the time stamped on events; time.Now if nil.
	Now func() time.Time
}

// Executor is the delegate of intercept chains.
var _ Runner = (*Executor)(nil)

// The interceptors of runs, named for agents, so that one is a function:
//
//	authz := agent.InterceptorFunc(func(ctx context.Context, rt *agent.Runtime, req agent.Request, next agent.Next) (*agent.Result, error) {
//		…
//		return next.Proceed(ctx, rt, req)
//	})
//	exec := intercept.Wrap(agent.NewExecutor(), authz)
type (
	Interceptor     = intercept.Interceptor[*Runtime, Request, *Result]
	InterceptorFunc = intercept.Func[*Runtime, Request, *Result]
	Next            = intercept.Next[*Runtime, Request, *Result]
)

// NewExecutor returns an executor.
func NewExecutor() *Executor { return &Executor{} }

// Execute runs one turn of req.SessionID on rt. It returns a non-nil Result
// for every valid request; when the turn failed, the error is returned too
// (the same as Result.Err). Unknown tools, invalid arguments, refused and
// failed tool calls are observations for the model, not failures of the
// turn.
func (e *Executor) Execute(ctx context.Context, rt *Runtime, req Request) (*Result, error) {
	if rt == nil {
		return nil, errors.New("agent: Execute on a nil runtime")
	}
	if req.SessionID == "" {
		return nil, errors.New("agent: request has no session id")
	}
	for i, m := range req.Media {
		if m == nil {
			return nil, fmt.Errorf("agent: request media[%d] is nil", i)
		}
		b := llm.MediaBlock(m)
		if err := freshMedia(&b); err != nil {
			return nil, fmt.Errorf("agent: request media[%d] (%s): %w", i, m.Name, err)
		}
		if model := modelOf(rt, req.Model); !takes(rt.modelInfo(model), m) {
			return nil, fmt.Errorf("agent: request media[%d] (%s): model %s takes no %s (orca's model catalog): %w", i, m, model, kindOf(m), ErrMediaNotTaken)
		}
	}
	sc := scope.Scope{RuntimeID: rt.id, SessionID: req.SessionID, TurnID: req.TurnID, ExecutionID: newID("exec")}
	if sc.TurnID == "" {
		sc.TurnID = newID("turn")
	}
	return e.execute(ctx, rt, req, sc)
}

// execute runs one execution with identity sc: a user's turn, or a fork
// (the runtime's own forks only: no request field makes an execution a
// fork).
func (e *Executor) execute(ctx context.Context, rt *Runtime, req Request, sc scope.Scope) (*Result, error) {
	t := &turn{e: e, rt: rt, ctx: ctx, req: &req, res: &Result{Scope: sc}}
	switch {
	case req.Compact:
		t.compactOnly()
	case req.fork != nil:
		t.runFork(req.fork)
	default:
		t.run()
	}
	return t.res, t.res.Err
}

func newID(prefix string) string {
	var b [8]byte
	v := rand.Uint64()
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	return prefix + "_" + hex.EncodeToString(b[:])
}

// Recorded is one message a turn records, with what the turn has spent
// when it does: its model usage and its spending (its foreground forks'
// included; WallTime since the turn started), both running totals of the
// turn, so that the last one recorded is what a crash would keep.
type Recorded struct {
	Message llm.Message
	// Model is, for an answer of the model (an assistant message), the
	// model that served it: with fallback models, not always the
	// definition's. Empty for the other messages.
	Model string
	Usage llm.Usage
	Spent budget.Spent
	// Ending says the turn ends with this message: Request.OnEnd is
	// called next, with nothing run between, so that a caller that sets
	// OnEnd may write the message with the turn's end, in one write
	// (an error writing them is then OnEnd's to report: the turn has
	// ended).
	Ending bool
}
