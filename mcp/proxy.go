package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/media"
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
	switch typ, ok := probe["type"]; {
	case !ok:
		probe["type"] = "object"
		schema, _ = json.Marshal(probe)
	case typ != "object":
		// The model providers refuse a request whose tool takes anything
		// else, and with it every turn of the agent.
		typJSON, _ := json.Marshal(typ)
		return nil, fmt.Errorf("its input schema is of type %s, not \"object\" (the MCP specification asks for an object; the model providers take nothing else)", typJSON)
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

// same reports whether q defines the tool as p does.
func (p *proxy) same(q *proxy) bool {
	return p.name == q.name && p.remote == q.remote && p.desc == q.desc && bytes.Equal(p.schema, q.schema) &&
		p.readOnly == q.readOnly && p.idempotent == q.idempotent
}

func (p *proxy) Name() string            { return p.name }
func (p *proxy) Description() string     { return p.desc }
func (p *proxy) Schema() json.RawMessage { return p.schema }

// Traits: the server's annotations (readOnlyHint; idempotentHint, which
// readOnlyHint implies).
func (p *proxy) Traits() tool.Traits {
	return tool.Traits{ReadOnly: p.readOnly, Idempotent: p.idempotent, Elicits: true, Reports: true}
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
		d := &delivery{}
		cctx, cancel := context.WithTimeout(context.WithValue(ctx, deliveryKey{}, d), p.c.timeout())
		params := &sdk.CallToolParams{Name: p.remote, Arguments: args}
		forget := p.c.watchProgress(ctx, params)
		p.c.logMeta(session, params)
		res, err := session.CallTool(cctx, params)
		forget()
		timedOut := errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		cancel()
		if err == nil {
			return result(res)
		}
		switch {
		case ctx.Err() != nil:
			return tool.Errorf("The %s call was cancelled (%v) before the MCP server %s answered: it may or may not have taken effect.", p.remote, ctx.Err(), p.c.srv.Name)
		case timedOut:
			// Cancelled (the SDK told the server, notifications/cancelled),
			// not sent again: it may have run. The connection stays, with
			// the other calls on it, unless the server answers nothing.
			p.c.checkAlive(session)
			return tool.Errorf("The MCP server %s did not answer %s within %v: the call was cancelled, and may or may not have taken effect.%s", p.c.srv.Name, p.remote, p.c.timeout(), p.retryNote())
		case notSent(err, d):
			// The server never had the call: sending it again, on a fresh
			// connection, cannot run it twice, whatever the tool.
			p.c.drop(session, "the connection was lost: "+errText(err))
			if attempt == 0 {
				continue
			}
			return tool.Errorf("Not run: the connection to the MCP server %s was lost before the %s call reached it, twice (%s).", p.c.srv.Name, p.remote, errText(err))
		case answered(err):
			// The server answered with a JSON-RPC error (an unknown tool,
			// invalid arguments): it did not run the tool.
			return tool.Errorf("The MCP server %s refused the %s call: %s", p.c.srv.Name, p.remote, errText(err))
		default:
			p.c.drop(session, "the connection dropped during a call: "+errText(err))
			if p.idempotent && attempt == 0 {
				continue // safe to send again, on a fresh connection
			}
			return tool.Errorf("The connection to the MCP server %s dropped during the %s call (%s): it may or may not have taken effect.%s", p.c.srv.Name, p.remote, errText(err), p.retryNote())
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

// delivery is what became of the HTTP request that carried one call, as
// the provider's transport saw it (see notSent).
type delivery struct {
	mu     sync.Mutex
	seen   bool
	status int  // the answer's status code
	unsent bool // the request never reached the server
}

type deliveryKey struct{}

// record notes the outcome of the first POST of the call's context: the
// one that carries it (a notifications/cancelled after it may share the
// context).
func (d *delivery) record(resp *http.Response, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen {
		return
	}
	d.seen = true
	var op *net.OpError
	switch {
	case err == nil:
		d.status = resp.StatusCode
	case errors.As(err, &op) && op.Op == "dial":
		d.unsent = true
	}
}

func (d *delivery) get() (status int, unsent bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.status, d.unsent
}

// notSent reports whether the call failed before the server could have
// run it:
//   - the SDK did not send it: the session was closed already
//     (ErrConnectionClosed);
//   - its own HTTP request was answered 404 for a session the server no
//     longer has (ErrSessionMissing): the MCP spec has the server refuse
//     every request of a session it ended, so it ran nothing;
//   - its own HTTP request could not connect.
//
// ErrSessionMissing alone is not enough: it also ends the calls in flight
// on a session lost while they ran (the standalone stream, or another
// request, got the 404), which the server may have run.
func notSent(err error, d *delivery) bool {
	if errors.Is(err, sdk.ErrConnectionClosed) {
		return true
	}
	status, unsent := d.get()
	return unsent || status == http.StatusNotFound && errors.Is(err, sdk.ErrSessionMissing)
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

// result turns a tool result into an observation: text as it is; images,
// and embedded resources that are images or PDFs, shown to the model
// (media.Prepare: scaled down when too large) and named in the text;
// other content described; structured content when there is no text.
func result(res *sdk.CallToolResult) tool.Result {
	var b strings.Builder
	add := func(s string) {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(s)
	}
	out := tool.Result{IsError: res.IsError}
	for _, c := range res.Content {
		if m, text := shown(c, len(out.Media)+1); m != nil {
			out.Media = append(out.Media, m)
			add(text)
		} else if t := contentText(c); t != "" {
			add(t)
		}
	}
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

// shown returns the image or PDF that content c of a result is, as the
// model is shown it (the n-th of the result), and the text that names it;
// nil for other content, or for bytes that are no image or PDF (they are
// described as text, as before, with why).
func shown(c sdk.Content, n int) (*llm.Media, string) {
	var data []byte
	var declared, name string
	switch c := c.(type) {
	case *sdk.ImageContent:
		data, declared, name = c.Data, c.MIMEType, fmt.Sprintf("image %d of the result", n)
	case *sdk.EmbeddedResource:
		if c.Resource == nil || len(c.Resource.Blob) == 0 || media.Sniff(c.Resource.Blob) == "" {
			return nil, ""
		}
		data, declared, name = c.Resource.Blob, c.Resource.MIMEType, c.Resource.URI
	default:
		return nil, ""
	}
	m, note, err := media.Prepare(data, name)
	if err != nil {
		return nil, ""
	}
	text := fmt.Sprintf("[%s, shown to you]", m)
	if declared != "" && declared != m.MediaType && note == "" {
		note = fmt.Sprintf("The server called it %s.", declared)
	}
	if note != "" {
		text += " " + note
	}
	return m, text
}

// contentText is one content block of a result or a prompt as text:
// text as it is, other content described.
func contentText(c sdk.Content) string {
	switch c := c.(type) {
	case *sdk.TextContent:
		return c.Text
	case *sdk.ImageContent:
		return fmt.Sprintf("[image: %s, %d bytes]", c.MIMEType, len(c.Data))
	case *sdk.AudioContent:
		return fmt.Sprintf("[audio: %s, %d bytes; not shown: orca sends models no audio]", c.MIMEType, len(c.Data))
	case *sdk.ResourceLink:
		return fmt.Sprintf("[resource link: %s <%s>%s]", c.Name, c.URI, strings.TrimSpace(" "+c.Description))
	case *sdk.EmbeddedResource:
		if r := c.Resource; r != nil {
			if r.Text != "" {
				return fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text)
			}
			return fmt.Sprintf("[resource %s: %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob))
		}
		return ""
	case nil:
		return ""
	default:
		if raw, err := json.Marshal(c); err == nil {
			return string(raw)
		}
		return ""
	}
}

var _ tool.Tool = (*proxy)(nil)
