package agent

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/workspace"
)

// The kinds of compaction, cheapest first, as PRE_COMPACT and the events
// name them.
const (
	// KindClear replaces the content of old tool results with a short
	// placeholder (the newest Definition.KeepToolResults stay whole).
	KindClear = "clear_tool_results"
	// KindSummary summarises the turns before the newest KeepTurns.
	KindSummary = "summary"
	// KindTurnSummary summarises the oldest tool exchanges of the running
	// turn, keeping its input and its newest exchanges verbatim.
	KindTurnSummary = "turn_summary"
)

// clearedPrefix starts every cleared tool result, so that one is never
// cleared twice.
const clearedPrefix = "[orca cleared this result"

// minClear is the shortest tool result worth clearing.
const minClear = 256

// clearResults returns msgs with the content of every tool result but
// the newest keep replaced by a placeholder that says what was there and
// how to get it back, and how many it cleared. A tool call and its result
// stay together: only the result's text changes. msgs is not modified.
func clearResults(msgs []llm.Message, keep int) ([]llm.Message, int) {
	// The tool-result messages, newest first; the keep newest stay.
	var at []int
	for i := len(msgs) - 1; i >= 0; i-- {
		if hasResults(msgs[i]) {
			at = append(at, i)
		}
	}
	if len(at) <= keep {
		return msgs, 0
	}
	names := map[string]string{} // tool use id → tool name
	for _, m := range msgs {
		if m.Role == llm.RoleAssistant {
			for _, u := range m.ToolUses() {
				names[u.ID] = u.Name
			}
		}
	}
	var out []llm.Message
	cleared := 0
	for _, i := range at[keep:] {
		m := msgs[i]
		var content []llm.Block // m's, once a result is cleared
		for j := 0; j < len(m.Content); j++ {
			b := m.Content[j]
			parts := llm.ResultMedia(m.Content, j)
			if b.Type != llm.BlockToolResult || len(b.Content) < minClear && len(parts) == 0 || strings.HasPrefix(b.Content, clearedPrefix) {
				if content != nil {
					content = append(content, b)
				}
				continue
			}
			if content == nil {
				content = append(make([]llm.Block, 0, len(m.Content)), m.Content[:j]...)
			}
			name := cmpOr(names[b.ToolUseID], "the tool")
			shown := ""
			if len(parts) > 0 {
				// Images and documents go too, named.
				shown = " and what it showed you: " + strings.ReplaceAll(llm.PartsText(parts), "\n", ", ")
			}
			b.Content = fmt.Sprintf("%s to make room in the context: it was %d characters of %s's output%s. Call %s again if you need it.]",
				clearedPrefix, len(b.Content), name, shown, name)
			content = append(content, b)
			j += len(parts)
			cleared++
		}
		if content == nil {
			continue
		}
		if out == nil {
			out = append([]llm.Message(nil), msgs...)
		}
		out[i].Content = content
	}
	if out == nil {
		return msgs, 0
	}
	return out, cleared
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

func hasResults(m llm.Message) bool {
	if m.Role != llm.RoleUser {
		return false
	}
	for _, b := range m.Content {
		if b.Type == llm.BlockToolResult {
			return true
		}
	}
	return false
}

// turnCut returns where a summary of the running turn may end: the index
// of the assistant message that starts the oldest of the newest keep tool
// exchanges after the turn's input (msgs[input]), so that everything
// between the input and it can be summarised without separating a call
// from its result; -1 when there are not more exchanges than keep.
func turnCut(msgs []llm.Message, input, keep int) int {
	seen := 0
	for i := len(msgs) - 1; i > input+1; i-- {
		if msgs[i].Role == llm.RoleAssistant {
			if seen++; seen == keep {
				return i
			}
		}
	}
	return -1
}

// checkPairs reports a conversation the providers would refuse: a tool
// call without its result in the next message, a result without its call
// in the message before. It checks
// msgs from from on (the part before was checked already). It takes time
// linear in the blocks: results in the order of their calls are matched
// as they come, and a map of the calls left is made only for results out
// of that order (a turn of 3,000 parallel calls took 47% of its time here
// when each result searched its calls).
func checkPairs(msgs []llm.Message, from int) error {
	if from <= 0 && len(msgs) > 0 {
		if err := checkMedia(&msgs[0]); err != nil {
			return fmt.Errorf("message 0: %w", err)
		}
	}
	for i := max(from, 1); i < len(msgs); i++ {
		// Two messages of one role in a row are fine: the providers join
		// them. Tool calls and results are what they refuse.
		m, prev := &msgs[i], &msgs[i-1]
		var calls []llm.Block // prev's content, if it can make calls
		if prev.Role == llm.RoleAssistant {
			calls = prev.Content
		}
		// next is the first call of calls not yet passed in order; left
		// counts, by id, the calls from next on not yet answered, once a
		// result comes out of order.
		next, answered := 0, 0
		var left map[string]int
		media := false
		for j := range m.Content {
			b := &m.Content[j]
			if b.Type != llm.BlockToolResult {
				media = media || b.Media != nil || b.Type == llm.BlockImage || b.Type == llm.BlockDocument
				continue
			}
			if left == nil {
				for next < len(calls) && calls[next].Type != llm.BlockToolUse {
					next++
				}
				if next < len(calls) && calls[next].ID == b.ToolUseID {
					next++
					answered++
					continue
				}
				left = make(map[string]int)
				for _, c := range calls[next:] {
					if c.Type == llm.BlockToolUse {
						left[c.ID]++
					}
				}
			}
			if n := left[b.ToolUseID]; n > 0 {
				left[b.ToolUseID] = n - 1
				answered++
				continue
			}
			if !makesCall(prev, b.ToolUseID) {
				return fmt.Errorf("message %d has a result for tool call %q, which message %d does not make", i, b.ToolUseID, i-1)
			}
			// A second result for a call already answered answers no
			// other call.
		}
		if media {
			if err := checkMedia(m); err != nil {
				return fmt.Errorf("message %d: %w", i, err)
			}
		}
		callCount := 0
		for _, b := range calls {
			if b.Type == llm.BlockToolUse {
				callCount++
			}
		}
		if answered < callCount {
			return fmt.Errorf("message %d makes %d tool calls, and message %d answers %d of them", i-1, callCount, i, answered)
		}
	}
	if n := len(msgs); n > 0 && msgs[n-1].Role == llm.RoleAssistant && len(msgs[n-1].ToolUses()) > 0 {
		return fmt.Errorf("the last message makes tool calls that have no results")
	}
	return nil
}

// checkMedia reports images and documents the providers would refuse:
// in an assistant message, without their media or its type, or part of a
// tool result they do not follow.
func checkMedia(m *llm.Message) error {
	for i := range m.Content {
		b := &m.Content[i]
		switch b.Type {
		case llm.BlockImage, llm.BlockDocument:
			if m.Role != llm.RoleUser {
				return fmt.Errorf("an %s block in a %s message (only the user's show the model media)", b.Type, m.Role)
			}
			if b.ToolUseID != "" {
				if i == 0 || m.Content[i-1].ToolUseID != b.ToolUseID || m.Content[i-1].Type != llm.BlockToolResult && m.Content[i-1].Media == nil {
					return fmt.Errorf("an %s block of tool call %q's result that does not follow that result", b.Type, b.ToolUseID)
				}
				if err := validMedia(b); err != nil {
					return fmt.Errorf("the result of tool call %q: %w", b.ToolUseID, err)
				}
				continue
			}
			if err := validMedia(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// freshMedia is validMedia for media a turn is given (a request's, a
// tool's): with their bytes — a digest alone would show the model bytes a
// store keeps for another session.
func freshMedia(b *llm.Block) error {
	if b.Media != nil && len(b.Media.Data) == 0 {
		return fmt.Errorf("an %s block (%s) without its bytes", b.Type, b.Media)
	}
	return validMedia(b)
}

func validMedia(b *llm.Block) error {
	m := b.Media
	switch {
	case m == nil:
		return fmt.Errorf("an %s block without its media", b.Type)
	case len(m.Data) == 0 && m.Digest == "":
		return fmt.Errorf("an %s block (%s) with neither bytes nor a digest", b.Type, m)
	case b.Type == llm.BlockDocument && m.MediaType != llm.MediaPDF:
		return fmt.Errorf("a document of type %q (documents are PDFs)", m.MediaType)
	case b.Type == llm.BlockImage && m.MediaType != llm.MediaPNG && m.MediaType != llm.MediaJPEG && m.MediaType != llm.MediaGIF && m.MediaType != llm.MediaWebP:
		return fmt.Errorf("an image of type %q (images are PNG, JPEG, GIF or WebP)", m.MediaType)
	}
	return nil
}

func makesCall(m *llm.Message, id string) bool {
	if m.Role != llm.RoleAssistant {
		return false
	}
	for _, b := range m.Content {
		if b.Type == llm.BlockToolUse && b.ID == id {
			return true
		}
	}
	return false
}

// errNoRoom ends a turn whose prompt is too long when nothing more can be
// cut from it.
var errNoRoom = errors.New("the prompt is too long for the model and nothing more can be cut from it")

// makeRoom shrinks the conversation, cheapest first — clear old tool
// results, then summarise the turns before the newest ones, then
// summarise the running turn's oldest exchanges — until the estimate is
// under limit (recovery: until something changed). false means the turn
// ended (a summariser failed, the new conversation could not be recorded).
// changed says whether the conversation is smaller.
func (t *turn) makeRoom(trigger string, limit int64) (changed, ok bool) {
	def := &t.rt.def
	if msgs, n := clearResults(t.msgs, def.KeepToolResults); n > 0 && t.allowed(trigger, KindClear, len(t.msgs)) {
		t.msgs = msgs
		t.resized()
		changed = true
		t.emit(event.CompactionCompleted, &event.CompactionData{Trigger: trigger, Kind: KindClear, MessagesBefore: len(msgs), MessagesAfter: len(msgs), Cleared: n})
		// Not recorded: the store keeps the whole results (a resumed
		// session clears them again when it needs to), and the turn's
		// conversation has as many messages as before.
		if trigger == TriggerRecovery || t.estimate() <= limit {
			return changed, true
		}
	}
	if cutPoint(t.msgs, def.KeepTurns) > 0 {
		before := len(t.msgs)
		if !t.compact(trigger, "") {
			return changed, false
		}
		changed = changed || len(t.msgs) < before || t.res.Compacted
		if trigger == TriggerRecovery && changed || t.estimate() <= limit {
			return changed, true
		}
	}
	if turnCut(t.msgs, t.input, def.KeepToolResults) > t.input+1 {
		before := len(t.msgs)
		if !t.compactTurn(trigger) {
			return changed, false
		}
		changed = changed || len(t.msgs) < before
	}
	return changed, true
}

// allowed runs PRE_COMPACT for a compaction of kind and reports whether
// it may run (a hook may block it).
func (t *turn) allowed(trigger, kind string, msgs int) bool {
	if !t.rt.hooks.Has(hook.PreCompact) {
		return true
	}
	out := t.runHook(&hook.PreCompactPayload{Common: t.common(), Trigger: trigger, Kind: kind})
	if out.Action == hook.Block {
		t.emit(event.CompactionCompleted, &event.CompactionData{Trigger: trigger, Kind: kind, MessagesBefore: msgs,
			Skipped: fmt.Sprintf("blocked by hook %s: %s", out.By, out.Reason)})
		return false
	}
	return true
}

// resized forgets the provider's count of the prompt, and the pairing
// check's progress: the conversation they saw has changed.
func (t *turn) resized() {
	t.promptTokens, t.sizedUpTo, t.pairsChecked = 0, 0, 0
	t.est = estimateCache{upTo: -1} // counted afresh
}

// onCompact records the whole conversation after a compaction; on failure
// it ends the turn.
func (t *turn) onCompact() error {
	if t.req.OnCompact != nil {
		if err := t.req.OnCompact(t.msgs); err != nil {
			t.res.Err = fmt.Errorf("recording the compacted transcript: %w", err)
			t.finish(StopFailed)
			return err
		}
	}
	t.histLen, t.recorded = 0, len(t.msgs)
	t.res.Compacted = true
	return nil
}

// compactTurn summarises the running turn's oldest tool exchanges: the
// turn's input stays verbatim, the summary is added to it, and the newest
// KeepToolResults exchanges follow unchanged.
func (t *turn) compactTurn(trigger string) bool {
	def := &t.rt.def
	cut := turnCut(t.msgs, t.input, def.KeepToolResults)
	before := len(t.msgs)
	t.emit(event.CompactionStarted, &event.CompactionData{Trigger: trigger, Kind: KindTurnSummary, MessagesBefore: before})
	if !t.allowed(trigger, KindTurnSummary, before) {
		return true
	}
	var b strings.Builder
	b.WriteString("Summarise the work done so far in the current task: what was tried, found, changed and decided, with paths and commands. The task itself, and the newest steps, follow your summary verbatim.\n\n<task>\n")
	b.WriteString(t.msgs[t.input].Text())
	b.WriteString("\n</task>\n\n<work so far>\n")
	render(&b, t.msgs[t.input+1:cut])
	b.WriteString("</work so far>")
	text, usage, err := t.summariser(b.String())
	t.res.Usage = t.res.Usage.Add(usage)
	t.cost += t.rt.def.Prices.Cost(t.model(), usage)
	if err != nil {
		t.emit(event.CompactionCompleted, &event.CompactionData{Trigger: trigger, Kind: KindTurnSummary, MessagesBefore: before, Error: err.Error()})
		if t.stopped() {
			return false
		}
		if trigger == TriggerAuto {
			return true // an optimisation: the turn goes on
		}
		t.fail(fmt.Errorf("compaction (%s, %s): %w", trigger, KindTurnSummary, err))
		return false
	}
	input := t.msgs[t.input]
	input.Content = append(append([]llm.Block(nil), input.Content...),
		llm.TextBlock("<summary of the work so far in this task>\n"+text+"\n</summary of the work so far in this task>"))
	out := make([]llm.Message, 0, t.input+1+len(t.msgs)-cut)
	out = append(out, t.msgs[:t.input]...)
	out = append(out, input)
	out = append(out, t.msgs[cut:]...)
	t.emit(event.CompactionCompleted, &event.CompactionData{Trigger: trigger, Kind: KindTurnSummary, MessagesBefore: before, MessagesAfter: len(out), Usage: usage})
	// The hooks' context follows the summary, in the turn's input.
	out[t.input].Content = append(out[t.input].Content, t.compacted(trigger, text)...)
	t.msgs = out
	t.resized()
	return t.onCompact() == nil
}

// summariser asks the model for a summary of prompt, through both LLM
// middleware chains with feature "compaction". A summary cut off at the
// output token limit ends with SummaryCutNote.
func (t *turn) summariser(prompt string) (string, llm.Usage, error) {
	def := &t.rt.def
	req := &llm.Request{
		Model:     t.model(),
		System:    summaryPrompt,
		Messages:  []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(prompt)}}},
		MaxTokens: def.MaxTokens,
		Metadata:  llm.Metadata{TraceID: t.res.SessionID, Feature: llm.FeatureCompaction, Component: def.Name},
	}
	// The model that serves the turn's calls now — a fallback while the
	// breaker passes the session's model over — writes the summary.
	if t.rt.breakers != nil {
		if t.link = t.firstLink(); t.link > 0 {
			req.Model = t.rt.chain[t.link-1].Model
			req.Metadata.Provider = t.rt.chain[t.link-1].Provider
		}
	}
	req, err := t.prepare(req)
	if err != nil {
		return "", llm.Usage{}, err
	}
	resp, err := t.attempt(req, nil)
	if err != nil {
		return "", llm.Usage{}, err
	}
	summary := resp.Message.Text()
	if strings.TrimSpace(summary) == "" {
		return "", resp.Usage, errors.New("the summariser returned no text")
	}
	if cutOff(resp, req.MaxTokens) {
		// What it wrote is kept; the model learns that the end is missing.
		summary += "\n" + SummaryCutNote
	}
	return summary, resp.Usage, nil
}

// capResult keeps a tool result that would fill too much of the context
// out of it: the model sees its start and end, and where the whole of it
// is — a file under .orca/results in the workspace, which Read can page
// through. It returns the content to record and the file ("" if none).
func (t *turn) capResult(id, name, content string) (string, string) {
	max := t.rt.def.MaxResultChars
	if len(content) <= max {
		return content, ""
	}
	saved := ""
	if root := t.rt.fs.Root(); root != "" {
		rel := path.Join(".orca", "results", safeName(t.res.SessionID), safeName(id)+".txt")
		// Not through a link out of the workspace (a cloned
		// repository's .orca -> ~/x): the result is then not kept.
		p, err := workspace.Confine(root, rel)
		if err == nil {
			err = os.MkdirAll(filepath.Dir(p), 0o755)
		}
		if err == nil {
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err == nil {
			saved = rel
		} else {
			t.rt.logger.Warn("a long tool result was not kept", "tool_use_id", id, "err", err)
		}
	}
	head, tail := max*8/10, max/10
	where := "It was not kept."
	if saved != "" {
		where = fmt.Sprintf("The whole result is in %s: Read it with offset and limit to see the rest.", saved)
	}
	note := fmt.Sprintf("\n\n[orca cut %d of this result's %d characters, to keep the context for the work. %s]\n\n", len(content)-head-tail, len(content), where)
	return strings.ToValidUTF8(content[:head], "") + note + strings.ToValidUTF8(content[len(content)-tail:], ""), saved
}

// safeName makes s a file name.
func safeName(s string) string {
	if s == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 || r == '.' && len(s) < 3 {
			return '_'
		}
		return r
	}, s)
}

// sizing is how large the turn's prompt is: as the provider counted it,
// and as estimated since.
type sizing struct {
	// promptTokens is the size of the last prompt plus its answer, as the
	// provider counted them, which covered msgs[:sizedUpTo].
	promptTokens int64
	sizedUpTo    int
	// est is estimate's count of the messages after sizedUpTo.
	est estimateCache
}
