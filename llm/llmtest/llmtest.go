// Package llmtest is the conformance kit of llm.Client, beside its contract
// (as testing/slogtest is slog's): a provider's tests run TestClient against
// a harness that serves each case — from a local HTTP server, say — without
// linking the rest of the runtime.
package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/llm"
)

// ClientCase is what one conformance case needs from the client under test.
type ClientCase struct {
	// Response is the answer the client must give to every call (its
	// Message, StopReason and Usage are compared; Model is not).
	Response llm.Response
	// Err, when set, is one of llm's sentinel errors: every call must fail
	// with an error that matches it under errors.Is.
	Err error
}

// ClientHarness builds the client under test for one case: a client that
// answers every call as c says (a provider's harness serves the case from a
// local HTTP server). seen, if non-nil, returns the requests the model side
// received so far, decoded back into llm form, so that the suite can check
// what reached the wire.
type ClientHarness func(t *testing.T, c ClientCase) (client llm.Client, seen func() []*llm.Request)

// TestClient runs the llm.Client conformance suite against the clients h
// builds: text and tool-use responses, streaming deltas that add up to the
// final message, usage and stop reasons, typed errors, cancellation,
// concurrent use, and requests left unmodified.
func TestClient(t *testing.T, h ClientHarness) { TestClientLacking(t, h, Lacks{}) }

// Lacks says what a provider's API cannot carry, which the suite then
// does not ask of the client.
type Lacks struct {
	// CacheWrites: the API's usage does not count tokens written to a
	// prompt cache (Gemini's, OpenAI's Responses).
	CacheWrites bool
}

// TestClientLacking runs TestClient's suite, asking nothing of the client
// that lacks says its API cannot carry.
func TestClientLacking(t *testing.T, h ClientHarness, lacks Lacks) {
	t.Run("Text", func(t *testing.T) {
		want := llm.Response{
			Message:    llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("Hello from the model.")}},
			StopReason: llm.StopEndTurn,
			Usage:      llm.Usage{InputTokens: 12, OutputTokens: 5, CacheReadTokens: 3, CacheWriteTokens: 2},
		}
		if lacks.CacheWrites {
			want.Usage.CacheWriteTokens = 0
		}
		c, seen := h(t, ClientCase{Response: want})
		req := sampleRequest()
		got, deltas := generate(t, c, req)
		checkResponse(t, got, want)
		CheckDeltas(t, got, deltas)
		if seen != nil {
			checkSeen(t, seen, req)
		}
	})
	t.Run("ToolUse", func(t *testing.T) {
		want := llm.Response{
			Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
				llm.TextBlock("Let me look."),
				llm.ToolUseBlock("toolu_1", "Read", json.RawMessage(`{"file_path":"a.go","limit":10}`)),
				llm.ToolUseBlock("toolu_2", "Grep", json.RawMessage(`{"pattern":"func main"}`)),
			}},
			StopReason: llm.StopToolUse,
			Usage:      llm.Usage{InputTokens: 40, OutputTokens: 20},
		}
		c, _ := h(t, ClientCase{Response: want})
		got, deltas := generate(t, c, sampleRequest())
		checkResponse(t, got, want)
		CheckDeltas(t, got, deltas)
	})
	t.Run("NilOnDelta", func(t *testing.T) {
		want := llm.Response{
			Message:    llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("ok")}},
			StopReason: llm.StopEndTurn,
		}
		c, _ := h(t, ClientCase{Response: want})
		got, err := c.Generate(context.Background(), sampleRequest(), nil)
		if err != nil {
			t.Fatalf("Generate with nil onDelta: %v", err)
		}
		checkResponse(t, got, want)
	})
	t.Run("RequestUnmodified", func(t *testing.T) {
		c, _ := h(t, ClientCase{Response: llm.Response{
			Message:    llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("ok")}},
			StopReason: llm.StopEndTurn,
		}})
		req := sampleRequest()
		before, _ := json.Marshal(req)
		if _, err := c.Generate(context.Background(), req, nil); err != nil {
			t.Fatalf("Generate: %v", err)
		}
		after, _ := json.Marshal(req)
		if !bytes.Equal(before, after) {
			t.Errorf("Generate modified the request:\nbefore %s\nafter  %s", before, after)
		}
	})
	t.Run("Errors", func(t *testing.T) {
		for _, tc := range []struct {
			err       error
			retryable bool
		}{
			{llm.ErrPromptTooLong, false},
			{llm.ErrRateLimited, true},
			{llm.ErrOverloaded, true},
			{llm.ErrAuthentication, false},
			{llm.ErrInvalidRequest, false},
		} {
			t.Run(string(tc.err.(*llm.Error).Kind), func(t *testing.T) {
				c, _ := h(t, ClientCase{Err: tc.err})
				resp, err := c.Generate(context.Background(), sampleRequest(), nil)
				if err == nil {
					t.Fatalf("Generate succeeded (%v), want an error matching %v", resp, tc.err)
				}
				if !errors.Is(err, tc.err) {
					t.Errorf("error %v does not match %v under errors.Is", err, tc.err)
				}
				if got := llm.Retryable(err); got != tc.retryable {
					t.Errorf("Retryable(%v) = %v, want %v", err, got, tc.retryable)
				}
			})
		}
	})
	t.Run("Cancelled", func(t *testing.T) {
		c, _ := h(t, ClientCase{Response: llm.Response{
			Message:    llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("too late")}},
			StopReason: llm.StopEndTurn,
		}})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := c.Generate(ctx, sampleRequest(), nil)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Generate with a cancelled context: error %v, want one wrapping context.Canceled", err)
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		want := llm.Response{
			Message:    llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("same answer")}},
			StopReason: llm.StopEndTurn,
		}
		c, _ := h(t, ClientCase{Response: want})
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				resp, err := c.Generate(context.Background(), sampleRequest(), nil)
				if err != nil {
					t.Errorf("concurrent Generate: %v", err)
					return
				}
				checkResponse(t, resp, want)
			})
		}
		wg.Wait()
	})
}

