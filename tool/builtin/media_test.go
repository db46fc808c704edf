package builtin

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/media/pdf"
	"github.com/orca-agent/orca/media/pdf/pdftest"
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

	// A PDF a PDF library cannot read is still shown whole, saying so.
	f.write("odd.pdf", "%PDF-1.4\n%%EOF\n")
	r = f.call("Read", map[string]any{"file_path": "odd.pdf"})
	if r.IsError || len(r.Media) != 1 || r.Media[0].MediaType != llm.MediaPDF || llm.MediaBlock(r.Media[0]).Type != llm.BlockDocument || !strings.Contains(r.Content, "pages not counted") {
		t.Errorf("%+v", r)
	}
	f.fails(f.call("Read", map[string]any{"file_path": "odd.pdf", "pages": "2"}), "odd.pdf", `pages "2" cannot be cut out`, "without pages")
	f.write("fake.png", "I am text\n")
	f.fails(f.call("Read", map[string]any{"file_path": "fake.png"}), "fake.png", "is named as a PNG image but its bytes are not one")
	f.write("bin.dat", "abc\x00def")
	f.fails(f.call("Read", map[string]any{"file_path": "bin.dat"}), "bin.dat", "binary")
	f.write("n.txt", "%PDF is how a PDF starts\n")
	if r := f.call("Read", map[string]any{"file_path": "n.txt"}); r.IsError || len(r.Media) != 0 {
		t.Errorf("a text file about PDFs: %+v", r)
	}
}

// Read shows a PDF of up to 10 pages whole, and of a longer one the pages
// asked for, cut out as a PDF of their own (at most 20 at a time); a long
// PDF without pages, or pages it lacks, is an observation saying what to
// ask for.
func TestReadPDFPages(t *testing.T) {
	f := newFixture(t)
	short, long := pdftest.Document(3), pdftest.Document(64)
	f.write("short.pdf", string(short))
	f.write("docs/long.pdf", string(long))

	r := f.call("Read", map[string]any{"file_path": "short.pdf"})
	if r.IsError || len(r.Media) != 1 || !bytes.Equal(r.Media[0].Data, short) {
		t.Fatalf("a short PDF: %+v", r)
	}
	contains(t, r.Content, "short.pdf: 3 pages, application/pdf")

	f.fails(f.call("Read", map[string]any{"file_path": "docs/long.pdf"}), "docs/long.pdf is a PDF of 64 pages", `pages ("1-20", then "21-40"`)
	r = f.call("Read", map[string]any{"file_path": "docs/long.pdf", "pages": "2-3,40"})
	if r.IsError || len(r.Media) != 1 {
		t.Fatalf("pages of a long PDF: %+v", r)
	}
	contains(t, r.Content, "docs/long.pdf: pages 2-3, 40 of 64, application/pdf")
	m := r.Media[0]
	d, err := pdf.Read(m.Data)
	if err != nil || d.Pages() != 3 || m.Digest != llm.DigestOf(m.Data) || m.Size != int64(len(m.Data)) {
		t.Fatalf("the pages sent: %v, %s", err, m)
	}
	for _, want := range []string{"orca page 2", "orca page 3", "orca page 40"} {
		if !bytes.Contains(m.Data, []byte(want)) {
			t.Errorf("the pages sent lack %q", want)
		}
	}
	if bytes.Contains(m.Data, []byte("orca page 1)")) || bytes.Contains(m.Data, []byte("orca page 4)")) {
		t.Error("the pages sent hold pages not asked for")
	}
	hook, _ := json.Marshal(r.Response)
	if !strings.Contains(string(hook), `"pageCount":64,"pages":"2-3, 40"`) {
		t.Errorf("hooks get %s", hook)
	}
	f.fails(f.call("Read", map[string]any{"file_path": "docs/long.pdf", "pages": "70"}), `pages "70": the document has 64 pages`)
	f.fails(f.call("Read", map[string]any{"file_path": "docs/long.pdf", "pages": "1-64"}), "at most 20 at a time")
	f.fails(f.call("Read", map[string]any{"file_path": "docs/long.pdf", "pages": "first"}), `"first" is not a page number`)

	r = f.call("Read", map[string]any{"file_path": "short.pdf", "pages": "1-3"})
	if r.IsError || !bytes.Equal(r.Media[0].Data, short) {
		t.Errorf("all the pages of a PDF: %+v", r)
	}
}
