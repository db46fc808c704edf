package agent_test

import (
	"context"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
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
