package tui

import (
	"bytes"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/util"
)

// style is how a piece of markdown is drawn: a set of these bits.
type style uint16

const (
	sBold style = 1 << iota
	sItalic
	sStrike
	sLink
	sFaint
	sCode      // inline code
	sCodeBlock // a code block's lines
	sHeading
)

// style returns s drawn in st: s itself in the Ascii profile, else s
// between its SGR sequence and a reset.
func (d *drawer) style(st style, s string) string {
	if st == 0 || s == "" || d.p == termenv.Ascii {
		return s
	}
	t := d.p.String()
	if st&(sBold|sHeading) != 0 {
		t = t.Bold()
	}
	if st&sFaint != 0 {
		t = t.Faint()
	}
	if st&sItalic != 0 {
		t = t.Italic()
	}
	if st&sLink != 0 {
		t = t.Underline()
	}
	if st&sStrike != 0 {
		t = t.CrossOut()
	}
	switch {
	case st&sCode != 0:
		t = t.Foreground(d.c.code)
	case st&sCodeBlock != 0:
		t = t.Foreground(d.c.codeBlock)
	case st&sHeading != 0:
		t = t.Foreground(d.c.heading)
	}
	return t.Styled(s)
}

// span is a piece of a block's text and how it is drawn; "\n" alone is a
// hard line break.
type span struct {
	s  string
	st style
}

// plain returns the text of spans.
func plain(spans []span) string {
	var b strings.Builder
	for _, s := range spans {
		b.WriteString(s.s)
	}
	return b.String()
}

// inline appends to out the text of n's inline children, drawn in st and
// their own styles.
func (d *drawer) inline(n ast.Node, st style, out []span) []span {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			var s string
			if v := c.Segment.Value(d.src); c.IsRaw() {
				s = string(v)
			} else {
				s = unescape(v)
			}
			switch {
			case c.HardLineBreak():
				out = append(out, span{strings.TrimRight(s, " \t"), st}, span{"\n", st})
			case c.SoftLineBreak():
				out = append(out, span{strings.TrimRight(s, " \t") + " ", st})
			default:
				out = append(out, span{s, st})
			}
		case *ast.String:
			s := string(c.Value)
			if !c.IsCode() && !c.IsRaw() {
				s = unescape(c.Value)
			}
			out = append(out, span{s, st})
		case *ast.CodeSpan:
			var b strings.Builder
			for t := c.FirstChild(); t != nil; t = t.NextSibling() {
				switch t := t.(type) {
				case *ast.Text:
					b.Write(t.Segment.Value(d.src))
				case *ast.String:
					b.Write(t.Value)
				}
			}
			out = append(out, span{strings.ReplaceAll(b.String(), "\n", " "), st | sCode})
		case *ast.Emphasis:
			if c.Level >= 2 {
				out = d.marked(c, st|sBold, "**", out)
			} else {
				out = d.marked(c, st|sItalic, "*", out)
			}
		case *east.Strikethrough:
			out = d.marked(c, st|sStrike, "~~", out)
		case *ast.Link:
			from := len(out)
			out = d.inline(c, st|sLink, out)
			dest, label := unescape(c.Destination), plain(out[from:])
			if dest != "" && dest != label && dest != "mailto:"+label {
				out = append(out, span{" (" + dest + ")", sFaint})
			}
		case *ast.AutoLink:
			out = append(out, span{string(c.Label(d.src)), st | sLink})
		case *ast.Image:
			label := "[image]"
			if alt := plain(d.inline(c, 0, nil)); alt != "" {
				label = "[image: " + alt + "]"
			}
			out = append(out, span{label, st | sItalic})
			if len(c.Destination) > 0 {
				out = append(out, span{" (" + unescape(c.Destination) + ")", sFaint})
			}
		case *ast.RawHTML:
			for i := range c.Segments.Len() {
				seg := c.Segments.At(i)
				out = append(out, span{strings.ReplaceAll(string(seg.Value(d.src)), "\n", " "), st})
			}
		case *east.TaskCheckBox:
			if item, ok := c.Parent().Parent().(*ast.ListItem); ok {
				if l, ok := item.Parent().(*ast.List); ok && !l.IsOrdered() {
					continue // drawn in place of the item's bullet
				}
			}
			box := "[ ] "
			if c.IsChecked {
				box = "[x] "
			}
			out = append(out, span{box, st})
		default:
			out = d.inline(c, st, out)
		}
	}
	return out
}

