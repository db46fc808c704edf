package lsp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orca-agent/orca/protect"
)

// Location is a place a server pointed to.
type Location struct {
	// Path is the file's: relative to the workspace (slash-separated)
	// inside it, absolute outside (a library's source).
	Path string
	// Line and Column are where it starts, from 1; Column counts
	// characters (in a file outside the workspace, UTF-16 units).
	Line, Column int
	// Text is that line, trimmed, for a file of the workspace the agent
	// may read; "" otherwise.
	Text string
}

func (l Location) String() string {
	s := fmt.Sprintf("%s:%d:%d", l.Path, l.Line, l.Column)
	if l.Text != "" {
		s += ": " + l.Text
	}
	return s
}

// Symbol is a named thing in the code: a function, a type, a field.
type Symbol struct {
	Name, Kind string
	// Detail is what the server adds (a signature); Container the symbol
	// it is in, where the server says so.
	Detail, Container string
	// Depth is how deep it is in a file's symbols (0: at the top).
	Depth int
	Location
}

// ErrUnsupported: the file's server does not offer what was asked.
var ErrUnsupported = errors.New("the language server does not offer this")

// opened is a file given to its server for a request.
type opened struct {
	srv  *server
	c    *client
	rel  string
	uri  string
	text string
}

// open gives the file at path (in the workspace) to its server, started
// if need be, and checks that the server offers capability.
func (s *Set) open(ctx context.Context, path, capability string) (*opened, error) {
	rel, err := s.o.FS.Resolve(path)
	if err != nil {
		return nil, err
	}
	srv := s.serverOf(rel)
	if srv == nil {
		if len(s.byExt) == 0 {
			return nil, fmt.Errorf("%w %s: no language server is configured", ErrNoServer, rel)
		}
		return nil, fmt.Errorf("%w %s (servers serve %s files)", ErrNoServer, rel, strings.Join(slices.Sorted(maps.Keys(s.byExt)), ", "))
	}
	data, err := s.o.FS.ReadFile(rel)
	if err != nil {
		return nil, err
	}
	c, err := srv.get(ctx)
	if err != nil {
		return nil, err
	}
	if !c.supports(capability) {
		return nil, fmt.Errorf("%w: %s has no %s", ErrUnsupported, srv.cfg.Name, capability)
	}
	abs := filepath.Join(s.root, filepath.FromSlash(rel))
	m, _, err := c.sync(ctx, abs, srv.cfg.Languages[strings.ToLower(filepath.Ext(rel))], data, false)
	if err != nil {
		return nil, c.gone(err)
	}
	return &opened{srv: srv, c: c, rel: rel, uri: m.uri, text: string(data)}, nil
}

// request sends a request about an opened file, within Options.Timeout.
func (s *Set) request(ctx context.Context, o *opened, method string, params, result any) error {
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	err := o.c.call(ctx, method, params, result)
	o.srv.lost(o.c)
	switch {
	case err == nil:
		o.srv.worked()
	case errors.Is(err, context.DeadlineExceeded):
		o.srv.timedOut(o.c)
		return fmt.Errorf("%s did not answer %s within %s", o.srv.cfg.Name, method, s.o.Timeout)
	}
	return err
}

// position is line and column (from 1, the column in characters) in
// o's text as LSP counts.
func (o *opened) position(line, col int) (position, error) {
	lines := strings.Split(o.text, "\n")
	if line < 1 || line > len(lines) {
		n := strings.Count(o.text, "\n")
		if !strings.HasSuffix(o.text, "\n") && o.text != "" {
			n++
		}
		return position{}, fmt.Errorf("line %d is not in %s (%d lines)", line, o.rel, n)
	}
	if col < 1 {
		return position{}, fmt.Errorf("character %d: characters count from 1", col)
	}
	return position{Line: line - 1, Character: utf16Offset(lines[line-1], col)}, nil
}

// Definition returns where the symbol at line and column (from 1) of the
// file at path is defined.
func (s *Set) Definition(ctx context.Context, path string, line, col int) ([]Location, error) {
	return s.locations(ctx, path, line, col, "definitionProvider", "textDocument/definition")
}

// Implementation returns the implementations of the interface or
// abstract method at line and column of the file at path.
func (s *Set) Implementation(ctx context.Context, path string, line, col int) ([]Location, error) {
	return s.locations(ctx, path, line, col, "implementationProvider", "textDocument/implementation")
}

// References returns where the symbol at line and column of the file at
// path is used, its declaration included.
func (s *Set) References(ctx context.Context, path string, line, col int) ([]Location, error) {
	return s.locations(ctx, path, line, col, "referencesProvider", "textDocument/references")
}

func (s *Set) locations(ctx context.Context, path string, line, col int, capability, method string) ([]Location, error) {
	o, err := s.open(ctx, path, capability)
	if err != nil {
		return nil, err
	}
	pos, err := o.position(line, col)
	if err != nil {
		return nil, err
	}
	var params any = positionParams{TextDocument: docID{URI: o.uri}, Position: pos}
	if method == "textDocument/references" {
		params = referenceParams{TextDocument: docID{URI: o.uri}, Position: pos, Context: referenceContext{IncludeDeclaration: true}}
	}
	var raw json.RawMessage
	if err := s.request(ctx, o, method, params, &raw); err != nil {
		return nil, err
	}
	return s.decodeLocations(raw), nil
}

