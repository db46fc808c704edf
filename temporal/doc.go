// Package temporal runs orca sessions as durable Temporal workflows, for
// when one process is not enough: many users, long autonomous turns,
// workers that crash or are redeployed.
//
// Each session is one workflow (id "orca/<task queue>/<session id>"). A turn is
// an update of it (TurnUpdate, its update id the turn's id, so that a
// client that asks again gets the same turn); the workflow runs the
// session's turns one at a time, in the order they came, each as a row of
// activities: each model call is one (ModelActivity), and so is each tool
// call (ToolActivity), but for read-only calls that run at once: such a
// group runs in the activity of the step before it (the model call that
// asked for it, most often), on the session open there, without a
// dispatch or a workflow task of its own.
// An activity is a step of the runtime's own turn (session.Step) — app.App's
// session, its interceptors, hooks, policy, middleware and events exactly
// as in one process, each in the step whose effect it is about — over a
// store that every worker shares (PostgreSQL: app.Config.StoreDSN). The
// worker that ran a step keeps the session open for the next, which the
// workflow sends to that worker: on the shared task queue, naming it
// (StepInput.Keeper), so that a cluster with eager activity execution
// hands it back to the worker of the workflow task — that worker, most
// often — without a dispatch; once such a step reaches another worker
// (which runs nothing), to that worker's own task queue (Activities.Queue,
// RegisterOwn). If it does not take it within Options.StepStart, any
// worker does, from the store. Nothing non-deterministic runs in the
// workflow, and no transcript, tool input or tool result travels through
// Temporal: the store holds them, the workflow's payloads are ids, the
// turn's input and the references of its images and documents (their
// digests: Client.Turn puts their bytes in the store first, and the
// turn's first step reads them back; both in its first step only), the
// loop's counts (agent.Progress) and a bounded summary of its result
// (TurnResult).
//
// What a crash costs. A step's activity heartbeats; when its worker dies,
// Temporal gives the step to another worker, which opens the session from
// the store and goes on where the turn stopped (session.Retry): the
// messages and tool results already recorded stand; a model call that
// did not answer is asked again (as the provider's client retries, with
// its back-off); a tool call that started and did not report back runs
// again only if its tool is idempotent (tool.Traits.Idempotent) — any
// other is answered "may or may not have taken effect", and the model
// decides. A call whose step never began (its worker died between two
// steps) runs. No call is run twice blindly, however often workers die.
//
// Approvals park the workflow durably: a turn whose call the policy asks
// about stops (awaiting_approval) with the call parked in the store; a
// DecideUpdate — or a decision taken through the store by orca approve or
// orca serve, which the workflow looks for every Options.PollParked —
// goes on with the turn, on whichever worker, days later if need be.
// Interrupts are signals (InterruptSignal): the running step is
// interrupted at its next safe point, its results recorded, and the turn
// ends (between two steps, the next one ends it). Budgets are
// the session's, in the shared store: every worker enforces the same.
//
// A session's workflow continues as new after Options.TurnsPerRun turns or
// when its history grows past Options.MaxHistory events (or Temporal
// suggests it), and ends after Options.Idle without a turn; the next turn
// starts it again.
package temporal
