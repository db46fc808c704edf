package tui

import (
	"regexp"
	"strings"

	"github.com/charmbracelet/glamour"
	"github.com/charmbracelet/glamour/ansi"
	"github.com/charmbracelet/glamour/styles"
	"github.com/muesli/termenv"
)

// Markdown renders text that arrives in pieces (a model's stream) as
// markdown, one whole block at a time: a paragraph, a list, a fenced code
// block (highlighted by its language) is drawn once it is complete, that
// is once a blank line outside a code fence follows it, or at Flush. A
// block never changes once drawn, so nothing is redrawn.
//
// The text must already be stripped of control sequences: Markdown adds
// its own styling and nothing else.
type Markdown struct {
	width   func() int
	profile termenv.Profile
	pending strings.Builder
	r       *glamour.TermRenderer
	rw      int // the width r wraps at
}

// NewMarkdown returns a Markdown that wraps at width() columns (80 when
// it says 0), asked again before each block so that a resized terminal
// gets blocks of its new width. Profile Ascii draws the markdown without
// colour (lists, rules and code indented, no ** or backticks).
func NewMarkdown(width func() int, p termenv.Profile) *Markdown {
	return &Markdown{width: width, profile: p}
}

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

// render renders src, trimmed of the blank lines around it and of the
// spaces glamour pads its lines with.
func (m *Markdown) render(src string) (string, error) {
	w := 80
	if m.width != nil {
		if n := m.width(); n > 0 {
			w = n
		}
	}
	if m.r == nil || m.rw != w {
		r, err := glamour.NewTermRenderer(glamour.WithStyles(style(m.profile)), glamour.WithColorProfile(m.profile), glamour.WithWordWrap(max(20, w-1)))
		if err != nil {
			return "", err
		}
		m.r, m.rw = r, w
	}
	out, err := m.r.Render(src)
	if err != nil {
		return "", err
	}
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		lines[i] = trimPadding(l)
	}
	return strings.Trim(strings.Join(lines, "\n"), "\n"), nil
}

// style is glamour's dark style (its ASCII one without colour), with no
// margin: the model's text starts at the first column, as the rest of
// orca's output does.
func style(p termenv.Profile) ansi.StyleConfig {
	s := styles.DarkStyleConfig
	if p == termenv.Ascii {
		s = styles.ASCIIStyleConfig
	}
	zero := uint(0)
	s.Document.Margin = &zero
	s.Document.BlockPrefix, s.Document.BlockSuffix = "", ""
	return s
}

// trimPadding drops the spaces glamour pads a line to its width with,
// and the styles around them; a line that was styled ends with a reset.
func trimPadding(l string) string {
	styled := false
	for {
		t := strings.TrimRight(l, " ")
		if loc := trailingSGR.FindStringIndex(t); loc != nil {
			t, styled = t[:loc[0]], true
		}
		if t == l {
			break
		}
		l = t
	}
	if styled && strings.Contains(l, "\x1b[") {
		l += "\x1b[0m"
	}
	return l
}

var trailingSGR = regexp.MustCompile("\x1b\\[[0-9;]*m$")

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