// marked appends n's text in st; in the Ascii profile, between marks
// (**, *, ~~), which say without colour what st would.
func (d *drawer) marked(n ast.Node, st style, mark string, out []span) []span {
	if d.p != termenv.Ascii {
		return d.inline(n, st, out)
	}
	out = append(out, span{mark, st})
	out = d.inline(n, st, out)
	return append(out, span{mark, st})
}

// unescape returns text as CommonMark reads it: backslash escapes and
// entity and numeric character references resolved, NUL replaced.
func unescape(v []byte) string {
	if !bytes.ContainsAny(v, "\\&\x00") {
		return string(v)
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\' && i+1 < len(v) && util.IsPunct(v[i+1]):
			b.WriteByte(v[i+1])
			i++
		case c == 0:
			b.WriteRune(utf8.RuneError)
		case c == '&':
			s, n := reference(v[i:])
			if n == 0 {
				b.WriteByte(c)
				continue
			}
			b.WriteString(s)
			i += n - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// reference reads the character reference v starts with (&amp;, &#35;,
// &#x22;): what it stands for and its length; 0 if there is none. A
// reference to a control character or a bidirectional override stands for
// U+FFFD: the model's text was sanitized before it was parsed, and must
// not become an escape sequence now.
func reference(v []byte) (string, int) {
	// The longest reference, &CounterClockwiseContourIntegral;, is 33
	// bytes: no need to look further for its end (nor to copy more).
	end := bytes.IndexByte(v[:min(len(v), 40)], ';')
	if end < 2 {
		return "", 0
	}
	name := string(v[1:end])
	if num, ok := strings.CutPrefix(name, "#"); ok {
		base, most := 10, 7
		if len(num) > 0 && (num[0] == 'x' || num[0] == 'X') {
			num, base, most = num[1:], 16, 6
		}
		if num == "" || len(num) > most || (base == 10 && strings.TrimFunc(num, isDigit) != "") {
			return "", 0
		}
		r, err := strconv.ParseUint(num, base, 32)
		if err != nil {
			return "", 0
		}
		c := util.ToValidRune(rune(r))
		if unsafeRune(c) {
			c = utf8.RuneError
		}
		return string(c), end + 1
	}
	for _, c := range []byte(name) {
		if !util.IsAlphaNumeric(c) {
			return "", 0
		}
	}
	if e, ok := util.LookUpHTML5EntityByName(name); ok {
		return string(e.Characters), end + 1
	}
	return "", 0
}

func isDigit(r rune) bool { return '0' <= r && r <= '9' }

// tok is a piece of a block's text as it is laid out in lines: a word
// (or a part of one, in a style of its own, or an ideograph), spaces, or a
// hard line break.
type tok struct {
	s    string
	st   style
	w    int  // its width in columns
	kind byte // 'w' a word, ' ' spaces, '\n' a hard line break
	cjk  bool // an ideograph: a line may break before and after it
}

// tokens cuts spans into toks.
func tokens(spans []span) []tok {
	var out []tok
	for _, sp := range spans {
		s := sp.s
		for s != "" {
			r, size := utf8.DecodeRuneInString(s)
			i := size
			switch {
			case r == '\n':
				out = append(out, tok{st: sp.st, kind: '\n'})
			case r == ' ' || r == '\t':
				for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
					i++
				}
				out = append(out, tok{s: strings.Repeat(" ", i), st: sp.st, w: i, kind: ' '})
			case ideograph(r):
				for i < len(s) {
					r, n := utf8.DecodeRuneInString(s[i:])
					if !unicode.In(r, unicode.Mn, unicode.Me) && r != '\u200d' && !unicode.Is(unicode.Variation_Selector, r) {
						break
					}
					i += n
				}
				out = append(out, tok{s: s[:i], st: sp.st, w: ansi.StringWidth(s[:i]), kind: 'w', cjk: true})
			default:
				if j := strings.IndexFunc(s, func(r rune) bool { return r == '\n' || r == ' ' || r == '\t' || ideograph(r) }); j < 0 {
					i = len(s)
				} else {
					i = j
				}
				out = append(out, tok{s: s[:i], st: sp.st, w: ansi.StringWidth(s[:i]), kind: 'w'})
			}
			s = s[i:]
		}
	}
	return out
}

// ideograph reports whether r is written without spaces around it
// (Chinese, Japanese): a line may break before and after it.
func ideograph(r rune) bool {
	return r >= 0x2E80 && unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana)
}

