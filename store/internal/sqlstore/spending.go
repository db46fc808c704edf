package sqlstore

import (
	"context"
	"time"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/store"
)

// TotalsQuery reads a session's totals (TotalsColumns).
const TotalsQuery = "SELECT " + TotalsColumns + " FROM totals WHERE session_id = ?"

// Totals implements store.Store.
func (s *Store) Totals(ctx context.Context, sessionID string) (store.Totals, error) {
	return readOne(ctx, s, "read totals of", sessionID, TotalsQuery, ScanTotals)
}

// SetBudget implements store.Store.
func (s *Store) SetBudget(ctx context.Context, sessionID string, b *budget.Limits) error {
	if b != nil {
		if err := store.ValidateBudget(*b); err != nil {
			return s.where.Fail("set budget of", sessionID, err)
		}
	}
	return s.write(ctx, "set budget of", sessionID, func(ctx context.Context, tx Querier) error {
		if _, err := s.d.LastSeq(ctx, tx, sessionID); err != nil {
			return err
		}
		if b == nil {
			_, err := tx.Exec(ctx, "DELETE FROM budgets WHERE session_id = ?", sessionID)
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO budgets (session_id, tokens, cost_usd, tool_calls, wall_time_ns) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (session_id) DO UPDATE SET tokens = excluded.tokens, cost_usd = excluded.cost_usd, tool_calls = excluded.tool_calls, wall_time_ns = excluded.wall_time_ns`,
			sessionID, b.Tokens, b.CostUSD, b.ToolCalls, int64(b.WallTime))
		return err
	})
}

// Budget implements store.Store.
func (s *Store) Budget(ctx context.Context, sessionID string) (*budget.Limits, error) {
	return readOne(ctx, s, "read budget of", sessionID, `SELECT b.session_id IS NOT NULL, COALESCE(b.tokens, 0), COALESCE(b.cost_usd, 0.0), COALESCE(b.tool_calls, 0), COALESCE(b.wall_time_ns, 0)
FROM sessions s LEFT JOIN budgets b ON b.session_id = s.id WHERE s.id = ?`, func(row Scanner) (*budget.Limits, error) {
		var has bool
		var b budget.Limits
		var wall int64
		if err := row.Scan(&has, &b.Tokens, &b.CostUSD, &b.ToolCalls, &wall); err != nil || !has {
			return nil, err
		}
		b.WallTime = time.Duration(wall)
		return &b, nil
	})
}
