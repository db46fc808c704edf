package acp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	orcagent "github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/media"
	"github.com/orca-agent/orca/middleware"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tool"
)

// maxShown is how much of a call's output the client is sent.
const maxShown = 64 << 10

func (a *agent) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	text, shown, err := promptOf(p.Prompt)
	if err != nil {
		return sdk.PromptResponse{}, sdk.NewInvalidParams(map[string]any{"prompt": err.Error()})
	}
	if s.ls.CurrentTurn() != "" {
		return sdk.PromptResponse{}, sdk.NewInvalidRequest(map[string]any{"sessionId": string(p.SessionId), "error": "a turn of the session is running: wait for its answer, or cancel it"})
	}
	// The turn ends when it ends, or when session/cancel interrupts it:
	// not when the request's context goes (a cancel ends both).
	res, err := s.ls.Run(context.WithoutCancel(ctx), text, session.WithMedia(shown...))
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	switch res.StopReason {
	case orcagent.StopInterrupted:
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	case orcagent.StopMaxTokens:
		return sdk.PromptResponse{StopReason: sdk.StopReasonMaxTokens}, nil
	case orcagent.StopMaxIterations, orcagent.StopBudgetExhausted:
		return sdk.PromptResponse{StopReason: sdk.StopReasonMaxTurnRequests}, nil
	case orcagent.StopRefused:
		return sdk.PromptResponse{StopReason: sdk.StopReasonRefusal}, nil
	case orcagent.StopFailed:
		if res.Err != nil {
			return sdk.PromptResponse{}, res.Err
		}
	}
	return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
}

// promptOf is a prompt's blocks as orca's input: its text, the files it
// embeds (as context the model reads), the files it links (named), and
// its images (shown).
func promptOf(blocks []sdk.ContentBlock) (string, []*llm.Media, error) {
	var b strings.Builder
	var shown []*llm.Media
	for i, c := range blocks {
		switch {
		case c.Text != nil:
			b.WriteString(c.Text.Text)
		case c.Resource != nil:
			r := c.Resource.Resource
			switch {
			case r.TextResourceContents != nil:
				fmt.Fprintf(&b, "\n<context uri=%q>\n%s\n</context>\n", r.TextResourceContents.Uri, r.TextResourceContents.Text)
			case r.BlobResourceContents != nil:
				fmt.Fprintf(&b, "\n(%s: a binary file the editor attached, not shown)\n", r.BlobResourceContents.Uri)
			}
		case c.ResourceLink != nil:
			fmt.Fprintf(&b, " %s ", linkText(c.ResourceLink.Uri))
		case c.Image != nil:
			data, err := base64.StdEncoding.DecodeString(c.Image.Data)
			if err != nil {
				return "", nil, fmt.Errorf("block %d: the image is not base64: %v", i, err)
			}
			name := fmt.Sprintf("image-%d", i+1)
			if c.Image.Uri != nil && *c.Image.Uri != "" {
				name = filepath.Base(*c.Image.Uri)
			}
			m, note, err := media.Prepare(data, name)
			if err != nil {
				return "", nil, fmt.Errorf("block %d: %v", i, err)
			}
			shown = append(shown, m)
			b.WriteString("\n\n" + media.Attached(m, note))
		default:
			return "", nil, fmt.Errorf("block %d: orca takes text, images, and files embedded or linked", i)
		}
	}
	if strings.TrimSpace(b.String()) == "" && len(shown) == 0 {
		return "", nil, errors.New("the prompt is empty")
	}
	return b.String(), shown, nil
}

// linkText is a linked file as the prompt names it: @path for a file.
func linkText(uri string) string {
	if p, ok := strings.CutPrefix(uri, "file://"); ok {
		return "@" + p
	}
	return uri
}

// send sends an update of the session, in order; a client gone is not
// the turn's concern.
func (s *live) send(u sdk.SessionUpdate) {
	if err := s.a.conn.SessionUpdate(context.Background(), sdk.SessionNotification{SessionId: sdk.SessionId(s.ls.ID()), Update: u}); err != nil {
		s.a.o.Logger.Debug("orca acp: an update not sent", "session", s.ls.ID(), "err", err)
	}
}

