package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/orca-agent/orca/catalog"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/middleware"
)

// callModel makes one model call: llm_request middleware (and the cache
// guard) once, then attempts — each through the llm_execution middleware to
// the provider — retrying retryable failures with backoff. Retries live
// here, outside llm_execution, so that it runs once per attempt.
func (t *turn) callModel() (*llm.Response, error) {
	def := &t.rt.def
	it := t.next
	t.next = nil
	var req *llm.Request
	if it != nil {
		req = &it.req
	} else {
		req = new(llm.Request)
	}
	*req = llm.Request{
		Model:     t.model(),
		System:    def.SystemPrompt,
		Messages:  t.msgs,
		Tools:     t.rt.offered(),
		MaxTokens: def.MaxTokens,
		Metadata:  llm.Metadata{TraceID: t.res.SessionID, Feature: t.feature(), Component: def.Name},
		// One call at a time: the model need not ask for more at once.
		OneToolCall: def.MaxParallelTools == 1,
	}
	if len(t.req.ClientTools) > 0 {
		req.Tools = slices.Clip(req.Tools)
		for i := range t.req.ClientTools {
			if c := &t.req.ClientTools[i]; t.clientTool(c.Name) == c {
				req.Tools = append(req.Tools, c.definition())
			}
		}
	}
	if o := t.out; o != nil {
		if o.req != nil {
			req.Output = o.req
		} else {
			req.Tools = append(slices.Clip(req.Tools), *o.def)
		}
	}
	var err error
	if t.rt.mw.Has(middleware.LLMRequest) {
		req.Messages = t.sent.of(t.msgs)
		req, err = t.rt.mw.ApplyLLMRequest(t.ctx, req)
	}
	if err != nil {
		t.sent = sentCopy{} // what a refused middleware did to it is not kept
		return nil, fmt.Errorf("model call (iteration %d): %w", t.res.Iterations, err)
	}
	// A conversation the provider would refuse is a bug, orca's or a
	// middleware's: caught here, not sent. Only what was added since the
	// last call needs checking — and, with llm_request middleware, the
	// newest user turn they may edit: the cache guard held the rest as it
	// was, unless the request let them change it (what the guard by
	// reference does not keep, its strict mode does).
	from := 0
	switch {
	case !t.rt.mw.Has(middleware.LLMRequest):
		from = t.pairsChecked
	case req.Metadata.CacheInvalidationReason == "":
		from = min(t.pairsChecked, middleware.PrefixLen(t.msgs))
	}
	t.pairsChecked = len(t.msgs)
	if err := checkPairs(req.Messages, from); err != nil {
		t.pairsChecked = 0
		return nil, fmt.Errorf("model call (iteration %d): the conversation is malformed, so it was not sent (a bug in orca or in an llm_request middleware): %w", t.res.Iterations, err)
	}
	var onDelta func(llm.Delta)
	if t.observed() {
		if t.onDelta == nil {
			t.onDelta = func(d llm.Delta) {
				t.emit(event.LLMDelta, &event.LLMDeltaData{Iteration: t.res.Iterations, Delta: d})
			}
		}
		onDelta = t.onDelta
	}
	// With a fallback chain, the call starts at the first model whose
	// breaker is closed, and knows whether any of the answer streamed.
	// (A field of the turn, not a variable the closure would move to the
	// heap at every call.)
	t.streamed, t.link = false, 0
	if t.rt.breakers != nil {
		if t.link = t.firstLink(); t.link > 0 {
			req = t.rebuilt(req, t.link)
		}
		inner := onDelta
		onDelta = func(d llm.Delta) {
			t.streamed = true
			if inner != nil {
				inner(d)
			}
		}
	}
	// A model that refused media once is sent their descriptions; so is
	// one the catalog says takes none (of that kind).
	described, refusedMedia := false, false
	if t.rt.mediaRefused.Load() && hasMedia(req.Messages) && t.refusesMedia(req.Model) {
		req, described = describeMedia(req, refusedWhy, nil), true
	} else if !t.takesAllMedia(req.Model) && hasMedia(req.Messages) {
		info := t.rt.modelInfo(req.Model)
		why := "not shown: model " + req.Model + " takes no images (orca's model catalog)"
		if info.TakesImages() {
			why = "not shown: model " + req.Model + " takes no PDFs (orca's model catalog)"
		}
		req = describeMedia(req, why, func(m *llm.Media) bool { return takes(info, m) })
	}
	for attempt := 1; ; attempt++ {
		var ev *callEvents
		start := t.clock() // the call's start is its event's time too (a tool call's is)
		if t.observed() {
			if it != nil && attempt == 1 {
				ev = &it.ev
			} else {
				ev = new(callEvents)
			}
			ev.started = event.LLMCallStartedData{Iteration: t.res.Iterations, Feature: t.feature(), Attempt: attempt}
			t.emitAt(event.LLMCallStarted, &ev.started, start)
		}
		resp, err := t.attempt(req, onDelta)
		if err == nil {
			t.res.Usage = t.res.Usage.Add(resp.Usage)
			model := cmp.Or(resp.Model, req.Model, t.model())
			if t.rt.breakers != nil {
				t.rt.breakers[t.link].served()
			}
			cost := t.prices.of(t.rt.def.Prices, model).Cost(resp.Usage)
			t.cost += cost
			t.answeredBy = model
			t.cut = 0
			if cutOff(resp, req.MaxTokens) {
				t.cut = cmp.Or(req.MaxTokens, -1)
			}
			if u := resp.Usage; u.Total() > 0 {
				t.promptTokens = u.Total()
				t.sizedUpTo = len(t.msgs) + 1 // the answer is appended next
			}
			if refusedMedia {
				t.rt.noMedia.Store(req.Model, true)
				t.rt.mediaRefused.Store(true)
			}
			if ev != nil {
				end := t.clock()
				ev.usage = resp.Usage
				ev.completed = event.LLMCallData{
					Iteration: t.res.Iterations, Feature: t.feature(), Attempt: attempt, Model: model,
					StopReason: resp.StopReason, Usage: &ev.usage, CostUSD: cost, Text: resp.Message.Text(), Duration: end.Sub(start),
				}
				t.emitAt(event.LLMCallCompleted, &ev.completed, end)
			}
			return resp, nil
		}
		retry := attempt <= def.MaxRetries && llm.Retryable(err) && t.ctx.Err() == nil
		// A request that shows media refused as invalid: the model may
		// take none. Once more, with their descriptions instead, which
		// say so — and so for the rest of the runtime's life, once that
		// works (not a 400 at every call of a session that read an image).
		strip := !retry && !described && errors.Is(err, llm.ErrInvalidRequest) && hasMedia(req.Messages) && t.ctx.Err() == nil
		// Retries spent on a retryable failure, nothing of the answer
		// streamed: the next model of the chain takes the call.
		next := 0
		if !retry && !strip && t.rt.breakers != nil && llm.Retryable(err) && !t.streamed && t.ctx.Err() == nil {
			next = t.nextLink(t.link)
		}
		t.emit(event.LLMCallFailed, &event.LLMCallData{
			Iteration: t.res.Iterations, Feature: t.feature(), Attempt: attempt, Model: req.Model,
			Error: err.Error(), Retrying: retry || strip || next > 0, Duration: time.Since(start),
		})
		if next > 0 {
			t.rt.breakers[t.link].failed(t.clock())
			t.rt.logger.Warn("the model failed the call after its retries: falling over to the next model", "model", req.Model, "next", t.rt.chain[next-1].Model, "err", err)
			t.link = next
			req, described, attempt = t.rebuilt(req, next), false, 0
			continue
		}
		if strip {
			t.rt.logger.Warn("the model refused a request that showed it images or documents: sending their descriptions instead", "model", req.Model, "err", err)
			req, described = describeMedia(req, refusedWhy, nil), true
			refusedMedia = true
			continue
		}
		if !retry {
			return nil, fmt.Errorf("model call (iteration %d, attempt %d): %w", t.res.Iterations, attempt, err)
		}
		timer := time.NewTimer(Backoff(attempt, err))
		select {
		case <-t.ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("model call (iteration %d): waiting to retry after %v: %w", t.res.Iterations, err, t.ctx.Err())
		case <-timer.C:
		}
	}
}

