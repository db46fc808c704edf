package tui

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/tool"
)

// Renderer shows a turn's events. Its methods are called from one
// goroutine, the one that ranges over the turn's stream.
type Renderer interface {
	// Render shows one event of the stream.
	Render(ev event.Event)
	// Close ends the rendering, after the last event (or when the stream
	// ended early): nothing is drawn after it.
	Close()
	// Err returns the first write error, if any; call it after Close.
	Err() error
}

// JSON writes every event as one JSON object per line, in the flat
// encoding of event.Event.MarshalJSON. It writes nothing else.
type JSON struct {
	enc   *json.Encoder
	first error
}

func NewJSON(w io.Writer) *JSON {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // observations are code: keep <, > and & readable
	return &JSON{enc: enc}
}

func (r *JSON) Render(ev event.Event) {
	if r.first == nil {
		r.first = r.enc.Encode(ev)
	}
}

func (r *JSON) Close() {}

func (r *JSON) Err() error { return r.first }

// Limits of the text rendering of observations.
const (
	maxObservationLines = 8   // lines of an observation shown under its tool call (the fold)
	MaxLineRunes        = 160 // runes of one observation line
	MaxSummaryRunes     = 100 // runes of a tool call's one-line summary
)

// Text renders a turn for people: the prompt, the model's text as
// it streams, one block per tool call (a bullet line naming the call, then
// the first lines of its observation) and a summary of how the turn ended.
//
//	● Read calc.go
//	  ⎿      1	package calc
//	         2	…
//	     … +9 lines
//
// Failed tool calls show ✗ in place of ⎿; a compaction of the conversation
// shows one line (⟳ compacted, ○ not compacted, ✗ failed).
//
// On a terminal, the bullet line of a running tool call is a spinner
// instead, redrawn in place with the seconds elapsed (⠹ Read calc.go (2s));
// when the call ends, the bullet line replaces it. Elsewhere the bullet
// line is written when the call starts — a call that runs beside others
// (tool_exec_started's parallel) when it ends, with its output — and
// nothing is ever redrawn.
//
// render is called from one goroutine; close ends the rendering.
type Text struct {
	ctx   context.Context // the turn's: cancelling it stops the spinner
	w     io.Writer
	opt   Options
	first error

	wrote    bool // something was written: blocks are separated by a blank line
	midLine  bool // the last write did not end a line
	fresh    bool // a block was started and nothing written in it yet
	streamed bool // the current model call streamed text
	start    time.Time
	used     llm.Usage // the turn's model calls so far, for the thinking spinner

	inTool bool // a tool call started and has not ended
	// openID is the call whose header was drawn last; headers are the
	// headers of the calls still running, by id: calls of one response
	// that run at once end in any order, and a call that ends under
	// another's header gets its own drawn again.
	openID   string
	headers  map[string]runningCall
	spin     *spinner // animates the running tool call's line, or the model's thinking; or nil
	spinLine string   // that line, without its bullet
	spinInfo string   // what follows the seconds in the spinner's line (the tokens so far)
	// progress is what the running call last said of its progress, shown
	// after the seconds; read by the spinner's goroutine.
	progress atomic.Pointer[string]
	header   string        // the running tool call's header, written when it ends ("" for thinking)
	failed   bool          // the running tool call failed (known at its end, when its header is drawn)
	took     time.Duration // how long the running tool call took

	md       *Markdown // the model's text as markdown (opt.Markdown), or nil
	mdBlocks int       // blocks of the current model call drawn
}

// runningCall is a tool call that started and has not ended: its header
// and whether it has a detail (then its output is not shown); held: not
// drawn yet (a parallel call where lines are written once).
type runningCall struct {
	header   string
	detailed bool
	held     bool
}

func NewText(ctx context.Context, w io.Writer, opt Options) *Text {
	r := &Text{ctx: ctx, w: w, opt: opt}
	if opt.Markdown {
		r.md = NewMarkdown(opt.cols, opt.Profile)
	}
	return r
}

func (r *Text) Err() error { return r.first }

