package app

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/orca-agent/orca/internal/tailbuf"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/media"
	"github.com/orca-agent/orca/sandbox"
)

// ErrNoClipboardImage is ClipboardImage's error when the clipboard holds
// no image (text, say, which the terminal pastes itself).
var ErrNoClipboardImage = errors.New("the clipboard holds no image")

// clipboardTypes are the image types asked of the clipboard, best first.
var clipboardTypes = []string{llm.MediaPNG, llm.MediaJPEG, llm.MediaWebP, llm.MediaGIF}

// clipboardTimeout bounds each clipboard program's run.
const clipboardTimeout = 5 * time.Second

// ClipboardImage returns the image on the system clipboard as the model
// is shown it (media.Prepare: scaled down when too large), named
// "clipboard": a bitmap copied from a screenshot tool or a browser, which
// a terminal cannot paste. It asks the platform's clipboard program, run
// as orca's own process (sandbox.Runner.Plain) in orca's environment:
// wl-paste on Wayland (wl-clipboard), xclip on X11, osascript on macOS. The clipboard holding no image is
// ErrNoClipboardImage; no program to ask is an error saying which to
// install.
func ClipboardImage(ctx context.Context) (*llm.Media, error) {
	env, getenv := os.Environ(), os.Getenv
	var data []byte
	var err error
	switch {
	case runtime.GOOS == "darwin":
		data, err = macClipboard(ctx, env)
	case getenv("WAYLAND_DISPLAY") != "":
		data, err = listThenPaste(ctx, env, "wl-paste", "wl-clipboard",
			[]string{"--list-types"}, func(t string) []string { return []string{"--no-newline", "--type", t} })
	case getenv("DISPLAY") != "":
		data, err = listThenPaste(ctx, env, "xclip", "xclip",
			[]string{"-selection", "clipboard", "-t", "TARGETS", "-o"}, func(t string) []string { return []string{"-selection", "clipboard", "-t", t, "-o"} })
	default:
		return nil, errors.New("no clipboard to read: neither WAYLAND_DISPLAY nor DISPLAY is set (a terminal over SSH has none); attach the image with @path instead")
	}
	if err != nil {
		return nil, err
	}
	m, _, err := media.Prepare(data, "clipboard")
	if errors.Is(err, media.ErrNotMedia) {
		return nil, ErrNoClipboardImage
	}
	return m, err
}

// listThenPaste asks program (from the package pkg) for the clipboard's
// types (list), then for the bytes of the best image type (paste).
func listThenPaste(ctx context.Context, env []string, program, pkg string, list []string, paste func(string) []string) ([]byte, error) {
	path, err := exec.LookPath(program)
	if err != nil {
		return nil, fmt.Errorf("reading the clipboard needs %s (Debian and Ubuntu: apt install %s)", program, pkg)
	}
	out, err := runClipboard(ctx, env, path, list...)
	if err != nil {
		// xclip and wl-paste fail when the clipboard is empty.
		return nil, fmt.Errorf("%w (%s: %v)", ErrNoClipboardImage, program, err)
	}
	offered := strings.Fields(string(out))
	for _, t := range clipboardTypes {
		for _, o := range offered {
			if o == t {
				return runClipboard(ctx, env, path, paste(t)...)
			}
		}
	}
	return nil, ErrNoClipboardImage
}

// macClipboard asks osascript for the clipboard as PNG, which it prints
// as «data PNGf89504E47…».
func macClipboard(ctx context.Context, env []string) ([]byte, error) {
	path, err := exec.LookPath("osascript")
	if err != nil {
		return nil, errors.New("reading the clipboard needs osascript, which macOS has in /usr/bin")
	}
	out, err := runClipboard(ctx, env, path, "-e", "the clipboard as «class PNGf»")
	if err != nil {
		return nil, fmt.Errorf("%w (osascript: %v)", ErrNoClipboardImage, err)
	}
	s := strings.TrimSpace(string(out))
	s, ok := strings.CutPrefix(s, "«data PNGf")
	if !ok || !strings.HasSuffix(s, "»") {
		return nil, ErrNoClipboardImage
	}
	return hex.DecodeString(strings.TrimSuffix(s, "»"))
}

// runClipboard runs a clipboard program and returns what it printed, at
// most media.MaxInputBytes; its error names what it said on stderr.
func runClipboard(ctx context.Context, env []string, path string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, clipboardTimeout)
	defer cancel()
	runner := sandbox.Runner{Plain: true, Env: env}
	cmd, err := runner.Command(ctx, os.TempDir(), append([]string{path}, args...)...)
	if err != nil {
		return nil, err
	}
	var out limited
	out.max = media.MaxInputBytes
	stderr := &tailbuf.Buffer{Max: 512}
	cmd.Stdout, cmd.Stderr = &out, stderr
	if err := cmd.Run(); err != nil {
		if msg, _ := stderr.Tail(); strings.TrimSpace(msg) != "" {
			msg = strings.TrimSpace(msg)
			return nil, fmt.Errorf("%v: %s", err, msg)
		}
		return nil, err
	}
	if out.over {
		return nil, fmt.Errorf("the clipboard's image is over %s", llm.ByteSize(media.MaxInputBytes))
	}
	return out.Bytes(), nil
}

// limited keeps at most max bytes written to it, and says if more came.
type limited struct {
	bytes.Buffer
	max  int
	over bool
}

func (l *limited) Write(p []byte) (int, error) {
	n := len(p)
	if room := l.max - l.Len(); n > room {
		l.over = true
		p = p[:max(room, 0)]
	}
	l.Buffer.Write(p)
	return n, nil
}
