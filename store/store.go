// Package store defines the record store: the one witness of session state.
//
// A Store keeps, per session, the transcript records (messages and
// compaction summaries, in append order), the running totals (tokens, cost,
// tool calls, wall time, turns), an optional budget override, the
// "always allow" approvals a person granted, the bytes of the images and
// documents it shows the model (once per store, by digest: Attachments),
// and the lease of the one writer that may add to it (AcquireLease,
// Step.Owner). Totals, budgets and approvals
// outlive the session handle that wrote them: a resumed session finds them
// in the store.
//
// Writing to a session that was never provisioned is an error
// (ErrNotProvisioned), never a silent drop: every session starts with
// Provision. (Attachments put ahead of a session's first turn are the one
// exception: see Attachments.)
//
// This package holds the contract and the in-memory implementation
// (Memory). The SQLite implementation lives in store/sqlite, and
// store/storetest is the conformance suite every implementation runs.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/llm"
)

// Errors callers branch on, compared with errors.Is. Implementations wrap
// them with the operation and the session id.
var (
	// ErrNotFound: what a read names is unknown: the session, or in it a
	// parked call or an attachment.
	ErrNotFound = errors.New("store: not found")
	// ErrNotProvisioned: a write named a session that was never
	// provisioned. The write stored nothing.
	ErrNotProvisioned = errors.New("store: session not provisioned")
	// ErrWrongRuntime: the session belongs to another runtime than the one
	// the call named. A runtime never reaches another runtime's sessions.
	ErrWrongRuntime = errors.New("store: session belongs to another runtime")
	// ErrInvalid: an argument breaks the contract (a missing id, an invalid
	// record, a negative budget). Nothing was stored.
	ErrInvalid = errors.New("store: invalid argument")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store: closed")
)

// Record kinds.
const (
	// KindMessage is a transcript message.
	KindMessage = "message"
	// KindSummary is a compaction summary: a message that stands for the
	// records it compacted.
	KindSummary = "summary"
)

// Session describes one conversation.
type Session struct {
	// ID names the session; required.
	ID string
	// RuntimeID names the runtime the session belongs to; required. A
	// session belongs to one runtime for its whole life.
	RuntimeID string
	// Workspace is the workspace root the session works in.
	Workspace string
	// Agent is the name of the agent definition.
	Agent string
	// CreatedAt is set by Provision (now, unless the caller gave one).
	CreatedAt time.Time
	// UpdatedAt moves forward with every Append and FinishTurn; a later
	// write always gives a later UpdatedAt, so Sessions lists the most
	// recently active session first.
	UpdatedAt time.Time
	// Turns counts finished turns (FinishTurn).
	Turns int
	// LastPrompt is the prompt of the last finished turn, for listings.
	LastPrompt string
}

// Record is one entry of a session's transcript.
type Record struct {
	// Seq is assigned by the store: 1, 2, 3… per session, in append order,
	// with no gaps. Any value given to Append is ignored.
	Seq int64
	// SessionID is filled in by Append; if given, it must match.
	SessionID string
	// TurnID names the turn that produced the record.
	TurnID string
	// Time is when the record was written; Append sets it when zero.
	// Stores return it in UTC.
	Time time.Time
	// Kind is KindMessage or KindSummary.
	Kind string
	// Message is stored exactly: tool-use input bytes are kept byte for
	// byte, even when they are not valid JSON. Strings are UTF-8 text.
	Message llm.Message
	// Model is, for an answer of a model, the model that served it (with
	// fallback models, not always the session's); empty if unknown.
	Model string
	// Compacted marks a record superseded by a later summary: it is kept,
	// but not sent to the model again. Only MarkCompacted sets it; Append
	// refuses a record that is already marked.
	Compacted bool
}

// Totals are a session's running totals.
type Totals struct {
	Usage     llm.Usage
	CostUSD   float64
	ToolCalls int64
	WallTime  time.Duration
	Turns     int64
}

