package temporal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm"
)

// The names the workflow and its activities are registered under.
const (
	// WorkflowName is the session workflow (SessionWorkflow).
	WorkflowName = "orca.Session"
	// TurnUpdate runs a turn (a TurnRequest; the update's result is its
	// TurnResult). Its update id is the turn's id.
	TurnUpdate = "turn"
	// DecideUpdate decides the call a turn parked (a Decision) and goes on
	// with the turn; its result is the turn's TurnResult.
	DecideUpdate = "decide"
	// InterruptSignal interrupts the running turn (its argument: the
	// turn's id, or "" for whichever runs).
	InterruptSignal = "interrupt"
	// StateQuery returns the workflow's State.
	StateQuery = "state"
	// ModelActivity and ToolActivity run one step of a turn
	// (Activities.Step): ModelActivity its next model call, with what
	// comes before it (compaction) and after it (the answer's STOP hooks
	// and verification); ToolActivity its next tool call — or the group
	// of read-only calls that run at once — with its hooks, policy and
	// middleware. The workflow runs each turn as a row of them.
	ModelActivity = "orca.ModelCall"
	ToolActivity  = "orca.ToolCall"
	// ReadsActivity is ToolActivity as a local activity, for a group of
	// read-only calls that run at once (agent.Progress.ReadsNext): quick,
	// and safe to run again. Such a group runs in the activity of the step
	// before it; when that step returned first (a worker of an earlier
	// version, or histories recorded by one), the group runs in place in
	// the worker of the workflow task if that worker keeps the session
	// open — no dispatch, no second workflow task; a marker in the history
	// shows it. Where the session is open elsewhere it starts nothing and
	// says so (StepResult.Elsewhere), and the workflow sends a ToolActivity
	// there.
	ReadsActivity = "orca.ReadCalls"
	// ParkActivity reads, or decides, a session's parked call.
	ParkActivity = "orca.Park"
	// DefaultTaskQueue is the task queue of workers and clients that name
	// none.
	DefaultTaskQueue = "orca"
)

// MaxInput is the largest turn input a workflow accepts, in bytes: the
// input travels as a Temporal payload (which warns past 256 KB and fails
// past 2 MB); put bigger material in the workspace and name it. A turn's
// images and documents travel beside it by reference alone (their bytes
// are in the session store): at most MaxAttachments of them, each its
// digest, type, size, dimensions and a name of at most
// MaxAttachmentName bytes — some 25 KB in all at most —, so that the
// payload stays well inside the limit.
const MaxInput = 128 << 10

// MaxAttachments is the most images and documents a durable turn shows
// the model; MaxAttachmentName bounds the name of each, in bytes.
const (
	MaxAttachments    = 20
	MaxAttachmentName = 1 << 10
)

// MaxAnswer is the most of a turn's answer TurnResult carries, in bytes;
// the whole answer is the session's last record in the store.
const MaxAnswer = 64 << 10

// WorkflowID is the id of the workflow of session sessionID on task
// queue taskQueue (DefaultTaskQueue if empty). A task queue's workers
// serve one agent in one workspace, so the queue names the sessions'
// runtime: two workspaces' sessions of the same id are two workflows.
func WorkflowID(taskQueue, sessionID string) string {
	if taskQueue == "" {
		taskQueue = DefaultTaskQueue
	}
	return "orca/" + taskQueue + "/" + sessionID
}

