package app_test

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm"
)

// fakeClipboard puts a program named name on a PATH of its own that
// answers as wl-paste and xclip do: the types offered (one a line) when
// asked for the list, the file holding the bytes of a type when asked for
// it, failing with what on stderr when types is empty.
func fakeClipboard(t *testing.T, name string, types []string, data []byte) {
	t.Helper()
	dir := t.TempDir()
	blob := filepath.Join(dir, "blob")
	if err := os.WriteFile(blob, data, 0o644); err != nil {
		t.Fatal(err)
	}
	script := `#!/bin/sh
case "$*" in
*--list-types*|*TARGETS*)
  [ -n "` + strings.Join(types, `\n`) + `" ] || { echo "Nothing is copied" >&2; exit 1; }
  printf '` + strings.Join(types, `\n`) + `\n' ;;
*image/*) cat ` + blob + ` ;;
*) exit 2 ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+"/usr/bin:/bin")
}

func pngBytes(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The clipboard's image is read with wl-paste on Wayland and xclip on
// X11, the best image type it offers asked for; a clipboard of text is
// ErrNoClipboardImage, as is an empty one; no program, or no display,
// is an error saying what is missing.
func TestClipboardImage(t *testing.T) {
	shot := pngBytes(t, 30, 20)
	for _, tc := range []struct{ program, display string }{{"wl-paste", "WAYLAND_DISPLAY"}, {"xclip", "DISPLAY"}} {
		t.Run(tc.program, func(t *testing.T) {
			t.Setenv("WAYLAND_DISPLAY", "")
			t.Setenv("DISPLAY", "")
			t.Setenv(tc.display, ":7")
			fakeClipboard(t, tc.program, []string{"TIMESTAMP", "text/plain", "image/png", "image/bmp"}, shot)
			m, err := app.ClipboardImage(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if m.MediaType != llm.MediaPNG || !bytes.Equal(m.Data, shot) || m.Width != 30 || m.Name != "clipboard" || m.Digest != llm.DigestOf(shot) {
				t.Errorf("%s", m)
			}

			fakeClipboard(t, tc.program, []string{"UTF8_STRING", "text/plain"}, nil)
			if _, err := app.ClipboardImage(t.Context()); !errors.Is(err, app.ErrNoClipboardImage) {
				t.Errorf("text on the clipboard: %v", err)
			}
			fakeClipboard(t, tc.program, nil, nil)
			if _, err := app.ClipboardImage(t.Context()); !errors.Is(err, app.ErrNoClipboardImage) || !strings.Contains(err.Error(), "Nothing is copied") {
				t.Errorf("an empty clipboard: %v", err)
			}
			// Bytes offered as an image that are none.
			fakeClipboard(t, tc.program, []string{"image/png"}, []byte("hello"))
			if _, err := app.ClipboardImage(t.Context()); !errors.Is(err, app.ErrNoClipboardImage) {
				t.Errorf("text offered as an image: %v", err)
			}
			t.Setenv("PATH", t.TempDir())
			if _, err := app.ClipboardImage(t.Context()); err == nil || !strings.Contains(err.Error(), "needs "+tc.program) {
				t.Errorf("no %s: %v", tc.program, err)
			}
		})
	}
	t.Setenv("WAYLAND_DISPLAY", "")
	t.Setenv("DISPLAY", "")
	if _, err := app.ClipboardImage(t.Context()); err == nil || !strings.Contains(err.Error(), "neither WAYLAND_DISPLAY nor DISPLAY") {
		t.Errorf("no display: %v", err)
	}
}