// Close ends the rendering: a spinner still running stops and leaves its
// tool call's bullet line, text waiting for the end of its markdown block
// is drawn. Rendering may go on after it (a chat's next turn).
func (r *Text) Close() {
	r.flushMarkdown()
	r.endToolLine()
}

// Note writes s, lines of the program's own (not the turn's), as a block
// of its own. A running tool call's spinner stops and leaves its line.
func (r *Text) Note(s string) {
	r.endToolLine()
	r.block()
	r.write(strings.TrimRight(s, "\n") + "\n")
}

// Newline ends the line a prompt left open, which no Enter ended (Ctrl-C,
// Ctrl-D at the prompt).
func (r *Text) Newline() { r.write("\n") }

// Prompt writes the prompt p of a line the person types: after a blank
// line, unless cont (the prompt of a continued line). The person's Enter
// ends the line.
func (r *Text) Prompt(p string, cont bool) {
	r.endToolLine()
	if cont {
		r.endLine()
	} else {
		r.block()
	}
	r.emit(p, r.opt.Theme.Prompt)
	r.midLine = false
}

// emit writes s, stripped as write strips it, in style (of opt.Theme:
// nothing off a real terminal).
func (r *Text) emit(s string, style func(string) string) {
	if !r.opt.Theme.On() || style == nil {
		r.write(s)
		return
	}
	if r.first != nil || s == "" {
		return
	}
	if s = Sanitize(s); s == "" {
		return
	}
	r.rawWrite(style(s))
	r.wrote, r.fresh = true, false
	r.midLine = !strings.HasSuffix(s, "\n")
}

// write writes s, stripped of terminal control sequences (see Sanitize):
// what the model, a tool or a hook says can never move the cursor, clear
// the screen, set the title or the clipboard, or fake a question.
func (r *Text) write(s string) {
	if r.first != nil || s == "" {
		return
	}
	if s = Sanitize(s); s == "" {
		return
	}
	r.rawWrite(s)
	r.wrote, r.fresh = true, false
	r.midLine = !strings.HasSuffix(s, "\n")
}

// rawWrite writes s without tracking lines: for the spinner's line, which
// is always erased before anything else is written.
func (r *Text) rawWrite(s string) {
	if r.first == nil {
		_, r.first = io.WriteString(r.w, s)
	}
}

// endLine ends a line the streamed text left open.
func (r *Text) endLine() {
	if r.midLine {
		r.write("\n")
	}
}

// block starts a new block: a blank line after whatever came before,
// unless a block was started and is still empty.
func (r *Text) block() {
	if r.fresh {
		return
	}
	r.endLine()
	if r.wrote {
		r.write("\n")
	}
	r.fresh = true
}

// startToolLine shows header, the bullet line of a tool call that
// started: on a terminal as a spinner until the call ends, else at once.
func (r *Text) startToolLine(header string) {
	if !r.opt.Terminal {
		r.write(header)
		return
	}
	first, _, _ := strings.Cut(header, "\n")
	r.header, r.spinLine = header, Printable(strings.TrimPrefix(first, "● ")) // drawn with rawWrite
	r.spin = startSpinner(r.ctx, r.drawSpinner)
}

// startThinking shows, on a terminal, a spinner while the model is asked
// and until its first words arrive (or its call ends), on the line where
// its text will start: with the seconds elapsed and the turn's tokens so
// far. Its line is erased when it ends; nothing replaces it.
func (r *Text) startThinking() {
	if !r.opt.Terminal {
		return
	}
	r.block()
	r.header, r.spinLine = "", "Thinking…"
	if t := Tokens(r.used); len(t) > 0 {
		r.spinInfo = " · " + strings.Join(t, " · ")
	}
	r.spin = startSpinner(r.ctx, r.drawSpinner)
}