// Options are a session workflow's timings; zero fields take the
// defaults (see withDefaults).
type Options struct {
	// Heartbeat is how long a turn's worker may go silent before Temporal
	// gives the turn to another worker (10s). The worker heartbeats at a
	// third of it, and an interrupt reaches it with a heartbeat's answer
	// (Temporal's SDK sends them at most every 0.8 × Heartbeat): the
	// shorter, the sooner both.
	Heartbeat time.Duration `json:"heartbeat,omitempty"`
	// TurnTimeout bounds one turn, all its attempts included (24h).
	TurnTimeout time.Duration `json:"turn_timeout,omitempty"`
	// PollParked is how often a parked turn looks in the store for a
	// decision taken there (orca approve, orca serve) (1m).
	PollParked time.Duration `json:"poll_parked,omitempty"`
	// Idle ends the workflow after this long without a turn or a parked
	// call (24h); the next turn starts it again.
	Idle time.Duration `json:"idle,omitempty"`
	// TurnsPerRun and MaxHistory make the workflow continue as new after
	// that many turns (100), or once its history has that many events
	// (10,000: well inside Temporal's 51,200). A turn cannot continue as
	// new: one whose history passes 4 × MaxHistory runs the rest of its
	// steps as one activity.
	TurnsPerRun int `json:"turns_per_run,omitempty"`
	MaxHistory  int `json:"max_history,omitempty"`
	// MaxAttempts caps a step's attempts (20); RetryMax is the longest
	// wait between two (30s; the first waits a second, each next twice
	// as long).
	MaxAttempts int32         `json:"max_attempts,omitempty"`
	RetryMax    time.Duration `json:"retry_max,omitempty"`
	// StepStart is how long a turn's next step waits for the worker that
	// ran its last one, which keeps the session open (10s); then any
	// worker of the task queue takes it.
	StepStart time.Duration `json:"step_start,omitempty"`
}

func (o Options) withDefaults() Options {
	if o.Heartbeat <= 0 {
		o.Heartbeat = 10 * time.Second
	}
	if o.TurnTimeout <= 0 {
		o.TurnTimeout = 24 * time.Hour
	}
	if o.PollParked <= 0 {
		o.PollParked = time.Minute
	}
	if o.Idle <= 0 {
		o.Idle = 24 * time.Hour
	}
	if o.TurnsPerRun <= 0 {
		o.TurnsPerRun = 100
	}
	if o.MaxHistory <= 0 {
		o.MaxHistory = 10_000
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 20
	}
	if o.RetryMax <= 0 {
		o.RetryMax = 30 * time.Second
	}
	if o.StepStart <= 0 {
		o.StepStart = 10 * time.Second
	}
	return o
}

// SessionInput starts a session's workflow, and continues it as new.
type SessionInput struct {
	SessionID string  `json:"session_id"`
	Options   Options `json:"options"`
	// Parked is a turn that waits for a decision, carried over a
	// continue-as-new.
	Parked *Parked `json:"parked,omitempty"`
}

// TurnRequest asks for one turn.
type TurnRequest struct {
	// TurnID names the turn (and its update); required, unique in the
	// session.
	TurnID string `json:"turn_id"`
	// Input is the user's message (at most MaxInput bytes).
	Input string `json:"input"`
	// OutputSchema asks for the answer as a JSON value of this schema
	// (agent.Output).
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// Attachments are the images and documents the turn shows the model
	// with Input (session.WithMedia), by reference: their bytes are in the
	// session store, under the session (store.Attachments), never in a
	// Temporal payload. Client.Turn puts them there and fills this in;
	// the turn's first step reads them back by digest.
	Attachments []llm.Attachment `json:"attachments,omitempty"`
}

// Check reports what is wrong with r, naming it.
func (r TurnRequest) Check() error {
	switch {
	case r.TurnID == "":
		return fmt.Errorf("the turn has no id")
	case r.Input == "":
		return fmt.Errorf("turn %s has no input", r.TurnID)
	case len(r.Input) > MaxInput:
		return fmt.Errorf("the input of turn %s is %d bytes: a durable turn takes at most %d (Temporal payloads are small); put it in a file of the workspace and name the file", r.TurnID, len(r.Input), MaxInput)
	case !utf8.ValidString(r.Input):
		return fmt.Errorf("the input of turn %s is not UTF-8 text", r.TurnID)
	case len(r.OutputSchema) > 0 && !json.Valid(r.OutputSchema):
		return fmt.Errorf("the output schema of turn %s is not JSON", r.TurnID)
	case len(r.Attachments) > MaxAttachments:
		return fmt.Errorf("turn %s shows %d attachments: a durable turn shows at most %d", r.TurnID, len(r.Attachments), MaxAttachments)
	}
	for i, a := range r.Attachments {
		if err := checkAttachment(a); err != nil {
			name := ""
			if a.Name != "" && utf8.ValidString(a.Name) && len(a.Name) <= MaxAttachmentName {
				name = " (" + a.Name + ")"
			}
			return fmt.Errorf("attachment %d of turn %s%s: %v", i+1, r.TurnID, name, err)
		}
	}
	return nil
}