// callEvents are the data of one attempt's events, in one allocation (a
// listener may keep them; none changes once sent).
type callEvents struct {
	started   event.LLMCallStartedData
	completed event.LLMCallData
	usage     llm.Usage
}

// iteration is what an iteration needs made, in one allocation: the data
// of its IterationStarted event, its first model call's request and the
// events of that call's first attempt. A listener may keep the events, a
// client or middleware the request: none is used again once given.
type iteration struct {
	started event.IterationStartedData
	req     llm.Request
	ev      callEvents
}

// prepare runs the llm_request chain (with its cache guard) on a model
// call's request, once whatever the retries. The middleware may edit the
// newest turn in place: it gets copies, so that what the model was really
// sent reaches the transcript only through the request it returns.
func (t *turn) prepare(req *llm.Request) (*llm.Request, error) {
	if !t.rt.mw.Has(middleware.LLMRequest) {
		return req, nil
	}
	req.Messages = slices.Clone(req.Messages)
	if n := len(req.Messages); n > 0 {
		req.Messages[n-1].Content = slices.Clone(req.Messages[n-1].Content)
	}
	return t.rt.mw.ApplyLLMRequest(t.ctx, req)
}

// attempt sends req to the provider once, through the llm_execution chain
// when there is one (so that it runs once per attempt, for agent turns,
// forks and the summariser alike). onDelta is nil or the turn's own
// (t.onDelta).
func (t *turn) attempt(req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	var resp *llm.Response
	var err error
	if t.rt.mw.Has(middleware.LLMExecution) {
		// The chain's final call, made once per turn for each of the two
		// kinds of call (streamed to the turn's listeners, or not).
		final := &t.generate[0]
		if onDelta != nil {
			final = &t.generate[1]
		}
		if *final == nil || t.rt.breakers != nil {
			// (With a chain, onDelta and the client are the call's own.)
			*final = func(ctx context.Context, r *llm.Request) (*llm.Response, error) {
				return t.client().Generate(ctx, r, onDelta)
			}
		}
		var failures []middleware.Failure
		resp, failures, err = t.rt.mw.ExecuteLLM(t.ctx, req, *final)
		t.middlewareFailed("", failures)
	} else {
		resp, err = t.client().Generate(t.ctx, req, onDelta)
	}
	if err == nil && resp == nil {
		err = errors.New("model client returned neither a response nor an error")
	}
	return resp, err
}

