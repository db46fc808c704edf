package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orca-agent/orca/tool"
)

// The tools that read the servers' resources, named as Claude Code names
// its own, so that hook matchers and permission rules written for Claude
// Code match them. They are offered once one of the runtime's servers
// says it serves resources, and are read-only.
const (
	ListResourcesTool = "ListMcpResourcesTool"
	ReadResourceTool  = "ReadMcpResourceTool"
)

// maxListed bounds the resources (and templates) one server lists in one
// ListMcpResourcesTool observation.
const maxListed = 200

type listResourcesIn struct {
	Server string `json:"server,omitempty" jsonschema:"the MCP server whose resources to list; all servers' if empty"`
}

type readResourceIn struct {
	Server string `json:"server" jsonschema:"the MCP server that serves the resource"`
	URI    string `json:"uri" jsonschema:"the resource's URI, as listed by ListMcpResourcesTool (or a resource template filled in)"`
}

// listedResource is one resource of ListMcpResourcesTool's response.
type listedResource struct {
	Server      string `json:"server"`
	URI         string `json:"uri"`
	Name        string `json:"name,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
	Description string `json:"description,omitempty"`
	// Template: the URI is a template (RFC 6570) to fill in.
	Template bool `json:"template,omitempty"`
}

// offerResources adds the resource tools to the runtime's registry when
// c, come up after the runtime's first tool list was made, is the first
// of the runtime's servers to serve resources.
func (s *set) offerResources(c *conn) {
	if !c.servesResources() {
		return
	}
	s.mu.Lock()
	if !s.listed || s.resources {
		s.mu.Unlock()
		return
	}
	s.resources = true
	s.mu.Unlock()
	if s.env.Registry == nil {
		return
	}
	for _, t := range s.resourceTools() {
		if err := s.env.Registry.Add(t); err != nil {
			s.p.opts.Logger.Warn("MCP resource tool not offered", "tool", t.Name(), "err", err)
		}
	}
}

// firstList makes the runtime's first tool list: the servers' tools, and
// the resource tools if one of them serves resources. In a runtime
// (env.Registry set) it adds them to the registry itself and returns
// none: each server's under the lock that orders its list reloads, so
// that a list_changed read meanwhile finds its tools there, and changes
// them there, rather than race the runtime adding them.
func (s *set) firstList() ([]tool.Tool, error) {
	reg := s.env.Registry
	var out []tool.Tool
	serves := false
	for _, c := range s.conns {
		c.reload.Lock()
		tools := c.proxies()
		if reg == nil {
			out = append(out, tools...)
		} else if err := addAll(reg, tools); err != nil {
			c.reload.Unlock()
			return nil, err
		}
		c.reload.Unlock()
		serves = serves || c.servesResources()
	}
	s.mu.Lock()
	s.listed, s.resources = true, serves
	s.mu.Unlock()
	if !serves {
		return out, nil
	}
	if reg == nil {
		return append(out, s.resourceTools()...), nil
	}
	return nil, addAll(reg, s.resourceTools())
}

// addAll adds tools to reg, stopping at the first it refuses.
func addAll(reg *tool.Registry, tools []tool.Tool) error {
	for _, t := range tools {
		if err := reg.Add(t); err != nil {
			return err
		}
	}
	return nil
}

func (s *set) resourceTools() []tool.Tool {
	return []tool.Tool{
		tool.New(ListResourcesTool,
			"Lists the resources (files, records, documents) the MCP servers serve, with their URIs, and the resource templates they fill in. Give server to list one server's only. Read one with "+ReadResourceTool+".",
			s.listResources, tool.ReadOnly(), tool.Idempotent()),
		tool.New(ReadResourceTool,
			"Reads one resource of an MCP server, by its server and URI (from "+ListResourcesTool+").",
			s.readResource, tool.ReadOnly(), tool.Idempotent()),
	}
}

// byName returns the server named name, or an error listing those that
// serve resources.
func (s *set) byName(name string) (*conn, error) {
	var serving []string
	for _, c := range s.conns {
		if c.srv.Name == name {
			return c, nil
		}
		if c.servesResources() {
			serving = append(serving, c.srv.Name)
		}
	}
	if len(serving) == 0 {
		return nil, fmt.Errorf("there is no MCP server %q, and none of the servers serves resources", name)
	}
	return nil, fmt.Errorf("there is no MCP server %q; the servers that serve resources are %s", name, strings.Join(serving, ", "))
}

func (s *set) listResources(ctx context.Context, in listResourcesIn) (tool.Result, error) {
	conns := s.conns
	if in.Server != "" {
		c, err := s.byName(in.Server)
		if err != nil {
			return tool.Result{}, err
		}
		conns = []*conn{c}
	}
	var (
		b      strings.Builder
		listed []listedResource
		errs   []string
	)
	for _, c := range conns {
		if in.Server == "" && !c.servesResources() {
			continue
		}
		var res []listedResource
		more := 0
		err := c.request(ctx, "resources/list", func(ctx context.Context, session *sdk.ClientSession) error {
			if !c.servesResources() {
				return errNoResources
			}
			res, more = nil, 0
			templates := 0
			for r, err := range session.Resources(ctx, nil) {
				if err != nil {
					return err
				}
				if len(res) == maxListed {
					more++
					continue
				}
				res = append(res, listedResource{Server: c.srv.Name, URI: r.URI, Name: r.Name, MIMEType: r.MIMEType, Description: r.Description})
			}
			for r, err := range session.ResourceTemplates(ctx, nil) {
				if err != nil {
					// Templates are optional: a server without them may
					// answer the method with an error.
					if answered(err) {
						break
					}
					return err
				}
				if templates == maxListed {
					more++
					continue
				}
				templates++
				res = append(res, listedResource{Server: c.srv.Name, URI: r.URITemplate, Name: r.Name, MIMEType: r.MIMEType, Description: r.Description, Template: true})
			}
			return nil
		})
		if errors.Is(err, errNoResources) {
			errs = append(errs, fmt.Sprintf("The MCP server %s serves no resources.", c.srv.Name))
			continue
		}
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		listed = append(listed, res...)
		writeListing(&b, c.srv.Name, res, more)
	}
	for _, e := range errs {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(e)
	}
	if b.Len() == 0 {
		b.WriteString("No MCP server serves resources.")
	}
	if listed == nil {
		listed = []listedResource{}
	}
	return tool.Result{Content: b.String(), IsError: len(errs) > 0 && len(listed) == 0, Response: map[string]any{"resources": listed}}, nil
}

var errNoResources = errors.New("it serves no resources")

// writeListing writes one server's resources for the model.
func writeListing(b *strings.Builder, server string, res []listedResource, more int) {
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	n := 0
	for _, r := range res {
		if !r.Template {
			n++
		}
	}
	fmt.Fprintf(b, "MCP server %s: %d resource(s), %d template(s)\n", server, n, len(res)-n)
	for _, r := range res {
		kind := "-"
		if r.Template {
			kind = "- template"
		}
		fmt.Fprintf(b, "%s %s", kind, r.URI)
		if r.Name != "" && r.Name != r.URI {
			fmt.Fprintf(b, " — %s", r.Name)
		}
		if r.MIMEType != "" {
			fmt.Fprintf(b, " (%s)", r.MIMEType)
		}
		if d := strings.Join(strings.Fields(r.Description), " "); d != "" {
			if len(d) > 200 {
				d = d[:200] + "…"
			}
			fmt.Fprintf(b, ": %s", d)
		}
		b.WriteString("\n")
	}
	if more > 0 {
		fmt.Fprintf(b, "(and %d more not listed)\n", more)
	}
}

func (s *set) readResource(ctx context.Context, in readResourceIn) (tool.Result, error) {
	if strings.TrimSpace(in.URI) == "" {
		return tool.Result{}, errors.New("uri is empty: give the URI of a resource ListMcpResourcesTool listed")
	}
	c, err := s.byName(in.Server)
	if err != nil {
		return tool.Result{}, err
	}
	var res *sdk.ReadResourceResult
	err = c.request(ctx, "resources/read", func(ctx context.Context, session *sdk.ClientSession) error {
		if !c.servesResources() {
			return errNoResources
		}
		var err error
		res, err = session.ReadResource(ctx, &sdk.ReadResourceParams{URI: in.URI})
		return err
	})
	if errors.Is(err, errNoResources) {
		return tool.Result{}, fmt.Errorf("the MCP server %s serves no resources", c.srv.Name)
	}
	if err != nil {
		return tool.Result{}, err
	}
	var b strings.Builder
	type content struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mimeType,omitempty"`
		Text     string `json:"text,omitempty"`
		Bytes    int    `json:"bytes,omitempty"`
	}
	contents := []content{}
	for _, rc := range res.Contents {
		if rc == nil {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		mime := ""
		if rc.MIMEType != "" {
			mime = " (" + rc.MIMEType + ")"
		}
		if rc.Blob != nil {
			fmt.Fprintf(&b, "[resource %s%s: %d bytes of binary content, not shown]", rc.URI, mime, len(rc.Blob))
			contents = append(contents, content{URI: rc.URI, MIMEType: rc.MIMEType, Bytes: len(rc.Blob)})
			continue
		}
		fmt.Fprintf(&b, "[resource %s%s]\n%s", rc.URI, mime, rc.Text)
		contents = append(contents, content{URI: rc.URI, MIMEType: rc.MIMEType, Text: rc.Text})
	}
	if b.Len() == 0 {
		fmt.Fprintf(&b, "The resource %s of the MCP server %s is empty.", in.URI, c.srv.Name)
	}
	return tool.Result{Content: b.String(), Response: map[string]any{"server": c.srv.Name, "contents": contents}}, nil
}

