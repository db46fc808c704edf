package sqlite

import "database/sql"

// DB exposes the store's database to the tests.
func DB(s *Store) *sql.DB { return s.db }