// feature is what the turn's model calls are for.
func (t *turn) feature() string {
	if t.res.Fork() {
		return llm.FeatureSubagent
	}
	return llm.FeatureAgent
}

// Backoff is the wait before retry number attempt (1 for the first retry)
// after err: the provider's Retry-After hint when it gave one (capped at a
// minute), else exponential — 1s, 2s, 4s … capped at 30s — with ±20%
// jitter, so that many clients rate-limited together do not retry together.
func Backoff(attempt int, err error) time.Duration {
	var le *llm.Error
	if errors.As(err, &le) && le.RetryAfter > 0 {
		return min(le.RetryAfter, time.Minute)
	}
	base := min(time.Second<<min(attempt-1, 5), 30*time.Second)
	return time.Duration(float64(base) * (0.8 + 0.4*rand.Float64()))
}

// hasMedia reports whether msgs show the model an image or a document.
func hasMedia(msgs []llm.Message) bool {
	return slices.ContainsFunc(msgs, llm.Message.HasMedia)
}

// refusedWhy is what describeMedia says of media a model refused.
const refusedWhy = "not shown: this model refused a request that showed it images or documents"

// describeMedia returns a copy of req whose images and documents — those
// keep does not keep (nil: all) — are text that names them and says why
// they were not shown (the messages without media shared).
func describeMedia(req *llm.Request, why string, keep func(*llm.Media) bool) *llm.Request {
	r := *req
	r.Messages = slices.Clone(req.Messages)
	for i, m := range r.Messages {
		if !m.HasMedia() || keep != nil && !slices.ContainsFunc(m.Media(), func(x *llm.Media) bool { return !keep(x) }) {
			continue
		}
		content := make([]llm.Block, 0, len(m.Content))
		for _, b := range m.Content {
			switch {
			case b.Media != nil && keep != nil && keep(b.Media):
				content = append(content, b)
			case b.Media != nil && resultOf(content, b.ToolUseID) >= 0:
				// A tool's: said in its result.
				r := &content[resultOf(content, b.ToolUseID)]
				r.Content = strings.TrimSpace(fmt.Sprintf("%s\n[%s, %s]", r.Content, b.Media, why))
			case b.Media != nil:
				content = append(content, llm.TextBlock(fmt.Sprintf("[%s, %s]", b.Media, why)))
			default:
				content = append(content, b)
			}
		}
		r.Messages[i].Content = content
	}
	return &r
}

