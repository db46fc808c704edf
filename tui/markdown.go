package tui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// Markdown renders text that arrives in pieces (a model's stream) as
// markdown, one whole block at a time: a paragraph, a list, a fenced code
// block is drawn once it is complete, that is once a blank line outside a
// code fence follows it, or at Flush. A block never changes once drawn, so
// nothing is redrawn.
//
// The markdown is CommonMark with GitHub's tables, strikethrough, task
// lists and bare links, parsed by goldmark and drawn here: headings with
// their #s, emphasis, inline code in a colour of its own, lists, block
// quotes, links with their address, tables aligned (a record a row when
// too wide), wrapped at the width by display width. Code blocks are drawn
// in one colour, without syntax highlighting: a highlighter (chroma)
// registers its hundreds of lexers and styles at package init, which
// every run of orca would pay, drawing markdown or not.
//
// The text must already be stripped of control sequences: Markdown adds
// its own styling and nothing else. Every line it draws ends with no
// style open, and with no padding.
type Markdown struct {
	width   func() int
	profile termenv.Profile
	colors  colors
	pending strings.Builder
	parser  parser.Parser // made for the first block
}

// NewMarkdown returns a Markdown that wraps at width() columns (80 when
// it says 0), leaving the last free as the rest of orca's output does;
// width is asked again before each block so that a resized terminal gets
// blocks of its new width. Profile Ascii draws the markdown without
// colour and without escape sequences: lists, rules and quotes drawn, code
// indented, no backticks, emphasis kept as *, ** and ~~.
func NewMarkdown(width func() int, p termenv.Profile) *Markdown {
	return &Markdown{width: width, profile: p, colors: colors{code: p.Color("203"), codeBlock: p.Color("244"), heading: p.Color("6")}}
}

// colors are the colours of code, code blocks and headings in a profile,
// worked out once (on 16 colours each is the nearest of them, a search).
type colors struct{ code, codeBlock, heading termenv.Color }

// Write adds text and returns what it completed, rendered: "" until a
// block is whole.
func (m *Markdown) Write(text string) (string, error) {
	m.pending.WriteString(text)
	s := m.pending.String()
	cut := blockEnd(s)
	if cut <= 0 {
		return "", nil
	}
	m.pending.Reset()
	m.pending.WriteString(s[cut:])
	return m.render(s[:cut])
}

// Flush returns the rest, rendered, and empties m.
func (m *Markdown) Flush() (string, error) {
	s := m.pending.String()
	m.pending.Reset()
	if strings.TrimSpace(s) == "" {
		return "", nil
	}
	return m.render(s)
}

// Pending reports whether text waits for the end of its block.
func (m *Markdown) Pending() bool { return strings.TrimSpace(m.pending.String()) != "" }

// render draws src, without the blank lines around it. A panic in the
// drawing (a bug, on some input) is an error: the caller shows the text
// as it is.
func (m *Markdown) render(src string) (out string, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = "", fmt.Errorf("tui: drawing markdown: %v", p)
		}
	}()
	w := 80
	if m.width != nil {
		if n := m.width(); n > 0 {
			w = n
		}
	}
	if m.parser == nil {
		m.parser = goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser()
	}
	b := []byte(src)
	d := drawer{src: b, p: m.profile, c: &m.colors}
	lines := d.block(m.parser.Parse(text.NewReader(b)), max(1, w-1))
	return strings.Trim(strings.Join(lines, "\n"), "\n"), nil
}

// drawer draws one parsed block of source src as lines of a width.
type drawer struct {
	src []byte
	p   termenv.Profile
	c   *colors
}

// block returns the lines of n, none wider than w but for code and words
// longer than w.
func (d *drawer) block(n ast.Node, w int) []string {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		return d.wrap(d.inline(n, 0, nil), w)
	case *ast.Heading:
		marks := strings.Repeat("#", n.Level)
		lines := d.wrap(d.inline(n, sHeading, nil), w-len(marks)-1)
		if len(lines) == 0 {
			return []string{d.style(sFaint, marks)}
		}
		return hang(d.style(sFaint, marks)+" ", len(marks)+1, lines)
	case *ast.ThematicBreak:
		return []string{d.style(sFaint, strings.Repeat("─", w))}
	case *ast.CodeBlock, *ast.FencedCodeBlock:
		return d.code(n)
	case *ast.HTMLBlock:
		return d.html(n, w)
	case *ast.Blockquote:
		lines := d.children(n, w-2, false)
		if len(lines) == 0 {
			return []string{d.style(sFaint, "│")}
		}
		for i, l := range lines {
			if l == "" {
				lines[i] = d.style(sFaint, "│")
			} else {
				lines[i] = d.style(sFaint, "│") + " " + l
			}
		}
		return lines
	case *ast.List:
		return d.list(n, w)
	case *east.Table:
		return d.table(n, w)
	}
	return d.children(n, w, false)
}

