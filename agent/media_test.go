package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/catalog"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/tool"
)

// What the user shows with a prompt reaches the model after its text;
// USER_PROMPT_SUBMIT hooks and turn_started's listeners get its
// description — digest, type, size, name — not its bytes.
func TestRequestMedia(t *testing.T) {
	model := script.New().Script("s", script.Text("seen"))
	rt, err := agent.New(agent.Definition{Name: "m"}, agent.Collaborators{Client: model, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var seen []llm.Attachment
	if _, err := hook.Handle(rt.Hooks(), "look", func(ctx context.Context, p *hook.UserPromptSubmitPayload) (*hook.Decision, error) {
		seen = p.Attachments
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	img := &llm.Media{MediaType: llm.MediaPNG, Data: []byte("\x89PNG\r\n\x1a\n"), Digest: "sha256:aa", Name: "a.png", Width: 2, Height: 1}
	var started *event.TurnStartedData
	_, err = agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "what is it?", Media: []*llm.Media{img},
		OnEvent: func(e event.Event) {
			if d, ok := e.Data.(*event.TurnStartedData); ok {
				started = d
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	in := model.CallsTo("s")[0].Messages[0].Content
	if len(in) != 2 || in[0].Text != "what is it?" || in[1].Type != llm.BlockImage || in[1].Media != img {
		t.Errorf("the model was sent %+v", in)
	}
	want := llm.Attachment{MediaType: llm.MediaPNG, Digest: "sha256:aa", Size: 8, Name: "a.png", Width: 2, Height: 1}
	if len(seen) != 1 || seen[0] != want {
		t.Errorf("the hook saw %+v", seen)
	}
	if started == nil || len(started.Attachments) != 1 || started.Attachments[0] != want {
		t.Errorf("turn_started %+v", started)
	}
}

// A model that takes no images refuses the request (400): the turn goes
// on with their descriptions, which say they were not shown, and the
// runtime sends that model descriptions from then on — one refusal, not
// one at every call.
func TestModelThatTakesNoImages(t *testing.T) {
	var calls []*llm.Request
	client := llm.ClientFunc(func(ctx context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Response, error) {
		calls = append(calls, req)
		for _, m := range req.Messages {
			for _, b := range m.Content {
				if b.Type == llm.BlockImage {
					return nil, &llm.Error{Kind: llm.KindInvalidRequest, Message: "image input is not supported by this model"}
				}
			}
		}
		return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("I cannot see it.")}}, StopReason: llm.StopEndTurn}, nil
	})
	rt, err := agent.New(agent.Definition{Name: "blind", Model: "text-only"}, agent.Collaborators{Client: client, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	img := &llm.Media{MediaType: llm.MediaPNG, Data: []byte("\x89PNG\r\n\x1a\n"), Digest: "sha256:aa", Name: "a.png"}
	res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "what is it?", Media: []*llm.Media{img}})
	if err != nil || res.StopReason != agent.StopAnswered {
		t.Fatalf("%+v %v", res, err)
	}
	if len(calls) != 2 || !strings.Contains(calls[1].Messages[0].Text(), "a.png") || !strings.Contains(calls[1].Messages[0].Text(), "not shown") {
		t.Fatalf("%d calls; the second said %q", len(calls), calls[len(calls)-1].Messages[0].Text())
	}
	if _, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "and now?", History: res.Messages}); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 3 {
		t.Errorf("%d calls: the model was sent the image again", len(calls))
	}
	// The conversation kept the image: another model may see it.
	if m := res.Messages[0]; len(m.Content) != 2 || m.Content[1].Media != img {
		t.Errorf("the transcript lost the image: %+v", m)
	}
}

// A tool's media that no provider takes (an SVG, media without bytes) is
// said in its result, not sent: the turn goes on.
func TestToolMediaNoProviderTakes(t *testing.T) {
	odd := tool.New("Odd", "Shows odd media.", func(ctx context.Context, in struct{}) (tool.Result, error) {
		return tool.Result{Content: "here", Media: []*llm.Media{
			{MediaType: "image/svg+xml", Data: []byte("<svg/>")},
			{MediaType: llm.MediaPNG},
			{MediaType: llm.MediaPNG, Data: []byte("\x89PNG\r\n\x1a\n"), Digest: "sha256:ok"},
		}}, nil
	})
	model := script.New().Script("s", script.Call("Odd", map[string]any{}), script.Text("done"))
	rt, err := agent.New(agent.Definition{Name: "odd", ToolProviders: []tool.Provider{tool.Static("o", odd)}}, agent.Collaborators{Client: model, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go"})
	if err != nil || res.StopReason != agent.StopAnswered {
		t.Fatalf("%+v %v", res, err)
	}
	c := model.CallsTo("s")[1].Messages[2].Content
	if r := c[0]; len(c) != 2 || c[1].Media.Digest != "sha256:ok" || c[1].ToolUseID != r.ToolUseID || strings.Count(r.Content, "[not shown: ") != 2 || !strings.Contains(r.Content, "image/svg+xml") {
		t.Errorf("the result %+v", c)
	}
}

// Media a request gives that no provider takes is refused before the
// turn, naming it — not a conversation found malformed later.
func TestRequestMediaRefused(t *testing.T) {
	rt, err := agent.New(agent.Definition{Name: "m"}, agent.Collaborators{Client: script.New(), Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	// A digest alone is refused too: it would show the model bytes the
	// store keeps for another session.
	digestOnly := &llm.Media{MediaType: llm.MediaPNG, Digest: llm.DigestOf([]byte("someone else's")), Size: 14, Name: "theirs.png"}
	for _, m := range []*llm.Media{nil, {MediaType: "image/svg+xml", Data: []byte("<svg/>"), Name: "x.svg"}, {MediaType: llm.MediaPNG, Name: "empty.png"}, digestOnly} {
		_, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "x", Media: []*llm.Media{m}})
		if err == nil || !strings.Contains(err.Error(), "media[0]") {
			t.Errorf("%v: %v", m, err)
		}
	}
}

// A model the catalog says takes no images is never sent one: a tool's
// is said in its result (no refusal first), a PDF it takes is sent; a
// request showing it an image is refused before the turn
// (ErrMediaNotTaken), naming the model.
func TestCatalogModelTakesNoImages(t *testing.T) {
	no, yes := false, true
	cat := catalog.Default().With(catalog.Model{Provider: "openai", Name: "texty", ContextWindow: 64_000, MaxOutput: 4096, Images: &no, PDFs: &yes})
	png := &llm.Media{MediaType: llm.MediaPNG, Data: []byte("\x89PNG\r\n\x1a\npixels"), Digest: "sha256:png", Name: "a.png"}
	pdf := &llm.Media{MediaType: llm.MediaPDF, Data: []byte("%PDF-1.4"), Digest: "sha256:pdf", Name: "b.pdf"}
	shows := tool.New("Shows", "Shows an image and a PDF.", func(ctx context.Context, in struct{}) (tool.Result, error) {
		return tool.Result{Content: "here", Media: []*llm.Media{png, pdf}}, nil
	})
	model := script.New().Script("s", script.Call("Shows", map[string]any{}), script.Text("done"))
	rt, err := agent.New(agent.Definition{Name: "c", Model: "texty-2026-01-01", Catalog: cat, ToolProviders: []tool.Provider{tool.Static("s", shows)}},
		agent.Collaborators{Client: model, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if d := rt.Definition(); d.ContextWindow != 64_000 || d.MaxTokens != 4096 {
		t.Errorf("window %d, max tokens %d: not the catalog's", d.ContextWindow, d.MaxTokens)
	}
	res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go"})
	if err != nil || res.StopReason != agent.StopAnswered {
		t.Fatalf("%+v %v", res, err)
	}
	calls := model.CallsTo("s")
	if len(calls) != 2 {
		t.Fatalf("%d calls (a refusal?)", len(calls))
	}
	c := calls[1].Messages[2].Content
	if len(c) != 2 || c[1].Media != pdf || c[0].Media != nil || !strings.Contains(c[0].Content, "[image/png") ||
		!strings.Contains(c[0].Content, "not shown: model texty-2026-01-01 takes no images (orca's model catalog)") {
		t.Errorf("the result sent: %+v", c)
	}

	_, err = agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s2", Input: "look", Media: []*llm.Media{pdf, png}})
	if !errors.Is(err, agent.ErrMediaNotTaken) || !strings.Contains(err.Error(), "media[1] (image/png") || !strings.Contains(err.Error(), "model texty-2026-01-01 takes no images") {
		t.Errorf("a request showing an image: %v", err)
	}
	if n := len(model.CallsTo("s2")); n != 0 {
		t.Errorf("%d model calls for the refused request", n)
	}
}
