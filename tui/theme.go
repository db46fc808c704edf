// Package tui draws orca's terminal output for people: colour (lipgloss)
// and the model's markdown (parsed by goldmark, drawn here). It knows
// nothing of the runtime; the CLI decides what to draw and asks tui how.
//
// Everything here degrades to the plain text it was given: off a
// terminal, with NO_COLOR set, or on a dumb terminal, a Theme styles
// nothing and no escape sequence is written.
package tui

import (
	"io"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Profile returns the colours a terminal can show, from the environment
// (getenv): none when terminal is false, NO_COLOR is set (to anything:
// no-color.org), or TERM is dumb or unset; true colour when COLORTERM says
// so; 256 colours when TERM says so; else the 16 ANSI colours. It never
// queries the terminal, which would wait for an answer on its input.
func Profile(terminal bool, getenv func(string) string) termenv.Profile {
	term := getenv("TERM")
	switch {
	case !terminal, getenv("NO_COLOR") != "", term == "", term == "dumb":
		return termenv.Ascii
	case getenv("COLORTERM") == "truecolor" || getenv("COLORTERM") == "24bit":
		return termenv.TrueColor
	case strings.Contains(term, "256color"):
		return termenv.ANSI256
	}
	return termenv.ANSI
}

// Theme styles the parts of orca's output. Its zero value, and any Theme
// of the Ascii profile, styles nothing.
type Theme struct {
	on                                          bool
	prompt, tool, ok, fail, faint, accent, spin lipgloss.Style
}

// NewTheme returns the theme of a terminal with profile p, writing to w.
func NewTheme(w io.Writer, p termenv.Profile) Theme {
	if p == termenv.Ascii {
		return Theme{}
	}
	r := lipgloss.NewRenderer(w)
	r.SetColorProfile(p)
	st := func() lipgloss.Style { return r.NewStyle().TabWidth(lipgloss.NoTabConversion) }
	return Theme{
		on:     true,
		prompt: st().Foreground(lipgloss.Color("5")).Bold(true),
		tool:   st().Bold(true),
		ok:     st().Foreground(lipgloss.Color("2")),
		fail:   st().Foreground(lipgloss.Color("1")),
		faint:  st().Faint(true),
		accent: st().Foreground(lipgloss.Color("6")),
		spin:   st().Foreground(lipgloss.Color("6")).Bold(true),
	}
}

// On reports whether the theme styles anything.
func (t Theme) On() bool { return t.on }

func (t Theme) apply(s lipgloss.Style, text string) string {
	if !t.on || text == "" {
		return text
	}
	// Line by line: a style never spans a line break, so that a line
	// redrawn or cut by the terminal keeps its colours.
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = s.Render(l)
		}
	}
	return strings.Join(lines, "\n")
}

// Prompt styles the prompt mark (❯).
func (t Theme) Prompt(s string) string { return t.apply(t.prompt, s) }

// Tool styles a tool's name.
func (t Theme) Tool(s string) string { return t.apply(t.tool, s) }

// OK styles what succeeded: a tool call's bullet, ✓.
func (t Theme) OK(s string) string { return t.apply(t.ok, s) }

// Fail styles what failed: a failed call's bullet and output, ✗.
func (t Theme) Fail(s string) string { return t.apply(t.fail, s) }

// Faint styles what is secondary: observations, counts, notes.
func (t Theme) Faint(s string) string { return t.apply(t.faint, s) }

// Accent styles what the user should notice: the chat's header.
func (t Theme) Accent(s string) string { return t.apply(t.accent, s) }

// Spin styles a spinner's frame.
func (t Theme) Spin(s string) string { return t.apply(t.spin, s) }
