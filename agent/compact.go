package agent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm"
)

// Compaction triggers, as PRE_COMPACT and the events name them.
const (
	TriggerAuto     = "auto"
	TriggerManual   = "manual"
	TriggerRecovery = "recovery"
)

// SourceCompact is SESSION_START's source after a compaction summarised
// the session's conversation (Claude Code's SessionStart "compact").
const SourceCompact = "compact"

// compacted tells what a compaction that summarised the session's
// conversation did, as Claude Code does after one: the runtime's Notifier
// hears it (NotifyPostCompact: the settings' PostCompact entries, which
// only watch), then SESSION_START runs with source compact, and the
// context its handlers added is returned, as blocks to follow the
// summary: what a hook re-injects (the project's conventions, a runbook)
// is what the model sees next to the summary from then on. A fork is not a
// session: its compactions tell nothing.
func (t *turn) compacted(trigger, summary string) []llm.Block {
	if t.res.Fork() {
		return nil
	}
	if n := t.rt.notifier; n != nil {
		n.Notify(hook.Notification{Common: t.common(), Type: hook.NotifyPostCompact, Trigger: trigger, CompactSummary: summary})
	}
	if !t.rt.hooks.Has(hook.SessionStart) {
		return nil
	}
	out := t.runHook(&hook.SessionStartPayload{Common: t.common(), Source: SourceCompact})
	return contextBlocks(hook.SessionStart, out.Context)
}

// summaryPrompt is the summariser's system prompt.
const summaryPrompt = `You summarise a conversation between a user and a coding agent so that the agent can continue the work from your summary alone.
Keep: the user's goals and constraints, decisions taken and why, files read or changed (with paths), commands run and their outcome, errors met and how they were resolved, and what remains to do.
Be specific and complete; leave out pleasantries. Write plain prose and short lists.`

// compaction is what one compaction did.
type compaction struct {
	msgs    []llm.Message // the new conversation (nil if skipped)
	usage   llm.Usage
	skipped string
}

// summarise summarises msgs except the newest KeepTurns user turns, which
// it keeps verbatim (automatic and recovery compaction inside a turn, and
// manual compaction, all come here). The cut is always made before a user message that starts
// a turn (text, not tool results), so a tool call is never separated from
// its result. The summary goes in front of the first kept message.
func (t *turn) summarise(msgs []llm.Message, trigger, instructions string) (compaction, error) {
	def := &t.rt.def
	t.emit(event.CompactionStarted, &event.CompactionData{Trigger: trigger, Kind: KindSummary, MessagesBefore: len(msgs)})
	skip := func(why string) (compaction, error) {
		t.emit(event.CompactionCompleted, &event.CompactionData{Trigger: trigger, Kind: KindSummary, MessagesBefore: len(msgs), Skipped: why})
		return compaction{skipped: why}, nil
	}
	if t.rt.hooks.Has(hook.PreCompact) {
		out := t.runHook(&hook.PreCompactPayload{Common: t.common(), Trigger: trigger, Kind: KindSummary, Instructions: instructions})
		if out.Action == hook.Block {
			return skip(fmt.Sprintf("blocked by hook %s: %s", out.By, out.Reason))
		}
		instructions = out.Payload.(*hook.PreCompactPayload).Instructions
	}
	cut := cutPoint(msgs, def.KeepTurns)
	if cut <= 0 {
		return skip("nothing old enough to summarise")
	}
	var b strings.Builder
	b.WriteString("Summarise this conversation so far; the newest turns follow your summary verbatim.\n")
	if instructions != "" {
		b.WriteString("\nInstructions for this summary:\n")
		b.WriteString(instructions)
		b.WriteString("\n")
	}
	b.WriteString("\n<conversation>\n")
	render(&b, msgs[:cut])
	b.WriteString("</conversation>")
	summary, usage, err := t.summariser(b.String())
	if err != nil {
		t.emit(event.CompactionCompleted, &event.CompactionData{Trigger: trigger, Kind: KindSummary, MessagesBefore: len(msgs), Error: err.Error()})
		return compaction{}, fmt.Errorf("compaction (%s): %w", trigger, err)
	}
	first := msgs[cut]
	merged := llm.Message{Role: llm.RoleUser, Content: append([]llm.Block{
		llm.TextBlock("<summary of the earlier conversation>\n" + summary + "\n</summary of the earlier conversation>"),
	}, first.Content...)}
	out := make([]llm.Message, 0, len(msgs)-cut)
	out = append(out, merged)
	out = append(out, msgs[cut+1:]...)
	t.emit(event.CompactionCompleted, &event.CompactionData{Trigger: trigger, Kind: KindSummary, MessagesBefore: len(msgs), MessagesAfter: len(out), Usage: usage})
	// The hooks' context follows the summary, in the message that holds it.
	out[0].Content = slices.Insert(out[0].Content, 1, t.compacted(trigger, summary)...)
	return compaction{msgs: out, usage: usage}, nil
}