// drawSpinner draws the spinner's line over itself. It draws the first
// frame on the renderer's goroutine and the others on the spinner's, which
// is the only writer while the spinner runs.
func (r *Text) drawSpinner(frame rune, elapsed time.Duration) {
	line := r.spinLine
	info := r.spinInfo
	if p := r.progress.Load(); p != nil {
		info = " · " + *p + info
	}
	suffix := fmt.Sprintf(" (%ds%s)", int(elapsed/time.Second), info)
	if w := r.opt.cols(); w > 0 {
		// Leave the last column free: some terminals wrap on it.
		line = clip(line, max(1, w-1-2-utf8.RuneCountInString(suffix)))
	}
	th := r.opt.Theme
	r.rawWrite(EraseLine + th.Spin(string(frame)) + " " + line + th.Faint(suffix))
}

// endToolLine stops the running tool call's spinner, if any, and replaces
// its line with the call's bullet line, written once.
func (r *Text) endToolLine() {
	if r.spin == nil {
		return
	}
	r.spin.halt()
	r.spin = nil
	r.progress.Store(nil)
	r.rawWrite(EraseLine)
	r.writeHeader(r.header, r.failed, r.took)
	r.header, r.spinLine, r.spinInfo, r.failed, r.took = "", "", "", false, 0
}

// writeHeader writes a tool call's header; in colour, its bullet says
// whether the call failed, its name is bold, and the time it took follows.
func (r *Text) writeHeader(header string, failed bool, took time.Duration) {
	th := r.opt.Theme
	if !th.On() || header == "" {
		r.write(header)
		return
	}
	first, rest, _ := strings.Cut(header, "\n")
	r.emit(first, func(l string) string {
		name, args, _ := strings.Cut(strings.TrimPrefix(l, "● "), " ")
		bullet := th.OK("●")
		if failed {
			bullet = th.Fail("●")
		}
		out := bullet + " " + th.Tool(name)
		if args != "" {
			out += " " + args
		}
		if took >= 100*time.Millisecond {
			out += th.Faint(" · " + took.Round(100*time.Millisecond).String())
		}
		return out
	})
	r.write("\n" + rest)
}

// streamMarkdown takes a piece of the model's text: the blocks it
// completes are drawn; until the first is, the thinking spinner goes on.
func (r *Text) streamMarkdown(text string) {
	out, err := r.md.Write(Sanitize(text))
	r.drawMarkdown(out, err, text)
}

// flushMarkdown draws the model's text still waiting for its block's end.
func (r *Text) flushMarkdown() {
	if r.md == nil || !r.md.Pending() {
		return
	}
	out, err := r.md.Flush()
	r.drawMarkdown(out, err, "")
}

func (r *Text) drawMarkdown(out string, err error, text string) {
	if err != nil {
		// The markdown cannot be drawn: show the text as it is.
		r.endToolLine()
		r.md = nil
		r.streamed = true
		r.write(text)
		return
	}
	if out == "" {
		return
	}
	r.endToolLine()
	if !r.streamed {
		r.streamed = true
		r.block()
	}
	if r.mdBlocks > 0 {
		r.rawWrite("\n")
	}
	r.mdBlocks++
	r.rawWrite(out + "\n")
	r.wrote, r.fresh, r.midLine = true, false, false
}

