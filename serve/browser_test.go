package serve_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/serve"
)

// browserEnv set to "required" (as .ci/run sets it) makes a missing
// browser a failure instead of a skip.
const browserEnv = "ORCA_BROWSER"

// screenshotEnv names a folder where the test leaves its screenshots, for
// a person to look at.
const screenshotEnv = "ORCA_SCREENSHOTS"

// browser starts the headless browser exe for the test: its context,
// ended with the test (two minutes at most).
func browser(t *testing.T, exe string) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
		cancelAlloc()
	})
	return ctx
}

func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(browserEnv) == "required" {
		t.Fatalf("no headless browser (chromium) on PATH, and %s=required", browserEnv)
	}
	t.Skipf("no headless browser (chromium) on PATH; set %s=required to make this a failure", browserEnv)
	return ""
}

// The page in a real headless browser: sign in with the token, pick the
// session, send a message to the scripted model, watch the tool call
// appear and wait for approval, approve it from the page and see the
// turn go on: the call runs — with the control plane's story (parked,
// then allowed) on screen — and its effect is on disk.
func TestPageInABrowser(t *testing.T) {
	exe := chromium(t)
	f := newFixture(t, app.Config{}, serve.Options{TokenHint: "~/.config/custom/orca/serve-token"})
	f.model.Script("web",
		script.Response{ToolCalls: []script.ToolCall{{ID: "b1", Name: "Bash", Input: []byte(`{"command": "echo from the page > page.txt"}`)}}},
		script.Text("Ran it: **page.txt** is written, with `echo`.\n\n- one\n- two\n\n<img src=x onerror=\"document.title='pwned'\"> [docs](https://example.com/d) [bad](javascript:alert(1))"))
	f.json("POST", "/v1/sessions", `{"id": "web"}`, 201)

	ctx := browser(t, exe)

	shot := func(name string) {
		t.Helper()
		dir := os.Getenv(screenshotEnv)
		if dir == "" {
			return
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		for i, a := range actions {
			if err := chromedp.Do(ctx, a); err != nil {
				if dir := os.Getenv(screenshotEnv); dir != "" {
					if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
						os.WriteFile(filepath.Join(dir, "failed.png"), png, 0o644)
					}
				}
				t.Fatalf("in the browser, %s (step %d): %v", what, i+1, err)
			}
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("the text of %s: %v", sel, err)
		}
		return s
	}
	step("opening the page, signed out",
		chromedp.Navigate(f.http.URL+"/"),
		chromedp.WaitVisible(`#login`))
	// Signed out, the app is not drawn under the sign-in box, and the box
	// names where the token really is.
	if appShown, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`getComputedStyle(document.querySelector('#app')).display !== 'none'`)); err != nil || appShown {
		t.Errorf("signed out, the app is shown: %v", err)
	}
	if hint := text(`#token-hint`); hint != "~/.config/custom/orca/serve-token" {
		t.Errorf("the sign-in form names %q", hint)
	}
	step("signing in",
		chromedp.SendKeys(`#token`, token),
		chromedp.Click(`#login button`),
		chromedp.WaitVisible(`#sessions li[data-id="web"]`),
		chromedp.WaitVisible(`#detail`),
		chromedp.SendKeys(`#message`, "run it"),
		chromedp.Click(`#chat button`),
		chromedp.WaitVisible(`#timeline [data-tool-use-id="b1"] .badge.ask`),
		chromedp.WaitVisible(`.approval button.approve`))
	shot("1-waiting")
	step("approving and going on",
		chromedp.Click(`.approval button.approve`),
		chromedp.WaitNotPresent(`.approval`),
		chromedp.WaitVisible(`#timeline [data-tool-use-id="b1"] .badge.ok`),
		chromedp.WaitVisible(`#transcript .msg.assistant`))
	shot("2-done")
	story, transcript, status := text(`#timeline`), text(`#transcript`), text(`#status`)
	if note := text(`#chat-error`); note != "Approved: the turn goes on." {
		t.Errorf("after approving, the page says %q", note)
	}
	for _, want := range []string{"asked", "needs the user's approval", "parked approver: a person decides", "allowed by parked", "Bash echo from the page > page.txt"} {
		if !strings.Contains(story, want) {
			t.Errorf("the timeline lacks %q:\n%s", want, story)
		}
	}
	if !strings.Contains(transcript, "Ran it: page.txt is written, with echo.") || !strings.Contains(transcript, "run it") || strings.Contains(transcript, "**") {
		t.Errorf("the conversation:\n%s", transcript)
	}
	// The answer's Markdown is drawn — bold, code, a list, an http link —
	// and its HTML is text: no element the model wrote, no javascript:
	// link.
	type drawing struct {
		Strong, Code, Items, Imgs, Links int
		Href, Title                      string
	}
	drawn, err := chromedp.Run(ctx, chromedp.Evaluate[drawing](`(() => { const m = [...document.querySelectorAll('#transcript .msg.assistant')].pop();
		const a = m.querySelectorAll('a');
		return {Strong: m.querySelectorAll('strong').length, Code: m.querySelectorAll('code').length, Items: m.querySelectorAll('li').length,
			Imgs: document.querySelectorAll('#transcript img').length, Links: a.length, Href: a.length ? a[0].href : '', Title: document.title}; })()`))
	if err != nil {
		t.Fatal(err)
	}
	if drawn.Strong != 1 || drawn.Code != 1 || drawn.Items != 2 || drawn.Imgs != 0 || drawn.Links != 1 || drawn.Href != "https://example.com/d" || drawn.Title == "pwned" {
		t.Errorf("the answer is drawn as %+v", drawn)
	}
	if !strings.Contains(transcript, `<img src=x onerror=`) {
		t.Errorf("the model's HTML is not shown as text:\n%s", transcript)
	}
	// The call that waited, then ran, is one entry, done.
	if entries, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#timeline [data-tool-use-id="b1"]').length`)); err != nil || entries != 1 {
		t.Errorf("the approved call has %d entries in the timeline (%v)", entries, err)
	}
	if status != "1 session" {
		t.Errorf("status %q", status)
	}
	if b, err := os.ReadFile(filepath.Join(f.ws, "page.txt")); err != nil || string(b) != "from the page\n" {
		t.Errorf("page.txt %q, %v", b, err)
	}
}

