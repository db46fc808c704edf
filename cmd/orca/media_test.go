package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/llm/anthropic"
	"github.com/orca-agent/orca/llm/openai"
	"github.com/orca-agent/orca/media"
	"github.com/orca-agent/orca/media/pdf"
	"github.com/orca-agent/orca/media/pdf/pdftest"
)

func pngOf(t *testing.T, w, h int) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The model sees what the files show: orca run --attach of an image, and
// Read of a PNG and of two pages of a 30-page PDF, put their bytes in the
// request in the form each API takes (Anthropic: image and document
// blocks, in the user's message and inside tool_result; OpenAI: image_url
// and file parts with data URLs, a tool's after its tool messages) — the
// PDF's the two pages asked for, cut out as a PDF of their own.
func TestRunShowsImagesAndPDFs(t *testing.T) {
	shot := pngOf(t, 40, 30)
	doc := pdftest.Document(30)
	reads := []reply{
		{tool: "Read", input: `{"file_path":"bug.png"}`},
		{tool: "Read", input: `{"file_path":"spec.pdf","pages":"7-8"}`},
		{text: "The button is grey."},
	}
	for _, anthropicAPI := range []bool{true, false} {
		name := map[bool]string{true: "anthropic", false: "openai"}[anthropicAPI]
		t.Run(name, func(t *testing.T) {
			t.Setenv(anthropic.APIKeyEnv, "sk-ant-test")
			t.Setenv(anthropic.BaseURLEnv, "")
			t.Setenv(openai.APIKeyEnv, "")
			api := newFakeModelAPI(t, anthropicAPI, reads...)
			ws := t.TempDir()
			for file, data := range map[string][]byte{"bug.png": shot, "spec.pdf": doc} {
				if err := os.WriteFile(filepath.Join(ws, file), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			attached := filepath.Join(t.TempDir(), "screen.png")
			if err := os.WriteFile(attached, shot, 0o644); err != nil {
				t.Fatal(err)
			}
			base := api.URL
			if !anthropicAPI {
				base += "/v1"
			}
			o := options{configDir: t.TempDir(), getenv: noEnv}
			stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", name, "--base-url", base, "--model", "vision-model",
				"-w", ws, "--json", "--attach", attached, "Why is the button grey?")
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			reqs := api.seen()
			if len(reqs) != 3 {
				t.Fatalf("%d requests", len(reqs))
			}
			b64 := base64.StdEncoding.EncodeToString(shot)
			var attachForm, readForm, pdfForm string
			if anthropicAPI {
				attachForm = `{"source":{"data":"` + b64 + `","media_type":"image/png","type":"base64"},"type":"image"}`
				readForm = `"type":"tool_result"`
				pdfForm = `"media_type":"application/pdf","type":"base64"},"title":"spec.pdf","type":"document"}`
			} else {
				attachForm = `{"image_url":{"url":"data:image/png;base64,` + b64 + `"},"type":"image_url"}`
				readForm = `"The result of tool call`
				pdfForm = `"filename":"spec.pdf"},"type":"file"}`
			}
			first, second, third := reqs[0].raw, reqs[1].raw, reqs[2].raw
			if !strings.Contains(first, attachForm) || !strings.Contains(first, "Attached: image/png 40×30") {
				t.Errorf("the attachment is not in the first request as the API takes it:\n%s", first)
			}
			if !strings.Contains(second, readForm) || strings.Count(second, b64) != 2 {
				t.Errorf("Read's image is not in the second request (%d copies):\n%s", strings.Count(second, b64), second)
			}
			if !strings.Contains(third, pdfForm) || !strings.Contains(third, "pages 7-8 of 30") {
				t.Fatalf("Read's PDF is not in the third request:\n%s", third)
			}
			sent := sentPDF(t, third)
			d, err := pdf.Read(sent)
			if err != nil || d.Pages() != 2 || !bytes.Contains(sent, []byte("(orca page 7)")) || !bytes.Contains(sent, []byte("(orca page 8)")) || bytes.Contains(sent, []byte("(orca page 9)")) {
				t.Errorf("the PDF sent is not pages 7-8 (%v):\n%.400s", err, sent)
			}
		})
	}
}

// A photo too large for any provider is scaled down before it is sent;
// a file that is not what its name says is refused, naming it, before
// anything is sent.
func TestAttachLargeAndFalse(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes a large photo")
	}
	t.Setenv(anthropic.APIKeyEnv, "sk-ant-test")
	t.Setenv(anthropic.BaseURLEnv, "")
	api := newFakeModelAPI(t, true, reply{text: "A beach."})
	img := image.NewRGBA(image.Rect(0, 0, 3600, 2400))
	r := rand.New(rand.NewPCG(3, 4))
	for i := range img.Pix {
		img.Pix[i] = byte(r.Uint32())
	}
	var photo bytes.Buffer
	if err := jpeg.Encode(&photo, img, &jpeg.Options{Quality: 100}); err != nil {
		t.Fatal(err)
	}
	if photo.Len() < 15<<20 {
		t.Fatalf("the photo is only %d bytes", photo.Len())
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "beach.jpg")
	if err := os.WriteFile(path, photo.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	o := options{configDir: t.TempDir(), getenv: noEnv}
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "anthropic", "--base-url", api.URL, "-w", t.TempDir(), "--attach", path, "What is this?")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	raw := api.seen()[0].raw
	if len(raw) > media.MaxImageBytes*4/3+64<<10 || !strings.Contains(raw, `"media_type":"image/jpeg"`) || !strings.Contains(raw, "scaled to 1568×1045") {
		t.Errorf("the request is %d bytes (the photo %d): %.300s", len(raw), photo.Len(), raw)
	}

	fake := filepath.Join(dir, "fake.png")
	os.WriteFile(fake, []byte("just text"), 0o644)
	before := len(api.seen())
	_, stderr, code = orcaWith(t, t.Context(), o, "", "run", "--provider", "anthropic", "--base-url", api.URL, "-w", t.TempDir(), "--attach", fake, "What is this?")
	if code != 2 || !strings.Contains(stderr, "fake.png is named as a PNG image but its bytes are not one") || len(api.seen()) != before {
		t.Errorf("exit %d, %d requests: %s", code, len(api.seen())-before, stderr)
	}
	_, stderr, code = orcaWith(t, t.Context(), o, "", "run", "--provider", "anthropic", "--base-url", api.URL, "-w", t.TempDir(), "--attach", filepath.Join(dir, "missing.png"), "x")
	if code != 2 || !strings.Contains(stderr, "missing.png") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// An image read four times is kept once: the session store's size says
// so, and the session resumes with it — its bytes come back from the
// store, and the next turn's request carries them again.
func TestStoreKeepsAnImageOnce(t *testing.T) {
	ws := t.TempDir()
	img := image.NewRGBA(image.Rect(0, 0, 700, 560))
	r := rand.New(rand.NewPCG(5, 6))
	for i := range img.Pix {
		img.Pix[i] = byte(r.Uint32())
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	if b.Len() < 1<<20 || b.Len() > media.MaxImageBytes {
		t.Fatalf("the image is %d bytes", b.Len())
	}
	if err := os.WriteFile(filepath.Join(ws, "big.png"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(anthropic.APIKeyEnv, "sk-ant-test")
	t.Setenv(anthropic.BaseURLEnv, "")
	read := reply{tool: "Read", input: `{"file_path":"big.png"}`}
	api := newFakeModelAPI(t, true, read, read, read, read, reply{text: "Four times the same."}, reply{text: "Still the same."})
	o := options{configDir: t.TempDir(), getenv: noEnv}
	run := func(args ...string) {
		t.Helper()
		stdout, stderr, code := orcaWith(t, t.Context(), o, "", append([]string{"run", "--provider", "anthropic", "--base-url", api.URL, "-w", ws, "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
	}
	run("--session", "img", "Read big.png four times")
	var size int64
	for _, f := range []string{"orca.db", "orca.db-wal"} {
		if fi, err := os.Stat(filepath.Join(ws, ".orca", f)); err == nil {
			size += fi.Size()
		}
	}
	if size > int64(b.Len())*3/2 || size < int64(b.Len()) {
		t.Errorf("the store is %d bytes for an image of %d read four times", size, b.Len())
	}
	// The next turn of the session is sent the image again, from the store.
	run("--session", "img", "Still there?")
	reqs := api.seen()
	if n := strings.Count(reqs[len(reqs)-1].raw, base64.StdEncoding.EncodeToString(b.Bytes())); len(reqs) != 6 || n != 4 {
		t.Errorf("%d requests; the resumed turn's carries the image %d times", len(reqs), n)
	}
	// The timeline and orca sessions show name it, without its bytes.
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "timeline", "--session", "img", "-w", ws)
	if code != 0 || !strings.Contains(stdout, "[image 700×560 png, ") {
		t.Errorf("timeline: exit %d\n%.3000s\n%s", code, stdout, stderr)
	}
	stdout, stderr, code = orcaWith(t, t.Context(), o, "", "sessions", "show", "img", "-w", ws, "--json")
	if code != 0 || strings.Count(stdout, `"digest": "sha256:`) != 4 || strings.Contains(stdout, base64.StdEncoding.EncodeToString(b.Bytes()[:60])) {
		t.Errorf("sessions show --json: exit %d, %d attachments\n%.2000s\n%s", code, strings.Count(stdout, `"digest": "sha256:`), stdout, stderr)
	}
	stdout, stderr, code = orcaWith(t, t.Context(), o, "", "sessions", "show", "img", "-w", ws)
	if code != 0 || strings.Count(stdout, "[image 700×560 png, ") != 4 || !strings.Contains(stdout, ": big.png]") || len(stdout) > 20000 {
		t.Errorf("sessions show: exit %d\n%.3000s\n%s", code, stdout, stderr)
	}
}

// orca run's prompt mentioning @bug.png, and a path pasted into orca chat
// on a line of its own, show the image to the model.
func TestMentionAndPaste(t *testing.T) {
	t.Setenv(openai.APIKeyEnv, "")
	shot := pngOf(t, 12, 9)
	b64 := base64.StdEncoding.EncodeToString(shot)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "bug.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	o := options{configDir: t.TempDir(), getenv: noEnv}
	api := newFakeModelAPI(t, false, reply{text: "Grey."})
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "openai", "--base-url", api.URL+"/v1", "--model", "m", "-w", ws, "Why is @bug.png grey?")
	if code != 0 || !strings.Contains(api.seen()[0].raw, "data:image/png;base64,"+b64) {
		t.Errorf("run: exit %d %s %s; request %.500s", code, stdout, stderr, api.seen()[0].raw)
	}
	pasted := filepath.Join(t.TempDir(), "drop me.png")
	if err := os.WriteFile(pasted, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	api = newFakeModelAPI(t, false, reply{text: "Grey."})
	stdout, stderr, code = orcaWith(t, t.Context(), o, "'"+pasted+"'\n/exit\n", "chat", "--provider", "openai", "--base-url", api.URL+"/v1", "--model", "m", "-w", ws)
	if code != 0 || len(api.seen()) != 1 || !strings.Contains(api.seen()[0].raw, "data:image/png;base64,"+b64) || !strings.Contains(stdout, "Attached [image 12×9 png") {
		t.Errorf("chat: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// sentPDF returns the bytes of the one PDF a request body carries: an
// Anthropic document block's base64 data, or an OpenAI file part's data
// URL.
func sentPDF(t *testing.T, body string) []byte {
	t.Helper()
	var b64 string
	if _, rest, ok := strings.Cut(body, "data:application/pdf;base64,"); ok {
		b64, _, _ = strings.Cut(rest, `"`)
	} else if before, _, ok := strings.Cut(body, `","media_type":"application/pdf"`); ok {
		b64 = before[strings.LastIndex(before, `"`)+1:]
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(data) == 0 {
		t.Fatalf("no PDF in the request (%v)", err)
	}
	return data
}

// orca chat's /paste attaches the image on the system clipboard — a real
// X11 clipboard (Xvfb's, started by .ci/run: ORCA_TEST_DISPLAY), the
// image put there with xclip as a screenshot tool does — to the next
// message, whose request carries its bytes; with text on the clipboard it
// says there is no image, and sends nothing.
func TestChatPastesClipboardImage(t *testing.T) {
	display := os.Getenv("ORCA_TEST_DISPLAY")
	if display == "" {
		t.Skip("ORCA_TEST_DISPLAY is not set: it names an X display (Xvfb :99 -nolisten tcp) whose clipboard the test uses; .ci/run starts one")
	}
	needPrograms(t, "xclip")
	t.Setenv("DISPLAY", display)
	t.Setenv("WAYLAND_DISPLAY", "")
	t.Setenv(openai.APIKeyEnv, "")
	shot := pngOf(t, 14, 11)
	file := filepath.Join(t.TempDir(), "shot.png")
	if err := os.WriteFile(file, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	// xclip owns the clipboard while it runs (-quiet: in the foreground).
	own := func(args ...string) {
		t.Helper()
		ctx, cancel := context.WithCancel(t.Context())
		cmd := exec.CommandContext(ctx, "xclip", append([]string{"-quiet", "-selection", "clipboard"}, args...)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); cmd.Wait() })
		// Owned once xclip answers for it.
		for range 100 {
			if out, _ := exec.Command("xclip", "-selection", "clipboard", "-t", "TARGETS", "-o").Output(); len(out) > 0 {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("xclip did not take the clipboard")
	}
	own("-t", "image/png", "-i", file)

	o := options{configDir: t.TempDir(), getenv: noEnv}
	api := newFakeModelAPI(t, false, reply{text: "A small black square."})
	stdout, stderr, code := orcaWith(t, t.Context(), o, "/paste\nWhat is this?\n/exit\n", "chat", "--provider", "openai", "--base-url", api.URL+"/v1", "--model", "m", "-w", t.TempDir())
	b64 := base64.StdEncoding.EncodeToString(shot)
	if code != 0 || len(api.seen()) != 1 || !strings.Contains(api.seen()[0].raw, "data:image/png;base64,"+b64) || !strings.Contains(api.seen()[0].raw, "What is this?") ||
		!strings.Contains(stdout, "Attached [image 14×11 png") || !strings.Contains(stdout, "clipboard") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	own("-i", "/dev/null") // text now
	api = newFakeModelAPI(t, false, reply{text: "Hello."})
	stdout, stderr, code = orcaWith(t, t.Context(), o, "/paste\nhi\n/exit\n", "chat", "--provider", "openai", "--base-url", api.URL+"/v1", "--model", "m", "-w", t.TempDir())
	if code != 0 || !strings.Contains(stdout, "The clipboard holds no image") || len(api.seen()) != 1 || strings.Contains(api.seen()[0].raw, "image_url") {
		t.Errorf("text on the clipboard: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// A model orca's catalog says takes no images (deepseek-v4-pro, through the
// OpenAI shape) is never sent one: --attach of an image is a usage error
// naming the model, before any request; Read of an image puts a line
// saying it was not shown in the tool's result, with no refusal first.
func TestRunModelThatTakesNoImages(t *testing.T) {
	t.Setenv(openai.APIKeyEnv, "")
	shot := pngOf(t, 16, 12)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "bug.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	o := options{configDir: t.TempDir(), getenv: noEnv}
	api := newFakeModelAPI(t, false, reply{text: "never"})
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "openai", "--base-url", api.URL+"/v1", "--model", "deepseek-v4-pro", "-w", ws,
		"--attach", filepath.Join(ws, "bug.png"), "What is this?")
	if code != exitUsage || !strings.Contains(stderr, "model deepseek-v4-pro takes no images (orca's model catalog)") || len(api.seen()) != 0 {
		t.Errorf("--attach: exit %d, %d requests\nstdout:\n%s\nstderr:\n%s", code, len(api.seen()), stdout, stderr)
	}

	api = newFakeModelAPI(t, false, reply{tool: "Read", input: `{"file_path":"bug.png"}`}, reply{text: "I cannot see it."})
	stdout, stderr, code = orcaWith(t, t.Context(), o, "", "run", "--provider", "openai", "--base-url", api.URL+"/v1", "--model", "deepseek-v4-pro", "-w", ws, "Read bug.png")
	reqs := api.seen()
	if code != 0 || len(reqs) != 2 {
		t.Fatalf("Read: exit %d, %d requests\nstdout:\n%s\nstderr:\n%s", code, len(reqs), stdout, stderr)
	}
	if second := reqs[1].raw; strings.Contains(second, "image_url") || strings.Contains(second, base64.StdEncoding.EncodeToString(shot)) ||
		!strings.Contains(second, "not shown: model deepseek-v4-pro takes no images (orca's model catalog)") {
		t.Errorf("the second request:\n%s", second)
	}
}
