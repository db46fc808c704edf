package hook

import (
	"encoding/json"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/scope"
)

// Version is the version of every payload shape; it changes when a field
// is removed or changes meaning (adding a field does not change it).
const Version = 1

// Common is the part every payload has.
type Common struct {
	HookName Name `json:"hook" jsonschema:"the hook's name"`
	Version  int  `json:"version" jsonschema:"the payload shape version"`
	// Scope is the run the hook fires in (its turn and execution are
	// empty for SESSION_START and SESSION_END).
	scope.Scope
	Cwd string `json:"cwd" jsonschema:"the workspace root folder"`
	// PermissionMode is the policy's mode when the hook fired (empty
	// without a policy).
	PermissionMode string `json:"permission_mode,omitempty" jsonschema:"the permission mode: default, accept-edits, plan, dont-ask or bypass"`
	// TranscriptPath is a file holding the user's conversation so far,
	// one JSON object per line in Claude Code's transcript shape, when
	// the runtime keeps one (agent.Collaborators.TranscriptDir); in a fork
	// too, it is the user's conversation (SUBAGENT_STOP names the fork's
	// own).
	TranscriptPath string `json:"transcript_path,omitempty" jsonschema:"the user's conversation so far as a JSONL transcript in Claude Code's shape, when the runtime keeps one"`
	// Agent names the subagent running, in a fork (empty at depth 0).
	Agent string `json:"agent,omitempty" jsonschema:"in a fork: the subagent's name"`
}

func (c *Common) common() *Common { return c }

// CommonOf returns the part of p every payload has.
func CommonOf(p Payload) *Common { return p.common() }

// Payload is what a hook handler receives: one of the *…Payload types of
// this package.
type Payload interface {
	// Hook names the hook the payload belongs to.
	Hook() Name
	common() *Common
}

// SessionStartPayload is sent when a live session opens, and again each
// time a compaction has summarised its conversation (Source compact, in
// the turn that compacted: its scope has the turn's ids).
type SessionStartPayload struct {
	Common
	// Source is new, resumed, clear (a new session that replaces one the
	// user cleared: orca chat's /clear), or compact: the session's
	// conversation was just summarised (a compaction, during a turn or of
	// /compact), and the context handlers add follows the summary.
	Source string `json:"source" jsonschema:"new, resumed, clear (a new session after the user cleared the conversation) or compact (a compaction has just summarised the conversation)"`
	// EnvFile, when set, is a file handlers may write variables to, a
	// NAME=value or export NAME=value line each, which the session's
	// later commands (Bash) get: Claude Code's CLAUDE_ENV_FILE. It is not
	// part of the payload's JSON; command hooks get it as CLAUDE_ENV_FILE.
	EnvFile string `json:"-"`
}

// SessionEndPayload is sent when a live session closes.
type SessionEndPayload struct {
	Common
	Reason string `json:"reason" jsonschema:"why the session ended"`
}

// UserPromptSubmitPayload is sent when user input is about to enter a turn.
type UserPromptSubmitPayload struct {
	Common
	Prompt string `json:"prompt" jsonschema:"the user's input (rewritable)"`
	// Attachments describe the images and documents shown with it.
	Attachments []llm.Attachment `json:"attachments,omitempty" jsonschema:"the images and PDFs shown with the prompt: type, digest, size, name, dimensions (never their bytes)"`
}

// TurnStartPayload is sent when the executor starts a turn.
type TurnStartPayload struct {
	Common
	Input string `json:"input" jsonschema:"the turn's input after USER_PROMPT_SUBMIT"`
}

// ToolCall is the part of the tool payloads that names the call.
type ToolCall struct {
	ToolName  string          `json:"tool_name" jsonschema:"the tool's name"`
	ToolUseID string          `json:"tool_use_id" jsonschema:"the model's id of the call"`
	Arguments json.RawMessage `json:"arguments" jsonschema:"the call's input object"`
	// Reads, Writes and Command are what the call touches, as its tool
	// declares it (tool.Access), for handlers that decide by it (a command
	// hook's "if" rule); they are not part of the payload's JSON.
	Reads   []string `json:"-"`
	Writes  []string `json:"-"`
	Command string   `json:"-"`
	// Aliases are the tool's other names (tool.Traits.Aliases): a command
	// hook's matcher may name it by any of them. Not in the JSON either.
	Aliases []string `json:"-"`
}