// onEvent turns the session's events into updates: the user's turn's
// text as message chunks, its tool calls as tool calls (a subagent's run
// inside its Task call), TodoWrite's list as the plan.
func (s *live) onEvent(ev event.Event) {
	if ev.Scope.Depth > 0 {
		return
	}
	switch d := ev.Data.(type) {
	case *event.LLMDeltaData:
		if d.Delta.Type == llm.DeltaText && d.Delta.Text != "" {
			s.mu.Lock()
			s.streamed = true
			s.mu.Unlock()
			s.send(sdk.UpdateAgentMessageText(d.Delta.Text))
		}
	case *event.LLMCallData:
		s.mu.Lock()
		streamed := s.streamed
		s.streamed = false
		s.mu.Unlock()
		if ev.Name == event.LLMCallCompleted && !streamed && d.Text != "" {
			s.send(sdk.UpdateAgentMessageText(d.Text))
		}
	case *event.ToolStartedData:
		a := s.access(d.ToolName, d.Input)
		s.announce(context.Background(), d.ToolUseID, d.ToolName, d.Input, d.Summary, a.Reads, a.Writes)
	case *event.ToolData:
		if !s.end(d.ToolUseID) {
			return // refused: said when it was (ToolBlocked)
		}
		status := sdk.ToolCallStatusCompleted
		if ev.Name == event.ToolExecFailed || d.IsError {
			status = sdk.ToolCallStatusFailed
		}
		s.send(sdk.UpdateToolCall(sdk.ToolCallId(d.ToolUseID), sdk.WithUpdateStatus(status),
			sdk.WithUpdateContent(s.content(d.ToolName, d.Input, d.Output, status == sdk.ToolCallStatusCompleted)),
			sdk.WithUpdateRawOutput(map[string]any{"output": clip(d.Output, maxShown)})))
		if d.ToolName == "TodoWrite" && status == sdk.ToolCallStatusCompleted {
			if entries := plan(d.Input); entries != nil {
				s.send(sdk.UpdatePlan(entries...))
			}
		}
	case *event.ToolBlockedData:
		a := s.access(d.ToolName, d.Input)
		s.announce(context.Background(), d.ToolUseID, d.ToolName, d.Input, "", a.Reads, a.Writes)
		s.end(d.ToolUseID)
		s.send(sdk.UpdateToolCall(sdk.ToolCallId(d.ToolUseID), sdk.WithUpdateStatus(sdk.ToolCallStatusFailed),
			sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(d.Reason))})))
	}
}

// end records that a call ended, and reports whether it had not.
func (s *live) end(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended[id] {
		return false
	}
	s.ended[id] = true
	return true
}

// running is the tool_execution middleware that tells the client a call
// runs: it was admitted (allowed, approved), and the tool starts now.
func (a *agent) running(ctx context.Context, call *tool.Call, next middleware.ToolNext) (tool.Result, error) {
	if call.Scope.Depth == 0 {
		if s, err := a.session(sdk.SessionId(call.Scope.SessionID)); err == nil {
			s.send(sdk.UpdateToolCall(sdk.ToolCallId(call.ID), sdk.WithUpdateStatus(sdk.ToolCallStatusInProgress)))
		}
	}
	return next(ctx, call)
}

// thoughts is the llm_execution middleware that sends the client what
// the model of a user's turn thought, once its call answered: orca's
// providers do not stream thinking, so a call's thoughts follow its text.
func (a *agent) thoughts(ctx context.Context, req *llm.Request, next middleware.LLMNext) (*llm.Response, error) {
	resp, err := next(ctx, req)
	if err != nil || resp == nil || req.Metadata.Feature != llm.FeatureAgent {
		return resp, err
	}
	s, serr := a.session(sdk.SessionId(req.Metadata.TraceID))
	if serr != nil || req.Metadata.Component != s.ap.Runtime().Definition().Name {
		return resp, err // a subagent's, or no editor's session
	}
	for _, b := range resp.Message.Content {
		if b.Type == llm.BlockThinking && strings.TrimSpace(b.Thinking) != "" {
			s.send(sdk.UpdateAgentThoughtText(b.Thinking))
		}
	}
	return resp, err
}

// access is what a call of the tool named touches, as it declares.
func (s *live) access(name string, input json.RawMessage) tool.Access {
	if tl, ok := s.ls.Runtime().Tools().Lookup(name); ok {
		return tool.AccessOf(tl, input)
	}
	return tool.Access{}
}

// summary is how the tool named shows a call of input.
func (s *live) summary(name string, input json.RawMessage) string {
	if tl, ok := s.ls.Runtime().Tools().Lookup(name); ok {
		return tool.DisplayOf(tl, input).Summary
	}
	return ""
}

// announce tells the client of a tool call once: before it is asked
// about it, or when it starts.
func (s *live) announce(ctx context.Context, id, name string, input json.RawMessage, summary string, reads, writes []string) {
	s.mu.Lock()
	told := s.calls[id]
	s.calls[id] = true
	s.mu.Unlock()
	if told {
		return
	}
	s.send(sdk.StartToolCall(sdk.ToolCallId(id), title(name, summary), sdk.WithStartKind(kindOf(name)), sdk.WithStartStatus(sdk.ToolCallStatusPending),
		sdk.WithStartLocations(s.locations(reads, writes)), sdk.WithStartRawInput(rawInput(input))))
}

// locations are the paths a call touches, absolute, writes first.
func (s *live) locations(reads, writes []string) []sdk.ToolCallLocation {
	var out []sdk.ToolCallLocation
	seen := map[string]bool{}
	for _, p := range append(append([]string(nil), writes...), reads...) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(s.ap.Root(), p)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, sdk.ToolCallLocation{Path: p})
		}
	}
	return out
}

