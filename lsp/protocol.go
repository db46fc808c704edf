package lsp

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
)

// The part of the Language Server Protocol (3.17) orca speaks: the
// handshake, documents opened and changed with their whole text,
// diagnostics pushed by the server, and the navigation requests. Fields
// orca neither sends nor reads are left out.

type position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

type rng struct {
	Start position `json:"start"`
	End   position `json:"end"`
}

type location struct {
	URI   string `json:"uri"`
	Range rng    `json:"range"`
}

// locationLink is what a server may answer a definition with instead of
// a location (LocationLink[]).
type locationLink struct {
	TargetURI            string `json:"targetUri"`
	TargetRange          rng    `json:"targetRange"`
	TargetSelectionRange rng    `json:"targetSelectionRange"`
}

type textDocumentItem struct {
	URI        string `json:"uri"`
	LanguageID string `json:"languageId"`
	Version    int    `json:"version"`
	Text       string `json:"text"`
}

type docID struct {
	URI string `json:"uri"`
}

type versionedDocID struct {
	URI     string `json:"uri"`
	Version int    `json:"version"`
}

type didOpenParams struct {
	TextDocument textDocumentItem `json:"textDocument"`
}

type didChangeParams struct {
	TextDocument   versionedDocID `json:"textDocument"`
	ContentChanges []wholeText    `json:"contentChanges"`
}

type wholeText struct {
	Text string `json:"text"`
}

type didCloseParams struct {
	TextDocument docID `json:"textDocument"`
}

type didSaveParams struct {
	TextDocument docID `json:"textDocument"`
}

type fileEvent struct {
	URI  string `json:"uri"`
	Type int    `json:"type"` // 1 created, 2 changed, 3 deleted
}

type didChangeWatchedFilesParams struct {
	Changes []fileEvent `json:"changes"`
}

type positionParams struct {
	TextDocument docID    `json:"textDocument"`
	Position     position `json:"position"`
}

type referenceParams struct {
	TextDocument docID            `json:"textDocument"`
	Position     position         `json:"position"`
	Context      referenceContext `json:"context"`
}

type referenceContext struct {
	IncludeDeclaration bool `json:"includeDeclaration"`
}

type documentSymbolParams struct {
	TextDocument docID `json:"textDocument"`
}

type workspaceSymbolParams struct {
	Query string `json:"query"`
}

// symbol is a DocumentSymbol (with children) or a SymbolInformation (with
// a location): servers answer either.
type symbol struct {
	Name           string    `json:"name"`
	Detail         string    `json:"detail,omitempty"`
	Kind           int       `json:"kind"`
	ContainerName  string    `json:"containerName,omitempty"`
	Range          *rng      `json:"range,omitempty"`
	SelectionRange *rng      `json:"selectionRange,omitempty"`
	Location       *location `json:"location,omitempty"`
	Children       []symbol  `json:"children,omitempty"`
}

type hoverResult struct {
	Contents json.RawMessage `json:"contents"`
}

type publishDiagnosticsParams struct {
	URI         string       `json:"uri"`
	Version     *int         `json:"version,omitempty"`
	Diagnostics []diagnostic `json:"diagnostics"`
}

type diagnostic struct {
	Range    rng             `json:"range"`
	Severity int             `json:"severity,omitempty"`
	Code     json.RawMessage `json:"code,omitempty"`
	Source   string          `json:"source,omitempty"`
	Message  string          `json:"message"`
}

type workspaceFolder struct {
	URI  string `json:"uri"`
	Name string `json:"name"`
}

type initializeParams struct {
	ProcessID             *int              `json:"processId"`
	ClientInfo            clientInfo        `json:"clientInfo"`
	RootURI               string            `json:"rootUri"`
	RootPath              string            `json:"rootPath"`
	WorkspaceFolders      []workspaceFolder `json:"workspaceFolders"`
	Capabilities          json.RawMessage   `json:"capabilities"`
	InitializationOptions json.RawMessage   `json:"initializationOptions,omitempty"`
}

type clientInfo struct {
	Name string `json:"name"`
}

type initializeResult struct {
	Capabilities map[string]json.RawMessage `json:"capabilities"`
}

type configurationParams struct {
	Items []struct {
		Section string `json:"section"`
	} `json:"items"`
}

// capabilities are what orca tells a server it can do: take pushed
// diagnostics (with their versions), navigate (links too), symbols in
// their hierarchy, hovers as Markdown, workspace folders and settings.
const capabilities = `{
  "general": {"positionEncodings": ["utf-16"]},
  "textDocument": {
    "synchronization": {"didSave": true, "dynamicRegistration": false},
    "publishDiagnostics": {"relatedInformation": false, "versionSupport": true},
    "definition": {"linkSupport": true},
    "implementation": {"linkSupport": true},
    "references": {},
    "hover": {"contentFormat": ["markdown", "plaintext"]},
    "documentSymbol": {"hierarchicalDocumentSymbolSupport": true}
  },
  "workspace": {
    "workspaceFolders": true,
    "configuration": true,
    "symbol": {},
    "didChangeWatchedFiles": {"dynamicRegistration": true}
  },
  "window": {"workDoneProgress": true}
}`

// fileURI is the file: URI of an absolute path.
func fileURI(path string) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path)}
	return u.String()
}

// uriPath is the path of a file: URI, "" for another scheme.
func uriPath(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return ""
	}
	return filepath.FromSlash(u.Path)
}

// severities are the names of the diagnostics' severities (1–4).
var severities = [...]string{"", "error", "warning", "info", "hint"}

// symbolKinds are the names of the symbol kinds (1–26).
var symbolKinds = [...]string{"", "file", "module", "namespace", "package", "class", "method", "property", "field", "constructor", "enum",
	"interface", "function", "variable", "constant", "string", "number", "boolean", "array", "object", "key", "null", "enum member",
	"struct", "event", "operator", "type parameter"}

func kindName(k int) string {
	if k > 0 && k < len(symbolKinds) {
		return symbolKinds[k]
	}
	return "symbol"
}

// hoverText is a hover's contents as text: MarkupContent, a MarkedString,
// or a list of them.
func hoverText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var m struct {
		Kind     string `json:"kind"`
		Language string `json:"language"`
		Value    string `json:"value"`
	}
	if json.Unmarshal(raw, &m) == nil && m.Value != "" {
		if m.Language != "" {
			return "```" + m.Language + "\n" + m.Value + "\n```"
		}
		return m.Value
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil {
		parts := make([]string, 0, len(list))
		for _, r := range list {
			if t := hoverText(r); t != "" {
				parts = append(parts, t)
			}
		}
		return strings.Join(parts, "\n\n")
	}
	return ""
}
