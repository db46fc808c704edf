package eval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/store"
)

// A run kept in a store (Record) is observation rows of the session
// RowsSession, its id their turn: one RowCase row per case (its runs and
// verdict), then one RowRun row, the whole report. orca serve lists them
// (GET /v1/evals).
const (
	RowsSession = "orca-eval"
	RowCase     = "eval_case"
	RowRun      = "eval_run"
)

// Record keeps rep in st as observation rows, in one write, and returns
// the run's id.
func Record(ctx context.Context, st store.Observations, rep *Report) (string, error) {
	var b [4]byte
	rand.Read(b[:])
	id := "eval_" + rep.Started.UTC().Format("20060102T150405") + "_" + hex.EncodeToString(b[:])
	now := time.Now().UTC()
	sc := scope.Scope{SessionID: RowsSession, TurnID: id}
	var rows []store.Observation
	for _, s := range rep.Suites {
		for _, c := range s.Cases {
			data, err := json.Marshal(struct {
				Suite string `json:"suite"`
				CaseResult
			}{s.Name, c})
			if err != nil {
				return "", err
			}
			rows = append(rows, store.Observation{Time: now, Name: RowCase, Scope: sc, Data: data})
		}
	}
	data, err := json.Marshal(rep)
	if err != nil {
		return "", err
	}
	rows = append(rows, store.Observation{Time: now, Name: RowRun, Scope: sc, Data: data})
	if err := st.AppendObservations(ctx, rows); err != nil {
		return "", fmt.Errorf("keeping the run in the store: %w", err)
	}
	return id, nil
}

// ErrNoRecorded: the store keeps no run.
var ErrNoRecorded = errors.New("the store keeps no run of orca eval (orca eval --record keeps them)")

// LastRecorded is the last run st keeps (Record), and its id.
func LastRecorded(ctx context.Context, st store.Observations) (*Report, string, error) {
	rows, err := st.Observations(ctx, store.ObservationFilter{SessionID: RowsSession})
	if err != nil {
		return nil, "", err
	}
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].Name != RowRun {
			continue
		}
		var rep Report
		if err := json.Unmarshal(rows[i].Data, &rep); err != nil {
			return nil, "", fmt.Errorf("run %s in the store: %w", rows[i].TurnID, err)
		}
		return &rep, rows[i].TurnID, nil
	}
	return nil, "", ErrNoRecorded
}
