package serve

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/orca-agent/orca/config"
)

// TokenEnv is the variable that gives the server its bearer token.
const TokenEnv = "ORCA_SERVE_TOKEN"

// ErrShortToken: the token $ORCA_SERVE_TOKEN gives has fewer than 16
// characters.
var ErrShortToken = errors.New("a token has at least 16 characters")

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
	if t := strings.TrimSpace(getenv(TokenEnv)); t != "" {
		if len(t) < 16 {
			return "", "", fmt.Errorf("$%s is %d characters: %w", TokenEnv, len(t), ErrShortToken)
		}
		return t, "token: $" + TokenEnv, nil
	}
	dir := configDir
	if dir == "" {
		if dir, err = config.Dir(); err != nil {
			return "", "", fmt.Errorf("no configuration folder to keep the token in (%v): set $%s", err, TokenEnv)
		}
	}
	path := filepath.Join(dir, "orca", "serve-token")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 16 {
		return strings.TrimSpace(string(b)), "token: in " + path, nil
	}
	raw := make([]byte, 24)
	rand.Read(raw)
	token = hex.EncodeToString(raw)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", "", fmt.Errorf("keeping the token: %w", err)
	}
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", "", fmt.Errorf("keeping the token: %w", err)
	}
	return token, fmt.Sprintf("token (new, kept in %s): %s", path, token), nil
}
