// Package eval runs evaluations of an agent over the real runtime (app,
// as orca run assembles it) and scores what it did from orca's own
// record of it: the turns' results, the events the control plane emitted
// (what a hook or a rule blocked, what asked for approval, what the
// sandbox denied), the transcript, the files left in the workspace.
//
// A case gives the input — prompts, a workspace folder, files, settings —
// and what is expected. In replay (the default, and CI's) each turn
// carries the model's recorded responses (llm/script's format), so a
// change to the tools, hooks, policy, prompts or settings is checked with
// no key and no network; live, the configured model answers, each case
// run Repeat times (pass@k, pass^k). Scorers are Go values
// (Scorer): the built-in ones come from a case's expectations, and a
// library user adds their own.
package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/policy"
)

// Suite is a file of cases.
type Suite struct {
	// Name names the suite in reports (the file's name if empty).
	Name string `json:"name,omitempty"`
	// Threshold is the share of cases that must pass for the suite to
	// pass (1 if zero: every case).
	Threshold float64 `json:"threshold,omitempty"`
	// Gates are scorers that must pass in every case whatever the
	// threshold (their names: "trajectory", "blocked", …).
	Gates []string `json:"gates,omitempty"`
	// Thresholds are the values at which scorers pass, by name (1 if not
	// given: a trajectory any_order's share of the calls found, a
	// library scorer's value; a judge has its own).
	Thresholds map[string]float64 `json:"thresholds,omitempty"`
	Cases      []Case             `json:"cases"`

	// Dir is the folder the suite's paths are relative to (its file's).
	Dir string `json:"-"`
	// File is the file it was read from.
	File string `json:"-"`
}

// Case is one evaluation: the input, the recorded model (in replay) and
// what is expected.
type Case struct {
	// Name names the case; unique in its suite. Required.
	Name string `json:"name"`
	// Workspace is a folder (relative to the suite's) copied into the
	// case's own temporary workspace; Files are written into it after,
	// by path.
	Workspace string            `json:"workspace,omitempty"`
	Files     map[string]string `json:"files,omitempty"`
	// Settings is the workspace's .orca/settings.json (hooks, permission
	// rules, the mode …): the workspace is trusted, as the case's author
	// wrote it.
	Settings json.RawMessage `json:"settings,omitempty"`
	// Allow, Deny and Ask are permission rules on top of the settings';
	// Mode the permission mode.
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	Ask   []string `json:"ask,omitempty"`
	Mode  string   `json:"mode,omitempty"`
	// NoSandbox runs commands without the OS sandbox.
	NoSandbox bool `json:"no_sandbox,omitempty"`
	// Budget is the session's budget (tokens, cost_usd, tool_calls,
	// wall_time).
	Budget *budget.Limits `json:"budget,omitempty"`
	// Turns are the case's turns, in order. At least one.
	Turns []Turn `json:"turns"`
	// Routes are the recorded responses of the calls that are not the
	// main agent's, for replay: "compaction" (the summariser's),
	// "subagent:NAME" (a fork of that subagent), "subagent" (any other
	// fork).
	Routes map[string][]script.Response `json:"routes,omitempty"`
	// Expect is checked after the last turn, over the whole case.
	Expect Expect `json:"expect,omitzero"`
	// Tags group cases in reports.
	Tags []string `json:"tags,omitempty"`
	// Extra are scorers of the case's own beside its expectations' (a
	// loader's: LoadADK puts ADK's criteria there); not in the file.
	Extra []Scorer `json:"-"`
}

// Turn is one user turn of a case.
type Turn struct {
	// Prompt is what the user says. Required.
	Prompt string `json:"prompt"`
	// Attachments are files (relative to the suite's folder) shown to the
	// model with the prompt: images and PDFs.
	Attachments []string `json:"attachments,omitempty"`
	// OutputSchema asks the turn for its answer as a JSON value of this
	// schema (an object's), as orca run --output-schema does; the
	// "output" expectation checks it.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// Responses are the model's responses to the turn's calls, in order,
	// for replay.
	Responses []script.Response `json:"responses,omitempty"`
	// Expect is checked after this turn.
	Expect Expect `json:"expect,omitzero"`
}

