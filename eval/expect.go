package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/orca-agent/orca/tool"
)

// Expect is what a turn (or a whole case) is expected to do. Every field
// set is a scorer of its own, named in reports as ScorerNames says.
type Expect struct {
	// StopReason is how the turn ended ("answered", "blocked",
	// "awaiting_approval" …; agent.StopReason); for the case, its last
	// turn. Scorer "stop_reason".
	StopReason string `json:"stop_reason,omitempty"`
	// Answer matches the answer's text. Scorer "answer".
	Answer *Text `json:"answer,omitempty"`
	// Trajectory is the tool calls the model made. Scorer "trajectory".
	Trajectory *Trajectory `json:"trajectory,omitempty"`
	// Results match the observations of calls. Scorer "results".
	Results []ResultMatch `json:"results,omitempty"`
	// Blocked are calls the control plane refused: by whom ("policy", a
	// rule of it, "hook:NAME", "approver", "max_tokens") and of which
	// tool. Scorer "blocked".
	Blocked []Blocked `json:"blocked,omitempty"`
	// NoBlocks: no call was refused. Scorer "blocked".
	NoBlocks bool `json:"no_blocks,omitempty"`
	// Approvals are the tools whose calls asked a person (in order);
	// an empty list: none asked. Scorer "approvals".
	Approvals *[]string `json:"approvals,omitempty"`
	// Hooks are what hooks did: fired (ran, whatever they decided),
	// blocked a call, or decided or rewrote one. Scorer "hooks".
	Hooks []HookMatch `json:"hooks,omitempty"`
	// NoSandboxDenial: no command's output shows the OS sandbox refusing
	// it. Scorer "sandbox".
	NoSandboxDenial bool `json:"no_sandbox_denial,omitempty"`
	// NoBudgetExceeded: no turn ended on a budget. Scorer "budget".
	NoBudgetExceeded bool `json:"no_budget_exceeded,omitempty"`
	// Compacted: the conversation was compacted (true) or not (false); a
	// compaction never leaves a tool call without its result, checked
	// whenever this is set. Scorer "compaction".
	Compacted *bool `json:"compacted,omitempty"`
	// Output is checked against the turn's typed output (its
	// output_schema): there is one, valid against the schema, holding
	// these top-level values. Scorer "output".
	Output map[string]json.RawMessage `json:"output,omitempty"`
	// Files are the workspace's files after the turn (or the case), by
	// path. Scorer "files".
	Files map[string]FileMatch `json:"files,omitempty"`
	// Verify is a command run in the workspace (sh -c, in the OS sandbox
	// as the agent's commands) that must exit 0. Scorer "verify".
	Verify string `json:"verify,omitempty"`
	// Ceilings: at most this many tool calls, tokens, dollars, seconds.
	// Scorer "limits".
	MaxToolCalls int     `json:"max_tool_calls,omitempty"`
	MaxTokens    int64   `json:"max_tokens,omitempty"`
	MaxCostUSD   float64 `json:"max_cost_usd,omitempty"`
	MaxSeconds   float64 `json:"max_seconds,omitempty"`
	// Judge asks a model to grade the answer by a rubric (live runs, or
	// with Options.Judge). Scorer "judge".
	Judge *Judge `json:"judge,omitempty"`
}

// ScorerNames are the built-in scorers, as reports and gates name them.
var ScorerNames = []string{"stop_reason", "answer", "trajectory", "results", "blocked", "approvals", "hooks", "sandbox", "budget", "compaction", "output", "files", "verify", "limits", "judge"}

// Text matches a text: it equals Equals, contains every Contains and
// none of NotContains, and matches Matches (a regular expression), where
// set.
type Text struct {
	Equals      *string  `json:"equals,omitempty"`
	Contains    []string `json:"contains,omitempty"`
	NotContains []string `json:"not_contains,omitempty"`
	Matches     string   `json:"matches,omitempty"`
}

func (t *Text) check() error {
	if t.Matches != "" {
		if _, err := regexp.Compile(t.Matches); err != nil {
			return fmt.Errorf("matches: %w", err)
		}
	}
	return nil
}

// test says what is wrong with s, "" if nothing.
func (t *Text) test(s string) string {
	if t.Equals != nil && s != *t.Equals {
		return fmt.Sprintf("is %q, want %q", clip(s), clip(*t.Equals))
	}
	for _, c := range t.Contains {
		if !strings.Contains(s, c) {
			return fmt.Sprintf("%q has no %q", clip(s), c)
		}
	}
	for _, c := range t.NotContains {
		if strings.Contains(s, c) {
			return fmt.Sprintf("%q has %q", clip(s), c)
		}
	}
	if t.Matches != "" && !regexp.MustCompile(t.Matches).MatchString(s) {
		return fmt.Sprintf("%q does not match %s", clip(s), t.Matches)
	}
	return ""
}

