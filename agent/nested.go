package agent

import (
	"github.com/orca-agent/orca/tool"
)

// nestedMemoryFor returns what the call adds of the subfolders' memory
// files and the rules for the files it works on (memory.Nested), or "".
func (t *turn) nestedMemoryFor(tl tool.Tool, call *tool.Call) string {
	nm := t.rt.nested
	if nm == nil {
		return ""
	}
	a := tool.AccessOf(tl, call.Input)
	if len(a.Reads)+len(a.Writes) == 0 {
		return ""
	}
	return nm.For(t.rt.fs, t.res.StateKey(), append(append([]string(nil), a.Reads...), a.Writes...))
}
