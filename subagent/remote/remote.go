// Package remote runs the tasks of subagents that are remote A2A agents
// (subagent.Definition.Remote), on the A2A project's Go SDK: the agent's
// card is read from its address, the prompt sent as a new task (streamed
// where the card says the agent streams), and the task's answer — its
// artifacts' text, else its last message — returned; what the agent
// reports as it works is told to progress.
package remote

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/orca-agent/orca/subagent"
)

// A2A is the subagent.Remote of A2A agents.
type A2A struct {
	// HTTP makes the requests (http.DefaultClient if nil).
	HTTP *http.Client
}

var _ subagent.Remote = A2A{}

// headers adds a definition's headers to every request.
type headers struct {
	base http.RoundTripper
	h    map[string]string
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

// Ask runs prompt as a new task of def's agent.
func (x A2A) Ask(ctx context.Context, def subagent.Definition, prompt string, progress func(string)) (string, error) {
	hc := cmp.Or(x.HTTP, http.DefaultClient)
	if len(def.Headers) > 0 {
		c := *hc
		c.Transport = headers{base: cmp.Or[http.RoundTripper](hc.Transport, http.DefaultTransport), h: def.Headers}
		hc = &c
	}
	card, err := agentcard.NewResolver(hc).Resolve(ctx, def.Remote)
	if err != nil {
		return "", fmt.Errorf("the remote agent %s (%s): its card: %v", def.Name, def.Remote, err)
	}
	client, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(hc), a2aclient.WithRESTTransport(hc))
	if err != nil {
		return "", fmt.Errorf("the remote agent %s (%s): %v", def.Name, def.Remote, err)
	}
	defer client.Destroy()
	req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(prompt))}
	var task *a2a.Task
	var answer []string
	var last string
	if card.Capabilities.Streaming {
		for ev, err := range client.SendStreamingMessage(ctx, req) {
			if err != nil {
				return "", fmt.Errorf("the remote agent %s: %v", def.Name, err)
			}
			switch e := ev.(type) {
			case *a2a.Task:
				task = e
			case *a2a.Message:
				last = textOf(e.Parts)
			case *a2a.TaskStatusUpdateEvent:
				if e.Status.Message != nil {
					if t := textOf(e.Status.Message.Parts); t != "" {
						last = t
						progress(t)
					}
				}
				if task == nil {
					task = &a2a.Task{ID: e.TaskID}
				}
				task.Status = e.Status
			case *a2a.TaskArtifactUpdateEvent:
				if t := textOf(e.Artifact.Parts); t != "" {
					answer = append(answer, t)
				}
			}
		}
	} else {
		res, err := client.SendMessage(ctx, req)
		if err != nil {
			return "", fmt.Errorf("the remote agent %s: %v", def.Name, err)
		}
		switch r := res.(type) {
		case *a2a.Message:
			return textOf(r.Parts), nil
		case *a2a.Task:
			task = r
			for _, a := range r.Artifacts {
				if t := textOf(a.Parts); t != "" {
					answer = append(answer, t)
				}
			}
			if r.Status.Message != nil {
				last = textOf(r.Status.Message.Parts)
			}
		}
	}
	if task == nil {
		if last == "" {
			return "", fmt.Errorf("the remote agent %s answered nothing", def.Name)
		}
		return last, nil
	}
	switch task.Status.State {
	case a2a.TaskStateCompleted:
		if len(answer) == 0 {
			return last, nil
		}
		return strings.Join(answer, "\n\n"), nil
	case a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired:
		return "", fmt.Errorf("the remote agent %s wants more than the prompt (its task %s is %s): %s", def.Name, task.ID, state(task.Status.State), cmp.Or(last, "it said nothing more"))
	}
	return "", fmt.Errorf("the remote agent %s: its task %s ended %s: %s", def.Name, task.ID, state(task.Status.State), cmp.Or(last, "no reason given"))
}

// state is a task state as people write it: "failed", "input required".
func state(s a2a.TaskState) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(string(s), "TASK_STATE_")), "_", " ")
}

func textOf(parts a2a.ContentParts) string {
	var out []string
	for _, p := range parts {
		if t := p.Text(); t != "" {
			out = append(out, t)
		}
	}
	return strings.Join(out, "\n")
}
