package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/middleware"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/tool"
)

// SmallModelAlias is the model alias (Definition.ModelAliases) a tool's
// own questions go to (tool.Asker: WebFetch's prompt): the catalog's
// small model of the provider, as Claude Code asks Haiku. Without it, they
// go to the turn's model.
const SmallModelAlias = "haiku"

// askMaxTokens caps the answer to a tool's question.
const askMaxTokens = 4096

// callAsker is the tool.Asker the runtime hands a call of a tool that
// asks a model (tool.Traits.AsksModel). It asks on the tool's goroutine,
// touching no state of the turn: the client and model are taken when the
// call is admitted, and what the questions spend is kept here until the
// turn counts it (spent, on the turn's goroutine).
type callAsker struct {
	t      *turn
	client llm.Client
	req    llm.Request // the model and metadata of each question

	mu       sync.Mutex
	usage    llm.Usage
	failures []middleware.Failure
}

// newAsker returns the Asker of a call of the tool named name.
func (t *turn) newAsker(name string) *callAsker {
	a := &callAsker{t: t, client: t.client(),
		req: llm.Request{Model: t.model(), MaxTokens: askMaxTokens,
			Metadata: llm.Metadata{TraceID: t.res.SessionID, Feature: llm.FeatureTool, Component: name}}}
	switch small, ok := t.rt.def.ModelAliases[SmallModelAlias]; {
	case t.link > 0: // a fallback serves the turn: its model answers
		a.req.Model = t.rt.chain[t.link-1].Model
		a.req.Metadata.Provider = t.rt.chain[t.link-1].Provider
	case ok && small != "":
		a.req.Model = small
	}
	return a
}

// Ask sends one question through the runtime's model middleware.
func (a *callAsker) Ask(ctx context.Context, system, question string) (string, error) {
	resp, err := a.send(ctx, system, question, nil)
	if err != nil {
		return "", err
	}
	answer := strings.TrimSpace(resp.Message.Text())
	if answer == "" {
		return "", errors.New("the model gave no answer")
	}
	return answer, nil
}

// SearchWeb asks with the provider's own web search.
func (a *callAsker) SearchWeb(ctx context.Context, system, question string, ws llm.WebSearch) (string, []llm.Source, error) {
	if !llm.SearchesWeb(a.client, a.req.Model) {
		return "", nil, tool.ErrNoWebSearch
	}
	resp, err := a.send(ctx, system, question, &ws)
	if err != nil {
		return "", nil, err
	}
	return strings.TrimSpace(resp.Message.Text()), resp.Sources, nil
}

// send sends one request of the call's through the runtime's model
// middleware, and keeps what it spent.
func (a *callAsker) send(ctx context.Context, system, question string, ws *llm.WebSearch) (*llm.Response, error) {
	rt := a.t.rt
	req := a.req
	req.System, req.WebSearch = system, ws
	req.Messages = []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(question)}}}
	r := &req
	if rt.mw.Has(middleware.LLMRequest) {
		var err error
		if r, err = rt.mw.ApplyLLMRequest(ctx, r); err != nil {
			return nil, err
		}
	}
	var resp *llm.Response
	var err error
	if rt.mw.Has(middleware.LLMExecution) {
		var failures []middleware.Failure
		resp, failures, err = rt.mw.ExecuteLLM(ctx, r, func(ctx context.Context, r *llm.Request) (*llm.Response, error) {
			return a.client.Generate(ctx, r, nil)
		})
		if len(failures) > 0 {
			a.mu.Lock()
			a.failures = append(a.failures, failures...)
			a.mu.Unlock()
		}
	} else {
		resp, err = a.client.Generate(ctx, r, nil)
	}
	if err == nil && resp == nil {
		err = errors.New("model client returned neither a response nor an error")
	}
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.usage = a.usage.Add(resp.Usage)
	a.mu.Unlock()
	return resp, nil
}

// spent counts what the call's questions spent in the turn, and returns
// the middleware's failures on the way; on the turn's goroutine, after the
// call.
func (a *callAsker) spent() []middleware.Failure {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.t
	t.res.Usage = t.res.Usage.Add(a.usage)
	t.cost += t.rt.def.Prices.Cost(a.req.Model, a.usage)
	return a.failures
}

// callPermitter is the tool.Permitter the runtime hands a call of a tool
// that checks the rules (tool.Traits.ChecksRules).
type callPermitter struct {
	t  *turn
	tl tool.Tool
}

// Permits decides a call of the tool with input as the policy would, with
// the rules approvals kept and the turn's grants, and reports whether a
// rule allowed it: the mode's allowance is not enough.
func (p callPermitter) Permits(input json.RawMessage) bool {
	pol, _ := p.t.withApproved()
	if pol == nil {
		return false // no policy, no rule: nothing allows it
	}
	v := pol.Decide(policy.RequestFor(p.tl, input, p.t.rt.fs))
	return v.Decision == policy.Allow && !strings.HasPrefix(v.Rule, "mode:")
}