func (r *Text) Render(ev event.Event) {
	if d, ok := ev.Data.(*event.LLMDeltaData); ok && ev.Depth == 0 {
		if d.Delta.Type != llm.DeltaText || d.Delta.Text == "" {
			return // not shown: the model is still thinking
		}
		if r.md != nil {
			r.streamMarkdown(d.Delta.Text)
			return
		}
	}
	if ev.Depth == 0 && (ev.Name == event.LLMCallCompleted || ev.Name == event.LLMCallFailed) {
		r.flushMarkdown()
	}
	if d, ok := ev.Data.(*event.ToolData); ok && ev.Depth == 0 {
		// The call's end draws its header: in colour, with how it went.
		r.failed, r.took = d.IsError, d.Duration
	}
	if d, ok := ev.Data.(*event.ToolProgressData); ok {
		// The running call's spinner says it; elsewhere, lines are
		// written once, and the call's end says how it went.
		if ev.Depth == 0 && r.spin != nil && d.ToolUseID == r.openID {
			p := ProgressText(d)
			r.progress.Store(&p)
		}
		return
	}
	if ev.Depth == 0 && !drawn(ev) {
		return // a spinner runs on: nothing is drawn for ev
	}
	// Whatever is drawn after a tool call's start (its end, normally)
	// ends its spinner; the model's first words end the thinking spinner.
	r.endToolLine()
	if ev.Depth > 0 {
		r.renderFork(ev)
		return
	}
	switch d := ev.Data.(type) {
	case *event.TurnStartedData:
		r.start, r.used = ev.Time, llm.Usage{}
		if r.opt.HideInput {
			return
		}
		r.block()
		r.write(Indent("❯ ", "  ", inputShown(d.Input)) + "\n")
	case *event.OutputRejectedData:
		r.block()
		r.write(fmt.Sprintf("✗ not a value of the output schema, sent back (correction %d): %s\n", d.Correction, d.Error))
	case *event.UserMessageData:
		// Lines typed while the turn ran (orca chat) enter it now.
		r.block()
		r.write(Indent("↳ into the turn: ", "  ", strings.Join(d.Messages, "\n")) + "\n")
	case *event.CompactionData:
		if ev.Name != event.CompactionCompleted {
			return
		}
		r.block()
		switch {
		case d.Error != "":
			r.write(fmt.Sprintf("✗ compaction (%s) failed: %s\n", d.Trigger, OneLine(d.Error, 0)))
		case d.Skipped != "":
			r.write(fmt.Sprintf("○ not compacted (%s): %s\n", d.Trigger, OneLine(d.Skipped, 0)))
		default:
			parts := []string{fmt.Sprintf("⟳ compacted the conversation (%s): %s → %d, the oldest summarised", d.Trigger,
				Plural(d.MessagesBefore, "message"), d.MessagesAfter)}
			parts = append(parts, Tokens(d.Usage)...)
			r.write(strings.Join(parts, " · ") + "\n")
		}
	case *event.LLMCallStartedData:
		r.streamed, r.mdBlocks = false, 0
		r.startThinking()
	case *event.LLMCallData:
		switch ev.Name {
		case event.LLMCallCompleted:
			if d.Usage != nil {
				r.used = r.used.Add(*d.Usage)
			}
			// A client that does not stream still shows its text.
			if !r.streamed && d.Text != "" {
				if r.md != nil {
					r.streamMarkdown(d.Text)
					r.flushMarkdown()
				} else {
					r.block()
					r.write(d.Text)
				}
			}
			r.endLine()
		case event.LLMCallFailed:
			// A failure that is not retried ends the turn: the summary
			// says it then.
			if d.Retrying {
				r.block()
				r.write(fmt.Sprintf("✗ model call failed (attempt %d), retrying: %s\n", d.Attempt, OneLine(d.Error, 0)))
			}
		}
	case *event.LLMDeltaData:
		if d.Delta.Type != llm.DeltaText || d.Delta.Text == "" {
			return
		}
		if !r.streamed {
			r.streamed = true
			r.block()
		}
		r.write(d.Delta.Text)
	case *event.ToolStartedData:
		header := ToolHeader(d.ToolName, d.Input, tool.Display{Summary: d.Summary, Detail: d.Detail})
		if r.headers == nil {
			r.headers = map[string]runningCall{}
		}
		call := runningCall{header: header, detailed: d.Detail != ""}
		if !r.opt.Terminal && d.Parallel {
			// Beside the response's other parallel calls, it ends in any
			// order: where lines are written once, the call is shown
			// whole when it ends, header and output together.
			call.held = true
			r.headers[d.ToolUseID] = call
			return
		}
		r.block()
		r.startToolLine(header)
		r.inTool = true
		r.headers[d.ToolUseID], r.openID = call, d.ToolUseID
	case *event.ToolData:
		// The call's end: tool_exec_completed or tool_exec_failed.
		call, running := r.headers[d.ToolUseID]
		delete(r.headers, d.ToolUseID)
		if !call.held {
			r.inTool = false
		}
		if running && (call.held || d.ToolUseID != r.openID) {
			// It ran beside the call drawn last: its own header first.
			r.block()
			r.writeHeader(call.header, d.IsError, d.Duration)
		}
		if !call.held {
			r.openID = ""
		}
		if !d.IsError && call.detailed {
			return // the detail under the header says it all
		}
		style := r.opt.Theme.Faint
		if d.IsError {
			style = r.opt.Theme.Fail
		}
		r.emit(Observation(d.Output, d.IsError), style)
	case *event.VerificationData:
		// The built-in verification, after the model answered.
		r.block()
		if d.Passed {
			r.write("✓ verified: " + OneLine(d.Command, MaxLineRunes) + "\n")
			return
		}
		r.write("✗ verification failed: " + OneLine(d.Command, MaxLineRunes) + "\n" + Observation(d.Output, true))
	case *event.HookFailedData:
		// A failed hook does not stop the run, but whoever wrote it wants
		// to know.
		r.hookLine("!", fmt.Sprintf("hook %s failed: %s", d.Handler, d.Error))
	case *event.HookMessageData:
		// What a hook wants the user to read (Claude Code's
		// systemMessage).
		r.hookLine("◆", fmt.Sprintf("hook %s: %s", d.Handler, d.Message))
	case *event.ElicitationData:
		// An MCP server's question: a person asked at the terminal sees
		// it there (Elicitor); one a hook answered, or no one could,
		// is shown here, with its answer.
		if ev.Name == event.ElicitationResolved && d.By != "user" {
			r.hookLine("?", ElicitationLine(d))
			r.hookLine(elicitationMark(d.Action), ElicitationAnswer(d))
		}
	case *event.TurnCompletedData:
		var took time.Duration
		if !r.start.IsZero() {
			took = ev.Time.Sub(r.start)
		}
		r.block()
		if th := r.opt.Theme; th.On() {
			line, rest, _ := strings.Cut(summary(d, took), "\n")
			mark, counts, _ := strings.Cut(line, " · ")
			style := th.OK
			if d.StopReason != "answered" {
				style = th.Fail
			}
			r.emit(mark, style)
			r.emit(" · "+counts+"\n", th.Faint)
			r.emit(rest, th.Fail)
			return
		}
		r.write(summary(d, took))
	}
}