// Add returns the sum of t and d.
func (t Totals) Add(d Totals) Totals {
	return Totals{
		Usage:     t.Usage.Add(d.Usage),
		CostUSD:   t.CostUSD + d.CostUSD,
		ToolCalls: t.ToolCalls + d.ToolCalls,
		WallTime:  t.WallTime + d.WallTime,
		Turns:     t.Turns + d.Turns,
	}
}

// Sub returns t minus d.
func (t Totals) Sub(d Totals) Totals {
	return Totals{
		Usage: llm.Usage{
			InputTokens:      t.Usage.InputTokens - d.Usage.InputTokens,
			OutputTokens:     t.Usage.OutputTokens - d.Usage.OutputTokens,
			CacheReadTokens:  t.Usage.CacheReadTokens - d.Usage.CacheReadTokens,
			CacheWriteTokens: t.Usage.CacheWriteTokens - d.Usage.CacheWriteTokens,
		},
		CostUSD:   t.CostUSD - d.CostUSD,
		ToolCalls: t.ToolCalls - d.ToolCalls,
		WallTime:  t.WallTime - d.WallTime,
		Turns:     t.Turns - d.Turns,
	}
}

// Approval is an "always allow" rule a person granted.
type Approval struct {
	// RuntimeID is the runtime the approval belongs to; required.
	RuntimeID string
	// SessionID limits the approval to one session of that runtime. Empty
	// means agent reach: every session of the runtime, never another
	// runtime's.
	SessionID string
	// Rule is the permission rule allowed, e.g. `Bash(go test:*)`; required.
	Rule string
	// CreatedAt is set by AddApproval when zero.
	CreatedAt time.Time
}

// Filter selects sessions. Empty fields match every session.
type Filter struct {
	RuntimeID string
	Workspace string
	// Limit caps the number of sessions returned; 0 means no cap.
	Limit int
}

// RecordFilter selects records of one session.
type RecordFilter struct {
	// IncludeCompacted returns compacted records too (for display and
	// audit); without it, Records returns what the model should see.
	IncludeCompacted bool
	// AfterSeq returns only records with Seq > AfterSeq.
	AfterSeq int64
}

// Store is the record store: every role below, and Close. Implementations
// are safe for concurrent use; operations on different sessions do not
// wait for each other longer than a write takes. A consumer that needs
// one role takes that role's interface (Sessions, Transcript, Leases,
// Spending, Approvals, ParkedCalls, Attachments); observation rows
// (Observations) and scheduled runs (Schedules) are roles of their own,
// outside Store.
//
// Reads of an unknown session return ErrNotFound; writes to one return
// ErrNotProvisioned and store nothing. Errors name the operation and the
// session.
//
// A write whose context ends before it is done either stored nothing and
// returns the context's error, or was done and returns its result as if
// the context had not ended: a store never keeps a write it reported as
// failed. (A store may finish a write it has begun rather than stop half
// way: store/sqlite does, for a write already in a transaction.)
type Store interface {
	Sessions
	Transcript
	Leases
	Spending
	Approvals
	ParkedCalls
	Attachments
	Windows

	// Close releases the store. It is idempotent; other calls after it
	// return ErrClosed.
	Close() error
}

// Sessions is the role of a Store that keeps the sessions themselves:
// provisioning, reading, listing, deleting, and moving them between
// runtimes.
type Sessions interface {
	// Provision creates the session if it is absent and returns the stored
	// one. It is idempotent: provisioning an existing session changes
	// nothing (Workspace, Agent and CreatedAt of the first call win), but
	// naming another RuntimeID than the stored one is ErrWrongRuntime. ID
	// and RuntimeID are required. Turns, LastPrompt and UpdatedAt are the
	// store's to keep and are ignored.
	Provision(ctx context.Context, s Session) (Session, error)
	// Session returns the session, or ErrNotFound.
	Session(ctx context.Context, id string) (Session, error)
	// Sessions lists sessions matching f, most recently updated first
	// (ties by ID).
	Sessions(ctx context.Context, f Filter) ([]Session, error)
	// DeleteSession removes the session and everything kept for it — its
	// transcript, totals, budget, session-reach approvals, parked calls,
	// the attachments put for it or shown in it (their bytes too, when no
	// other session keeps them) — but not its observation rows, the log
	// of what ran. A session that is absent is ErrNotFound (attachments
	// put for its id, never provisioned, are removed all the same); one
	// whose writer's lease has not expired (a live session holds it) is a
	// *LeaseError (ErrLeased).
	DeleteSession(ctx context.Context, id string) error

	// RebindRuntime moves every session of runtime from, with its
	// approvals, to runtime to, and returns how many sessions it moved: a
	// runtime whose id changed (its workspace got an id of its own) adopts
	// its sessions. An approval to already has is dropped, not doubled.
	RebindRuntime(ctx context.Context, from, to string) (int, error)
}

