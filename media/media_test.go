package media_test

import (
	"bytes"
	"errors"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/media"
)

// noise is a w×h image of random pixels: what compresses worst, as a
// photo's detail does.
func noise(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = byte(r.Uint32())
	}
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i] = 255
	}
	return img
}

func encodePNG(t testing.TB, img image.Image) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeJPEG(t testing.TB, img image.Image, q int) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: q}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func decoded(t *testing.T, m *llm.Media) image.Config {
	t.Helper()
	c, format, err := image.DecodeConfig(bytes.NewReader(m.Data))
	if err != nil || "image/"+format != m.MediaType {
		t.Fatalf("the bytes sent are not the %s they say (%s, %v)", m.MediaType, format, err)
	}
	return c
}

// An image within the limits is sent as it is, named by its digest.
func TestSmallImagesAsTheyAre(t *testing.T) {
	small := encodePNG(t, noise(40, 30))
	webp, err := os.ReadFile("testdata/blue-purple-pink.lossy.webp")
	if err != nil {
		t.Fatal(err)
	}
	var g bytes.Buffer
	if err := gif.Encode(&g, noise(20, 10), nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		typ  string
		w, h int
	}{
		{"shot.png", small, llm.MediaPNG, 40, 30},
		{"a.webp", webp, llm.MediaWebP, 150, 100},
		{"anim.gif", g.Bytes(), llm.MediaGIF, 20, 10},
		{"photo.jpg", encodeJPEG(t, noise(64, 48), 90), llm.MediaJPEG, 64, 48},
	} {
		m, note, err := media.Prepare(tc.data, tc.name)
		if err != nil || note != "" {
			t.Fatalf("%s: %v %q", tc.name, err, note)
		}
		if m.MediaType != tc.typ || !bytes.Equal(m.Data, tc.data) || m.Width != tc.w || m.Height != tc.h ||
			m.Size != int64(len(tc.data)) || m.Digest != llm.DigestOf(tc.data) || m.Name != tc.name || !strings.HasPrefix(m.Digest, "sha256:") {
			t.Errorf("%s: %+v", tc.name, m)
		}
	}
}

// A photo of 19 MB is shrunk under the limit, its longer edge to
// LongEdge, and the note says so; a large PNG stays a PNG while it fits.
func TestLargeImagesShrink(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes large images")
	}
	photo := encodeJPEG(t, noise(3600, 2400), 100)
	if len(photo) < 15<<20 {
		t.Fatalf("the test photo is only %d bytes", len(photo))
	}
	m, note, err := media.Prepare(photo, "holiday.jpg")
	if err != nil {
		t.Fatal(err)
	}
	c := decoded(t, m)
	if m.MediaType != llm.MediaJPEG || len(m.Data) > media.MaxImageBytes || c.Width != media.LongEdge || c.Height != media.LongEdge*2/3 ||
		m.Width != c.Width || m.Height != c.Height || m.Digest != llm.DigestOf(m.Data) {
		t.Errorf("%s, %d×%d decoded", m, c.Width, c.Height)
	}
	if !strings.Contains(note, "3600×2400") || !strings.Contains(note, "scaled to 1568×1045") {
		t.Errorf("note %q", note)
	}

	flat := image.NewRGBA(image.Rect(0, 0, 3000, 500))
	for i := range flat.Pix {
		flat.Pix[i] = 0x80
	}
	m, note, err = media.Prepare(encodePNG(t, flat), "banner.png")
	if err != nil {
		t.Fatal(err)
	}
	if c := decoded(t, m); m.MediaType != llm.MediaPNG || c.Width != media.LongEdge || c.Height != 261 || note == "" {
		t.Errorf("%s %q", m, note)
	}
}

// A file is what its bytes are: a JPEG named .png is sent as a JPEG, with
// a note; a text file named .png, or bytes of no type it knows, are an
// error naming the file.
func TestKnownByTheirBytes(t *testing.T) {
	jpg := encodeJPEG(t, noise(10, 10), 90)
	m, note, err := media.Prepare(jpg, "shot.png")
	if err != nil || m.MediaType != llm.MediaJPEG || !strings.Contains(note, "shot.png is a JPEG image") {
		t.Errorf("%v %v %q", m, err, note)
	}
	for name, data := range map[string][]byte{
		"fake.png":  []byte("not an image at all\n"),
		"fake.pdf":  []byte("%PD nope"),
		"notes.txt": []byte("hello"),
		"blob":      {0, 1, 2, 3, 0xff},
	} {
		_, _, err := media.Prepare(data, name)
		if !errors.Is(err, media.ErrNotMedia) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, _, err := media.Prepare([]byte("\x89PNG\r\n\x1a\nbroken"), "cut.png"); err == nil || !strings.Contains(err.Error(), "cut.png") {
		t.Errorf("a broken PNG: %v", err)
	}
}

// A PDF is sent whole, up to its limit.
func TestPDF(t *testing.T) {
	pdf := []byte("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n")
	m, note, err := media.Prepare(pdf, "spec.pdf")
	if err != nil || note != "" || m.MediaType != llm.MediaPDF || !bytes.Equal(m.Data, pdf) || llm.MediaBlock(m).Type != llm.BlockDocument {
		t.Errorf("%v %q %v", m, note, err)
	}
	big := append([]byte("%PDF-1.7\n"), make([]byte, media.MaxPDFBytes)...)
	if _, _, err := media.Prepare(big, "huge.pdf"); err == nil || !strings.Contains(err.Error(), "huge.pdf") {
		t.Errorf("an oversized PDF: %v", err)
	}
}

// ReadFile: a missing path wraps fs.ErrNotExist, a folder or a FIFO is
// ErrNotFile (without blocking on the FIFO), a file is Prepare's media,
// named as asked.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := media.ReadFile(filepath.Join(dir, "nope.png"), "nope.png"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	fifo := filepath.Join(dir, "pipe.png")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, fifo} {
		if _, _, err := media.ReadFile(p, p); !errors.Is(err, media.ErrNotFile) || !strings.Contains(err.Error(), p+" is not a file") {
			t.Errorf("%s: %v", p, err)
		}
	}
	png := encodePNG(t, noise(4, 3))
	path := filepath.Join(dir, "a.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	if m, _, err := media.ReadFile(path, "shots/a.png"); err != nil || m.Name != "shots/a.png" || !bytes.Equal(m.Data, png) {
		t.Errorf("%v %v", m, err)
	}
}
