package app_test

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm"
)

// A prompt's @path mentions of images and PDFs, and a path pasted alone
// on a line (quoted, or with its spaces escaped), are shown; a mention of
// a missing file, of a text file, or of an image that is none stays text,
// the last with a word why.
func TestMentioned(t *testing.T) {
	root := t.TempDir()
	var b bytes.Buffer
	png.Encode(&b, image.NewGray(image.Rect(0, 0, 8, 6)))
	write(t, root, "shots/bug.png", b.String())
	write(t, root, "spec.pdf", "%PDF-1.4\n%%EOF\n")
	write(t, root, "fake.png", "text")
	write(t, root, "notes.md", "# notes")
	dropped := filepath.Join(t.TempDir(), "my shot.png")
	if err := os.WriteFile(dropped, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	prompt := "Why is @shots/bug.png grey, per @spec.pdf? See @notes.md, @missing.png and @fake.png.\n" + strings.ReplaceAll(dropped, " ", `\ `) + "\n@shots/bug.png again"
	shown, text, problems := app.Mentioned(root, prompt)
	if len(shown) != 3 || shown[0].MediaType != llm.MediaPNG || shown[0].Name != "shots/bug.png" || shown[1].MediaType != llm.MediaPDF || shown[2].Name != dropped {
		t.Fatalf("shown %v", shown)
	}
	if !strings.HasPrefix(text, prompt) || strings.Count(text, "Attached: ") != 3 || !strings.Contains(text, "Attached: image/png 8×6") {
		t.Errorf("text %q", text)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], "fake.png") {
		t.Errorf("problems %q", problems)
	}
	// Quoted, escaped, in brackets, or pasted as a file:// URL (as some
	// terminals paste a dropped file).
	write(t, root, "my shot.png", b.String())
	for _, p := range []string{"(see @'my shot.png')", `look at @my\ shot.png.`, `[@"my shot.png"]`, "file://" + strings.ReplaceAll(filepath.Join(root, "my shot.png"), " ", "%20")} {
		if shown, _, problems := app.Mentioned(root, p); len(shown) != 1 || shown[0].Name != "my shot.png" || len(problems) != 0 {
			t.Errorf("%s: %v %v", p, shown, problems)
		}
	}
	if shown, text, _ := app.Mentioned(root, "email me @ bob, or @someone"); len(shown) != 0 || text != "email me @ bob, or @someone" {
		t.Errorf("plain text: %v %q", shown, text)
	}
}