// ProgressText says how far a running call has come, in a few words:
// "2/5 indexing src", "40%", "3" (no total known).
func ProgressText(d *event.ToolProgressData) string {
	var s string
	switch {
	case d.Total == 100:
		s = strconv.FormatFloat(d.Progress, 'f', -1, 64) + "%"
	case d.Total > 0:
		s = strconv.FormatFloat(d.Progress, 'f', -1, 64) + "/" + strconv.FormatFloat(d.Total, 'f', -1, 64)
	default:
		s = strconv.FormatFloat(d.Progress, 'f', -1, 64)
	}
	if m := OneLine(d.Message, 60); m != "" {
		s += " " + m
	}
	return s
}

// drawn reports whether render may draw something for ev, a turn's own
// event (a fork's are drawn under their Task call): the others (a policy
// decision, say) leave a running spinner alone, so that a call's bullet
// line is drawn at its end, when its outcome is known. An approval request
// is drawn: its question comes under the call's line.
func drawn(ev event.Event) bool {
	switch ev.Data.(type) {
	case *event.TurnStartedData, *event.UserMessageData, *event.CompactionData, *event.LLMCallStartedData, *event.LLMCallData, *event.LLMDeltaData,
		*event.ToolStartedData, *event.ToolData, *event.VerificationData, *event.HookFailedData, *event.HookMessageData, *event.TurnCompletedData,
		*event.ApprovalData, *event.OutputRejectedData, *event.ElicitationData:
		return true
	}
	return false
}

// ElicitationLine says what an MCP server asked (d, an elicitation event's
// data).
func ElicitationLine(d *event.ElicitationData) string {
	s := "MCP server " + d.Server + " asked"
	if d.Mode == "url" {
		s += " to open " + d.URL
	}
	if d.Message != "" {
		s += ": " + d.Message
	}
	return s
}

