package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/orca-agent/orca/store/internal/clock"
)

// Schema is a store's schema: its versions, and how they are applied.
// Applied versions are recorded in schema_migrations; a schema written by
// a newer orca (a version past the last one known) is refused rather
// than misread.
type Schema struct {
	// Migrations are the versions, in order: Migrations[i] brings the
	// schema from version i to i+1. Never edit one that has shipped; add
	// the next.
	Migrations []string
	// Lock, if set, is run first in every transaction that migrates: a
	// lock that makes the processes opening the store together migrate
	// one after the other (PostgreSQL's advisory lock), each version
	// once. SQLite's write transaction locks the file already.
	Lock string
	// Ledger creates the schema_migrations table (version, applied_at)
	// if it does not exist, in the database's own types.
	Ledger string
	// Stepwise applies each version in a transaction of its own, rather
	// than all of them in one: either way a schema is at one version or
	// the next, never half-way.
	Stepwise bool
}

// Begin runs fn in a transaction of its own, committed if fn returns nil.
type Begin func(ctx context.Context, fn func(ctx context.Context, tx Querier) error) error

// Open brings the schema up to date (migrate), then makes c's later
// times come after every time already stored: a later write must sort
// after everything the database holds, even if this machine's clock is
// behind the one that wrote it.
func (sc Schema) Open(ctx context.Context, q Querier, begin Begin, c *clock.Clock) error {
	if err := sc.migrate(ctx, q, begin); err != nil {
		return err
	}
	var newest *int64
	if err := q.QueryRow(ctx, "SELECT MAX(updated_at) FROM sessions").Scan(&newest); err != nil {
		return err
	}
	if newest != nil {
		c.Observe(fromNanos(*newest))
	}
	return nil
}

// migrate brings the schema up to date. A schema at the last version
// already, as most are, needs no write transaction: q, outside one, tells.
func (sc Schema) migrate(ctx context.Context, q Querier, begin Begin) error {
	last := len(sc.Migrations)
	var version int
	if err := q.QueryRow(ctx, "SELECT MAX(version) FROM schema_migrations").Scan(&version); err == nil && version == last {
		return nil
	}
	for {
		done := false
		err := begin(ctx, func(ctx context.Context, tx Querier) error {
			if sc.Lock != "" {
				if _, err := tx.Exec(ctx, sc.Lock); err != nil {
					return fmt.Errorf("migrate: %w", err)
				}
			}
			if _, err := tx.Exec(ctx, sc.Ledger); err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
			var version int
			if err := tx.QueryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&version); err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
			if version > last {
				return fmt.Errorf("schema version %d is newer than this program knows (%d): upgrade orca", version, last)
			}
			upto := last
			if sc.Stepwise {
				upto = min(version+1, last)
			}
			for v := version; v < upto; v++ {
				if _, err := tx.Exec(ctx, sc.Migrations[v]); err != nil {
					return fmt.Errorf("migrate to version %d: %w", v+1, err)
				}
				if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", v+1, time.Now().UnixNano()); err != nil {
					return fmt.Errorf("migrate to version %d: %w", v+1, err)
				}
			}
			done = upto == last
			return nil
		})
		if err != nil || done {
			return err
		}
	}
}
