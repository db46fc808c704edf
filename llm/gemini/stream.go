package gemini

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/genai"

	"github.com/orca-agent/orca/llm"
)

// accumulator builds the final message from the stream's chunks: each part
// a block, text and thoughts joined with the pieces of their kind that
// follow them.
type accumulator struct {
	onDelta  func(llm.Delta)
	blocks   []llm.Block
	usage    *genai.GenerateContentResponseUsageMetadata
	finish   genai.FinishReason
	finished bool
	refusal  string
	model    string
	id       string
	calls    int
	sources  []llm.Source // the grounding's pages, each URL once
}

func newAccumulator(onDelta func(llm.Delta)) *accumulator {
	return &accumulator{onDelta: onDelta}
}

func (a *accumulator) emit(d llm.Delta) {
	if a.onDelta != nil {
		a.onDelta(d)
	}
}

func (a *accumulator) add(chunk *genai.GenerateContentResponse) {
	if chunk == nil {
		return
	}
	a.model = cmpOr(chunk.ModelVersion, a.model)
	a.id = cmpOr(chunk.ResponseID, a.id)
	if chunk.UsageMetadata != nil {
		a.usage = chunk.UsageMetadata
	}
	if f := chunk.PromptFeedback; f != nil && f.BlockReason != "" {
		// The prompt itself was blocked: no candidate comes.
		a.finished = true
		a.finish = genai.FinishReasonProhibitedContent
		a.refusal = strings.TrimSpace("the prompt was blocked (" + string(f.BlockReason) + ") " + f.BlockReasonMessage)
		return
	}
	if len(chunk.Candidates) == 0 {
		return
	}
	cand := chunk.Candidates[0]
	if g := cand.GroundingMetadata; g != nil {
		a.ground(g.GroundingChunks)
	}
	if cand.Content != nil {
		for _, p := range cand.Content.Parts {
			a.part(p)
		}
	}
	if cand.FinishReason != "" && cand.FinishReason != genai.FinishReasonUnspecified {
		a.finish, a.finished = cand.FinishReason, true
		if cand.FinishMessage != "" {
			a.refusal = cand.FinishMessage
		}
	}
}

// part adds one part of the answer: a piece of the last block when it is
// more of the same (text after text, thought after thought, unsigned), a
// block of its own otherwise.
func (a *accumulator) part(p *genai.Part) {
	if p == nil {
		return
	}
	sig := ""
	if len(p.ThoughtSignature) > 0 {
		sig = base64.StdEncoding.EncodeToString(p.ThoughtSignature)
	}
	switch {
	case p.FunctionCall != nil:
		a.calls++
		id := p.FunctionCall.ID
		if id == "" {
			id = "call_" + a.id + "_" + strconv.Itoa(a.calls)
		}
		input, err := json.Marshal(p.FunctionCall.Args)
		if err != nil || p.FunctionCall.Args == nil {
			input = []byte("{}")
		}
		b := llm.ToolUseBlock(id, p.FunctionCall.Name, input)
		b.Signature = sig
		a.blocks = append(a.blocks, b)
		i := len(a.blocks) - 1
		a.emit(llm.Delta{Type: llm.DeltaToolUse, Index: i, ID: id, Name: b.Name})
		a.emit(llm.Delta{Type: llm.DeltaToolInput, Index: i, Text: string(input)})
	case p.Thought:
		if n := len(a.blocks); n > 0 && a.blocks[n-1].Type == llm.BlockThinking && sig == "" {
			a.blocks[n-1].Thinking += p.Text
			return
		}
		a.blocks = append(a.blocks, llm.Block{Type: llm.BlockThinking, Thinking: p.Text, Signature: sig})
	case p.Text != "" || sig != "":
		n := len(a.blocks)
		if n > 0 && a.blocks[n-1].Type == llm.BlockText && (sig == "" || a.blocks[n-1].Signature == "") {
			a.blocks[n-1].Text += p.Text
			a.blocks[n-1].Signature = cmpOr(a.blocks[n-1].Signature, sig)
		} else {
			b := llm.TextBlock(p.Text)
			b.Signature = sig
			a.blocks = append(a.blocks, b)
			n++
		}
		if p.Text != "" {
			a.emit(llm.Delta{Type: llm.DeltaText, Index: n - 1, Text: p.Text})
		}
	}
}

// ground keeps the web pages of Grounding with Google Search.
func (a *accumulator) ground(chunks []*genai.GroundingChunk) {
	for _, c := range chunks {
		if c == nil || c.Web == nil || c.Web.URI == "" || slices.ContainsFunc(a.sources, func(s llm.Source) bool { return s.URL == c.Web.URI }) {
			continue
		}
		site := c.Web.Domain
		if site == "" && strings.Contains(c.Web.Title, ".") && !strings.ContainsAny(c.Web.Title, " /") {
			site = c.Web.Title // the Gemini API's title of a page is its site
		}
		a.sources = append(a.sources, llm.Source{Title: c.Web.Title, URL: c.Web.URI, Site: strings.ToLower(site)})
	}
}

func (a *accumulator) response() *llm.Response {
	resp := &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: a.blocks}, Model: a.model, ID: a.id, Sources: a.sources}
	if resp.Message.Content == nil {
		resp.Message.Content = []llm.Block{}
	}
	if u := a.usage; u != nil {
		resp.Usage = llm.Usage{
			InputTokens:     int64(u.PromptTokenCount - u.CachedContentTokenCount + u.ToolUsePromptTokenCount),
			OutputTokens:    int64(u.CandidatesTokenCount + u.ThoughtsTokenCount),
			CacheReadTokens: int64(u.CachedContentTokenCount),
		}
	}
	switch a.finish {
	case genai.FinishReasonStop:
		resp.StopReason = llm.StopEndTurn
		if a.calls > 0 {
			resp.StopReason = llm.StopToolUse
		}
		a.refusal = ""
	case genai.FinishReasonMaxTokens:
		resp.StopReason = llm.StopMaxTokens
		a.refusal = ""
	case genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonBlocklist, genai.FinishReasonProhibitedContent,
		genai.FinishReasonSPII, genai.FinishReasonImageSafety, genai.FinishReasonImageProhibitedContent:
		resp.StopReason = llm.StopRefusal
		resp.Refusal = cmpOr(a.refusal, "the answer was blocked ("+string(a.finish)+")")
	default:
		// MALFORMED_FUNCTION_CALL, OTHER, …: the turn sees an answer that
		// ended, and says why when it has no text.
		resp.StopReason = llm.StopEndTurn
		if a.calls > 0 {
			resp.StopReason = llm.StopToolUse
		}
		if len(a.blocks) == 0 {
			resp.Message.Content = []llm.Block{llm.TextBlock("(the model ended its answer: " + strings.ToLower(string(a.finish)) + " " + a.refusal + ")")}
		}
	}
	return resp
}