// content is what the client shows of a finished call: a diff for an
// edit or a file written, the output otherwise.
func (s *live) content(name string, input json.RawMessage, output string, ok bool) []sdk.ToolCallContent {
	if ok {
		var in struct {
			Path      string  `json:"file_path"`
			Old       string  `json:"old_string"`
			New       string  `json:"new_string"`
			Content   *string `json:"content"`
			ReplaceAl bool    `json:"replace_all"`
		}
		if json.Unmarshal(input, &in) == nil && in.Path != "" {
			p := in.Path
			if !filepath.IsAbs(p) {
				p = filepath.Join(s.ap.Root(), p)
			}
			var diff []sdk.ToolCallContent
			switch {
			case name == "Edit":
				diff = []sdk.ToolCallContent{sdk.ToolDiffContent(p, in.New, in.Old)}
			case name == "Write" && in.Content != nil:
				diff = []sdk.ToolCallContent{sdk.ToolDiffContent(p, *in.Content)}
			}
			if diff != nil {
				// What the language servers found in it, as the model read it.
				if i := strings.LastIndex(output, "\n\n<diagnostics>\n"); i >= 0 {
					diff = append(diff, sdk.ToolContent(sdk.TextBlock(strings.TrimSpace(output[i:]))))
				}
				return diff
			}
		}
	}
	if output == "" {
		return nil
	}
	if name == "Bash" {
		output = "```console\n" + strings.TrimSuffix(clip(output, maxShown), "\n") + "\n```"
	} else {
		output = clip(output, maxShown)
	}
	return []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(output))}
}

// title is how a call is shown: its tool and what it does.
func title(name, summary string) string {
	if summary == "" {
		return name
	}
	return name + " " + summary
}

// kindOf is the kind of the tool named, as an editor shows it.
func kindOf(name string) sdk.ToolKind {
	switch name {
	case "Read", "LSP", "ReadMcpResourceTool", "ListMcpResourcesTool":
		return sdk.ToolKindRead
	case "Write", "Edit":
		return sdk.ToolKindEdit
	case "Glob", "Grep", "WebSearch":
		return sdk.ToolKindSearch
	case "Bash":
		return sdk.ToolKindExecute
	case "WebFetch":
		return sdk.ToolKindFetch
	case "TodoWrite":
		return sdk.ToolKindThink
	}
	return sdk.ToolKindOther
}

// rawInput is a call's input as a JSON value (a string if it is not JSON).
func rawInput(in json.RawMessage) any {
	var v any
	if json.Unmarshal(in, &v) != nil {
		return string(in)
	}
	return v
}

// plan is TodoWrite's list as a plan's entries.
func plan(input json.RawMessage) []sdk.PlanEntry {
	var in struct {
		Todos []struct {
			Content string `json:"content"`
			Status  string `json:"status"`
		} `json:"todos"`
	}
	if json.Unmarshal(input, &in) != nil || in.Todos == nil {
		return nil
	}
	out := make([]sdk.PlanEntry, 0, len(in.Todos))
	for _, t := range in.Todos {
		st := sdk.PlanEntryStatusPending
		switch t.Status {
		case "in_progress":
			st = sdk.PlanEntryStatusInProgress
		case "completed":
			st = sdk.PlanEntryStatusCompleted
		}
		out = append(out, sdk.PlanEntry{Content: t.Content, Status: st, Priority: sdk.PlanEntryPriorityMedium})
	}
	return out
}

// replay sends a loaded session's history as updates: what the user
// said, what the agent said and thought, its tool calls and their ends.
func (s *live) replay(ctx context.Context) error {
	recs, err := s.ap.Store().Records(ctx, s.ls.ID(), store.RecordFilter{IncludeCompacted: true})
	if err != nil {
		return err
	}
	names := map[string]string{}
	for _, r := range recs {
		if r.Kind != store.KindMessage {
			continue
		}
		m := r.Message
		for _, b := range m.Content {
			switch {
			case b.Type == llm.BlockText && m.Role == llm.RoleUser:
				s.send(sdk.UpdateUserMessageText(b.Text))
			case b.Type == llm.BlockText:
				s.send(sdk.UpdateAgentMessageText(b.Text))
			case b.Type == llm.BlockThinking && b.Thinking != "":
				s.send(sdk.UpdateAgentThoughtText(b.Thinking))
			case b.Type == llm.BlockToolUse:
				names[b.ID] = b.Name
				a := s.access(b.Name, b.Input)
				s.announce(ctx, b.ID, b.Name, b.Input, s.summary(b.Name, b.Input), a.Reads, a.Writes)
			case b.Type == llm.BlockToolResult:
				status := sdk.ToolCallStatusCompleted
				if b.IsError {
					status = sdk.ToolCallStatusFailed
				}
				s.send(sdk.UpdateToolCall(sdk.ToolCallId(b.ToolUseID), sdk.WithUpdateStatus(status),
					sdk.WithUpdateContent(s.content(names[b.ToolUseID], nil, b.Content, false))))
			}
		}
	}
	return nil
}