// request runs one request that changes nothing (a list, a read) on the
// server, connecting again if the connection dropped: a request cut off
// by the connection dropping is sent once more, on a fresh connection.
// what names the request in errors.
func (c *conn) request(ctx context.Context, what string, f func(context.Context, *sdk.ClientSession) error) error {
	for attempt := 0; ; attempt++ {
		session, err := c.live(ctx)
		if err != nil {
			return fmt.Errorf("the MCP server %s is not available: %s", c.srv.Name, errText(err))
		}
		cctx, cancel := context.WithTimeout(ctx, c.timeout())
		err = f(cctx, session)
		timedOut := errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		cancel()
		switch {
		case err == nil || errors.Is(err, errNoResources):
			return err
		case ctx.Err() != nil:
			return fmt.Errorf("the %s request to the MCP server %s was cancelled: %w", what, c.srv.Name, ctx.Err())
		case timedOut:
			c.drop(session, fmt.Sprintf("a %s request timed out after %v", what, c.timeout()))
			return fmt.Errorf("the MCP server %s did not answer %s within %v", c.srv.Name, what, c.timeout())
		case answered(err):
			return fmt.Errorf("the MCP server %s refused %s: %s", c.srv.Name, what, errText(err))
		default:
			c.drop(session, "the connection dropped during "+what+": "+errText(err))
			if attempt == 0 {
				continue
			}
			return fmt.Errorf("the connection to the MCP server %s dropped during %s, twice: %s", c.srv.Name, what, errText(err))
		}
	}
}
