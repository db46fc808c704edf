package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/internal/httpguard"
)

// TokenEnv is the variable that gives the server its bearer token.
const TokenEnv = "ORCA_SERVE_TOKEN"

// ErrShortToken: the token $ORCA_SERVE_TOKEN gives has fewer than 16
// characters.
var ErrShortToken = httpguard.ErrShortToken

// TokenHint says where Token takes the token from, for a person at the
// sign-in form: "$ORCA_SERVE_TOKEN" when it is set, else the file (the
// home folder written ~).
func TokenHint(configDir string, getenv func(string) string) string {
	if strings.TrimSpace(getenv(TokenEnv)) != "" {
		return "$" + TokenEnv
	}
	dir := configDir
	if dir == "" {
		var err error
		if dir, err = config.Dir(); err != nil {
			return "$" + TokenEnv
		}
	}
	path := filepath.Join(dir, "orca", "serve-token")
	if home, err := os.UserHomeDir(); err == nil {
		if rel, err := filepath.Rel(home, path); err == nil && filepath.IsLocal(rel) {
			path = "~/" + filepath.ToSlash(rel)
		}
	}
	return path
}

// Token returns the bearer token orca serve uses — $ORCA_SERVE_TOKEN
// (through getenv), else the one kept in the configuration folder
// configDir (config.Dir() if empty) as orca/serve-token, made there on the
// first start with 24 random bytes, readable by the user alone — and a
// line saying where it is (the token itself only when it was just made).
func Token(configDir string, getenv func(string) string) (token, where string, err error) {
	if strings.TrimSpace(getenv(TokenEnv)) != "" {
		token, _, err = httpguard.Token(TokenEnv, "", getenv)
		return token, "token: $" + TokenEnv, err
	}
	dir := configDir
	if dir == "" {
		if dir, err = config.Dir(); err != nil {
			return "", "", fmt.Errorf("no configuration folder to keep the token in (%v): set $%s", err, TokenEnv)
		}
	}
	path := filepath.Join(dir, "orca", "serve-token")
	token, made, err := httpguard.Token(TokenEnv, path, getenv)
	switch {
	case err != nil:
		return "", "", err
	case made:
		return token, fmt.Sprintf("token (new, kept in %s): %s", path, token), nil
	}
	return token, "token: in " + path, nil
}