// Transcript is the role of a Store that keeps what a session's turns
// write: its records, each step of a turn (records and what it spent),
// and the end of each turn.
type Transcript interface {
	// Append adds records to the end of the session's transcript and
	// returns them as stored (Seq, SessionID and Time set). A batch is
	// all-or-nothing: if any record is invalid (empty or unknown Kind, a
	// message with an empty Role, a SessionID that does not match, a record
	// already marked Compacted), nothing is stored and the error names the
	// record. Append moves the session's UpdatedAt.
	Append(ctx context.Context, sessionID string, recs ...Record) ([]Record, error)
	// Records returns the session's records in Seq order.
	Records(ctx context.Context, sessionID string, f RecordFilter) ([]Record, error)
	// MarkCompacted marks every record with Seq <= throughSeq (messages and
	// earlier summaries alike) compacted. It is idempotent; throughSeq 0
	// marks nothing, and a throughSeq past the last record is ErrInvalid.
	MarkCompacted(ctx context.Context, sessionID string, throughSeq int64) error

	// AppendStep appends step.Records and adds step.Totals in one
	// transaction, and returns the records as stored and the new totals:
	// both are written or neither. If step.Owner is set, it must hold the
	// session's lease (else *LeaseError, and nothing is written). Records
	// are checked as by Append. If step.Finish is set, the turn is
	// finished as by FinishTurn in the same transaction, and the totals
	// returned count it.
	AppendStep(ctx context.Context, sessionID string, step Step) ([]Record, Totals, error)

	// FinishTurn records that turn turnID ended, prompted by prompt: the
	// session's Turns and its totals' Turns count it, LastPrompt = prompt,
	// and UpdatedAt moves. A turn counts once: finishing the session's
	// last finished turn again (an attempt of a turn that parked and went
	// on, or a retry after a crash once the turn had ended) counts
	// nothing. An empty turnID always counts.
	FinishTurn(ctx context.Context, sessionID, turnID, prompt string) error
}

// Leases is the role of a Store that keeps the lease of each session's one
// writer (see Step.Owner).
type Leases interface {
	// AcquireLease makes owner the session's one writer until ttl from now
	// and returns when that is: it succeeds when no one holds the lease,
	// when the holder's lease has expired, or when owner holds it already
	// (a renewal). Otherwise it is a *LeaseError naming the holder.
	AcquireLease(ctx context.Context, sessionID, owner string, ttl time.Duration) (time.Time, error)
	// ReleaseLease ends owner's lease; a lease owner does not hold is left
	// alone (no error).
	ReleaseLease(ctx context.Context, sessionID, owner string) error
}

// Spending is the role of a Store that keeps each session's running
// totals and its budget override.
type Spending interface {
	// AddTotals adds delta to the session's totals atomically and returns
	// the new totals.
	AddTotals(ctx context.Context, sessionID string, delta Totals) (Totals, error)
	// Totals returns the session's totals (zero for a new session).
	Totals(ctx context.Context, sessionID string) (Totals, error)

	// SetBudget sets the session's budget override; nil clears it. A zero
	// field means no limit in that dimension; a negative one is
	// ErrInvalid. Limits with every field zero are an override that lifts
	// every limit, which is not the same as no override (nil).
	SetBudget(ctx context.Context, sessionID string, b *budget.Limits) error
	// Budget returns the session's budget override, or nil if none.
	Budget(ctx context.Context, sessionID string) (*budget.Limits, error)
}

