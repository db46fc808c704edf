package serve_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/serve"
	"github.com/orca-agent/orca/tool"
)

// In a real headless browser: a running call's progress (tool_progress,
// from the session's event stream) is on its badge while it runs, and
// the badge says done once it has ended.
func TestPageShowsProgress(t *testing.T) {
	exe := chromium(t)
	release := make(chan struct{})
	index := tool.New("Index", "Indexes the workspace.", func(ctx context.Context, _ struct{}) (string, error) {
		tool.Report(ctx, tool.Progress{Progress: 2, Total: 5, Message: "indexing src"})
		select {
		case <-release:
			return "indexed", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}, tool.ReadOnly(), tool.Reports())
	f := newFixture(t, app.Config{ToolProviders: []tool.Provider{tool.Static("custom", index)}}, serve.Options{})
	f.model.Script("web",
		script.Response{ToolCalls: []script.ToolCall{{ID: "p1", Name: "Index", Input: []byte(`{}`)}}},
		script.Text("Indexed."))
	f.json("POST", "/v1/sessions", `{"id": "web"}`, 201)

	ctx := browser(t, exe)
	badge := `document.querySelector('#timeline [data-tool-use-id="p1"] .badge')`
	steps := []chromedp.Action[chromedp.Void]{
		chromedp.Navigate(f.http.URL + "/"),
		chromedp.WaitVisible(`#login`),
		chromedp.SendKeys(`#token`, token),
		chromedp.Click(`#login button`),
		chromedp.WaitVisible(`#sessions li[data-id="web"]`),
		chromedp.WaitVisible(`#detail`),
		chromedp.SendKeys(`#message`, "index it"),
		chromedp.Click(`#chat button`),
		chromedp.Poll[chromedp.Void](badge + `?.textContent === 'running · 2/5 indexing src'`),
	}
	for i, a := range steps {
		if err := chromedp.Do(ctx, a); err != nil {
			got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#timeline')?.textContent || ''`))
			t.Fatalf("in the browser, step %d: %v\nthe timeline: %s", i+1, err, got)
		}
	}
	close(release)
	if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](badge+`?.textContent === 'done'`)); err != nil {
		t.Fatalf("the call's end: %v", err)
	}
}
