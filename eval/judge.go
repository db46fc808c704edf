package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/llm"
)

// judgeKey carries the run's judge in a scorer's context.
type judgeKey struct{}

// judging is the model judges ask.
type judging struct {
	client llm.Client
	model  string
	// budget caps what the run's judges spend together (0: no cap);
	// spent is what they have, shared by the cases.
	budget float64
	mu     sync.Mutex
	spent  float64
}

// afford reports whether the judges may ask again.
func (j *judging) afford() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.budget <= 0 || j.spent < j.budget
}

func (j *judging) add(usd float64) {
	j.mu.Lock()
	j.spent += usd
	j.mu.Unlock()
}

// judgeScorer grades an answer by a rubric through the judge model: it
// answers with a JSON object {"score": 0..1, "reason": "…"}; what its
// call cost is the scorer's.
type judgeScorer struct {
	turn  int
	judge *Judge
}

func (j *judgeScorer) Name() string { return "judge" }

func (j *judgeScorer) Score(ctx context.Context, v *View) Score {
	v = v.run.view(j.turn)
	s := Score{Scorer: "judge", Turn: j.turn + 1}
	jd, _ := ctx.Value(judgeKey{}).(*judging)
	if jd == nil || jd.client == nil {
		s.Detail = "no judge model: give one (orca eval --judge-model, or Options.Judge)"
		return s
	}
	threshold := j.judge.Threshold
	if threshold == 0 {
		threshold = 0.5
	}
	var calls []string
	for _, c := range v.Calls() {
		calls = append(calls, c.Tool+string(compactJSON(c.Input)))
	}
	prompt := fmt.Sprintf("Grade an AI agent's work by this rubric.\n\n<rubric>\n%s\n</rubric>\n\n<task>\n%s\n</task>\n\n<tool_calls>\n%s\n</tool_calls>\n\n<answer>\n%s\n</answer>\n\n"+
		`Answer with one JSON object and nothing else: {"score": a number from 0 (fails the rubric) to 1 (meets it fully), "reason": "one sentence"}.`,
		j.judge.Rubric, v.prompt(), strings.Join(calls, "\n"), v.Result().Answer)
	if !jd.afford() {
		s.Detail = fmt.Sprintf("not judged: the judges' budget ($%s) is spent", strconv.FormatFloat(jd.budget, 'f', -1, 64))
		return s
	}
	resp, err := jd.client.Generate(ctx, &llm.Request{Model: jd.model, MaxTokens: 512,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(prompt)}}},
		Metadata: llm.Metadata{Feature: "eval_judge", Component: "judge"}}, nil)
	if err != nil {
		s.Detail = fmt.Sprintf("the judge failed: %v", err)
		return s
	}
	s.CostUSD = budget.DefaultPrices.Cost(cmpStr(resp.Model, jd.model), resp.Usage)
	jd.add(s.CostUSD)
	text := strings.TrimSpace(resp.Message.Text())
	if i, k := strings.IndexByte(text, '{'), strings.LastIndexByte(text, '}'); i >= 0 && k > i {
		text = text[i : k+1]
	}
	var verdict struct {
		Score  *float64 `json:"score"`
		Reason string   `json:"reason"`
	}
	if err := json.Unmarshal([]byte(text), &verdict); err != nil || verdict.Score == nil || *verdict.Score < 0 || *verdict.Score > 1 {
		s.Detail = fmt.Sprintf("the judge did not answer with a score from 0 to 1: %q", clip(resp.Message.Text()))
		return s
	}
	s.Value = *verdict.Score
	s.Pass = s.Value >= threshold
	s.Detail = verdict.Reason
	return s
}

// prompt is what the user said in the turns seen.
func (v *View) prompt() string {
	if v.turn >= 0 && v.turn < len(v.run.Case.Turns) {
		return v.run.Case.Turns[v.turn].Prompt
	}
	var out []string
	for _, t := range v.run.Case.Turns {
		out = append(out, t.Prompt)
	}
	return strings.Join(out, "\n\n")
}

func cmpStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
