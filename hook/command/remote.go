package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/orca-agent/orca/llm"
)

// Claude Code's two other kinds of hook, answered like command hooks (the
// same input, the same decisions, the same failures):
//
//   - an http hook POSTs the input to a URL; a 2xx answer's body is the
//     decision, as a command's stdout with exit status 0 (empty: no
//     decision); any other status, a connection that fails or a timeout is
//     a hook failure, and the run goes on;
//   - a prompt hook asks a model: the prompt, with $ARGUMENTS replaced by
//     the input (or the input after it, without $ARGUMENTS), must be
//     answered with {"ok": true} or {"ok": false, "reason": …}; ok false
//     decides as exit status 2 does with the reason as stderr (block,
//     deny, or for Stop, SubagentStop and PostVerify, keep working).

// httpTarget is an http hook's URL and headers.
type httpTarget struct {
	url     string
	headers map[string]string
	// allowed are the variables the headers may name ($NAME, ${NAME}).
	allowed []string
}

// NewHTTP returns the http hook for the settings event name event: it
// POSTs the input to rawURL (http or https) with headers, in which $NAME
// and ${NAME} are replaced by the variable NAME for the names in
// allowedEnv (the settings' env block first, then orca's environment),
// and by nothing for others.
func NewHTTP(event, matcher, rawURL string, headers map[string]string, allowedEnv []string, timeout time.Duration) (*Command, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("url %q is not an http or https URL", rawURL)
	}
	c, err := newHandler(event, matcher, "POST "+rawURL, timeout)
	if err != nil {
		return nil, err
	}
	c.http = &httpTarget{url: rawURL, headers: headers, allowed: allowedEnv}
	return c, nil
}

// PromptModel is the model prompt hooks ask: a client and the model name
// (empty: the client's default).
type PromptModel struct {
	Client llm.Client
	Model  string
}

// promptTarget is a prompt hook's prompt and model.
type promptTarget struct {
	prompt string
	model  string // the hook's own, resolved; empty: the default
	ask    *PromptModel
}

// NewPrompt returns the prompt hook for the settings event name event: it
// asks m (with the hook's model if not empty) to decide on prompt.
func NewPrompt(event, matcher, prompt, model string, m *PromptModel, timeout time.Duration) (*Command, error) {
	if strings.TrimSpace(prompt) == "" {
		return nil, errors.New("the prompt is empty")
	}
	c, err := newHandler(event, matcher, "prompt: "+prompt, timeout)
	if err != nil {
		return nil, err
	}
	c.prompt = &promptTarget{prompt: prompt, model: model, ask: m}
	return c, nil
}

// runHTTP posts the input and returns the answer as a command's result.
func (c *Command) runHTTP(ctx context.Context, in []byte) (result, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.http.url, bytes.NewReader(in))
	if err != nil {
		return result{}, fmt.Errorf("http hook %s: %w", c.http.url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range c.http.headers {
		req.Header.Set(k, c.expand(v))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return result{}, fmt.Errorf("http hook %s timed out after %v", c.http.url, c.timeout())
		}
		return result{}, fmt.Errorf("http hook %s: %w", c.http.url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxOutput))
	if err != nil {
		return result{}, fmt.Errorf("http hook %s: reading the answer: %w", c.http.url, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return result{}, fmt.Errorf("http hook %s answered %s%s", c.http.url, resp.Status, detail(string(body)))
	}
	return result{code: 0, stdout: string(body)}, nil
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// expand replaces the variables a header names: the allowed ones by their
// values, the others by nothing (a header cannot reach a secret the entry
// did not list).
func (c *Command) expand(v string) string {
	return envRef.ReplaceAllStringFunc(v, func(ref string) string {
		m := envRef.FindStringSubmatch(ref)
		name := m[1] + m[2]
		if !slices.Contains(c.http.allowed, name) {
			return ""
		}
		for i := len(c.Env) - 1; i >= 0; i-- {
			if k, val, ok := strings.Cut(c.Env[i], "="); ok && k == name {
				return val
			}
		}
		return os.Getenv(name)
	})
}

// promptSystem tells the model of a prompt hook how to answer.
const promptSystem = `You decide for a hook of a coding agent's runtime. You get the hook's instructions and the hook's input (JSON). Answer with one JSON object and nothing else: {"ok": true} to let the action go ahead, or {"ok": false, "reason": "…"} to stop it, where reason tells the agent why and what to do instead.`

// runPrompt asks the model and returns its answer as a command's result:
// ok false is exit status 2 with the reason as stderr.
func (c *Command) runPrompt(ctx context.Context, in []byte) (result, error) {
	p := c.prompt
	if p.ask == nil || p.ask.Client == nil {
		return result{}, errors.New("prompt hook: no model to ask (the program gave none)")
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	text := p.prompt
	if strings.Contains(text, "$ARGUMENTS") {
		text = strings.ReplaceAll(text, "$ARGUMENTS", string(in))
	} else {
		text += "\n\nThe hook's input:\n" + string(in)
	}
	model := p.model
	if model == "" {
		model = p.ask.Model
	}
	resp, err := p.ask.Client.Generate(ctx, &llm.Request{
		Model: model, System: promptSystem, MaxTokens: 1024,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(text)}}},
		Metadata: llm.Metadata{Feature: "prompt_hook"},
	}, nil)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return result{}, fmt.Errorf("prompt hook timed out after %v", c.timeout())
		}
		return result{}, fmt.Errorf("prompt hook: asking the model: %w", err)
	}
	answer := resp.Message.Text()
	var v struct {
		OK     *bool  `json:"ok"`
		Reason string `json:"reason"`
	}
	start, end := strings.IndexByte(answer, '{'), strings.LastIndexByte(answer, '}')
	if start < 0 || end < start || json.Unmarshal([]byte(answer[start:end+1]), &v) != nil || v.OK == nil {
		return result{}, fmt.Errorf("prompt hook: the model's answer is not {\"ok\": …}: %s", clip(answer))
	}
	if *v.OK {
		return result{code: 0}, nil
	}
	reason := strings.TrimSpace(v.Reason)
	if reason == "" {
		reason = "the prompt hook's model said no"
	}
	return result{code: 2, stderr: reason}, nil
}
