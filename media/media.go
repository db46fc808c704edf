// Package media makes files into what a model is shown: images (PNG,
// JPEG, GIF, WebP) and PDFs as llm.Media, known by their bytes, not their
// names, and images brought within what every provider takes — never sent
// larger, never dropped without a word. Read, orca run --attach, the
// chat and MCP results go through it.
package media

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/image/draw"
	"golang.org/x/image/webp"

	"github.com/orca-agent/orca/llm"
)

// Limits of what a model is sent, the strictest provider's (Anthropic's):
// an image of at most MaxImageBytes, and no longer edge than LongEdge,
// past which a model sees no more (the provider scales it down) and the
// tokens are spent for nothing; a PDF of at most MaxPDFBytes. A file of
// more than MaxInputBytes is not read at all.
const (
	MaxImageBytes = 5 << 20
	LongEdge      = 1568
	MaxPDFBytes   = 32 << 20
	MaxInputBytes = 64 << 20
)

// ErrNotMedia is the error of Prepare for bytes that are neither an image
// nor a PDF it knows.
var ErrNotMedia = errors.New("not an image or PDF")

// extensions are the names a file of each type goes by.
var extensions = map[string]string{
	".png": llm.MediaPNG, ".jpg": llm.MediaJPEG, ".jpeg": llm.MediaJPEG, ".gif": llm.MediaGIF,
	".webp": llm.MediaWebP, ".pdf": llm.MediaPDF,
}

// ErrNotFile is the error of ReadFile for a path that is not a regular
// file (a folder, a device).
var ErrNotFile = errors.New("not a file")

// CheckSize refuses a file name of size bytes larger than MaxInputBytes,
// naming it.
func CheckSize(name string, size int64) error {
	if size > MaxInputBytes {
		return fmt.Errorf("%s is %s, more than the %s a file shown to the model may be", name, llm.ByteSize(size), llm.ByteSize(MaxInputBytes))
	}
	return nil
}

// ReadFile reads the file at path, named name for the model, and makes
// it media (Prepare). A missing file is an error wrapping fs.ErrNotExist;
// a path that is no regular file, ErrNotFile; one over MaxInputBytes is
// not read.
func ReadFile(path, name string) (*llm.Media, string, error) {
	// Stat before opening: opening a FIFO would block.
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return nil, "", err
	case !fi.Mode().IsRegular():
		return nil, "", fmt.Errorf("%s is %w", path, ErrNotFile)
	}
	if err := CheckSize(name, fi.Size()); err != nil {
		return nil, "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxInputBytes+1))
	if err != nil {
		return nil, "", err
	}
	return Prepare(data, name)
}

// Named reports whether name's extension is that of a type Prepare takes
// (.png, .jpg, .jpeg, .gif, .webp, .pdf), and which.
func Named(name string) (string, bool) {
	t, ok := extensions[strings.ToLower(filepath.Ext(name))]
	return t, ok
}

// Sniff returns the media type of data by its first bytes (512 are
// enough): one of the llm.Media* types, or "".
func Sniff(data []byte) string {
	if bytes.HasPrefix(data, []byte("%PDF-")) {
		return llm.MediaPDF
	}
	switch t := http.DetectContentType(data); t {
	case llm.MediaPNG, llm.MediaJPEG, llm.MediaGIF, llm.MediaWebP:
		return t
	}
	return ""
}

// Prepare returns data, the contents of the file name, as the model is
// sent it. An image larger than the limits is scaled down (its longer
// edge to LongEdge) and encoded again — PNG kept as PNG while it fits,
// JPEG otherwise; GIF's first frame, and WebP, as PNG or JPEG — and note
// says what was done, for the model ("" when it is sent as it is). A file
// whose bytes are not what its name says is sent as what it is, with a
// note saying so; bytes that are no image or PDF are ErrNotMedia, named.
// A PDF over MaxPDFBytes, or an image that cannot be decoded, is an error
// naming the file.
func Prepare(data []byte, name string) (m *llm.Media, note string, err error) {
	if err := CheckSize(name, int64(len(data))); err != nil {
		return nil, "", err
	}
	typ := Sniff(data)
	named, hasName := Named(name)
	switch {
	case typ == "" && hasName:
		return nil, "", fmt.Errorf("%s is named as %s but its bytes are not one (%s): %w", name, article(named), describe(data), ErrNotMedia)
	case typ == "":
		return nil, "", fmt.Errorf("%s (%s): %w", name, describe(data), ErrNotMedia)
	case hasName && named != typ:
		note = fmt.Sprintf("%s is %s, whatever its name says.", name, article(typ))
	}
	m = &llm.Media{MediaType: typ, Name: name}
	if typ == llm.MediaPDF {
		if len(data) > MaxPDFBytes {
			return nil, "", fmt.Errorf("%s is a PDF of %s; a model takes PDFs of %s at most", name, llm.ByteSize(int64(len(data))), llm.ByteSize(MaxPDFBytes))
		}
		m.Data = data
		return finish(m), note, nil
	}
	cfg, _, err := decodeConfig(data, typ)
	if err != nil {
		return nil, "", fmt.Errorf("%s is %s that cannot be read: %v", name, article(typ), err)
	}
	m.Width, m.Height = cfg.Width, cfg.Height
	long := max(cfg.Width, cfg.Height)
	if len(data) <= MaxImageBytes && long <= LongEdge {
		m.Data = data
		return finish(m), note, nil
	}
	img, err := decode(data, typ)
	if err != nil {
		return nil, "", fmt.Errorf("%s is %s that cannot be read: %v", name, article(typ), err)
	}
	out, err := shrink(img, typ)
	if err != nil {
		return nil, "", fmt.Errorf("%s: the image could not be made smaller: %v", name, err)
	}
	before := fmt.Sprintf("%d×%d, %s", cfg.Width, cfg.Height, llm.ByteSize(int64(len(data))))
	m.MediaType, m.Data = out.typ, out.data
	m.Width, m.Height = out.width, out.height
	note = strings.TrimSpace(note + " " + fmt.Sprintf("The image (%s) was scaled to %d×%d, %s, to be sent.", before, out.width, out.height, llm.ByteSize(int64(len(out.data)))))
	return finish(m), note, nil
}

