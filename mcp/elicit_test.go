package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orca-agent/orca/elicit"
	"github.com/orca-agent/orca/mcp"
	"github.com/orca-agent/orca/tool"
)

// askingServer serves ask (a form: name required, nights with a default)
// and open (a URL), each answering with the raw result its question got,
// and records the capabilities the client declared.
func askingServer(t *testing.T) (mcp.Server, func() *sdk.ClientCapabilities) {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "asking", Version: "1"}, nil)
	var mu sync.Mutex
	var caps *sdk.ClientCapabilities
	answer := func(res *sdk.ElicitResult, err error) (*sdk.CallToolResult, any, error) {
		if err != nil {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}, nil, nil
		}
		b, _ := json.Marshal(res)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil, nil
	}
	sdk.AddTool(s, &sdk.Tool{Name: "ask", Description: "Asks for a booking."},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			mu.Lock()
			caps = req.Session.InitializeParams().Capabilities
			mu.Unlock()
			return answer(req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Where to?", RequestedSchema: json.RawMessage(`{"type": "object", "properties": {
				"breakfast": {"type": "boolean"}, "nights": {"type": "integer", "default": 3}, "name": {"type": "string"}}, "required": ["name"]}`)}))
		})
	sdk.AddTool(s, &sdk.Tool{Name: "open", Description: "Asks to open a page."},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			return answer(req.Session.Elicit(ctx, &sdk.ElicitParams{Mode: "url", Message: "Sign in", URL: "https://auth.example/consent?state=s3cret", ElicitationID: "e-1"}))
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(hs.Close)
	return mcp.Server{Name: "hotel", Type: "http", URL: hs.URL, Timeout: 5 * time.Second}, func() *sdk.ClientCapabilities {
		mu.Lock()
		defer mu.Unlock()
		return caps
	}
}

func callWith(t *testing.T, ctx context.Context, reg *tool.Registry, name string) map[string]any {
	t.Helper()
	res := reg.Call(ctx, &tool.Call{Name: name, Input: json.RawMessage(`{}`)})
	if res.IsError {
		t.Fatalf("%s: %s", name, res.Content)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(res.Content), &m); err != nil {
		t.Fatalf("%s: %s: %v", name, res.Content, err)
	}
	return m
}

// orca declares elicitation, forms and URLs; a server's question during a
// call goes to the Elicitor the call's context carries — the form's
// fields read (required first), the defaults the answer leaves out
// filled in by the SDK — and its answer is the server's.
func TestElicitationReachesTheCallsElicitor(t *testing.T) {
	srv, caps := askingServer(t)
	_, reg := provider(t, []mcp.Server{srv}, mcp.Options{})
	var asked []elicit.Request
	person := elicit.Func(func(ctx context.Context, req elicit.Request) (elicit.Answer, error) {
		asked = append(asked, req)
		if req.Mode == elicit.ModeURL {
			return elicit.Answer{Action: elicit.Accept}, nil
		}
		return elicit.Answer{Action: elicit.Accept, Content: map[string]any{"name": "Ada", "nights": int64(5)}}, nil
	})
	ctx := elicit.With(t.Context(), person)
	got := callWith(t, ctx, reg, "mcp__hotel__ask")
	if got["action"] != "accept" || got["content"].(map[string]any)["name"] != "Ada" || got["content"].(map[string]any)["nights"] != 5.0 {
		t.Errorf("the server got %v", got)
	}
	if c := caps(); c == nil || c.Elicitation == nil || c.Elicitation.Form == nil || c.Elicitation.URL == nil {
		t.Errorf("declared capabilities: %+v", c)
	}
	if len(asked) != 1 {
		t.Fatalf("asked %d times", len(asked))
	}
	q := asked[0]
	if q.Server != "hotel" || q.Mode != elicit.ModeForm || q.Message != "Where to?" || q.RuntimeID != "rt" || q.Form == nil || strings.Join(q.Form.Names(), ",") != "name,breakfast,nights" {
		t.Errorf("the question: %+v %v", q, q.Form)
	}
	got = callWith(t, ctx, reg, "mcp__hotel__open")
	if got["action"] != "accept" || got["content"] != nil {
		t.Errorf("URL: the server got %v", got)
	}
	if q := asked[1]; q.Mode != elicit.ModeURL || q.URL != "https://auth.example/consent?state=s3cret" || q.ElicitationID != "e-1" || q.Form != nil {
		t.Errorf("the URL question: %+v", q)
	}
}

// With no one to ask, the server hears a decline and why, in the result's
// _meta; a question outside any turn goes to Options.Elicitor.
func TestElicitationDeclinedHeadless(t *testing.T) {
	srv, _ := askingServer(t)
	_, reg := provider(t, []mcp.Server{srv}, mcp.Options{})
	got := callWith(t, t.Context(), reg, "mcp__hotel__ask")
	meta, _ := got["_meta"].(map[string]any)
	if got["action"] != "decline" || !strings.Contains(meta[elicit.ReasonMeta].(string), "no one can answer the MCP server hotel's question") {
		t.Errorf("the server got %v", got)
	}
	fallback := elicit.Func(func(ctx context.Context, req elicit.Request) (elicit.Answer, error) {
		return elicit.Answer{Action: elicit.Cancel, Reason: "not now"}, nil
	})
	_, reg = provider(t, []mcp.Server{srv}, mcp.Options{Elicitor: fallback})
	if got := callWith(t, t.Context(), reg, "mcp__hotel__ask"); got["action"] != "cancel" || got["_meta"].(map[string]any)[elicit.ReasonMeta] != "not now" {
		t.Errorf("Options.Elicitor: the server got %v", got)
	}
}

// A question ends with the call it came in: a call that times out while
// the person is asked cancels the question.
func TestElicitationEndsWithTheCall(t *testing.T) {
	srv, _ := askingServer(t)
	srv.Timeout = 300 * time.Millisecond
	_, reg := provider(t, []mcp.Server{srv}, mcp.Options{})
	ended := make(chan error, 1)
	slow := elicit.Func(func(ctx context.Context, req elicit.Request) (elicit.Answer, error) {
		select {
		case <-ctx.Done():
			ended <- context.Cause(ctx)
		case <-time.After(10 * time.Second):
			ended <- nil
		}
		return elicit.Answer{}, ctx.Err()
	})
	res := reg.Call(elicit.With(t.Context(), slow), &tool.Call{Name: "mcp__hotel__ask", Input: json.RawMessage(`{}`)})
	if !res.IsError || !strings.Contains(res.Content, "did not answer") {
		t.Errorf("the call: %+v", res)
	}
	if err := <-ended; err == nil {
		t.Error("the question outlived its call")
	}
}
