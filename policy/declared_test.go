package policy

import (
	"sync"

	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/tool/builtin"
	"github.com/orca-agent/orca/workspace"
)

// builtins are the built-in tools by name: the tests' requests carry what
// the real tools declare (tool.Traits, tool.Access), as the runtime's do.
var builtins = sync.OnceValue(func() map[string]tool.Tool {
	fs, err := workspace.OpenLocal(".")
	if err != nil {
		panic(err)
	}
	m := map[string]tool.Tool{}
	for _, p := range []tool.Provider{builtin.FilesProvider(), builtin.ShellProvider(), builtin.TodoProvider(), builtin.WebProvider(builtin.WebOptions{})} {
		ts, err := p.Tools(tool.Env{FS: fs})
		if err != nil {
			panic(err)
		}
		for _, t := range ts {
			m[t.Name()] = t
		}
	}
	return m
})

// declared fills in what the built-in tool req names declares about the
// call; a read-only trait req already claims is kept (a tool may claim it
// and still write). Other tools' requests are left as they are.
func declared(req Request) Request {
	t, ok := builtins()[req.ToolName]
	if !ok {
		return req
	}
	d := RequestFor(t, req.Input, req.FS)
	d.Traits.ReadOnly = d.Traits.ReadOnly || req.Traits.ReadOnly
	return d
}
