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
// config.Settings.Store); "" means the workspace's SQLite file. from says
// which it is, for errors.
func storeDSN(cfg Config, getenv func(string) string, s *config.Settings) (dsn, from string) {
	if cfg.StoreDSN != "" {
		return cfg.StoreDSN, "app.Config.StoreDSN"
	}
	if dsn := getenv(StoreDSNEnv); dsn != "" {
		return dsn, "$" + StoreDSNEnv
	}
	return s.Store, settingsStore
}

// settingsStore names the user's settings' "store" in errors.
const settingsStore = `the "store" of your settings.json`

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

// OpenStoreDSN opens the PostgreSQL store of dsn (as UserStoreDSN chose
// it: its errors name $ORCA_STORE_DSN when that is set to dsn, else the
// settings' "store"); they never show the DSN's password.
func OpenStoreDSN(ctx context.Context, dsn string, getenv func(string) string) (store.Store, error) {
	from := settingsStore
	if getenv != nil && getenv(StoreDSNEnv) == dsn {
		from = "$" + StoreDSNEnv
	}
	return openStore(ctx, "", dsn, from)
}

// openStore opens the PostgreSQL store of dsn (from names where dsn came
// from) or, with none, the workspace's SQLite file (OpenStore).
func openStore(ctx context.Context, ws, dsn, from string) (store.Store, error) {
	if dsn == "" {
		return OpenStore(ws)
	}
	st, err := postgres.Open(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("cannot open the session store, the PostgreSQL database %s names: %w", from, err)
	}
	return st, nil
}
