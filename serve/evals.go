package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/orca-agent/orca/store"
)

// The runs of orca eval --record are observation rows of the session
// evalRows (eval.RowsSession), a run's id their turn; its last row,
// evalRun (eval.RowRun), is the whole report. (serve and eval are of one
// layer: the names are written twice, and cmd/orca's test of the page
// holds them together.)
const (
	evalRows = "orca-eval"
	evalRun  = "eval_run"
)

// evalSummary is a kept run as the list shows it.
type evalSummary struct {
	ID       string    `json:"id"`
	Time     time.Time `json:"time"`
	Passed   bool      `json:"passed"`
	Live     bool      `json:"live,omitempty"`
	Repeat   int       `json:"repeat,omitempty"`
	Suites   []string  `json:"suites"`
	Cases    int       `json:"cases"`
	Failed   int       `json:"failed"`
	CostUSD  float64   `json:"cost_usd"`
	Duration int64     `json:"duration_ns"`
}

// evalReport is the part of a kept report the list reads.
type evalReport struct {
	Passed   bool    `json:"passed"`
	Live     bool    `json:"live"`
	Repeat   int     `json:"repeat"`
	CostUSD  float64 `json:"cost_usd"`
	Duration int64   `json:"duration_ns"`
	Suites   []struct {
		Name  string `json:"name"`
		Cases []struct {
			Passed bool `json:"passed"`
		} `json:"cases"`
	} `json:"suites"`
}

// evalRunRows are the kept runs' report rows, oldest first.
func (s *Server) evalRunRows(r *http.Request) ([]store.Observation, error) {
	rows, ok := s.app.Store().(store.Observations)
	if !ok {
		return nil, &apiError{status: http.StatusNotImplemented, code: "no_rows", msg: "this store keeps no observation rows"}
	}
	all, err := rows.Observations(r.Context(), store.ObservationFilter{SessionID: evalRows})
	if err != nil {
		return nil, err
	}
	var out []store.Observation
	for _, o := range all {
		if o.Name == evalRun {
			out = append(out, o)
		}
	}
	return out, nil
}

func (s *Server) listEvals(w http.ResponseWriter, r *http.Request) error {
	rows, err := s.evalRunRows(r)
	if err != nil {
		return err
	}
	out := []evalSummary{}
	for i := len(rows) - 1; i >= 0; i-- {
		o := rows[i]
		var rep evalReport
		if err := json.Unmarshal(o.Data, &rep); err != nil {
			continue // not a report of this version's shape
		}
		sum := evalSummary{ID: o.TurnID, Time: o.Time.UTC(), Passed: rep.Passed, Live: rep.Live, Repeat: rep.Repeat, CostUSD: rep.CostUSD, Duration: rep.Duration, Suites: []string{}}
		for _, su := range rep.Suites {
			sum.Suites = append(sum.Suites, su.Name)
			for _, c := range su.Cases {
				sum.Cases++
				if !c.Passed {
					sum.Failed++
				}
			}
		}
		out = append(out, sum)
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": out})
	return nil
}

func (s *Server) getEval(w http.ResponseWriter, r *http.Request) error {
	rows, err := s.evalRunRows(r)
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	for _, o := range rows {
		if o.TurnID == id {
			w.Header().Set("Content-Type", "application/json")
			_, err := w.Write(o.Data)
			return err
		}
	}
	return &apiError{status: http.StatusNotFound, code: "not_found", msg: fmt.Sprintf("no run %s of orca eval is kept (orca eval --record keeps them)", id)}
}
