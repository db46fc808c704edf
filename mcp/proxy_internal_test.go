package mcp

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Which failed calls the server cannot have run (sent again whatever the
// tool) and which it may have (sent again only if idempotent).
func TestNotSent(t *testing.T) {
	missing := fmt.Errorf(`sending "tools/call": failed to connect (session ID: X): %w`, sdk.ErrSessionMissing)
	for _, tc := range []struct {
		name string
		err  error
		d    *delivery
		want bool
	}{
		{"session closed before sending", fmt.Errorf("%w: calling %q: client is closing", sdk.ErrConnectionClosed, "tools/call"), &delivery{}, true},
		{"its own request answered 404", missing, &delivery{seen: true, status: http.StatusNotFound}, true},
		{"its own request could not connect", fmt.Errorf("rejected by transport: %w", &net.OpError{Op: "dial", Err: errors.New("connection refused")}), &delivery{seen: true, unsent: true}, true},
		// Its request was taken (200); another request's 404 ended the
		// session while it ran.
		{"session lost while it ran", missing, &delivery{seen: true, status: http.StatusOK}, false},
		{"404 without the session missing", errors.New("Not Found"), &delivery{seen: true, status: http.StatusNotFound}, false},
		{"cut off mid-answer", fmt.Errorf("rejected by transport: %w", io.EOF), &delivery{seen: true}, false},
		{"stdio end of file", io.EOF, &delivery{}, false},
	} {
		if got := notSent(tc.err, tc.d); got != tc.want {
			t.Errorf("%s: notSent = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Only an error the server sent is its refusal; the SDK's own errors of
// the same type are transport failures.
func TestAnswered(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"unknown tool", fmt.Errorf("calling %q: %w", "tools/call", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown tool"}), true},
		{"server error beside the transport's", errors.Join(&jsonrpc.Error{Code: -32000, Message: "busy"}, &jsonrpc.Error{Code: -32005, Message: "rejected by transport"}), true},
		{"rejected by transport", fmt.Errorf("sending: %w: %w", &jsonrpc.Error{Code: -32005, Message: "rejected by transport"}, io.EOF), false},
		{"client closing", &jsonrpc.Error{Code: -32003, Message: "client is closing"}, false},
		{"server closing", &jsonrpc.Error{Code: -32004, Message: "server is closing"}, false},
		{"end of file", io.EOF, false},
	} {
		if got := answered(tc.err); got != tc.want {
			t.Errorf("%s: answered = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A tool is offered only with an input schema the model providers take:
// an object (a schema without a type becomes one); a server's tool of any
// other type is refused, named, instead of failing every turn's request.
func TestProxySchema(t *testing.T) {
	c := &conn{srv: Server{Name: "srv"}}
	for _, tc := range []struct {
		schema any
		want   string // the schema offered, or the error's text
		err    bool
	}{
		{map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}, `{"properties":{"q":{"type":"string"}},"type":"object"}`, false},
		{nil, `{"type":"object"}`, false},
		{map[string]any{}, `{"type":"object"}`, false},
		{map[string]any{"properties": map[string]any{}}, `{"properties":{},"type":"object"}`, false},
		{map[string]any{"type": "string"}, `its input schema is of type "string", not "object"`, true},
		{map[string]any{"type": []any{"object", "null"}}, `its input schema is of type ["object","null"], not "object"`, true},
		{[]any{1, 2}, "its input schema is not a JSON object", true},
	} {
		p, err := newProxy(c, &sdk.Tool{Name: "find", InputSchema: tc.schema})
		switch {
		case tc.err && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("schema %v: %v, want an error with %q", tc.schema, err, tc.want)
		case !tc.err && err != nil:
			t.Errorf("schema %v: %v", tc.schema, err)
		case !tc.err && string(p.schema) != tc.want:
			t.Errorf("schema %v offered as %s, want %s", tc.schema, p.schema, tc.want)
		}
	}
}