// breakable reports whether a line may break between the word pieces a
// and b, which no space separates: around an ideograph, but not before
// closing punctuation nor after opening.
func breakable(a, b tok) bool {
	if !a.cjk && !b.cjk {
		return false
	}
	first, _ := utf8.DecodeRuneInString(b.s)
	last, _ := utf8.DecodeLastRuneInString(a.s)
	return !(unicode.IsPunct(first) && !unicode.In(first, unicode.Ps, unicode.Pi)) && !unicode.In(last, unicode.Ps, unicode.Pi)
}

// layout lays ts out in lines of w columns, breaking at spaces (dropped
// there) and around ideographs; a word wider than w has a line of its
// own, wider than w.
func layout(ts []tok, w int) [][]tok {
	var lines [][]tok
	var line, gap, word []tok
	lw, gw, ww := 0, 0, 0
	place := func() {
		if len(word) == 0 {
			return
		}
		if len(line) > 0 && lw+gw+ww > w {
			lines = append(lines, line)
			line, lw = nil, 0
		}
		if len(line) > 0 {
			line = append(line, gap...)
			lw += gw
		}
		line = append(line, word...)
		lw += ww
		word, ww, gap, gw = nil, 0, nil, 0
	}
	for _, t := range ts {
		switch t.kind {
		case ' ':
			place()
			gap = append(gap, t)
			gw += t.w
		case '\n':
			place()
			lines = append(lines, line)
			line, lw, gap, gw = nil, 0, nil, 0
		default:
			if len(word) > 0 && breakable(word[len(word)-1], t) {
				place()
			}
			word = append(word, t)
			ww += t.w
		}
	}
	place()
	if len(line) > 0 {
		lines = append(lines, line)
	}
	return lines
}

// measure returns the width of ts on one line, and of its widest word.
func measure(ts []tok) (all, word int) {
	for _, l := range layout(ts, int(^uint(0)>>1)) {
		all = max(all, width(l))
	}
	w := 0
	for i, t := range ts {
		if t.kind != 'w' || (i > 0 && ts[i-1].kind == 'w' && breakable(ts[i-1], t)) {
			w = 0
		}
		if t.kind == 'w' {
			w += t.w
			word = max(word, w)
		}
	}
	return all, word
}

// width returns the columns a line of ts takes.
func width(ts []tok) int {
	n := 0
	for _, t := range ts {
		n += t.w
	}
	return n
}

// line draws a line of ts, each run of one style styled on its own.
func (d *drawer) line(ts []tok) string {
	var b, run strings.Builder
	for i := 0; i < len(ts); {
		run.Reset()
		j := i
		for ; j < len(ts) && ts[j].st == ts[i].st; j++ {
			run.WriteString(ts[j].s)
		}
		b.WriteString(d.style(ts[i].st, run.String()))
		i = j
	}
	return b.String()
}

// wrap draws spans in lines of w columns.
func (d *drawer) wrap(spans []span, w int) []string {
	var out []string
	for _, l := range layout(tokens(spans), max(1, w)) {
		out = append(out, d.line(l))
	}
	return out
}