// decodeLocations reads a Location, a Location[] or a LocationLink[].
func (s *Set) decodeLocations(raw json.RawMessage) []Location {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		if string(raw) == "null" || len(raw) == 0 {
			return nil
		}
		list = []json.RawMessage{raw}
	}
	var out []Location
	cache := map[string][]string{}
	for _, r := range list {
		var l location
		var link locationLink
		if json.Unmarshal(r, &link) == nil && link.TargetURI != "" {
			l = location{URI: link.TargetURI, Range: link.TargetSelectionRange}
		} else if json.Unmarshal(r, &l) != nil || l.URI == "" {
			continue
		}
		out = append(out, s.location(l, cache))
	}
	return out
}

// location is l as the model is shown it; cache keeps the lines of the
// files read.
func (s *Set) location(l location, cache map[string][]string) Location {
	abs := uriPath(l.URI)
	loc := Location{Path: cmp.Or(abs, l.URI), Line: l.Range.Start.Line + 1, Column: l.Range.Start.Character + 1}
	if abs == "" || !protect.Within(s.root, abs) {
		return loc
	}
	rel, err := filepath.Rel(s.root, abs)
	if err != nil {
		return loc
	}
	rel = filepath.ToSlash(rel)
	loc.Path = rel
	if s.o.Hidden != nil && s.o.Hidden(rel) {
		return loc
	}
	lines, ok := cache[rel]
	if !ok {
		if data, err := s.o.FS.ReadFile(rel); err == nil && len(data) <= 16<<20 {
			lines = strings.Split(string(data), "\n")
		}
		cache[rel] = lines
	}
	if l.Range.Start.Line < len(lines) {
		line := lines[l.Range.Start.Line]
		loc.Column = runeColumn(line, l.Range.Start.Character)
		loc.Text = clip(strings.TrimSpace(line), 200)
	}
	return loc
}

// Hover returns what the server says of the symbol at line and column of
// the file at path (its type, its documentation), "" if nothing.
func (s *Set) Hover(ctx context.Context, path string, line, col int) (string, error) {
	o, err := s.open(ctx, path, "hoverProvider")
	if err != nil {
		return "", err
	}
	pos, err := o.position(line, col)
	if err != nil {
		return "", err
	}
	var h *hoverResult
	if err := s.request(ctx, o, "textDocument/hover", positionParams{TextDocument: docID{URI: o.uri}, Position: pos}, &h); err != nil {
		return "", err
	}
	if h == nil {
		return "", nil
	}
	return strings.TrimSpace(hoverText(h.Contents)), nil
}

// DocumentSymbols returns the symbols of the file at path, in order, each
// after the one it is in.
func (s *Set) DocumentSymbols(ctx context.Context, path string) ([]Symbol, error) {
	o, err := s.open(ctx, path, "documentSymbolProvider")
	if err != nil {
		return nil, err
	}
	var syms []symbol
	if err := s.request(ctx, o, "textDocument/documentSymbol", documentSymbolParams{TextDocument: docID{URI: o.uri}}, &syms); err != nil {
		return nil, err
	}
	var out []Symbol
	cache := map[string][]string{}
	var walk func([]symbol, int)
	walk = func(list []symbol, depth int) {
		for _, sy := range list {
			l := location{URI: o.uri}
			switch {
			case sy.SelectionRange != nil:
				l.Range = *sy.SelectionRange
			case sy.Range != nil:
				l.Range = *sy.Range
			case sy.Location != nil:
				l = *sy.Location
			}
			out = append(out, Symbol{Name: sy.Name, Kind: kindName(sy.Kind), Detail: sy.Detail, Container: sy.ContainerName, Depth: depth, Location: s.location(l, cache)})
			walk(sy.Children, depth+1)
		}
	}
	walk(syms, 0)
	return out, nil
}

// WorkspaceSymbols returns the symbols of the workspace whose names match
// query, as the server of the file at path finds them.
func (s *Set) WorkspaceSymbols(ctx context.Context, path, query string) ([]Symbol, error) {
	o, err := s.open(ctx, path, "workspaceSymbolProvider")
	if err != nil {
		return nil, err
	}
	var syms []symbol
	if err := s.request(ctx, o, "workspace/symbol", workspaceSymbolParams{Query: query}, &syms); err != nil {
		return nil, err
	}
	out := make([]Symbol, 0, len(syms))
	cache := map[string][]string{}
	for _, sy := range syms {
		if sy.Location == nil {
			continue
		}
		out = append(out, Symbol{Name: sy.Name, Kind: kindName(sy.Kind), Detail: sy.Detail, Container: sy.ContainerName, Location: s.location(*sy.Location, cache)})
	}
	// The name itself first, then the workspace's symbols before the
	// libraries'.
	slices.SortStableFunc(out, func(a, b Symbol) int {
		return cmp.Or(cmp.Compare(rank(a.Name != query), rank(b.Name != query)), cmp.Compare(rank(filepath.IsAbs(a.Path)), rank(filepath.IsAbs(b.Path))))
	})
	return out, nil
}

func rank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// WordAt returns the identifier at line and column (from 1) of text, ""
// if there is none.
func WordAt(text string, line, col int) string {
	lines := strings.Split(text, "\n")
	if line < 1 || line > len(lines) || col < 1 {
		return ""
	}
	r := []rune(lines[line-1])
	i := col - 1
	if i >= len(r) {
		return ""
	}
	word := func(c rune) bool {
		return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c > 127
	}
	if !word(r[i]) {
		return ""
	}
	a, b := i, i
	for a > 0 && word(r[a-1]) {
		a--
	}
	for b < len(r) && word(r[b]) {
		b++
	}
	return string(r[a:b])
}
