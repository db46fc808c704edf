package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orca-agent/orca/tool"
)

// proxy is one tool of a server, as orca offers it.
type proxy struct {
	c          *conn
	name       string // orca's: mcp__server__tool
	remote     string // the server's
	desc       string
	schema     json.RawMessage
	readOnly   bool
	idempotent bool
}

func newProxy(c *conn, t *sdk.Tool) (*proxy, error) {
	if t == nil || t.Name == "" {
		return nil, errors.New("a tool without a name")
	}
	schema, err := json.Marshal(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("its input schema: %w", err)
	}
	if s := strings.TrimSpace(string(schema)); s == "" || s == "null" || s == "{}" {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	var probe map[string]any
	if json.Unmarshal(schema, &probe) != nil {
		return nil, fmt.Errorf("its input schema is not a JSON object: %.200s", schema)
	}
	if _, ok := probe["type"]; !ok {
		probe["type"] = "object"
		schema, _ = json.Marshal(probe)
	}
	p := &proxy{c: c, name: ToolName(c.srv.Name, t.Name), remote: t.Name, schema: schema}
	p.desc = strings.TrimSpace(t.Description)
	if p.desc == "" {
		p.desc = t.Title
	}
	if p.desc == "" {
		p.desc = fmt.Sprintf("The %s tool of the MCP server %s.", t.Name, c.srv.Name)
	}
	if a := t.Annotations; a != nil {
		p.readOnly = a.ReadOnlyHint
		p.idempotent = a.ReadOnlyHint || a.IdempotentHint
	}
	return p, nil
}

func (p *proxy) Name() string            { return p.name }
func (p *proxy) Description() string     { return p.desc }
func (p *proxy) Schema() json.RawMessage { return p.schema }

// Traits: the server's annotations (readOnlyHint; idempotentHint, which
// readOnlyHint implies).
func (p *proxy) Traits() tool.Traits {
	return tool.Traits{ReadOnly: p.readOnly, Idempotent: p.idempotent}
}

// Execute calls the tool on the server, connecting again if the
// connection dropped (see the package's reliability contract).
func (p *proxy) Execute(ctx context.Context, call *tool.Call) tool.Result {
	args := call.Input
	if len(strings.TrimSpace(string(args))) == 0 {
		args = json.RawMessage(`{}`)
	}
	for attempt := 0; ; attempt++ {
		session, err := p.c.live(ctx)
		if err != nil {
			return tool.Errorf("Not run: the MCP server %s is not available: %s", p.c.srv.Name, errText(err))
		}
		cctx, cancel := context.WithTimeout(ctx, p.c.timeout())
		res, err := session.CallTool(cctx, &sdk.CallToolParams{Name: p.remote, Arguments: args})
		timedOut := errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		cancel()
		if err == nil {
			return result(res)
		}
		switch {
		case ctx.Err() != nil:
			return tool.Errorf("The %s call was cancelled (%v) before the MCP server %s answered: it may or may not have taken effect.", p.remote, ctx.Err(), p.c.srv.Name)
		case timedOut:
			// A server that does not answer may never answer: the next call
			// gets a fresh connection.
			p.c.drop(session, fmt.Sprintf("a call timed out after %v", p.c.timeout()))
			return tool.Errorf("The MCP server %s did not answer %s within %v: the call may or may not have taken effect.%s", p.c.srv.Name, p.remote, p.c.timeout(), p.retryNote())
		case errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing) || !answered(err):
			p.c.drop(session, "the connection dropped during a call: "+errText(err))
			if p.idempotent && attempt == 0 {
				continue // safe to send again, on a fresh connection
			}
			return tool.Errorf("The connection to the MCP server %s dropped during the %s call (%s): it may or may not have taken effect.%s", p.c.srv.Name, p.remote, errText(err), p.retryNote())
		default:
			// The server answered with a protocol error (an unknown tool,
			// invalid arguments): nothing was done.
			return tool.Errorf("The MCP server %s refused the %s call: %s", p.c.srv.Name, p.remote, errText(err))
		}
	}
}

// retryNote says what the model may do after a call cut off.
func (p *proxy) retryNote() string {
	if p.idempotent {
		return " The tool is idempotent: calling it again is safe."
	}
	return " Check its effect before calling it again."
}

// answered reports whether err is the server's JSON-RPC error answer (as
// opposed to a transport failure): the server got the call and refused
// it. The SDK's own errors of that type — a request its transport could
// not deliver (-32005), a connection closing (-32003, -32004) — are not
// answers.
func answered(err error) bool {
	found := false
	var walk func(error)
	walk = func(err error) {
		if err == nil || found {
			return
		}
		if e, ok := err.(*jsonrpc.Error); ok && (e.Code < -32005 || e.Code > -32003) {
			found = true
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return found
}

// result turns a tool result into an observation: text as it is, other
// content described; structured content when there is no text.
func result(res *sdk.CallToolResult) tool.Result {
	var b strings.Builder
	add := func(s string) {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(s)
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			add(c.Text)
		case *sdk.ImageContent:
			add(fmt.Sprintf("[image: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			add(fmt.Sprintf("[audio: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			add(fmt.Sprintf("[resource link: %s <%s>%s]", c.Name, c.URI, strings.TrimSpace(" "+c.Description)))
		case *sdk.EmbeddedResource:
			if r := c.Resource; r != nil {
				if r.Text != "" {
					add(fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
				} else {
					add(fmt.Sprintf("[resource %s: %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob)))
				}
			}
		default:
			if raw, err := json.Marshal(c); err == nil {
				add(string(raw))
			}
		}
	}
	out := tool.Result{IsError: res.IsError}
	if res.StructuredContent != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err == nil {
			if b.Len() == 0 {
				add(string(raw))
			}
			if len(raw) > 0 && raw[0] == '{' {
				out.Response = json.RawMessage(raw)
			}
		}
	}
	out.Content = b.String()
	if out.Content == "" {
		out.Content = "(no output)"
	}
	return out
}

var _ tool.Tool = (*proxy)(nil)