func sampleRequest() *llm.Request {
	return &llm.Request{
		Model:  "test-model",
		System: "You are a careful coding agent.",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Fix the bug in a.go.")}},
			{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock("toolu_0", "Read", json.RawMessage(`{"file_path":"a.go"}`))}},
			{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock("toolu_0", "     1\tpackage a", false)}},
		},
		Tools: []llm.ToolDefinition{{
			Name:        "Read",
			Description: "Reads a file.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}`),
		}},
		MaxTokens: 1024,
		Metadata:  llm.Metadata{TraceID: "conformance-session", Feature: llm.FeatureAgent, Component: "conformance"},
	}
}

func generate(t *testing.T, c llm.Client, req *llm.Request) (*llm.Response, []llm.Delta) {
	t.Helper()
	var deltas []llm.Delta
	resp, err := c.Generate(context.Background(), req, func(d llm.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if resp == nil {
		t.Fatal("Generate returned a nil response and no error")
	}
	return resp, deltas
}

func checkResponse(t *testing.T, got *llm.Response, want llm.Response) {
	t.Helper()
	if got.Message.Role != llm.RoleAssistant {
		t.Errorf("message role = %q, want %q", got.Message.Role, llm.RoleAssistant)
	}
	if len(got.Message.Content) != len(want.Message.Content) {
		t.Fatalf("message has %d blocks, want %d:\ngot  %+v\nwant %+v", len(got.Message.Content), len(want.Message.Content), got.Message.Content, want.Message.Content)
	}
	for i, w := range want.Message.Content {
		g := got.Message.Content[i]
		if g.Type != w.Type || g.Text != w.Text || g.ID != w.ID || g.Name != w.Name {
			t.Errorf("block %d = %+v, want %+v", i, g, w)
		}
		if w.Type == llm.BlockToolUse && !jsonEqual(g.Input, w.Input) {
			t.Errorf("block %d input = %s, want %s", i, g.Input, w.Input)
		}
	}
	if got.StopReason != want.StopReason {
		t.Errorf("stop reason = %q, want %q", got.StopReason, want.StopReason)
	}
	if got.Usage != want.Usage {
		t.Errorf("usage = %+v, want %+v", got.Usage, want.Usage)
	}
}

// CheckDeltas checks that deltas, as a client streamed them, add up to
// resp, the message it returned: every delta names a block of the message
// of its own type, each tool use is announced once (DeltaToolUse), with
// the block's id and name, before any of its input, the text deltas of a
// text block are its text, and the input deltas of a tool use, when there
// are any that are not blank, are its input (as JSON). A provider's tests
// and fuzz targets call it on whatever a server streamed.
func CheckDeltas(t testing.TB, resp *llm.Response, deltas []llm.Delta) {
	t.Helper()
	blocks := resp.Message.Content
	texts := make([]strings.Builder, len(blocks))
	announced := make([]bool, len(blocks))
	for _, d := range deltas {
		if d.Index < 0 || d.Index >= len(blocks) {
			t.Errorf("a delta for block %d of a message of %d: %+v", d.Index, len(blocks), d)
			return
		}
		b := &blocks[d.Index]
		switch d.Type {
		case llm.DeltaText:
			if b.Type != llm.BlockText {
				t.Errorf("text delta for block %d, a %s block", d.Index, b.Type)
			}
			texts[d.Index].WriteString(d.Text)
		case llm.DeltaToolUse:
			switch {
			case b.Type != llm.BlockToolUse:
				t.Errorf("tool_use delta for block %d, a %s block", d.Index, b.Type)
			case announced[d.Index]:
				t.Errorf("a second tool_use delta for block %d", d.Index)
			case d.ID != b.ID || d.Name != b.Name:
				t.Errorf("tool_use delta of block %d = %s/%s, want %s/%s", d.Index, d.ID, d.Name, b.ID, b.Name)
			}
			announced[d.Index] = true
		case llm.DeltaToolInput:
			if !announced[d.Index] {
				t.Errorf("tool input delta for block %d before its tool_use delta", d.Index)
			}
			texts[d.Index].WriteString(d.Text)
		}
	}
	for i, b := range blocks {
		switch b.Type {
		case llm.BlockText:
			if got := texts[i].String(); got != b.Text {
				t.Errorf("text deltas of block %d = %q, want the block's text %q", i, got, b.Text)
			}
		case llm.BlockToolUse:
			if !announced[i] {
				t.Errorf("no tool_use delta for block %d (%s)", i, b.Name)
			}
			if in := texts[i].String(); strings.TrimSpace(in) != "" && !jsonEqual(json.RawMessage(in), b.Input) {
				t.Errorf("tool input deltas of block %d = %s, want %s", i, in, b.Input)
			}
		}
	}
}

func checkSeen(t *testing.T, seen func() []*llm.Request, sent *llm.Request) {
	t.Helper()
	reqs := seen()
	if len(reqs) == 0 {
		t.Fatal("the model side saw no request")
	}
	got := reqs[len(reqs)-1]
	if got.System != sent.System {
		t.Errorf("model saw system %q, want %q", got.System, sent.System)
	}
	if len(got.Messages) != len(sent.Messages) {
		t.Fatalf("model saw %d messages, want %d", len(got.Messages), len(sent.Messages))
	}
	for i := range sent.Messages {
		if !reflect.DeepEqual(summary(got.Messages[i]), summary(sent.Messages[i])) {
			t.Errorf("message %d: model saw %+v, want %+v", i, got.Messages[i], sent.Messages[i])
		}
	}
	if len(got.Tools) != len(sent.Tools) || len(got.Tools) > 0 && got.Tools[0].Name != sent.Tools[0].Name {
		t.Errorf("model saw tools %+v, want %+v", got.Tools, sent.Tools)
	}
}

// summary keeps what every wire format must carry of a message.
func summary(m llm.Message) []string {
	out := []string{string(m.Role)}
	for _, b := range m.Content {
		out = append(out, string(b.Type), b.Text, b.ID, b.Name, b.ToolUseID, b.Content)
	}
	return out
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// AddSeeds adds each file matching pattern (a provider's recorded
// streams, testdata/*.chunks.txt) to f's seed corpus, whole.
func AddSeeds(f *testing.F, pattern string) {
	f.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed files match %q (%v)", pattern, err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// SameBody checks a request body a client encodes itself against the body
// its SDK encodes (the reference): field's value byte for byte, and the
// whole body value for value (the client's may order its keys otherwise).
// Errors must be the same.
func SameBody(t testing.TB, field string, got []byte, gotErr error, want []byte, wantErr error) {
	t.Helper()
	if (wantErr != nil) != (gotErr != nil) || (wantErr != nil && gotErr.Error() != wantErr.Error()) {
		t.Fatalf("error %v, the SDK's way %v", gotErr, wantErr)
	}
	if wantErr != nil {
		return
	}
	var g, w map[string]json.RawMessage
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("the SDK's %s: %v", want, err)
	}
	if string(g[field]) != string(w[field]) {
		t.Errorf("%s\n%s\nthe SDK encodes\n%s", field, g[field], w[field])
	}
	if !jsonEqual(got, want) {
		t.Errorf("body\n%s\nthe SDK's\n%s", got, want)
	}
}
