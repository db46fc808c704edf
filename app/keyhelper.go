package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/orca-agent/orca/internal/tailbuf"
	"github.com/orca-agent/orca/sandbox"
)

// KeyHelperTTLEnv is Claude Code's variable for how long an apiKeyHelper's
// key is used before the helper is asked again, in milliseconds.
const KeyHelperTTLEnv = "CLAUDE_CODE_API_KEY_HELPER_TTL_MS"

const (
	// keyHelperTTL is how long a helper's key lives by default (Claude
	// Code's five minutes).
	keyHelperTTL = 5 * time.Minute
	// keyHelperTimeout bounds one run of the helper.
	keyHelperTimeout = 30 * time.Second
)

// helperTTL is the life of a helper's key: KeyHelperTTLEnv, else five
// minutes; a value that is not a whole number of milliseconds is an error
// that names it.
func helperTTL(getenv func(string) string) (time.Duration, error) {
	v := strings.TrimSpace(getenv(KeyHelperTTLEnv))
	if v == "" {
		return keyHelperTTL, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 || ms > int64(24*time.Hour/time.Millisecond) {
		return 0, configErrorf("%s=%q: want a whole number of milliseconds, at most a day", KeyHelperTTLEnv, v)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// keyHelper returns the function that runs the settings' apiKeyHelper,
// command, as Claude Code does: sh -c in the workspace root dir, with the
// user's environment (it is the user's command, or a trusted project's:
// it may need their vault's or cloud's variables), its standard output the
// key. A run that fails, or outlives keyHelperTimeout, is an error that
// names the command and ends with the last of what it wrote on standard
// error.
func keyHelper(command, dir string) func(ctx context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, keyHelperTimeout)
		defer cancel()
		var stdout bytes.Buffer
		stderr := tailbuf.Buffer{Max: 500}
		// Its own process group, so that a timeout kills what it started.
		runner := sandbox.Runner{Plain: true, Env: os.Environ()}
		cmd, err := runner.Command(ctx, dir, "/bin/sh", "-c", command)
		if err == nil {
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.WaitDelay = time.Second
			err = cmd.Run()
		}
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return "", fmt.Errorf("apiKeyHelper %q timed out after %v", command, keyHelperTimeout)
		case err != nil:
			tail, dropped := stderr.Tail()
			msg := strings.TrimSpace(tail)
			if dropped > 0 {
				msg = "…" + msg
			}
			if msg != "" {
				msg = ": " + msg
			}
			return "", fmt.Errorf("apiKeyHelper %q: %v%s", command, err, msg)
		}
		return stdout.String(), nil
	}
}
