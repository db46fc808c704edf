package serve_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/serve"
	"github.com/orca-agent/orca/tool"
)

// In a real headless browser: an MCP server's question shows on the page
// as its form, its defaults filled in; what is typed is sent, and the
// call goes on with it; the timeline tells the question and who answered.
func TestPageAnswersElicitation(t *testing.T) {
	exe := chromium(t)
	els := serve.NewElicitations()
	f := newFixture(t, app.Config{Mode: policy.ModeBypass, Elicitor: els, ToolProviders: []tool.Provider{tool.Static("custom", book)}}, serve.Options{Elicitations: els})
	f.model.Script("web", script1...)
	f.json("POST", "/v1/sessions", `{"id": "web"}`, 201)

	ctx := browser(t, exe)
	form := `#elicitations form.elicitation`
	steps := []chromedp.Action[chromedp.Void]{
		chromedp.Navigate(f.http.URL + "/"),
		chromedp.WaitVisible(`#login`),
		chromedp.SendKeys(`#token`, token),
		chromedp.Click(`#login button`),
		chromedp.WaitVisible(`#sessions li[data-id="web"]`),
		chromedp.WaitVisible(`#detail`),
		chromedp.SendKeys(`#message`, "book a stay"),
		chromedp.Click(`#chat button`),
		chromedp.WaitVisible(form),
		chromedp.Poll[chromedp.Void](`document.querySelector('` + form + ` input[name="nights"]')?.value === '2'`),
		chromedp.SendKeys(form+` input[name="city"]`, "Oslo"),
		chromedp.Click(form + ` button.accept`),
		chromedp.Poll[chromedp.Void](`document.querySelector('#timeline [data-tool-use-id="call_1_1"] .badge')?.textContent === 'done'`),
	}
	for i, a := range steps {
		if err := chromedp.Do(ctx, a); err != nil {
			got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#session')?.textContent || ''`))
			t.Fatalf("in the browser, step %d: %v\nthe page: %s", i+1, err, got)
		}
	}
	timeline, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#timeline').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"MCP server hotel asked Where to?", "accept by web city, nights", `accept by web {"city":"Oslo","nights":2}`} {
		if !strings.Contains(timeline, want) {
			t.Errorf("the timeline lacks %q:\n%s", want, timeline)
		}
	}
	if left, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('`+form+`').length`)); left != 0 {
		t.Errorf("%d questions still shown once answered", left)
	}
}