// Windows is the role of a Store that keeps the context windows a
// runtime learnt of its models: where a model refused a prompt as too
// long, and so showed a window smaller than the runtime was told (a
// proxy's, a local server's, a model the catalog lacks), the runtime
// keeps under it from then on — and, through the store, so does the next
// process that opens the same runtime. They are kept per runtime, not per
// session, and outlive the sessions (DeleteSession leaves them).
type Windows interface {
	// LearnWindow keeps w, replacing what the runtime kept for the same
	// model. RuntimeID and Model are required, Tokens positive (else
	// ErrInvalid); LearntAt is set to now when zero.
	LearnWindow(ctx context.Context, w LearntWindow) error
	// LearntWindows returns what runtimeID learnt, by model name.
	LearntWindows(ctx context.Context, runtimeID string) ([]LearntWindow, error)
}

// LearntWindow is the context window a runtime learnt of a model.
type LearntWindow struct {
	RuntimeID string
	Model     string
	// Tokens is the window, in tokens.
	Tokens   int64
	LearntAt time.Time
}

// Approvals is the role of a Store that keeps the "always allow"
// approvals a person granted, of a runtime or of one of its sessions.
type Approvals interface {
	// AddApproval stores an approval. Adding the same (RuntimeID,
	// SessionID, Rule) again changes nothing. A session-reach approval
	// needs a provisioned session (ErrNotProvisioned) of the same runtime
	// (ErrWrongRuntime).
	AddApproval(ctx context.Context, a Approval) error
	// Approvals returns the approvals that reach sessionID in runtimeID:
	// the runtime's agent-reach approvals plus that session's own, in the
	// order they were added; never another runtime's. An empty sessionID
	// returns the agent-reach approvals only. A sessionID that is unknown
	// is ErrNotFound; one of another runtime is ErrWrongRuntime.
	Approvals(ctx context.Context, runtimeID, sessionID string) ([]Approval, error)
}

// ParkedCalls is the role of a Store that keeps the tool calls parked for
// a person to decide (see ParkedCall).
type ParkedCalls interface {
	// Park stores a parked call, pending; the session must exist
	// (ErrNotProvisioned).
	Park(ctx context.Context, p ParkedCall) error
	// ParkedCalls lists the parked calls f selects, oldest first.
	ParkedCalls(ctx context.Context, f ParkFilter) ([]ParkedCall, error)
	// SetParkStatus moves parked call id to status (see
	// ValidateTransition), with who decided and their note for a
	// decision, and returns it. An unknown id is ErrNotFound; a decision
	// on a decided call is ErrInvalid.
	SetParkStatus(ctx context.Context, id, status, by, note string) (ParkedCall, error)
}

// Attachments is the role of a Store that keeps the bytes of the images
// and documents sessions show the model: once per store, by digest,
// however many sessions and records show them (a record keeps the rest
// of a medium: its type, digest, size, name and dimensions). Append keeps
// the bytes of its records' media; PutAttachments keeps media before any
// record shows them — a durable turn's client puts the turn's media, and
// the turn names them by digest alone — and Attachment reads them back.
type Attachments interface {
	// PutAttachments keeps ms for session sessionID: their bytes, unless
	// the store has them already, and their description (type, size,
	// name, dimensions) as the session first gave it. A medium needs a
	// type and bytes; its Digest, if set, must be that of its bytes
	// (llm.DigestOf) and its Size, if set, their length. A batch is
	// all-or-nothing: a medium that breaks this is ErrInvalid, named (by
	// its index, digest and name), and nothing is stored. The session
	// need not be provisioned yet — a durable turn's client puts a new
	// session's first media before the worker that runs the turn
	// provisions it —; the media are kept until the session is deleted
	// (DeleteSession). Once they are kept, a record of the session may
	// show them by digest alone (no Data): Records gives them back with
	// their bytes.
	PutAttachments(ctx context.Context, sessionID string, ms []*llm.Media) error
	// Attachment returns the medium of digest that session sessionID
	// keeps — put for it, or shown in its records — with its bytes and
	// the session's description of it; ErrNotFound if the session keeps
	// none of that digest (another session's do not count).
	Attachment(ctx context.Context, sessionID, digest string) (*llm.Media, error)
}
