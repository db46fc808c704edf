package hook

// Notification is what the runtime tells a Notifier when it needs the
// user, or when the user's turn failed. It is not a hook: nothing answers
// it, and it decides nothing (orca's hooks are the fifteen of Names).
// Claude Code's Notification and StopFailure hooks of the settings files
// run as a Notifier (hook/command).
type Notification struct {
	Common
	// Type is what it tells, in Claude Code's words (its
	// notification_type): NotifyPermission, NotifyIdle, NotifyStopFailure
	// or NotifyPostCompact.
	Type string `json:"notification_type"`
	// Message says it in a sentence: "orca needs your permission to use
	// Bash".
	Message string `json:"message"`
	// Title is the notification's title: "orca".
	Title string `json:"title,omitempty"`
	// ErrorType and ErrorMessage say why the turn failed
	// (NotifyStopFailure only), the type in Claude Code's words:
	// rate_limit, authentication_failed, invalid_request, server_error or
	// unknown.
	ErrorType    string `json:"error_type,omitempty"`
	ErrorMessage string `json:"error_message,omitempty"`
	// Trigger and CompactSummary say what a compaction did
	// (NotifyPostCompact only): what started it (auto, manual or
	// recovery) and the summary that now stands for the conversation it
	// summarised.
	Trigger        string `json:"trigger,omitempty"`
	CompactSummary string `json:"compact_summary,omitempty"`
}

// The types of Notification (Claude Code's notification_type values, and
// its StopFailure event).
const (
	// NotifyPermission: a tool call waits for a person's approval — the
	// approver is about to ask, or the call was parked for someone to
	// decide later.
	NotifyPermission = "permission_prompt"
	// NotifyIdle: the chat has waited a minute for the next prompt.
	NotifyIdle = "idle_prompt"
	// NotifyElicitation: an MCP server's question waits for the person
	// (Claude Code's elicitation_dialog).
	NotifyElicitation = "elicitation_dialog"
	// NotifyStopFailure: the user's turn ended because the model's
	// provider failed (Claude Code's StopFailure event, not one of its
	// notification types).
	NotifyStopFailure = "stop_failure"
	// NotifyPostCompact: a compaction has summarised the session's
	// conversation (Claude Code's PostCompact event, which only watches).
	NotifyPostCompact = "post_compact"
)

// Notifier is told when the runtime needs the user, or the user's turn
// failed. Notify must not block: what it runs, it runs in the background.
type Notifier interface {
	Notify(Notification)
}
