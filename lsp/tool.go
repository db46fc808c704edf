package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/orca-agent/orca/tool"
)

// Tool returns the LSP tool over the Set's servers: Claude Code's LSP
// tool (operation, filePath, line, character), with workspaceSymbol's
// query.
func Tool(s *Set) tool.Tool { return &lspTool{set: s} }

// Provider returns the provider of the LSP tool over s.
func Provider(s *Set) tool.Provider {
	return tool.NewProvider("lsp", func(tool.Env) ([]tool.Tool, error) { return []tool.Tool{Tool(s)}, nil })
}

type lspTool struct{ set *Set }

type toolInput struct {
	Operation string `json:"operation"`
	FilePath  string `json:"filePath"`
	Line      int    `json:"line"`
	Character int    `json:"character"`
	Query     string `json:"query"`
}

// maxListed is how many locations or symbols a call lists.
const maxListed = 100

func (*lspTool) Name() string { return "LSP" }

func (t *lspTool) Description() string {
	return `Asks the workspace's language servers (` + strings.Join(t.set.Servers(), ", ") + `) about the code: where a symbol is defined, where it is used, its type and documentation, the symbols of a file or of the workspace.

- operation: goToDefinition, goToImplementation, findReferences, hover (at a position); documentSymbol (the file's symbols); workspaceSymbol (symbols whose names match query, or the name at the position).
- line and character count from 1, as Read numbers lines: point at a character of the symbol's name.
- Prefer it to Grep for following a symbol: it knows scopes, imports and types.
- After you change a file, what its language server finds wrong comes with the tool's output in a <diagnostics> block, without asking.`
}

func (*lspTool) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "operation": {"type": "string", "enum": ["goToDefinition", "goToImplementation", "findReferences", "hover", "documentSymbol", "workspaceSymbol"], "description": "What to ask"},
    "filePath": {"type": "string", "description": "The file (absolute, or relative to the workspace)"},
    "line": {"type": "integer", "minimum": 1, "description": "The line, from 1"},
    "character": {"type": "integer", "minimum": 1, "description": "The character in the line, from 1"},
    "query": {"type": "string", "description": "workspaceSymbol: the name to look for (default: the name at line and character)"}
  },
  "required": ["operation", "filePath"],
  "additionalProperties": false
}`)
}

// The LSP tool reads; the server it may start runs in the sandbox.
func (*lspTool) Traits() tool.Traits { return tool.Traits{ReadOnly: true, Idempotent: true} }

func (*lspTool) Access(in json.RawMessage) tool.Access {
	var a toolInput
	if json.Unmarshal(in, &a) != nil || a.FilePath == "" {
		return tool.Access{}
	}
	return tool.Access{Reads: []string{a.FilePath}}
}

func (*lspTool) Display(in json.RawMessage) tool.Display {
	var a toolInput
	_ = json.Unmarshal(in, &a)
	s := a.Operation + " " + a.FilePath
	if a.Line > 0 {
		s += fmt.Sprintf(":%d:%d", a.Line, a.Character)
	}
	if a.Query != "" {
		s += " " + a.Query
	}
	return tool.Display{Summary: tool.OneLine(s)}
}

func (t *lspTool) Execute(ctx context.Context, call *tool.Call) tool.Result {
	var in toolInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tool.Errorf("LSP: %v", err)
	}
	at := func() error {
		if in.Line < 1 || in.Character < 1 {
			return fmt.Errorf("LSP %s: give the line and the character (from 1) of the symbol in %s", in.Operation, in.FilePath)
		}
		return nil
	}
	s := t.set
	var out string
	var err error
	switch in.Operation {
	case "goToDefinition", "goToImplementation", "findReferences":
		if err = at(); err != nil {
			break
		}
		var locs []Location
		switch in.Operation {
		case "goToDefinition":
			locs, err = s.Definition(ctx, in.FilePath, in.Line, in.Character)
		case "goToImplementation":
			locs, err = s.Implementation(ctx, in.FilePath, in.Line, in.Character)
		default:
			locs, err = s.References(ctx, in.FilePath, in.Line, in.Character)
		}
		out = listLocations(in.Operation, locs)
	case "hover":
		if err = at(); err != nil {
			break
		}
		out, err = s.Hover(ctx, in.FilePath, in.Line, in.Character)
		if err == nil && out == "" {
			out = "The server has nothing to say of the symbol there."
		}
	case "documentSymbol":
		var syms []Symbol
		syms, err = s.DocumentSymbols(ctx, in.FilePath)
		out = listSymbols(syms, "No symbols in "+in.FilePath+".")
	case "workspaceSymbol":
		q := in.Query
		if q == "" {
			if err = at(); err != nil {
				break
			}
			data, rerr := s.o.FS.ReadFile(in.FilePath)
			if rerr != nil {
				err = rerr
				break
			}
			if q = WordAt(string(data), in.Line, in.Character); q == "" {
				err = fmt.Errorf("LSP workspaceSymbol: no name at %s:%d:%d: give a query", in.FilePath, in.Line, in.Character)
				break
			}
		}
		var syms []Symbol
		syms, err = s.WorkspaceSymbols(ctx, in.FilePath, q)
		out = listSymbols(syms, fmt.Sprintf("No symbol matches %q.", q))
	default:
		err = fmt.Errorf("LSP: unknown operation %q", in.Operation)
	}
	if err != nil {
		return tool.Errorf("LSP %s: %v", in.Operation, err)
	}
	return tool.Text(out)
}

func listLocations(op string, locs []Location) string {
	if len(locs) == 0 {
		switch op {
		case "goToDefinition":
			return "No definition found there."
		case "goToImplementation":
			return "No implementation found."
		}
		return "No references found."
	}
	var b strings.Builder
	switch op {
	case "findReferences":
		fmt.Fprintf(&b, "%d references:\n", len(locs))
	case "goToImplementation":
		b.WriteString("Implemented at:\n")
	default:
		b.WriteString("Defined at:\n")
	}
	for i, l := range locs {
		if i == maxListed {
			fmt.Fprintf(&b, "… and %d more\n", len(locs)-maxListed)
			break
		}
		b.WriteString(l.String())
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func listSymbols(syms []Symbol, none string) string {
	if len(syms) == 0 {
		return none
	}
	var b strings.Builder
	for i, sy := range syms {
		if i == maxListed {
			fmt.Fprintf(&b, "… and %d more\n", len(syms)-maxListed)
			break
		}
		b.WriteString(strings.Repeat("  ", sy.Depth))
		b.WriteString(sy.Kind + " " + sy.Name)
		if sy.Detail != "" {
			b.WriteString(" " + strings.ReplaceAll(sy.Detail, "\n", " "))
		}
		if sy.Container != "" {
			b.WriteString(" (in " + sy.Container + ")")
		}
		fmt.Fprintf(&b, " — %s:%d\n", sy.Path, sy.Line)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
