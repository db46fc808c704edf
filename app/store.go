package app

import (
	"context"
	"fmt"

	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/postgres"
)

// StoreDSNEnv is the environment variable that names a PostgreSQL
// database to keep the sessions in (see Config.StoreDSN).
const StoreDSNEnv = "ORCA_STORE_DSN"

// storeDSN returns the PostgreSQL DSN cfg chooses: Config.StoreDSN, else
// $ORCA_STORE_DSN, else the user's settings' "store" (never a project's:
// config.Settings.Store); "" means the workspace's SQLite file.
func storeDSN(cfg Config, getenv func(string) string, s *config.Settings) string {
	if cfg.StoreDSN != "" {
		return cfg.StoreDSN
	}
	if dsn := getenv(StoreDSNEnv); dsn != "" {
		return dsn
	}
	return s.Store
}

// UserStoreDSN returns the PostgreSQL DSN a program that reads the
// sessions without opening an App should use, as Open would choose it:
// $ORCA_STORE_DSN (through getenv), else the "store" of the user's
// settings in configDir (config.Dir() if empty); "" means the workspace's
// SQLite file.
func UserStoreDSN(configDir string, getenv func(string) string) (string, error) {
	if dsn := getenv(StoreDSNEnv); dsn != "" {
		return dsn, nil
	}
	s, _, err := config.Load(config.LoadOptions{ConfigDir: configDir, NoClaude: true})
	if err != nil {
		return "", &ConfigError{Err: err}
	}
	return s.Store, nil
}

// OpenStoreDSN opens the PostgreSQL store of dsn; its errors never show
// the DSN's password.
func OpenStoreDSN(ctx context.Context, dsn string) (store.Store, error) {
	return openStore(ctx, "", dsn)
}

// openStore opens the PostgreSQL store of dsn or, with none, the
// workspace's SQLite file (OpenStore).
func openStore(ctx context.Context, ws, dsn string) (store.Store, error) {
	if dsn == "" {
		return OpenStore(ws)
	}
	st, err := postgres.Open(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("cannot open the session store: %w", err)
	}
	return st, nil
}