// checkAttachment reports what is wrong with a reference to an image or
// a document.
func checkAttachment(a llm.Attachment) error {
	switch {
	case a.Digest == "":
		return errors.New("no digest")
	case !validDigest(a.Digest):
		return fmt.Errorf("digest %q is not \"sha256:\" and 64 lowercase hex digits", a.Digest)
	case a.MediaType != llm.MediaPNG && a.MediaType != llm.MediaJPEG && a.MediaType != llm.MediaGIF && a.MediaType != llm.MediaWebP && a.MediaType != llm.MediaPDF:
		return fmt.Errorf("%s: media type %q (images are PNG, JPEG, GIF or WebP, documents PDF)", a.Digest, a.MediaType)
	case a.Size < 0 || a.Width < 0 || a.Height < 0:
		return fmt.Errorf("%s: a negative size or dimension", a.Digest)
	case len(a.Name) > MaxAttachmentName:
		return fmt.Errorf("%s: its name is %d bytes, more than the %d a durable turn takes", a.Digest, len(a.Name), MaxAttachmentName)
	case !utf8.ValidString(a.Name):
		return fmt.Errorf("%s: its name is not UTF-8 text", a.Digest)
	}
	return nil
}

// validDigest reports whether d names bytes as llm.DigestOf does.
func validDigest(d string) bool {
	hexits, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hexits) != 2*sha256.Size {
		return false
	}
	for i := range len(hexits) {
		if c := hexits[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// digest is Asked for r: its input, output schema, and the digests of
// its attachments (the same bytes are the same request, however named).
func (r TurnRequest) digest() string {
	h := sha256.New()
	h.Write([]byte(r.Input))
	h.Write([]byte{0})
	h.Write(r.OutputSchema)
	for _, a := range r.Attachments {
		h.Write([]byte{0})
		h.Write([]byte(a.Digest))
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// ErrAskedOtherwise is Client.Turn's error for a turn id a turn was asked
// for with another input or output schema: the answer is that turn's, not
// one to this request.
var ErrAskedOtherwise = errors.New("the turn was asked for before with another input")

// Decision decides a parked call.
type Decision struct {
	// ParkID is the parked call's id (TurnResult.Parked.ID).
	ParkID  string `json:"park_id"`
	Approve bool   `json:"approve"`
	// By names who decided; Note is said to the model (with a denial: why).
	By   string `json:"by,omitempty"`
	Note string `json:"note,omitempty"`
}

// Parked is the call a turn stopped before, waiting for a decision.
type Parked struct {
	ID        string `json:"id"`
	TurnID    string `json:"turn_id"`
	ToolUseID string `json:"tool_use_id"`
	ToolName  string `json:"tool_name"`
	Reason    string `json:"reason,omitempty"`
	// Input, OutputSchema and Attachments are the turn's (it goes on
	// with them).
	Input        string           `json:"input"`
	OutputSchema json.RawMessage  `json:"output_schema,omitempty"`
	Attachments  []llm.Attachment `json:"attachments,omitempty"`
}

// TurnResult is what a turn did, in short: its records are in the store.
type TurnResult struct {
	SessionID  string `json:"session_id"`
	TurnID     string `json:"turn_id"`
	StopReason string `json:"stop_reason"`
	// Answer is the turn's answer, its first MaxAnswer bytes
	// (AnswerTruncated says there is more: the session's last record).
	Answer          string          `json:"answer,omitempty"`
	AnswerTruncated bool            `json:"answer_truncated,omitempty"`
	Output          json.RawMessage `json:"output,omitempty"`
	Reason          string          `json:"reason,omitempty"`
	Error           string          `json:"error,omitempty"`
	Parked          *Parked         `json:"parked,omitempty"`
	Iterations      int             `json:"iterations"`
	ToolCalls       int             `json:"tool_calls"`
	Usage           llm.Usage       `json:"usage"`
	// Steps is how many steps (activities, local ones included) the turn
	// took: its model calls and its tool calls (a group of read-only calls
	// at once is one).
	Steps int `json:"steps"`
	// Retries is how many times a step was run again: a worker died
	// during it or did not take it, or the store failed for a while.
	Retries int `json:"retries"`
	// Attempt is the attempt of the step that ended the turn.
	Attempt int32 `json:"attempt"`
	// Worker names the worker that finished it.
	Worker string `json:"worker,omitempty"`
	// Asked is a digest of the request the turn was asked with (its input,
	// output schema and attachments' digests): Client.Turn refuses the
	// result of a turn asked for again under its id with another request
	// (ErrAskedOtherwise).
	Asked string `json:"asked,omitempty"`
}

// StepInput is the input of a step's activity (ModelActivity,
// ToolActivity).
type StepInput struct {
	SessionID string `json:"session_id"`
	// Request is the turn's; its Input and Attachments only in the first
	// step (the later ones go on with what the session recorded).
	Request TurnRequest `json:"request"`
	// Heartbeat is the activity's heartbeat timeout: it heartbeats at a
	// third of it.
	Heartbeat time.Duration `json:"heartbeat"`
	// Progress is where the turn stands: the last step's, the zero value
	// for the first.
	Progress agent.Progress `json:"progress"`
	// NotStarted: the calls the last step left without a result have not
	// started, and nothing ran since (session.OpenOptions.CallsNotStarted).
	NotStarted bool `json:"not_started,omitempty"`
	// Interrupt: the turn was interrupted between two steps; this one
	// ends it so.
	Interrupt bool `json:"interrupt,omitempty"`
	// Rest: this step runs the rest of the turn, whose history would
	// outgrow Temporal's limit otherwise (see Options.MaxHistory).
	Rest bool `json:"rest,omitempty"`
	// Keeper is the own task queue of the worker that keeps the session
	// open (Activities.Queue), for a step sent to the workflow's task
	// queue to come back to that worker with the completion of the
	// workflow task (eager activity execution): a worker of another queue
	// that takes it runs nothing (StepResult.Elsewhere).
	Keeper string `json:"keeper,omitempty"`
}

// StepResult is what a step did: the turn's result once it ends (its
// StopReason then not "paused").
type StepResult struct {
	TurnResult
	// Progress is where the turn stands after the step.
	Progress agent.Progress `json:"progress"`
	// Queue is the task queue of the worker that keeps the session open
	// for the next step ("" for none).
	Queue string `json:"queue,omitempty"`
	// Elsewhere: the step ran nothing, for it belongs to another worker:
	// a ReadsActivity found the session open on no worker but another, or
	// a step for a Keeper reached a worker that is not it.
	Elsewhere bool `json:"elsewhere,omitempty"`
}

// State is what the workflow says of itself (StateQuery).
type State struct {
	SessionID string  `json:"session_id"`
	Running   string  `json:"running,omitempty"` // the running turn's id
	Queued    int     `json:"queued"`
	Parked    *Parked `json:"parked,omitempty"`
	// Turns counts the turns this run of the workflow ran.
	Turns int `json:"turns"`
}

// truncate cuts s to at most n bytes, at a rune boundary.
func truncate(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}
