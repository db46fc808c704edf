package app

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/orca-agent/orca/sandbox"
)

// OpenBrowser shows the person url in their browser: the command
// $BROWSER names (its words, then the URL), else the desktop's opener
// (xdg-open where there is a display; open on macOS). Without either it
// does nothing and says so (ErrNoBrowser): the caller has printed the
// URL for the person to open elsewhere. The browser runs as orca's own
// process (sandbox.Runner.Plain), in orca's environment.
func OpenBrowser(ctx context.Context, url string) error {
	var argv []string
	switch b := strings.Fields(os.Getenv("BROWSER")); {
	case len(b) > 0:
		argv = append(b, url)
	case runtime.GOOS == "darwin":
		argv = []string{"open", url}
	case os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "":
		if _, err := exec.LookPath("xdg-open"); err != nil {
			return ErrNoBrowser
		}
		argv = []string{"xdg-open", url}
	default:
		return ErrNoBrowser
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	runner := sandbox.Runner{Plain: true, Env: os.Environ()}
	cmd, err := runner.Command(ctx, os.TempDir(), argv...)
	if err != nil {
		return err
	}
	return cmd.Run()
}

// ErrNoBrowser: OpenBrowser found no browser to open.
var ErrNoBrowser = errors.New("no browser: set $BROWSER, or open the address yourself")
