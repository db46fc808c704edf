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

// OpenUserStore opens the PostgreSQL store a program that reads the
// sessions without opening an App should use, as Open would choose it:
// $ORCA_STORE_DSN (through getenv), else the "store" of the user's
// settings in configDir (config.Dir() if empty). It returns nil, nil when
// neither names one: the workspace's SQLite file is the store then. A
// settings file that cannot be read is a *ConfigError; the errors never
// show the DSN's password.
func OpenUserStore(ctx context.Context, configDir string, getenv func(string) string) (store.Store, error) {
	s := &config.Settings{}
	if getenv(StoreDSNEnv) == "" {
		var err error
		if s, _, err = config.Load(config.LoadOptions{ConfigDir: configDir, NoClaude: true}); err != nil {
			return nil, &ConfigError{Err: err}
		}
	}
	dsn, from := storeDSN(Config{}, getenv, s)
	if dsn == "" {
		return nil, nil
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