// ElicitationAnswer says how a question (an elicitation_resolved event's
// d) was answered: accepted with which fields, or declined or cancelled,
// why, and by whom.
func ElicitationAnswer(d *event.ElicitationData) string {
	by := d.By
	if h, ok := strings.CutPrefix(by, "hook:"); ok {
		by = "hook " + h
	}
	if d.Action == "accept" {
		s := "accepted by " + by
		if len(d.Fields) > 0 {
			s += " (" + strings.Join(d.Fields, ", ") + ")"
		}
		return s
	}
	did := map[string]string{"decline": "declined", "cancel": "cancelled"}[d.Action]
	return cmp.Or(did, d.Action) + ": " + d.Reason
}

func elicitationMark(action string) string {
	if action == "accept" {
		return "◆"
	}
	return "✗"
}

// hookLine shows a line of a hook's after mark: under the tool call it
// belongs to, or on its own.
func (r *Text) hookLine(mark, text string) {
	prefix := "  " + mark + " "
	if r.inTool {
		r.endLine()
	} else {
		r.block()
		prefix = mark + " "
	}
	r.write(prefix + OneLine(text, MaxLineRunes) + "\n")
}

// renderFork shows an event of a subagent fork (depth ≥ 1) as a line under
// the Task call that started it, one "│" deeper per level:
//
//	● Task Look for the bug (general-purpose)
//	  │ ● Read calc.go
//	  │ ✓ answered · 2 iterations · 1 tool call
//	  ⎿  The bug is in Sum …
//
// Its text, prompt and successful observations are not shown: the fork's
// answer is the Task call's observation.
func (r *Text) renderFork(ev event.Event) {
	var s string
	switch d := ev.Data.(type) {
	case *event.ToolStartedData:
		s, _, _ = strings.Cut(ToolHeader(d.ToolName, d.Input, tool.Display{Summary: d.Summary, Detail: d.Detail}), "\n")
	case *event.ToolData:
		if d.IsError {
			first, _, _ := strings.Cut(strings.TrimSpace(d.Output), "\n")
			s = "  ✗ " + OneLine(first, MaxLineRunes)
		}
	case *event.LLMCallData:
		if ev.Name == event.LLMCallFailed && d.Retrying {
			s = fmt.Sprintf("✗ model call failed (attempt %d), retrying: %s", d.Attempt, OneLine(d.Error, MaxLineRunes))
		}
	case *event.HookFailedData:
		s = "! " + OneLine(fmt.Sprintf("hook %s failed: %s", d.Handler, d.Error), MaxLineRunes)
	case *event.HookMessageData:
		s = "◆ " + OneLine(fmt.Sprintf("hook %s: %s", d.Handler, d.Message), MaxLineRunes)
	case *event.ElicitationData:
		if ev.Name == event.ElicitationResolved {
			s = elicitationMark(d.Action) + " " + OneLine(ElicitationLine(d)+" · "+ElicitationAnswer(d), MaxLineRunes)
		}
	case *event.TurnCompletedData:
		s = strings.TrimRight(summary(d, 0), "\n")
	}
	if s == "" {
		return
	}
	prefix := strings.Repeat("  │ ", ev.Depth)
	r.endLine()
	r.write(Indent(prefix, prefix, s) + "\n")
}

// ToolLine is a tool call's bullet line (ToolHeader's first) without the
// bullet: how a status line, a question or a timeline names the call.
func ToolLine(name string, input json.RawMessage, d tool.Display) string {
	first, _, _ := strings.Cut(ToolHeader(name, input, d), "\n")
	return strings.TrimPrefix(first, "● ")
}

