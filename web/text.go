package web

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

// ErrNotText: a page's bytes are not text (an image, a PDF, an archive).
// Text's errors wrap it and name the page and its type.
var ErrNotText = errors.New("not text")

// Text is a page as a model reads it.
type Text struct {
	// Markdown is the page's text: an HTML page as Markdown (links made
	// absolute, its head, scripts, styles and forms left out), any other
	// text as it came; UTF-8 whatever charset the page was in.
	Markdown string
	// Title is an HTML page's title ("" if it has none, or is no HTML).
	Title string
	// Type is the page's media type, as it says it or, if it does not, as
	// its bytes show ("text/html").
	Type string
}

// Text returns the page as text for a model, decoded from the charset it
// declares (its Content-Type, or an HTML page's meta). Bytes that are no
// text are ErrNotText; the Type is known then too (MediaType).
func (p *Page) Text() (*Text, error) {
	typ, params := p.MediaType()
	if !textual(typ) {
		return nil, fmt.Errorf("%s is %s, not text: %w", p.URL, typ, ErrNotText)
	}
	ct := typ
	if cs := params["charset"]; cs != "" {
		ct += "; charset=" + cs
	}
	r, err := charset.NewReader(bytes.NewReader(p.Body), ct)
	if err != nil {
		return nil, fmt.Errorf("%s: its charset (%s) cannot be read: %w", p.URL, ct, err)
	}
	if typ != "text/html" && typ != "application/xhtml+xml" {
		b, err := io.ReadAll(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.URL, err)
		}
		return &Text{Markdown: strings.ToValidUTF8(string(b), "\uFFFD"), Type: typ}, nil
	}
	doc, err := html.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("%s: the HTML cannot be read: %w", p.URL, err)
	}
	t := &Text{Title: title(doc), Type: typ}
	md, err := htmltomarkdown.ConvertNode(doc, converter.WithDomain(p.URL))
	if err != nil {
		return nil, fmt.Errorf("%s: the HTML cannot be made Markdown: %w", p.URL, err)
	}
	t.Markdown = strings.ToValidUTF8(string(md), "\uFFFD")
	return t, nil
}

// MediaType returns the page's media type and its parameters: as its
// Content-Type says, or as its bytes show when it says none (or nothing
// that parses).
func (p *Page) MediaType() (string, map[string]string) {
	if typ, params, err := mime.ParseMediaType(p.ContentType); err == nil && typ != "" {
		return strings.ToLower(typ), params
	}
	typ, params, _ := mime.ParseMediaType(http.DetectContentType(p.Body))
	return typ, params
}

// textual reports whether a page of media type typ is text a model reads.
func textual(typ string) bool {
	if strings.HasPrefix(typ, "text/") {
		return true
	}
	switch typ {
	case "application/xhtml+xml", "application/json", "application/xml", "application/javascript", "application/ecmascript",
		"application/x-javascript", "application/yaml", "application/x-yaml", "application/toml", "application/x-sh",
		"application/sql", "application/graphql", "application/x-ndjson", "application/ld+json":
		return true
	}
	return strings.HasSuffix(typ, "+json") || strings.HasSuffix(typ, "+xml")
}

// title returns the text of the document's first <title>, on one line.
func title(n *html.Node) string {
	if n.Type == html.ElementNode && n.Data == "title" {
		var b strings.Builder
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.TextNode {
				b.WriteString(c.Data)
			}
		}
		return strings.Join(strings.Fields(b.String()), " ")
	}
	if n.Type == html.ElementNode && n.Data == "body" {
		return "" // a title is in the head
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if s := title(c); s != "" {
			return s
		}
	}
	return ""
}