// PreToolUsePayload is sent for a validated tool call, before policy and
// approval.
type PreToolUsePayload struct {
	Common
	ToolCall
}

// PermissionRequestPayload is sent when a tool call needs approval.
type PermissionRequestPayload struct {
	Common
	ToolCall
	Reason     string `json:"reason" jsonschema:"why the call needs approval"`
	Suggestion string `json:"suggestion,omitempty" jsonschema:"a permission rule that would allow such calls"`
}

// Question is the part of the elicitation payloads that says what an MCP
// server asks.
type Question struct {
	// ID is orca's id of the question: the elicitation events name it.
	ID string `json:"id" jsonschema:"orca's id of the question (the elicitation events name it)"`
	// Server is the MCP server asking.
	Server string `json:"server" jsonschema:"the MCP server asking"`
	// ToolName and ToolUseID are the call the server asks during, when
	// it is known (one call of the server was running).
	ToolName  string `json:"tool_name,omitempty" jsonschema:"the tool whose call the server asks during, when known"`
	ToolUseID string `json:"tool_use_id,omitempty" jsonschema:"the model's id of that call, when known"`
	Mode      string `json:"mode" jsonschema:"form (fill in the requested schema's fields) or url (open url)"`
	Message   string `json:"message" jsonschema:"the server's question"`
	// RequestedSchema is the form's restricted JSON Schema (form mode).
	RequestedSchema json.RawMessage `json:"requested_schema,omitempty" jsonschema:"the form: a flat object schema of strings, numbers, booleans and enums (form mode)"`
	// URL is what the person is asked to open, and ElicitationID the
	// server's id of the question (url mode).
	URL           string `json:"url,omitempty" jsonschema:"what the person is asked to open (url mode)"`
	ElicitationID string `json:"elicitation_id,omitempty" jsonschema:"the server's id of the question (url mode)"`
}

// ElicitationPayload is sent when an MCP server asks the person a question
// (elicitation/create), before anyone is asked: a handler may answer it —
// accept (with the content, completed by the schema's defaults), decline
// or cancel — and one that only rewrites the content fills the form in
// for the person.
type ElicitationPayload struct {
	Common
	Question
	// Content is what the form starts with: the requested schema's
	// defaults.
	Content map[string]any `json:"content,omitempty" jsonschema:"the values the form starts with: the requested schema's defaults (rewritable; with accept, the answer)"`
}

// ElicitationResultPayload is sent once a question has its answer —
// the person's, an ELICITATION hook's, or orca's decline when no one can
// answer — before it goes to the server: a handler may change it (another
// action, other content).
type ElicitationResultPayload struct {
	Common
	Question
	Action  string         `json:"action" jsonschema:"accept, decline or cancel"`
	Content map[string]any `json:"content,omitempty" jsonschema:"the answer's values, with accept in form mode (rewritable)"`
	// By says who answered: user (the person asked), hook:NAME, or none
	// (no one could be asked).
	By     string `json:"answered_by" jsonschema:"who answered: user, hook:NAME, or none (no one could be asked)"`
	Reason string `json:"reason,omitempty" jsonschema:"why it was declined or cancelled"`
}

// PostToolUsePayload is sent after a tool call succeeded.
type PostToolUsePayload struct {
	Common
	ToolCall
	Output string `json:"output" jsonschema:"the observation the model will see; a handler may rewrite it (a redaction)"`
	// Response is the tool's structured account of the call, when it
	// gives one (tool.Result.Response): for the built-in tools, the object
	// Claude Code's hooks receive as tool_response.
	Response json.RawMessage `json:"response,omitempty" jsonschema:"the tool's structured result, when it gives one"`
}

// PostToolUseFailurePayload is sent after a tool call failed.
type PostToolUseFailurePayload struct {
	Common
	ToolCall
	Error string `json:"error" jsonschema:"the error observation the model will see"`
	// Interrupted says the call failed because the turn was interrupted.
	Interrupted bool `json:"interrupted,omitempty" jsonschema:"whether the call failed because the user interrupted the turn"`
}

// PreCompactPayload is sent before the transcript is compacted.
type PreCompactPayload struct {
	Common
	Trigger      string `json:"trigger" jsonschema:"auto, manual or recovery"`
	Kind         string `json:"kind" jsonschema:"clear_tool_results, summary or turn_summary: what shrinks the conversation"`
	Instructions string `json:"instructions" jsonschema:"what the summary must preserve (rewritable)"`
}