// In a real headless browser: a picture picked with the page's file
// input goes with the message, reaches the model as an image, and the
// transcript shows it — loaded from the session's attachments, drawn at
// its size.
func TestPageSendsAndShowsAnImage(t *testing.T) {
	exe := chromium(t)
	f := newFixture(t, app.Config{}, serve.Options{})
	f.model.Script("pic", script.Text("A grey square."))
	f.json("POST", "/v1/sessions", `{"id": "pic"}`, 201)
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 30, 20))); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "square.png")
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := browser(t, exe)
	for i, a := range []chromedp.Action[chromedp.Void]{
		chromedp.Navigate(f.http.URL + "/"),
		chromedp.WaitVisible(`#login`),
		chromedp.SendKeys(`#token`, token),
		chromedp.Click(`#login button`),
		chromedp.WaitVisible(`#sessions li[data-id="pic"]`),
		chromedp.SetUploadFiles(`#attach`, []string{file}),
		chromedp.SendKeys(`#message`, "what is this?"),
		chromedp.Click(`#chat button`),
		chromedp.WaitVisible(`#transcript .msg.assistant`),
		chromedp.WaitVisible(`#transcript figure.attachment img`),
	} {
		if err := chromedp.Do(ctx, a); err != nil {
			t.Fatalf("in the browser (step %d): %v", i+1, err)
		}
	}
	// Drawn: the browser fetched and decoded it (naturalWidth is 0 for an
	// image that did not load).
	w, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(async () => {
		const img = document.querySelector('#transcript figure.attachment img');
		if (!img.complete) await new Promise((ok) => { img.addEventListener('load', ok, { once: true }); img.addEventListener('error', ok, { once: true }); });
		return img.naturalWidth;
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if w != 30 {
		t.Errorf("the image on the page is %d pixels wide, want 30", w)
	}
	calls := f.model.CallsTo("pic")
	if len(calls) != 1 {
		t.Fatalf("%d model calls", len(calls))
	}
	var sent *llm.Media
	for _, bl := range calls[0].Messages[len(calls[0].Messages)-1].Content {
		if bl.Type == llm.BlockImage {
			sent = bl.Media
		}
	}
	if sent == nil || !bytes.Equal(sent.Data, b.Bytes()) || sent.Name != "square.png" {
		t.Errorf("the model was sent %v", sent)
	}
}
