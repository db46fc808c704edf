package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Diff is what changed from a baseline report (an earlier run's) to
// this one, case by case (a case is its suite's name and its own).
type Diff struct {
	// Baseline names the report compared with.
	Baseline string `json:"baseline"`
	// Regressed passed in the baseline and fail now; Fixed the other way.
	Regressed []string `json:"regressed,omitempty"`
	Fixed     []string `json:"fixed,omitempty"`
	// Added are not in the baseline; Removed only there.
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
	// Scores are the scores that changed, "case: scorer 1 → 0.5".
	Scores []string `json:"scores,omitempty"`
}

// ReadReport reads a report orca eval --json (or WriteJSON, or Save)
// wrote; path may be a folder of them (Save's), the newest taken.
func ReadReport(path string) (*Report, string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, "", err
	}
	if info.IsDir() {
		files, err := filepath.Glob(filepath.Join(path, "*.json"))
		if err != nil {
			return nil, "", err
		}
		if len(files) == 0 {
			return nil, "", fmt.Errorf("%s: no report in the folder", path)
		}
		slices.Sort(files) // Save names them by time
		path = files[len(files)-1]
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, "", fmt.Errorf("%s: not a report of orca eval: %w", path, err)
	}
	if len(rep.Suites) == 0 {
		return nil, "", fmt.Errorf("%s: not a report of orca eval: no suites", path)
	}
	return &rep, path, nil
}

// Save writes rep into dir (made if need be) as a file named by the
// time it started, and returns its path.
func Save(dir string, rep *Report) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, rep.Started.UTC().Format("20060102T150405.000000000Z")+".json")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	return p, errors.Join(WriteJSON(f, rep), f.Close())
}

// Compare says what changed from base (named name) to rep.
func Compare(base *Report, name string, rep *Report) *Diff {
	d := &Diff{Baseline: name}
	type entry struct {
		passed bool
		scores map[string]float64
	}
	index := func(r *Report) (map[string]entry, []string) {
		m := map[string]entry{}
		var order []string
		for _, s := range r.Suites {
			for _, c := range s.Cases {
				key := s.Name + ": " + c.Name
				e := entry{passed: c.Passed, scores: map[string]float64{}}
				for _, run := range c.Runs {
					for _, sc := range run.Scores {
						// The mean over the runs.
						e.scores[where(sc)] += sc.Value / float64(len(c.Runs))
					}
				}
				m[key] = e
				order = append(order, key)
			}
		}
		return m, order
	}
	was, wasOrder := index(base)
	now, nowOrder := index(rep)
	for _, key := range nowOrder {
		e := now[key]
		old, ok := was[key]
		switch {
		case !ok:
			d.Added = append(d.Added, key)
			continue
		case old.passed && !e.passed:
			d.Regressed = append(d.Regressed, key)
		case !old.passed && e.passed:
			d.Fixed = append(d.Fixed, key)
		}
		var names []string
		for n := range e.scores {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			if v, ok := old.scores[n]; ok && fmt.Sprintf("%.3g", v) != fmt.Sprintf("%.3g", e.scores[n]) {
				d.Scores = append(d.Scores, fmt.Sprintf("%s: %s %.3g → %.3g", key, n, v, e.scores[n]))
			}
		}
	}
	for _, key := range wasOrder {
		if _, ok := now[key]; !ok {
			d.Removed = append(d.Removed, key)
		}
	}
	return d
}

// WriteDiff writes d for people.
func WriteDiff(w io.Writer, d *Diff) error {
	var b strings.Builder
	fmt.Fprintf(&b, "against %s: ", d.Baseline)
	if len(d.Regressed)+len(d.Fixed)+len(d.Added)+len(d.Removed)+len(d.Scores) == 0 {
		b.WriteString("no change\n")
	} else {
		fmt.Fprintf(&b, "%d regressed, %d fixed, %d added, %d removed\n", len(d.Regressed), len(d.Fixed), len(d.Added), len(d.Removed))
	}
	for _, l := range []struct {
		what  string
		items []string
	}{{"regressed", d.Regressed}, {"fixed", d.Fixed}, {"added", d.Added}, {"removed", d.Removed}, {"score", d.Scores}} {
		for _, it := range l.items {
			fmt.Fprintf(&b, "  %-9s %s\n", l.what, it)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
