package sqlite

import "database/sql"

// DB exposes the store's database to the tests.
func DB(s *Store) *sql.DB { return s.db }

// Batches returns how many batches the store's committer has taken, and
// how many writes were in them.
func Batches(s *Store) (batches, writes int64) {
	return s.committer.batches.Load(), s.committer.batched.Load()
}

// Guarded returns how many batches the committer ran with a savepoint
// for each write (after a write of the batch failed without them).
func Guarded(s *Store) int64 { return s.committer.guardedRuns.Load() }

// Migrations are the schema versions.
var Migrations = migrations

// CheckpointPages is the committer's checkpoint interval, in pages.
const CheckpointPages = checkpointPages
