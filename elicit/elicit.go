// Package elicit is how a question an MCP server asks mid-call
// (elicitation/create) reaches a person, and the answer goes back: one
// Elicitor contract that the front ends implement — the terminal's form
// (tui.Elicitor), orca serve's page and API, a program's own — and the
// Form the question's restricted JSON Schema describes (its fields, their
// defaults, the checks an answer passes).
//
// The runtime (agent.Collaborators.Elicitor) runs the ELICITATION hooks
// before it asks the Elicitor, which a hook may answer for the person, and
// the ELICITATION_RESULT hooks after, which see (and may change) the
// answer; it tells both as events. An MCP tool call reaches the runtime's
// Elicitor through its context (From): the runtime puts one there for the
// calls of tools whose traits say they elicit (tool.Traits.Elicits).
//
// With no one to ask (a run without a terminal, no Elicitor), the answer
// is a decline whose Reason says why: the server reads it in the result's
// _meta (ReasonMeta).
package elicit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/orca-agent/orca/scope"
)

// Mode is how a server asks: a form the person fills in, or a URL the
// person opens in a browser (the server learns the outcome itself).
type Mode string

// Modes.
const (
	ModeForm Mode = "form"
	ModeURL  Mode = "url"
)

// Action is what the person (or a hook) answered.
type Action string

// Actions, as the MCP specification names them.
const (
	// Accept: the form is filled in (Answer.Content), or the person
	// agrees to open the URL.
	Accept Action = "accept"
	// Decline: the person, or orca for them, said no.
	Decline Action = "decline"
	// Cancel: the question was dismissed without a choice (the turn
	// was interrupted, the call ended).
	Cancel Action = "cancel"
)

// ReasonMeta is the key of the result's _meta under which orca tells the
// server why it declined or cancelled (Answer.Reason).
const ReasonMeta = "orca-agent.dev/reason"

// Request is one question of a server.
type Request struct {
	// Scope is the run the question came in: the turn whose tool call
	// the server asks during, or only the runtime's when it asks outside
	// any call.
	scope.Scope
	// ID is orca's id of the question, unique in the process: the
	// elicitation events and orca serve's API name it.
	ID string
	// Server is the MCP server asking; ToolName and ToolUseID the call
	// it asks during, when it is known (one call of the server was
	// running).
	Server              string
	ToolName, ToolUseID string
	Mode                Mode
	// Message is the server's question, as it wrote it.
	Message string
	// Schema is the requested schema as the server sent it, and Form its
	// fields (form mode).
	Schema json.RawMessage
	Form   *Form
	// URL is what the person is asked to open, and ElicitationID the
	// server's id of the question (URL mode).
	URL           string
	ElicitationID string
	// Content is what the form starts with: the schema's defaults, as an
	// ELICITATION hook may have changed them (form mode).
	Content map[string]any
}

// Answer is an Elicitor's answer.
type Answer struct {
	Action Action
	// Content is the form's values, with Accept (form mode).
	Content map[string]any
	// Reason says why a question was declined or cancelled: the server
	// gets it in the result's _meta (ReasonMeta), the person sees it.
	Reason string
	// By says who answered, for the events: empty is the person the
	// Elicitor asked ("user").
	By string
}

// Elicitor asks a person a server's question and returns the answer. It is
// called while the server waits, and returns promptly once ctx is done (the
// call ended, the turn was interrupted); an error is a question that could
// not be asked, answered as a cancel. Implementations must be safe for
// concurrent use.
type Elicitor interface {
	Elicit(ctx context.Context, req Request) (Answer, error)
}

// Func makes a plain function an Elicitor.
type Func func(ctx context.Context, req Request) (Answer, error)

// Elicit calls f.
func (f Func) Elicit(ctx context.Context, req Request) (Answer, error) { return f(ctx, req) }

// Headless is the Elicitor of runs with no one to ask: it declines every
// question, saying why (HeadlessReason).
type Headless struct{}

// Elicit declines req.
func (Headless) Elicit(_ context.Context, req Request) (Answer, error) {
	return Answer{Action: Decline, Reason: HeadlessReason(req), By: "none"}, nil
}

// HeadlessReason is the reason Headless declines with: no one can answer
// in this run, and what would.
func HeadlessReason(req Request) string {
	return fmt.Sprintf("Declined by orca: no one can answer the MCP server %s's question in this run (it has no terminal or page to ask at). "+
		"An Elicitation hook can answer it (see orca's docs/hooks.md).", req.Server)
}

type elicitorKey struct{}

// With returns a context carrying e: the runtime hands a tool call the
// Elicitor of its turn so (see tool.Traits.Elicits).
func With(ctx context.Context, e Elicitor) context.Context {
	return context.WithValue(ctx, elicitorKey{}, e)
}

// From returns the Elicitor ctx carries, or nil.
func From(ctx context.Context) Elicitor {
	e, _ := ctx.Value(elicitorKey{}).(Elicitor)
	return e
}

// Check reports what is wrong with ans as an answer to req: an unknown
// action, content with anything but Accept, content in URL mode, or
// content the form does not take (a *FieldError). Content is checked as
// it is: Complete it first to apply the defaults.
func Check(req Request, ans Answer) error {
	switch ans.Action {
	case Accept:
	case Decline, Cancel:
		if len(ans.Content) > 0 {
			return fmt.Errorf("a %s carries no content", ans.Action)
		}
		return nil
	default:
		return fmt.Errorf("action %q: want accept, decline or cancel", ans.Action)
	}
	if req.Mode == ModeURL {
		if len(ans.Content) > 0 {
			return errors.New("a URL question's answer carries no content")
		}
		return nil
	}
	if req.Form == nil {
		return nil
	}
	return req.Form.Check(ans.Content)
}

// ShownURL is u as orca shows it where it is kept (events, logs): scheme,
// host and path, without the query and fragment, which may carry a token.
func ShownURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" {
		return ""
	}
	p.RawQuery, p.Fragment, p.User = "", "", nil
	p.RawFragment = ""
	return p.String()
}