// ToolHeader returns the bullet line of a tool call — its name and what
// the tool says the call does (its arguments if the tool says nothing) —
// then the lines the tool shows under it (a plan's checklist).
func ToolHeader(name string, input json.RawMessage, d tool.Display) string {
	head := "● " + name
	if len(input) > 0 && !json.Valid(input) {
		return head + " " + OneLine("(arguments are not valid JSON: "+strings.TrimSpace(string(input))+")", MaxSummaryRunes) + "\n"
	}
	s := d.Summary
	if s == "" && d.Detail == "" {
		s = tool.CompactArgs(input)
	}
	if s != "" {
		head += " " + OneLine(s, MaxSummaryRunes)
	}
	var b strings.Builder
	b.WriteString(head + "\n")
	for _, l := range strings.Split(strings.TrimRight(d.Detail, "\n"), "\n") {
		if l != "" {
			b.WriteString("  " + OneLine(l, MaxLineRunes) + "\n")
		}
	}
	return b.String()
}

// Observation returns the first lines of a tool's output, indented under
// its header, each line clipped unless the output is an error.
func Observation(out string, isError bool) string {
	mark := "  ⎿  "
	if isError {
		mark = "  ✗  "
	}
	out = strings.TrimRight(out, "\n")
	// What the language servers found (lsp's <diagnostics> block, at the
	// end) is shown whole, after the output's first lines: it is what a
	// person watching wants to see of an edit.
	var diags []string
	if i := strings.LastIndex(out, "\n\n<diagnostics>\n"); i >= 0 && strings.HasSuffix(out, "\n</diagnostics>") {
		diags = strings.Split(out[i+len("\n\n<diagnostics>\n"):len(out)-len("\n</diagnostics>")], "\n")
		out = strings.TrimRight(out[:i], "\n")
	}
	if strings.TrimSpace(out) == "" && diags == nil {
		return mark + "(no output)\n"
	}
	var lines []string
	if strings.TrimSpace(out) != "" {
		lines = strings.Split(out, "\n")
	}
	shown := lines
	if len(lines) > maxObservationLines {
		shown = lines[:maxObservationLines]
	}
	var b strings.Builder
	for i, l := range shown {
		if i == 0 {
			b.WriteString(mark)
		} else {
			b.WriteString("     ")
		}
		if isError {
			// What went wrong, and the hint that follows (a refusal's
			// --allow flag), is never cut: the terminal wraps it.
			b.WriteString(Printable(l))
		} else {
			b.WriteString(clip(Printable(l), MaxLineRunes))
		}
		b.WriteByte('\n')
	}
	if n := len(lines) - len(shown); n > 0 {
		fmt.Fprintf(&b, "     … +%s\n", Plural(n, "line"))
	}
	for i, l := range diags {
		if i == 0 && len(lines) == 0 {
			b.WriteString(mark)
		} else {
			b.WriteString("     ")
		}
		b.WriteString("⚠ " + clip(Printable(l), MaxLineRunes) + "\n")
	}
	return b.String()
}

// summary returns the closing line of a turn, and its error if it failed.
func summary(d *event.TurnCompletedData, took time.Duration) string {
	mark := "✓"
	if d.StopReason != "answered" {
		mark = "✗"
	}
	how := strings.ReplaceAll(d.StopReason, "_", " ")
	if d.Budget != "" {
		how += " (" + strings.ReplaceAll(d.Budget, "_", " ") + ")"
	}
	parts := []string{
		mark + " " + how,
		Plural(d.Iterations, "iteration"),
		Plural(d.ToolCalls, "tool call"),
	}
	parts = append(parts, Tokens(d.Usage)...)
	if took = took.Round(time.Millisecond); took > 0 {
		parts = append(parts, took.String())
	}
	s := strings.Join(parts, " · ") + "\n"
	switch {
	case d.Error != "":
		s += Indent("  ", "  ", d.Error) + "\n"
	case d.Reason != "" && d.StopReason != "answered":
		s += Indent("  ", "  ", d.Reason) + "\n"
	}
	return s
}

// Tokens says how many tokens went in and out, when the provider counted
// any: "1.2k tokens in", "340 out". Cache reads and writes count as in.
func Tokens(u llm.Usage) []string {
	in, out := u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens, u.OutputTokens
	switch {
	case in > 0 && out > 0:
		return []string{TokenCount(in) + " tokens in", TokenCount(out) + " out"}
	case in > 0:
		return []string{TokenCount(in) + " tokens in"}
	case out > 0:
		return []string{TokenCount(out) + " tokens out"}
	}
	return nil
}

