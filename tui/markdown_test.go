package tui

import (
	"regexp"
	"strings"
	"testing"

	"github.com/muesli/termenv"
)

var sgr = regexp.MustCompile("\x1b\\[[0-9;]*m")

// The model's text arrives in pieces; a block is drawn once it is whole,
// a code fence's blank lines do not end it, and the rest comes at Flush.
func TestMarkdownBlocks(t *testing.T) {
	m := NewMarkdown(func() int { return 60 }, termenv.ANSI256)
	var got []string
	write := func(s string) {
		t.Helper()
		out, err := m.Write(s)
		if err != nil {
			t.Fatal(err)
		}
		if out != "" {
			got = append(got, out)
		}
	}
	write("Fixed **Sum**: it ")
	write("started at `1`.\n")
	if len(got) != 0 || !m.Pending() {
		t.Fatalf("a paragraph was drawn before its end: %q", got)
	}
	write("\n```go\nfunc Sum() {\n\n")
	if len(got) != 1 {
		t.Fatalf("blocks drawn: %q", got)
	}
	write("\treturn 0\n}\n```\n\n- one\n- two")
	if len(got) != 2 {
		t.Fatalf("the code block was cut at its blank line, or not drawn: %q", got)
	}
	rest, err := m.Flush()
	if err != nil || m.Pending() {
		t.Fatal(err)
	}
	got = append(got, rest)

	plain := make([]string, len(got))
	for i, g := range got {
		plain[i] = sgr.ReplaceAllString(g, "")
	}
	if plain[0] != "Fixed Sum: it started at  1 ." { // inline code is padded, on its own background
		t.Errorf("paragraph: %q", plain[0])
	}
	if !strings.Contains(plain[1], "func Sum() {") || !strings.Contains(plain[1], "return 0") || strings.Contains(plain[1], "```") {
		t.Errorf("code block: %q", plain[1])
	}
	if !strings.Contains(plain[2], "• one") || !strings.Contains(plain[2], "• two") {
		t.Errorf("list: %q", plain[2])
	}
	// In colour: bold, and the code highlighted (its keyword coloured).
	if !strings.Contains(got[0], "\x1b[") || !strings.Contains(got[1], "\x1b[") {
		t.Errorf("no colour: %q", got)
	}
	for _, g := range got {
		for _, l := range strings.Split(sgr.ReplaceAllString(g, ""), "\n") {
			if strings.HasSuffix(l, " ") {
				t.Errorf("a line ends in padding: %q", l)
			}
		}
	}
}

// Without colour (NO_COLOR, a dumb terminal) the markdown is drawn in
// glamour's ASCII style, and no escape sequence is written.
func TestMarkdownNoColour(t *testing.T) {
	m := NewMarkdown(nil, termenv.Ascii)
	if out, err := m.Write("A **bold** `word`.\n\n- one\n"); err != nil || out != "A **bold** word." {
		t.Errorf("%q, %v", out, err)
	}
	if out, err := m.Flush(); err != nil || out != "• one" {
		t.Errorf("%q, %v", out, err)
	}
}

func TestProfile(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		terminal bool
		env      func(string) string
		want     termenv.Profile
	}{
		{false, env("TERM", "xterm-256color"), termenv.Ascii},
		{true, env("TERM", "xterm-256color", "NO_COLOR", "1"), termenv.Ascii},
		{true, env("TERM", "dumb"), termenv.Ascii},
		{true, env(), termenv.Ascii},
		{true, env("TERM", "xterm-256color"), termenv.ANSI256},
		{true, env("TERM", "xterm", "COLORTERM", "truecolor"), termenv.TrueColor},
		{true, env("TERM", "xterm"), termenv.ANSI},
	} {
		if got := Profile(c.terminal, c.env); got != c.want {
			t.Errorf("Profile(%v, TERM=%q NO_COLOR=%q) = %v, want %v", c.terminal, c.env("TERM"), c.env("NO_COLOR"), got, c.want)
		}
	}
}

func TestThemeOff(t *testing.T) {
	var th Theme
	if th.On() || th.OK("✓ a\tb") != "✓ a\tb" {
		t.Error("the zero theme styles")
	}
	th = NewTheme(nil, termenv.ANSI)
	if got := th.Fail("a\tb\nc"); !strings.Contains(got, "a\tb") || strings.Count(got, "\n") != 1 || !strings.Contains(got, "\x1b[") {
		t.Errorf("%q", got)
	}
}