// SummaryCutNote ends a compaction's summary that was cut off at the
// output token limit (Definition.MaxTokens): the summary is kept, marked.
const SummaryCutNote = "[The summary was cut off here, at the output token limit: what it said after this is lost.]"

// cutPoint returns the index of the user message that starts the
// keep-th newest turn, or -1 when there are not more turns than that.
func cutPoint(msgs []llm.Message, keep int) int {
	seen := 0
	for i := len(msgs) - 1; i > 0; i-- {
		if startsTurn(msgs[i]) {
			seen++
			if seen == keep {
				return i
			}
		}
	}
	return -1
}

// startsTurn reports whether m is a user message that is not a tool
// result: a turn's input (a compaction summary included).
func startsTurn(m llm.Message) bool {
	if m.Role != llm.RoleUser || len(m.Content) == 0 {
		return false
	}
	return m.Content[0].Type != llm.BlockToolResult
}

// render writes msgs as text for the summariser, cutting long contents.
func render(b *strings.Builder, msgs []llm.Message) {
	const max = 2000
	clip := func(s string) string {
		if len(s) <= max {
			return s
		}
		return s[:max] + fmt.Sprintf(" […%d more characters]", len(s)-max)
	}
	for _, m := range msgs {
		for _, bl := range m.Content {
			switch bl.Type {
			case llm.BlockText:
				fmt.Fprintf(b, "%s: %s\n", m.Role, clip(bl.Text))
			case llm.BlockToolUse:
				fmt.Fprintf(b, "assistant called %s %s\n", bl.Name, clip(string(bl.Input)))
			case llm.BlockToolResult:
				status := "result"
				if bl.IsError {
					status = "error"
				}
				fmt.Fprintf(b, "tool %s: %s\n", status, clip(bl.Content))
			case llm.BlockImage, llm.BlockDocument:
				// The summary keeps what was shown by its description
				// (and by what the assistant said of it).
				who := string(m.Role)
				if bl.ToolUseID != "" {
					who = "tool"
				}
				fmt.Fprintf(b, "%s showed: [%s]\n", who, bl.Media)
			}
		}
	}
}

// compact compacts the turn's conversation; false means the turn ended
// (the summariser failed, or the new conversation could not be recorded).
func (t *turn) compact(trigger, instructions string) bool {
	out, err := t.summarise(t.msgs, trigger, instructions)
	t.res.Usage = t.res.Usage.Add(out.usage)
	t.cost += t.rt.def.Prices.Cost(t.model(), out.usage)
	if err != nil {
		if t.stopped() {
			return false
		}
		if trigger == TriggerAuto {
			// Automatic compaction is an optimisation: the turn goes on
			// with the whole conversation (the failure was reported).
			return true
		}
		t.fail(err)
		return false
	}
	if out.msgs == nil {
		return true
	}
	// The turn's input moves up with the messages the summary replaced.
	t.input = max(t.input-(len(t.msgs)-len(out.msgs)), 0)
	t.msgs = out.msgs
	t.resized()
	return t.onCompact() == nil
}

// compactOnly runs a manual compaction (Request.Compact): PRE_COMPACT with
// trigger "manual" (it may rewrite the instructions but not block), then
// the summariser, whose call goes through both LLM middleware chains with
// feature "compaction". The result is StopCompacted; Transcript is the new
// conversation, or History when nothing was compacted (Reason says why).
func (t *turn) compactOnly() {
	t.msgs = t.req.History
	out, err := t.summarise(t.req.History, TriggerManual, t.req.Input)
	t.res.Usage = out.usage
	t.cost += t.rt.def.Prices.Cost(t.model(), out.usage)
	t.res.Spent = budget.Spent{Tokens: out.usage.Total(), CostUSD: t.cost}
	t.res.Transcript = t.req.History
	if err != nil {
		t.res.StopReason, t.res.Err = StopFailed, err
		return
	}
	t.res.StopReason, t.res.Reason = StopCompacted, out.skipped
	if out.msgs != nil {
		t.res.Transcript, t.res.Compacted = out.msgs, true
	}
}