// refusesMedia reports whether model refused media before.
func (t *turn) refusesMedia(model string) bool {
	_, ok := t.rt.noMedia.Load(model)
	return ok
}

// takes reports whether model info takes media m.
func takes(info catalog.Model, m *llm.Media) bool {
	if m.MediaType == llm.MediaPDF {
		return info.TakesPDFs()
	}
	return info.TakesImages()
}

// resultOf returns the index of the result of tool call id that the last
// blocks of content are (the result, then media shown with it), or -1.
func resultOf(content []llm.Block, id string) int {
	if id == "" {
		return -1
	}
	for k := len(content) - 1; k >= 0 && content[k].ToolUseID == id; k-- {
		if content[k].Type == llm.BlockToolResult {
			return k
		}
	}
	return -1
}

// ErrMediaNotTaken is a request's error when it shows the model an image
// or a PDF the model takes not (as the catalog says): refused before the
// turn, rather than described to it, since the person meant it to be
// seen.
var ErrMediaNotTaken = errors.New("choose a model that takes them, or show it none")

// kindOf says what m is, in the plural: "images" or "PDFs".
func kindOf(m *llm.Media) string {
	if m.MediaType == llm.MediaPDF {
		return "PDFs"
	}
	return "images"
}

// modelOf is the model a turn of rt asking for model calls: it, or the
// runtime's, through the aliases.
func modelOf(rt *Runtime, model string) string {
	if model == "" {
		return rt.def.Model
	}
	if a, ok := rt.def.ModelAliases[model]; ok {
		return a
	}
	return model
}

// client is the client of the call's link of the fallback chain.
func (t *turn) client() llm.Client {
	if t.link > 0 {
		return t.rt.chain[t.link-1].Client
	}
	return t.rt.client
}

// firstLink is the first link of the chain whose breaker is closed (the
// primary, 0, when all are open).
func (t *turn) firstLink() int {
	now := t.clock()
	for k := range t.rt.breakers {
		if !t.rt.breakers[k].open(now) {
			return k
		}
	}
	return 0
}

// nextLink is the link after k whose breaker is closed; 0 if none.
func (t *turn) nextLink(k int) int {
	now := t.clock()
	for n := k + 1; n < len(t.rt.breakers); n++ {
		if !t.rt.breakers[n].open(now) {
			return n
		}
	}
	return 0
}

// rebuilt is req as link k of the chain is sent it: its model; without
// the conversation's reasoning (signed by another model, or another
// provider's); the images and PDFs the catalog says it takes not
// described.
func (t *turn) rebuilt(req *llm.Request, k int) *llm.Request {
	r := *req
	r.Model = t.rt.chain[k-1].Model
	r.Metadata.Provider = t.rt.chain[k-1].Provider
	r.Messages = slices.Clone(req.Messages)
	for i, m := range r.Messages {
		if m.Role != llm.RoleAssistant || !slices.ContainsFunc(m.Content, isReasoning) {
			continue
		}
		r.Messages[i].Content = slices.DeleteFunc(slices.Clone(m.Content), isReasoning)
	}
	if info := t.rt.modelInfo(r.Model); (!info.TakesImages() || !info.TakesPDFs()) && hasMedia(r.Messages) {
		return describeMedia(&r, "not shown: model "+r.Model+" takes none (orca's model catalog)", func(m *llm.Media) bool { return takes(info, m) })
	}
	return &r
}

func isReasoning(b llm.Block) bool {
	return b.Type == llm.BlockThinking || b.Type == llm.BlockRedactedThinking
}

// takesAllMedia reports whether the catalog lets model be shown images and
// PDFs (as it does every model it lacks), asking it once per turn and
// model.
func (t *turn) takesAllMedia(model string) bool {
	if t.media.model != model || !t.media.known {
		info := t.rt.modelInfo(model)
		t.media.model, t.media.known, t.media.all = model, true, info.TakesImages() && info.TakesPDFs()
	}
	return t.media.all
}