func finish(m *llm.Media) *llm.Media {
	m.Size = int64(len(m.Data))
	m.Digest = llm.DigestOf(m.Data)
	return m
}

func decodeConfig(data []byte, typ string) (image.Config, string, error) {
	if typ == llm.MediaWebP {
		c, err := webp.DecodeConfig(bytes.NewReader(data))
		return c, "webp", err
	}
	return image.DecodeConfig(bytes.NewReader(data))
}

func decode(data []byte, typ string) (image.Image, error) {
	r := bytes.NewReader(data)
	switch typ {
	case llm.MediaPNG:
		return png.Decode(r)
	case llm.MediaJPEG:
		return jpeg.Decode(r)
	case llm.MediaGIF:
		return gif.Decode(r) // the first frame
	case llm.MediaWebP:
		return webp.Decode(r)
	}
	return nil, fmt.Errorf("no decoder for %s", typ)
}

type encoded struct {
	typ           string
	data          []byte
	width, height int
}

// shrink scales img so that its longer edge is at most LongEdge, and
// encodes it within MaxImageBytes: as PNG when it was a PNG, GIF or WebP
// and PNG fits, as JPEG otherwise, at lower quality and then smaller
// until it fits.
func shrink(img image.Image, typ string) (encoded, error) {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w <= 0 || h <= 0 {
		return encoded{}, errors.New("the image has no pixels")
	}
	edge := min(max(w, h), LongEdge)
	for {
		sw, sh := scaled(w, h, edge)
		dst := image.NewRGBA(image.Rect(0, 0, sw, sh))
		if sw == w && sh == h {
			draw.Draw(dst, dst.Bounds(), img, b.Min, draw.Src)
		} else {
			draw.CatmullRom.Scale(dst, dst.Bounds(), img, b, draw.Src, nil)
		}
		if typ != llm.MediaJPEG {
			var buf bytes.Buffer
			if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, dst); err != nil {
				return encoded{}, err
			}
			if buf.Len() <= MaxImageBytes {
				return encoded{llm.MediaPNG, buf.Bytes(), sw, sh}, nil
			}
		}
		// JPEG has no transparency: what was transparent becomes white.
		flat := image.NewRGBA(dst.Bounds())
		draw.Draw(flat, flat.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
		draw.Draw(flat, flat.Bounds(), dst, image.Point{}, draw.Over)
		for _, q := range []int{85, 70, 50} {
			var buf bytes.Buffer
			if err := jpeg.Encode(&buf, flat, &jpeg.Options{Quality: q}); err != nil {
				return encoded{}, err
			}
			if buf.Len() <= MaxImageBytes {
				return encoded{llm.MediaJPEG, buf.Bytes(), sw, sh}, nil
			}
		}
		if edge <= 64 {
			return encoded{}, errors.New("it does not fit even at 64 pixels")
		}
		edge = edge * 3 / 4
	}
}

// scaled returns w×h scaled so that the longer edge is edge (never
// larger than it was).
func scaled(w, h, edge int) (int, int) {
	if max(w, h) <= edge {
		return w, h
	}
	if w >= h {
		return edge, max(1, h*edge/w)
	}
	return max(1, w*edge/h), edge
}

// describe says what data is instead, for an error.
func describe(data []byte) string {
	t := http.DetectContentType(data)
	if t == "application/octet-stream" {
		return "binary data"
	}
	return t
}

func article(typ string) string {
	switch typ {
	case llm.MediaPNG:
		return "a PNG image"
	case llm.MediaJPEG:
		return "a JPEG image"
	case llm.MediaGIF:
		return "a GIF image"
	case llm.MediaWebP:
		return "a WebP image"
	case llm.MediaPDF:
		return "a PDF"
	}
	return typ
}

// Attached is the line that tells the model, with the user's message,
// what m is and what Prepare did to it (note): "Attached: image/png
// 40×30, 2 KB (screen.png)".
func Attached(m *llm.Media, note string) string {
	line := "Attached: " + m.String()
	if note != "" {
		line += ". " + note
	}
	return line
}