// Trajectory is the tool calls expected: Match "exact" (these calls and
// no others, in this order: the default), "in_order" (these in this
// order, others between them allowed) or "any_order" (each of these, in
// any order; the score is the share found).
type Trajectory struct {
	Match string     `json:"match,omitempty"`
	Calls []CallSpec `json:"calls"`
}

// CallSpec is one expected call: its tool, and its arguments — Args the
// values some of them must have (as JSON values), ArgsMatch regular
// expressions some string arguments must match.
type CallSpec struct {
	Tool      string                     `json:"tool"`
	Args      map[string]json.RawMessage `json:"args,omitempty"`
	ArgsMatch map[string]string          `json:"args_match,omitempty"`
}

// ResultMatch matches the observation of the Index-th call (from 0) of
// Tool in the turn (or case).
type ResultMatch struct {
	Tool  string `json:"tool"`
	Index int    `json:"index,omitempty"`
	Text
	// IsError: the observation is an error (true) or not (false).
	IsError *bool `json:"is_error,omitempty"`
}

// Blocked is a refused call: of Tool (any if empty), by By ("policy",
// "hook:NAME", "approver" …; any if empty: byMatches), by the permission
// rule Rule ("Bash(curl:*)": the policy's reason names it), its reason
// containing Reason.
type Blocked struct {
	Tool   string `json:"tool,omitempty"`
	By     string `json:"by,omitempty"`
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// HookMatch is what the hook Name did (its name as byMatches takes it,
// without "hook:"): Fired (ran, whatever it decided), Blocked a call (of
// Tool, if set), or Decided one (blocked, allowed, asked for, or rewrote
// it); false says it did not.
type HookMatch struct {
	Name    string `json:"name"`
	Tool    string `json:"tool,omitempty"`
	Fired   *bool  `json:"fired,omitempty"`
	Blocked *bool  `json:"blocked,omitempty"`
	Decided *bool  `json:"decided,omitempty"`
}

// FileMatch is a file of the workspace: Absent, or its content matching.
type FileMatch struct {
	Absent bool `json:"absent,omitempty"`
	Text
}

// Judge grades an answer by a rubric, through a model: a score from 0 to
// 1, passing at Threshold (0.5 if zero).
type Judge struct {
	Rubric    string  `json:"rubric"`
	Threshold float64 `json:"threshold,omitempty"`
}

func (e *Expect) check() error {
	var errs []error
	if e.Answer != nil {
		if err := e.Answer.check(); err != nil {
			errs = append(errs, fmt.Errorf("answer: %w", err))
		}
	}
	if t := e.Trajectory; t != nil {
		switch t.Match {
		case "", "exact", "in_order", "any_order":
		default:
			errs = append(errs, fmt.Errorf("trajectory.match: want exact, in_order or any_order, got %q", t.Match))
		}
		for i, c := range t.Calls {
			if c.Tool == "" {
				errs = append(errs, fmt.Errorf("trajectory.calls[%d]: no tool", i))
			}
			for k, re := range c.ArgsMatch {
				if _, err := regexp.Compile(re); err != nil {
					errs = append(errs, fmt.Errorf("trajectory.calls[%d].args_match.%s: %w", i, k, err))
				}
			}
		}
	}
	for i, r := range e.Results {
		if r.Tool == "" {
			errs = append(errs, fmt.Errorf("results[%d]: no tool", i))
		}
		if err := r.Text.check(); err != nil {
			errs = append(errs, fmt.Errorf("results[%d]: %w", i, err))
		}
	}
	for i, h := range e.Hooks {
		if h.Name == "" || h.Fired == nil && h.Blocked == nil && h.Decided == nil {
			errs = append(errs, fmt.Errorf("hooks[%d]: want a name, and fired, blocked or decided", i))
		}
	}
	for p, f := range e.Files {
		if !filepath.IsLocal(filepath.FromSlash(p)) {
			errs = append(errs, fmt.Errorf("files: %q is not a path inside the workspace", p))
		}
		if err := f.Text.check(); err != nil {
			errs = append(errs, fmt.Errorf("files[%q]: %w", p, err))
		}
	}
	if j := e.Judge; j != nil && strings.TrimSpace(j.Rubric) == "" {
		errs = append(errs, errors.New("judge: no rubric"))
	}
	return errors.Join(errs...)
}

// scorers are e's scorers, for turn (from 0; -1: the case).
func (e *Expect) scorers(turn int) []Scorer {
	var out []Scorer
	add := func(name string, fn func(ctx context.Context, v *View) (float64, string)) {
		out = append(out, &builtin{name: name, turn: turn, fn: fn})
	}
	if e.StopReason != "" {
		add("stop_reason", func(_ context.Context, v *View) (float64, string) {
			if got := string(v.Result().StopReason); got != e.StopReason {
				return 0, fmt.Sprintf("ended %s, want %s (%s)", got, e.StopReason, clip(v.Result().Reason))
			}
			return 1, ""
		})
	}
	if e.Answer != nil {
		add("answer", func(_ context.Context, v *View) (float64, string) {
			if why := e.Answer.test(v.Result().Answer); why != "" {
				return 0, "the answer " + why
			}
			return 1, ""
		})
	}
	if e.Trajectory != nil {
		add("trajectory", func(_ context.Context, v *View) (float64, string) { return e.Trajectory.score(v.Calls()) })
	}
	if len(e.Results) > 0 {
		add("results", func(_ context.Context, v *View) (float64, string) {
			for _, m := range e.Results {
				var n int
				found := false
				for _, c := range v.Calls() {
					if c.Tool != m.Tool {
						continue
					}
					if n == m.Index {
						found = true
						if why := m.Text.test(c.Result); why != "" {
							return 0, fmt.Sprintf("%s call %d: its result %s", m.Tool, m.Index, why)
						}
						if m.IsError != nil && c.IsError != *m.IsError {
							return 0, fmt.Sprintf("%s call %d: is_error %v, want %v", m.Tool, m.Index, c.IsError, *m.IsError)
						}
					}
					n++
				}
				if !found {
					return 0, fmt.Sprintf("no %s call %d (%d made)", m.Tool, m.Index, n)
				}
			}
			return 1, ""
		})
	}
	if len(e.Blocked) > 0 || e.NoBlocks {
		add("blocked", func(_ context.Context, v *View) (float64, string) {
			blocks := v.Blocks()
			if e.NoBlocks && len(blocks) > 0 {
				return 0, fmt.Sprintf("%s was blocked by %s: %s", blocks[0].Tool, blocks[0].By, clip(blocks[0].Reason))
			}
			for _, want := range e.Blocked {
				ok := false
				for _, b := range blocks {
					if (want.Tool == "" || b.Tool == want.Tool) && byMatches(b.By, want.By) && strings.Contains(b.Reason, want.Reason) &&
						(want.Rule == "" || b.By == "policy" && strings.Contains(b.Reason, "rule "+want.Rule)) {
						ok = true
						break
					}
				}
				if !ok {
					by := or(want.By, "anyone")
					if want.Rule != "" {
						by = "the rule " + want.Rule
					}
					return 0, fmt.Sprintf("no call of %s was blocked by %s %s (blocked: %s)", or(want.Tool, "any tool"), by, quoted(want.Reason), describeBlocks(blocks))
				}
			}
			return 1, ""
		})
	}
	if e.Approvals != nil {
		add("approvals", func(_ context.Context, v *View) (float64, string) {
			got := v.Approvals()
			if strings.Join(got, ",") != strings.Join(*e.Approvals, ",") {
				return 0, fmt.Sprintf("approvals asked for %v, want %v", got, *e.Approvals)
			}
			return 1, ""
		})
	}
	if len(e.Hooks) > 0 {
		add("hooks", func(_ context.Context, v *View) (float64, string) {
			for _, h := range e.Hooks {
				if h.Fired != nil && v.HookRan(h.Name) != *h.Fired {
					return 0, fmt.Sprintf("hook %s fired: %v, want %v", h.Name, !*h.Fired, *h.Fired)
				}
				blocked, decided := v.HookDid(h.Name, h.Tool)
				if h.Blocked != nil && blocked != *h.Blocked {
					return 0, fmt.Sprintf("hook %s blocked a call%s: %v, want %v", h.Name, ofTool(h.Tool), blocked, *h.Blocked)
				}
				if h.Decided != nil && decided != *h.Decided {
					return 0, fmt.Sprintf("hook %s decided a call%s: %v, want %v", h.Name, ofTool(h.Tool), decided, *h.Decided)
				}
			}
			return 1, ""
		})
	}
	if e.NoSandboxDenial {
		add("sandbox", func(_ context.Context, v *View) (float64, string) {
			for _, c := range v.Calls() {
				if strings.Contains(c.Result, "[orca sandbox]") {
					return 0, fmt.Sprintf("the sandbox refused the %s call: %s", c.Tool, clip(c.Result))
				}
			}
			return 1, ""
		})
	}
	if e.NoBudgetExceeded {
		add("budget", func(_ context.Context, v *View) (float64, string) {
			for _, r := range v.Results() {
				if r.StopReason == "budget_exhausted" {
					return 0, fmt.Sprintf("turn %s reached its %s budget", r.TurnID, r.BudgetDimension)
				}
			}
			return 1, ""
		})
	}
	if e.Compacted != nil {
		add("compaction", func(_ context.Context, v *View) (float64, string) {
			if got := v.Compacted(); got != *e.Compacted {
				return 0, fmt.Sprintf("compacted: %v, want %v", got, *e.Compacted)
			}
			if why := orphans(v.run.Transcript); why != "" {
				return 0, why
			}
			return 1, ""
		})
	}
	if len(e.Output) > 0 {
		add("output", func(_ context.Context, v *View) (float64, string) {
			out := v.Result().Output
			if len(out) == 0 {
				return 0, fmt.Sprintf("no typed output (the turn ended %s)", v.Result().StopReason)
			}
			if raw := v.outputSchema(); len(raw) > 0 {
				schema, err := tool.CompileSchema("output_schema", raw)
				if err != nil {
					return 0, err.Error()
				}
				if err := schema.Validate(out); err != nil {
					return 0, fmt.Sprintf("the output %s: %v", clip(string(out)), err)
				}
			}
			var got map[string]json.RawMessage
			if err := json.Unmarshal(out, &got); err != nil {
				return 0, fmt.Sprintf("the output %q is not a JSON object", clip(string(out)))
			}
			for k, want := range e.Output {
				if !sameJSON(got[k], want) {
					return 0, fmt.Sprintf("output.%s is %s, want %s", k, clip(string(got[k])), clip(string(want)))
				}
			}
			return 1, ""
		})
	}
	if len(e.Files) > 0 {
		add("files", func(_ context.Context, v *View) (float64, string) {
			for p, f := range e.Files {
				b, err := os.ReadFile(filepath.Join(v.run.Workspace, filepath.FromSlash(p)))
				switch {
				case f.Absent && err == nil:
					return 0, fmt.Sprintf("%s is there, want none", p)
				case f.Absent:
				case err != nil:
					return 0, fmt.Sprintf("%s: %v", p, err)
				default:
					if why := f.Text.test(string(b)); why != "" {
						return 0, p + " " + why
					}
				}
			}
			return 1, ""
		})
	}
	if e.Verify != "" {
		add("verify", func(ctx context.Context, v *View) (float64, string) {
			if out, err := v.run.verify(ctx, e.Verify); err != nil {
				return 0, fmt.Sprintf("%s: %v: %s", e.Verify, err, clip(out))
			}
			return 1, ""
		})
	}
	if e.MaxToolCalls > 0 || e.MaxTokens > 0 || e.MaxCostUSD > 0 || e.MaxSeconds > 0 {
		add("limits", func(_ context.Context, v *View) (float64, string) {
			s := v.Spent()
			switch {
			case e.MaxToolCalls > 0 && s.ToolCalls > e.MaxToolCalls:
				return 0, fmt.Sprintf("%d tool calls, at most %d", s.ToolCalls, e.MaxToolCalls)
			case e.MaxTokens > 0 && s.Tokens > e.MaxTokens:
				return 0, fmt.Sprintf("%d tokens, at most %d", s.Tokens, e.MaxTokens)
			case e.MaxCostUSD > 0 && s.CostUSD > e.MaxCostUSD:
				return 0, fmt.Sprintf("$%.4f, at most $%.4f", s.CostUSD, e.MaxCostUSD)
			case e.MaxSeconds > 0 && s.Seconds > e.MaxSeconds:
				return 0, fmt.Sprintf("%.2f s, at most %.2f s", s.Seconds, e.MaxSeconds)
			}
			return 1, ""
		})
	}
	if e.Judge != nil {
		j := e.Judge
		out = append(out, &judgeScorer{turn: turn, judge: j})
	}
	return out
}

// score scores calls against t: 1 or 0, or the share found (any_order).
func (t *Trajectory) score(calls []Call) (float64, string) {
	match := func(spec CallSpec, c Call) bool {
		if spec.Tool != c.Tool {
			return false
		}
		var args map[string]json.RawMessage
		if len(spec.Args) > 0 || len(spec.ArgsMatch) > 0 {
			if json.Unmarshal(c.Input, &args) != nil {
				return false
			}
		}
		for k, want := range spec.Args {
			if !sameJSON(args[k], want) {
				return false
			}
		}
		for k, re := range spec.ArgsMatch {
			var s string
			if json.Unmarshal(args[k], &s) != nil || !regexp.MustCompile(re).MatchString(s) {
				return false
			}
		}
		return true
	}
	got := describeCalls(calls)
	switch t.Match {
	case "", "exact":
		if len(calls) != len(t.Calls) {
			return 0, fmt.Sprintf("%d calls, want %d: %s", len(calls), len(t.Calls), got)
		}
		for i, spec := range t.Calls {
			if !match(spec, calls[i]) {
				return 0, fmt.Sprintf("call %d is %s, want %s: %s", i, describeCalls(calls[i:i+1]), describeSpec(spec), got)
			}
		}
		return 1, ""
	case "in_order":
		i := 0
		for _, c := range calls {
			if i < len(t.Calls) && match(t.Calls[i], c) {
				i++
			}
		}
		if i < len(t.Calls) {
			return 0, fmt.Sprintf("no %s after the first %d expected calls: %s", describeSpec(t.Calls[i]), i, got)
		}
		return 1, ""
	}
	used := make([]bool, len(calls))
	found := 0
	var missing []string
	for _, spec := range t.Calls {
		ok := false
		for i, c := range calls {
			if !used[i] && match(spec, c) {
				used[i], ok = true, true
				found++
				break
			}
		}
		if !ok {
			missing = append(missing, describeSpec(spec))
		}
	}
	if len(t.Calls) == 0 {
		return 1, ""
	}
	score := float64(found) / float64(len(t.Calls))
	if missing != nil {
		return score, fmt.Sprintf("missing %s: %s", strings.Join(missing, ", "), got)
	}
	return score, ""
}

// orphans says which tool call of msgs has no result, "" if none.
func orphans(msgs []llmMessage) string {
	for i, m := range msgs {
		uses := m.ToolUses()
		if len(uses) == 0 {
			continue
		}
		answered := map[string]bool{}
		if i+1 < len(msgs) {
			for _, b := range msgs[i+1].Content {
				answered[b.ToolUseID] = true
			}
		}
		for _, u := range uses {
			if !answered[u.ID] && i+1 < len(msgs) {
				return fmt.Sprintf("the %s call %s has no result after message %d", u.Name, u.ID, i)
			}
		}
	}
	return ""
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func describeCalls(calls []Call) string {
	if len(calls) == 0 {
		return "no calls"
	}
	var out []string
	for _, c := range calls {
		out = append(out, c.Tool+string(compactJSON(c.Input)))
	}
	return clip(strings.Join(out, ", "))
}

func describeSpec(s CallSpec) string {
	var parts []string
	for k, v := range s.Args {
		parts = append(parts, fmt.Sprintf("%s=%s", k, compactJSON(v)))
	}
	for k, v := range s.ArgsMatch {
		parts = append(parts, fmt.Sprintf("%s~%s", k, v))
	}
	if len(parts) == 0 {
		return s.Tool
	}
	return s.Tool + "(" + strings.Join(parts, " ") + ")"
}

func describeBlocks(bs []Block) string {
	if len(bs) == 0 {
		return "none"
	}
	var out []string
	for _, b := range bs {
		reason := b.Reason
		if len(reason) > 120 {
			reason = reason[:120] + "…"
		}
		out = append(out, fmt.Sprintf("%s by %s: %q", b.Tool, b.By, reason))
	}
	return strings.Join(out, ", ")
}

func compactJSON(b json.RawMessage) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func quoted(s string) string {
	if s == "" {
		return ""
	}
	return fmt.Sprintf("saying %q", s)
}

func ofTool(t string) string {
	if t == "" {
		return ""
	}
	return " of " + t
}

// byMatches reports whether what refused or decided a call (got:
// "policy", "approver", "hook:FILE#PreToolUse[0].hooks[0]" …) is want:
// the same, or — for a hook, "hook:NAME" — a hook whose name is NAME or
// ends with "#NAME" (its place in its settings file, whichever file:
// "hook:PreToolUse[0].hooks[0]"); "hook:" is any hook.
func byMatches(got, want string) bool {
	if want == "" || got == want {
		return true
	}
	name, ok := strings.CutPrefix(want, "hook:")
	if !ok {
		return false
	}
	g, ok := strings.CutPrefix(got, "hook:")
	return ok && (name == "" || g == name || strings.HasSuffix(g, "#"+name))
}