// TokenCount writes n short: 340, 1.2k, 12.3k, 456k, 1.2M.
func TokenCount(n int64) string {
	short := func(v float64, unit string) string {
		s := strconv.FormatFloat(v, 'f', 0, 64)
		if v < 99.95 {
			s = strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0")
		}
		return s + unit
	}
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 999_500:
		return short(float64(n)/1e3, "k")
	}
	return short(float64(n)/1e6, "M")
}

func Plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// Indent prefixes the first line of s with first and the others with rest.
func Indent(first, rest, s string) string {
	return first + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+rest)
}

// The most of a turn's input the text shows: a file given as the prompt
// (orca run - < file) is shown by its start.
const (
	inputLines = 20
	inputRunes = 2000
)

// inputShown is what the text shows of a turn's input: all of a short one;
// the first lines of a long one, and how much is left out.
func inputShown(s string) string {
	s = strings.TrimRight(s, "\n")
	lines, cut := 0, -1
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			if lines++; lines == inputLines {
				cut = i
				break
			}
		}
	}
	shown := s
	if cut >= 0 {
		shown = s[:cut]
	}
	runes := 0
	for i := range shown { // the first inputRunes runes, without copying them
		if runes++; runes > inputRunes {
			shown = shown[:i]
			break
		}
	}
	if len(shown) == len(s) {
		return s
	}
	rest := s[len(shown):]
	more := Plural(utf8.RuneCountInString(rest), "more character")
	if n := strings.Count(rest, "\n"); n > 0 {
		more = Plural(n, "more line") + ", " + Plural(utf8.RuneCountInString(rest), "character")
	}
	return shown + "…\n… (" + more + ", not shown)"
}

// OneLine folds s onto one line and clips it to n runes (n <= 0: no clip).
func OneLine(s string, n int) string {
	s = Printable(strings.Join(strings.Fields(s), " "))
	if n > 0 {
		s = clip(s, n)
	}
	return s
}

// Printable drops control characters (terminal escapes, carriage returns,
// line breaks) but keeps tabs.
func Printable(s string) string {
	return strings.ReplaceAll(Sanitize(s), "\n", "")
}

// Sanitize removes from s what a terminal would act on rather than show:
// escape sequences whole (CSI, OSC — the title, the clipboard —, DCS and
// the like, up to their end), then every other control character but line
// feeds and tabs (carriage returns, backspaces, C1 controls such as the
// one-byte CSI, bytes that are not UTF-8) and the bidirectional overrides that reorder what is
// shown. Line feeds and tabs stay.
func Sanitize(s string) string {
	clean := utf8.ValidString(s)
	for _, r := range s {
		if !clean || unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			i += escapeLen(s[i:])
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if !unsafeRune(r) && !(r == utf8.RuneError && n == 1) { // a stray byte could be a one-byte C1 control
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// unsafeRune reports whether r is a control character other than a line
// feed or a tab, or a bidirectional control.
func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case unicode.IsControl(r): // C0, DEL and C1
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

// escapeLen returns the length of the escape sequence at the start of s
// (s[0] is ESC): the whole sequence, or what of it s holds.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[': // CSI: parameters and intermediates, then a final byte
		for i := 2; i < len(s); i++ {
			if s[i] >= 0x40 && s[i] <= 0x7e {
				return i + 1
			}
		}
		return len(s)
	case ']', 'P', 'X', '^', '_': // OSC, DCS, SOS, PM, APC: up to BEL or ST
		for i := 2; i < len(s); i++ {
			if s[i] == 0x07 {
				return i + 1
			}
			if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
		}
		return len(s)
	}
	return 2 // ESC and one character: ESC c (reset), ESC 7, …
}

// clip shortens s to n runes, marking the cut with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	runes := []rune(s)
	return string(runes[:n-1]) + "…"
}
