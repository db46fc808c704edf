package mcp_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/mcp"
	"github.com/orca-agent/orca/mcp/mcptest"
	"github.com/orca-agent/orca/tool"
)

// A server that serves resources brings ListMcpResourcesTool and
// ReadMcpResourceTool, read-only: they list its resources and templates
// and read them; a URI it does not have, or a server there is not, is an
// error that names it.
func TestResources(t *testing.T) {
	matrix(t, func(t *testing.T, tr string) {
		r := setup(t, tr, mcptest.Faults{}, mcp.Options{})
		for _, name := range []string{mcp.ListResourcesTool, mcp.ReadResourceTool} {
			tl, ok := r.reg.Lookup(name)
			if !ok {
				t.Fatalf("%s not offered: %v", name, r.reg.Names())
			}
			if tr := tool.TraitsOf(tl); !tr.ReadOnly || !tr.Idempotent {
				t.Errorf("%s traits %+v", name, tr)
			}
		}
		list := call(t, r.reg, mcp.ListResourcesTool, map[string]any{})
		if list.IsError || !strings.Contains(list.Content, "MCP server faults: 1 resource(s), 1 template(s)") ||
			!strings.Contains(list.Content, "- mcptest://faults — faults (application/json)") ||
			!strings.Contains(list.Content, "- template mcptest://notes/{name}") {
			t.Errorf("list: %+v", list)
		}
		raw, _ := json.Marshal(list.Response)
		if !strings.Contains(string(raw), `{"server":"faults","uri":"mcptest://faults","name":"faults","mimeType":"application/json"`) {
			t.Errorf("list response %s", raw)
		}

		read := call(t, r.reg, mcp.ReadResourceTool, map[string]string{"server": "faults", "uri": "mcptest://faults"})
		if read.IsError || !strings.HasPrefix(read.Content, "[resource mcptest://faults (application/json)]\n{") {
			t.Errorf("read: %+v", read)
		}
		// A template filled in: a note the server's tool wrote.
		if res := r.note("from a tool"); res.IsError {
			t.Fatalf("note: %+v", res)
		}
		note := call(t, r.reg, mcp.ReadResourceTool, map[string]string{"server": "faults", "uri": "mcptest://notes/n.txt"})
		if note.IsError || !strings.Contains(note.Content, "from a tool") {
			t.Errorf("read the note: %+v", note)
		}

		missing := call(t, r.reg, mcp.ReadResourceTool, map[string]string{"server": "faults", "uri": "mcptest://nothing"})
		if !missing.IsError || !strings.Contains(missing.Content, "MCP server faults refused resources/read") {
			t.Errorf("a URI the server does not have: %+v", missing)
		}
		other := call(t, r.reg, mcp.ReadResourceTool, map[string]string{"server": "elsewhere", "uri": "mcptest://faults"})
		if !other.IsError || !strings.Contains(other.Content, `no MCP server "elsewhere"`) || !strings.Contains(other.Content, "faults") {
			t.Errorf("a server there is not: %+v", other)
		}
		if empty := call(t, r.reg, mcp.ReadResourceTool, map[string]string{"server": "faults", "uri": " "}); !empty.IsError || !strings.Contains(empty.Content, "uri is empty") {
			t.Errorf("an empty URI: %+v", empty)
		}
		if st := r.status(); !st.Resources || strings.Join(st.Prompts, ",") != "mcp__faults__greet" {
			t.Errorf("status %+v", st)
		}
	})
}

// A resource read after the server crashed starts it again.
func TestResourceReadReconnects(t *testing.T) {
	t.Chdir(t.TempDir())
	r := setup(t, "stdio", mcptest.Faults{CrashOnCall: 1}, mcp.Options{}, func(r *rig, _ *mcp.Server) { r.faulty = 1 })
	if res := r.note("x"); !res.IsError || !strings.Contains(res.Content, "may or may not") {
		t.Fatalf("the call that crashed the server: %+v", res)
	}
	if st := r.status(); st.State != mcp.StateDown {
		t.Fatalf("after the crash: %+v", st)
	}
	if read := call(t, r.reg, mcp.ReadResourceTool, map[string]string{"server": "faults", "uri": "mcptest://faults"}); read.IsError {
		t.Errorf("read after the crash: %+v", read)
	}
	if n := r.processes(); n != 2 {
		t.Errorf("%d server processes started, want 2", n)
	}
}

// A server without resources brings no resource tools (TestStdioServerTools
// lists the tools of one) and says so when listed by name.
func TestNoResources(t *testing.T) {
	t.Chdir(t.TempDir())
	p, reg := provider(t, []mcp.Server{stdioServer(t)}, mcp.Options{})
	if _, ok := reg.Lookup(mcp.ListResourcesTool); ok {
		t.Errorf("resource tools without a server that serves resources: %v", reg.Names())
	}
	if st := p.Status()[0]; st.Resources || len(st.Prompts) != 0 {
		t.Errorf("status %+v", st)
	}
}

// A server's prompts are commands: "/mcp__<server>__<prompt> args" becomes
// the prompt's messages; a missing required argument, an unclosed quote,
// a server that is down are errors naming them; other input is not the
// prompts'.
func TestPrompts(t *testing.T) {
	matrix(t, func(t *testing.T, tr string) {
		r := setup(t, tr, mcptest.Faults{}, mcp.Options{})
		if r.cmds == nil {
			t.Fatal("no commands handed to the runtime")
		}
		cmds := r.cmds.Commands()
		if len(cmds) != 1 || cmds[0].Name != "mcp__faults__greet" || cmds[0].Args != "<name>" || cmds[0].Description == "" {
			t.Fatalf("commands %+v", cmds)
		}
		ctx := t.Context()
		ex, err := r.cmds.Expand(ctx, "/mcp__faults__greet Ada Lovelace")
		if err != nil || ex == nil || ex.Text != "Say hello to Ada Lovelace." {
			t.Errorf("expand: %+v, %v", ex, err)
		}
		ex, err = r.cmds.Expand(ctx, `  /mcp__faults__greet "Grace Hopper"`)
		if err != nil || ex == nil || ex.Text != "Say hello to Grace Hopper." {
			t.Errorf("expand, quoted: %+v, %v", ex, err)
		}
		if _, err := r.cmds.Expand(ctx, "/mcp__faults__greet"); err == nil || !strings.Contains(err.Error(), `"name" is required`) || !strings.Contains(err.Error(), "<name>") {
			t.Errorf("a missing argument: %v", err)
		}
		if _, err := r.cmds.Expand(ctx, `/mcp__faults__greet "Ada`); err == nil || !strings.Contains(err.Error(), "quote") {
			t.Errorf("an unclosed quote: %v", err)
		}
		for _, in := range []string{"hello", "/help", "/mcp__faults__nope x", "/mcp__other__greet x", "mcp__faults__greet x"} {
			if ex, err := r.cmds.Expand(ctx, in); ex != nil || err != nil {
				t.Errorf("Expand(%q) = %+v, %v; want not a command", in, ex, err)
			}
		}
	})
}

// The prompt of a server that is down: an error naming the server, not
// the command sent to the model.
func TestPromptOfServerDown(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	r := setup(t, "stdio", mcptest.Faults{}, mcp.Options{}, func(_ *rig, s *mcp.Server) {
		// A server that cannot start: its folder is not there.
		s.Command = filepath.Join(dir, "gone", "server")
	})
	_, err := r.cmds.Expand(t.Context(), "/mcp__faults__greet x")
	if err == nil || !strings.Contains(err.Error(), "MCP server faults is not available") {
		t.Errorf("a server down: %v", err)
	}
}