// Load reads a suite or a case from a file (orca's format: a suite with
// "cases", or one case; or Google ADK's, LoadADK), or every such file
// under a folder: *.eval.json, *.evalset.json and *.test.json.
func Load(path string) ([]*Suite, error) {
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: no such file or folder", path)
	}
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		s, err := LoadFile(path)
		if err != nil {
			return nil, err
		}
		return []*Suite{s}, nil
	}
	var out []*Suite
	err = filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".eval.json") && !isADK(d.Name()) {
			return nil
		}
		s, err := LoadFile(p)
		if err != nil {
			return err
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no *.eval.json, *.evalset.json or *.test.json file in the folder", path)
	}
	return out, nil
}

// LoadFile reads one file: of ADK's format when its name says so
// (*.evalset.json, *.test.json: LoadADK), else of orca's.
func LoadFile(path string) (*Suite, error) {
	if isADK(filepath.Base(path)) {
		return LoadADK(path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.File = path
	s.Dir = filepath.Dir(path)
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(path), ".eval.json")
	}
	return s, nil
}

// Parse reads a suite (an object with "cases") or one case, strictly:
// a field orca does not know is an error naming it.
func Parse(b []byte) (*Suite, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	s := &Suite{}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if _, ok := probe["cases"]; ok {
		if err := dec.Decode(s); err != nil {
			return nil, fmt.Errorf("the suite: %w", err)
		}
	} else {
		var c Case
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("the case: %w", err)
		}
		s.Cases = []Case{c}
	}
	return s, s.Check()
}

// Check checks a suite's cases, naming what is wrong.
func (s *Suite) Check() error {
	var errs []error
	if s.Threshold < 0 || s.Threshold > 1 {
		errs = append(errs, fmt.Errorf("threshold: want a share from 0 to 1, got %g", s.Threshold))
	}
	for name, th := range s.Thresholds {
		if th < 0 || th > 1 {
			errs = append(errs, fmt.Errorf("thresholds.%s: want a value from 0 to 1, got %g", name, th))
		}
	}
	for _, g := range s.Gates {
		if !slices.Contains(ScorerNames, g) {
			errs = append(errs, fmt.Errorf("gates: %q is no scorer (the scorers: %s)", g, strings.Join(ScorerNames, ", ")))
		}
	}
	if len(s.Cases) == 0 {
		errs = append(errs, errors.New("no cases"))
	}
	seen := map[string]bool{}
	for i, c := range s.Cases {
		where := fmt.Sprintf("cases[%d]", i)
		if c.Name != "" {
			where = fmt.Sprintf("case %q", c.Name)
		}
		switch {
		case strings.TrimSpace(c.Name) == "":
			errs = append(errs, fmt.Errorf("%s: no name", where))
		case seen[c.Name]:
			errs = append(errs, fmt.Errorf("%s: a second case of that name", where))
		}
		seen[c.Name] = true
		if len(c.Turns) == 0 {
			errs = append(errs, fmt.Errorf("%s: no turns", where))
		}
		for name := range c.Routes {
			if name != "compaction" && name != "subagent" && !strings.HasPrefix(name, "subagent:") {
				errs = append(errs, fmt.Errorf("%s: routes: %q is no route (compaction, subagent, subagent:NAME)", where, name))
			}
		}
		if c.Budget != nil {
			if err := c.Budget.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("%s: budget: %w", where, err))
			}
		}
		if c.Mode != "" {
			if _, err := policy.ParseMode(c.Mode); err != nil {
				errs = append(errs, fmt.Errorf("%s: mode: %w", where, err))
			}
		}
		for j, t := range c.Turns {
			if strings.TrimSpace(t.Prompt) == "" {
				errs = append(errs, fmt.Errorf("%s: turns[%d]: no prompt", where, j))
			}
			if len(t.OutputSchema) > 0 {
				if err := (&agent.Output{Schema: t.OutputSchema}).Check(); err != nil {
					errs = append(errs, fmt.Errorf("%s: turns[%d].output_schema: %w", where, j, err))
				}
			}
			if err := t.Expect.check(); err != nil {
				errs = append(errs, fmt.Errorf("%s: turns[%d].expect: %w", where, j, err))
			}
		}
		if err := c.Expect.check(); err != nil {
			errs = append(errs, fmt.Errorf("%s: expect: %w", where, err))
		}
		for p := range c.Files {
			if !filepath.IsLocal(filepath.FromSlash(p)) {
				errs = append(errs, fmt.Errorf("%s: files: %q is not a path inside the workspace", where, p))
			}
		}
		if len(c.Settings) > 0 && !json.Valid(c.Settings) {
			errs = append(errs, fmt.Errorf("%s: settings: not JSON", where))
		}
	}
	return errors.Join(errs...)
}