// children returns the lines of n's blocks, a blank line between two
// unless tight.
func (d *drawer) children(n ast.Node, w int, tight bool) []string {
	w = max(1, w)
	var out []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		lines := d.block(c, w)
		if len(lines) == 0 {
			continue
		}
		if len(out) > 0 && !tight {
			out = append(out, "")
		}
		out = append(out, lines...)
	}
	return out
}

// hang puts first before the first line and cols spaces before the
// others that are not empty.
func hang(first string, cols int, lines []string) []string {
	pad := strings.Repeat(" ", cols)
	for i, l := range lines {
		switch {
		case i == 0:
			lines[i] = strings.TrimRight(first+l, " ")
		case l != "":
			lines[i] = pad + l
		}
	}
	return lines
}

// list draws a list: bullets •, numbers right-aligned, a task's box in
// place of its bullet; an item's lines under its first, after the marker.
func (d *drawer) list(l *ast.List, w int) []string {
	var marks []string
	num := l.Start
	for it := l.FirstChild(); it != nil; it = it.NextSibling() {
		switch {
		case l.IsOrdered():
			marks = append(marks, strconv.Itoa(num)+string(l.Marker))
			num++
		case taskBox(it) != nil:
			marks = append(marks, "[ ]")
			if taskBox(it).IsChecked {
				marks[len(marks)-1] = "[x]"
			}
		default:
			marks = append(marks, "•")
		}
	}
	widest := 0
	for _, m := range marks {
		widest = max(widest, ansi.StringWidth(m))
	}
	var out []string
	i := 0
	for it := l.FirstChild(); it != nil; it, i = it.NextSibling(), i+1 {
		mark := marks[i]
		if l.IsOrdered() {
			mark = strings.Repeat(" ", widest-len(mark)) + mark
		}
		cols := ansi.StringWidth(mark) + 1
		body := d.children(it, w-cols, l.IsTight)
		if i > 0 && !l.IsTight {
			out = append(out, "")
		}
		if len(body) == 0 {
			out = append(out, mark)
			continue
		}
		out = append(out, hang(mark+" ", cols, body)...)
	}
	return out
}

// taskBox returns the box of a task list item, if it is one.
func taskBox(item ast.Node) *east.TaskCheckBox {
	if p := item.FirstChild(); p != nil {
		if b, ok := p.FirstChild().(*east.TaskCheckBox); ok {
			return b
		}
	}
	return nil
}

// code draws a code block's lines as they are, in one colour, indented by
// two: not wrapped, tabs to stops of 4.
func (d *drawer) code(n ast.Node) []string {
	var out []string
	lines := n.Lines()
	for i := range lines.Len() {
		seg := lines.At(i)
		l := strings.TrimRight(expandTabs(string(seg.Value(d.src))), " \r\n")
		if l == "" {
			out = append(out, "")
			continue
		}
		out = append(out, "  "+d.style(sCodeBlock, l))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	for len(out) > 0 && out[0] == "" {
		out = out[1:]
	}
	return out
}

// html draws an HTML block as the text it is, each line wrapped at w
// under its own indentation.
func (d *drawer) html(n *ast.HTMLBlock, w int) []string {
	var out []string
	lines := n.Lines()
	segs := make([]text.Segment, 0, lines.Len()+1)
	for i := range lines.Len() {
		segs = append(segs, lines.At(i))
	}
	if n.HasClosure() {
		segs = append(segs, n.ClosureLine)
	}
	for _, seg := range segs {
		l := strings.TrimRight(expandTabs(string(seg.Value(d.src))), " \r\n")
		body := strings.TrimLeft(l, " ")
		if body == "" {
			out = append(out, "")
			continue
		}
		lead := len(l) - len(body)
		out = append(out, hang(strings.Repeat(" ", lead), lead, d.wrap([]span{{s: body}}, w-lead))...)
	}
	return out
}

// expandTabs replaces the tabs of a line by spaces, to stops of 4.
func expandTabs(l string) string {
	if !strings.Contains(l, "\t") {
		return l
	}
	var b strings.Builder
	col := 0
	for _, r := range l {
		if r == '\t' {
			n := 4 - col%4
			b.WriteString(strings.Repeat(" ", n))
			col += n
			continue
		}
		b.WriteRune(r)
		col += ansi.StringWidth(string(r))
	}
	return b.String()
}

// blockEnd returns where the last complete block of s ends: just after
// its last blank line that is outside a code fence; 0 if none.
func blockEnd(s string) int {
	end, fenced, at := 0, false, 0
	for at < len(s) {
		nl := strings.IndexByte(s[at:], '\n')
		if nl < 0 {
			break // the last line is not whole
		}
		line := s[at : at+nl]
		next := at + nl + 1
		if isFence(line) {
			fenced = !fenced
		} else if !fenced && strings.TrimSpace(line) == "" && at > 0 {
			end = next
		}
		at = next
	}
	return end
}

// isFence reports whether line opens or closes a fenced code block.
func isFence(line string) bool {
	t := strings.TrimLeft(line, " ")
	return len(line)-len(t) <= 3 && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~"))
}