// SubagentStartPayload is sent when a subagent fork starts.
type SubagentStartPayload struct {
	Common
	Agent  string `json:"agent" jsonschema:"the subagent's name"`
	Prompt string `json:"prompt" jsonschema:"the fork's task (rewritable)"`
	// AgentID is the fork's runtime.
	AgentID string `json:"agent_id,omitempty" jsonschema:"the fork's runtime id"`
}

// SubagentStopPayload is sent when a subagent fork is about to finish.
type SubagentStopPayload struct {
	Common
	Agent  string `json:"agent" jsonschema:"the subagent's name"`
	Answer string `json:"answer" jsonschema:"the fork's answer"`
	// AgentID is the fork's runtime; AgentTranscriptPath the fork's own
	// transcript, when the runtime keeps transcripts.
	AgentID             string `json:"agent_id,omitempty" jsonschema:"the fork's runtime id"`
	AgentTranscriptPath string `json:"agent_transcript_path,omitempty" jsonschema:"the fork's own conversation as a JSONL transcript, when the runtime keeps one"`
	// Continued counts how many times SUBAGENT_STOP hooks already sent
	// the fork back to work.
	Continued int `json:"continued" jsonschema:"how many times SUBAGENT_STOP hooks already sent this fork back to work"`
}

// StopPayload is sent when the agent is about to end its turn with an
// answer.
type StopPayload struct {
	Common
	Answer     string `json:"answer" jsonschema:"the answer the turn would end with"`
	Iterations int    `json:"iterations" jsonschema:"model calls so far in the turn"`
	// Continued counts how many times STOP hooks already sent this turn
	// back to work; a handler should not insist forever (the runtime caps
	// it anyway).
	Continued int `json:"continued" jsonschema:"how many times STOP hooks already sent this turn back to work"`
}

// Verification is the result of the built-in verification of a turn.
type Verification struct {
	Command string `json:"command" jsonschema:"the verification command"`
	Passed  bool   `json:"passed" jsonschema:"whether it passed"`
	Output  string `json:"output" jsonschema:"its output"`
}

// PostVerifyPayload is sent after the built-in verification of a finished
// turn.
type PostVerifyPayload struct {
	Common
	Answer       string        `json:"answer" jsonschema:"the turn's answer"`
	Verification *Verification `json:"verification,omitempty" jsonschema:"the built-in verification, when one ran"`
	// Revisions counts the consecutive revisions already asked for.
	Revisions int `json:"revisions" jsonschema:"consecutive revisions already asked for after verification"`
}

// Hook implementations.
func (*SessionStartPayload) Hook() Name       { return SessionStart }
func (*SessionEndPayload) Hook() Name         { return SessionEnd }
func (*UserPromptSubmitPayload) Hook() Name   { return UserPromptSubmit }
func (*TurnStartPayload) Hook() Name          { return TurnStart }
func (*PreToolUsePayload) Hook() Name         { return PreToolUse }
func (*PermissionRequestPayload) Hook() Name  { return PermissionRequest }
func (*ElicitationPayload) Hook() Name        { return Elicitation }
func (*ElicitationResultPayload) Hook() Name  { return ElicitationResult }
func (*PostToolUsePayload) Hook() Name        { return PostToolUse }
func (*PostToolUseFailurePayload) Hook() Name { return PostToolUseFailure }
func (*PreCompactPayload) Hook() Name         { return PreCompact }
func (*SubagentStartPayload) Hook() Name      { return SubagentStart }
func (*SubagentStopPayload) Hook() Name       { return SubagentStop }
func (*StopPayload) Hook() Name               { return Stop }
func (*PostVerifyPayload) Hook() Name         { return PostVerify }

// Payloads returns a zero payload of every hook, in the order of Names
// (for documentation and schema generation).
func Payloads() []Payload {
	return []Payload{
		&SessionStartPayload{}, &SessionEndPayload{}, &UserPromptSubmitPayload{}, &TurnStartPayload{},
		&PreToolUsePayload{}, &PermissionRequestPayload{}, &ElicitationPayload{}, &ElicitationResultPayload{}, &PostToolUsePayload{}, &PostToolUseFailurePayload{},
		&PreCompactPayload{}, &SubagentStartPayload{}, &SubagentStopPayload{}, &StopPayload{}, &PostVerifyPayload{},
	}
}
