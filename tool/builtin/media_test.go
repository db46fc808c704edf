package builtin

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm"
)

// Read shows the model an image or a PDF, known by its bytes: the result
// carries the media, its text says what it is, hooks get its description
// without the bytes; a file named as an image that is none is an
// observation naming it; other binary files are refused as before.
func TestReadImagesAndPDFs(t *testing.T) {
	f := newFixture(t)
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 30, 20))); err != nil {
		t.Fatal(err)
	}
	f.write("shots/bug.png", b.String())
	r := f.call("Read", map[string]any{"file_path": "shots/bug.png"})
	if r.IsError || len(r.Media) != 1 {
		t.Fatalf("%+v", r)
	}
	m := r.Media[0]
	if m.MediaType != llm.MediaPNG || !bytes.Equal(m.Data, b.Bytes()) || m.Width != 30 || m.Height != 20 || m.Digest != llm.DigestOf(b.Bytes()) {
		t.Errorf("media %s", m)
	}
	contains(t, r.Content, "shots/bug.png", "image/png 30×20")
	hook, err := json.Marshal(r.Response)
	if err != nil || !strings.Contains(string(hook), `"type":"image"`) || !strings.Contains(string(hook), m.Digest) || len(hook) > 400 {
		t.Errorf("hooks get %s (%v)", hook, err)
	}

	f.write("spec.pdf", "%PDF-1.4\n%%EOF\n")
	r = f.call("Read", map[string]any{"file_path": "spec.pdf"})
	if r.IsError || len(r.Media) != 1 || r.Media[0].MediaType != llm.MediaPDF || llm.MediaBlock(r.Media[0]).Type != llm.BlockDocument {
		t.Errorf("%+v", r)
	}

	r = f.call("Read", map[string]any{"file_path": "spec.pdf", "pages": "2-3"})
	if r.IsError || len(r.Media) != 1 || !strings.Contains(r.Content, "pages 2-3: orca sends a PDF whole") {
		t.Errorf("pages of a PDF: %+v", r)
	}
	f.write("fake.png", "I am text\n")
	f.fails(f.call("Read", map[string]any{"file_path": "fake.png"}), "fake.png", "is named as a PNG image but its bytes are not one")
	f.write("bin.dat", "abc\x00def")
	f.fails(f.call("Read", map[string]any{"file_path": "bin.dat"}), "bin.dat", "binary")
	f.write("n.txt", "%PDF is how a PDF starts\n")
	if r := f.call("Read", map[string]any{"file_path": "n.txt"}); r.IsError || len(r.Media) != 0 {
		t.Errorf("a text file about PDFs: %+v", r)
	}
}
