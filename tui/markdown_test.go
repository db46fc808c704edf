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
	if plain[0] != "Fixed Sum: it started at 1." { // inline code in its colour, not padded
		t.Errorf("paragraph: %q", plain[0])
	}
	if !strings.Contains(plain[1], "func Sum() {") || !strings.Contains(plain[1], "return 0") || strings.Contains(plain[1], "```") {
		t.Errorf("code block: %q", plain[1])
	}
	if !strings.Contains(plain[2], "• one") || !strings.Contains(plain[2], "• two") {
		t.Errorf("list: %q", plain[2])
	}
	// In colour: bold, inline code and the code block's lines coloured.
	if !strings.Contains(got[0], "\x1b[1mSum\x1b[0m") || !strings.Contains(got[0], "\x1b[38;5;203m1\x1b[0m") || !strings.Contains(got[1], "\x1b[38;5;244m    return 0\x1b[0m") {
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
// plain characters, emphasis between its marks, and no escape sequence is
// written.
func TestMarkdownNoColour(t *testing.T) {
	m := NewMarkdown(nil, termenv.Ascii)
	if out, err := m.Write("A **bold** `word`, *in* ~~two~~.\n\n- one\n"); err != nil || out != "A **bold** word, *in* ~~two~~." {
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

// A model's answer as it streams, drawn without colour at 60 columns:
// headings, inline code, a table too wide for its natural widths (its
// cells wrapped), a nested list, a code block, a quote with a link, a task
// list.
func TestMarkdownAnswer(t *testing.T) {
	answer := "## What was wrong\n\n" +
		"`Sum` in **calc.go** started its loop at index `1`, so the first number was never added. " +
		"The test `TestSum` did not catch it because every case began with `0`.\n\n" +
		"## What I changed\n\n" +
		"| File | Change | Lines |\n|------|--------|------:|\n" +
		"| `calc.go` | the loop starts at `0` | 1 |\n| `calc_test.go` | a case whose first number is not zero | 6 |\n\n" +
		"1. Fixed the loop:\n   - `for i := 1` became `for i := 0`\n   - no other caller depended on the old behaviour\n" +
		"2. Added a test case, and ran the suite:\n\n" +
		"```go\nfunc Sum(xs []int) int {\n\ttotal := 0\n\tfor i := 0; i < len(xs); i++ {\n\t\ttotal += xs[i]\n\t}\n\n\treturn total\n}\n```\n\n" +
		"> **Note:** `go vet` reports nothing; see [the Go FAQ](https://go.dev/doc/faq) if you want to know why ranges are preferred.\n\n" +
		"- [x] fix the loop\n- [ ] rewrite it with `range`\n"
	want := `## What was wrong

Sum in **calc.go** started its loop at index 1, so the
first number was never added. The test TestSum did not
catch it because every case began with 0.

## What I changed

File         │ Change                               │ Lines
─────────────┼──────────────────────────────────────┼──────
calc.go      │ the loop starts at 0                 │     1
─────────────┼──────────────────────────────────────┼──────
calc_test.go │ a case whose first number is not     │     6
             │ zero                                 │

1. Fixed the loop:
   • for i := 1 became for i := 0
   • no other caller depended on the old behaviour
2. Added a test case, and ran the suite:

  func Sum(xs []int) int {
      total := 0
      for i := 0; i < len(xs); i++ {
          total += xs[i]
      }

      return total
  }

│ **Note:** go vet reports nothing; see the Go FAQ
│ (https://go.dev/doc/faq) if you want to know why ranges
│ are preferred.

[x] fix the loop
[ ] rewrite it with range`
	m := NewMarkdown(func() int { return 60 }, termenv.Ascii)
	var blocks []string
	for s := answer; s != ""; {
		n := min(len(s), 7)
		out, err := m.Write(s[:n])
		if err != nil {
			t.Fatal(err)
		}
		if out != "" {
			blocks = append(blocks, out)
		}
		s = s[n:]
	}
	rest, err := m.Flush()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(append(blocks, rest), "\n\n"); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// A table takes its columns' natural widths when they fit; else its cells
// are wrapped in narrower columns, never narrower than a word; else it is
// drawn a record a row. Columns are aligned by display width.
func TestMarkdownTable(t *testing.T) {
	src := "| Name | Role | Notes |\n|:--|:-:|--:|\n| 日本語 | admin | can do **everything** here |\n| bob | user | — |\n"
	for _, c := range []struct {
		width int
		want  string
	}{
		{80, `Name   │ Role  │                      Notes
───────┼───────┼───────────────────────────
日本語 │ admin │ can do **everything** here
bob    │ user  │                          —`},
		{30, `Name │ Role  │          Notes
─────┼───────┼───────────────
日本 │ admin │         can do
語   │       │ **everything**
     │       │           here
─────┼───────┼───────────────
bob  │ user  │              —`},
		{14, `Name: 日本
  語
Role: admin
Notes: can
  do
  **everything**
  here

Name: bob
Role: user
Notes: —`},
	} {
		m := NewMarkdown(func() int { return c.width }, termenv.Ascii)
		if got, err := m.render(src); err != nil || got != c.want {
			t.Errorf("width %d: %v\n%s\nwant:\n%s", c.width, err, got, c.want)
		}
	}
}

// Lines are wrapped by display width: a CJK character takes two columns,
// and a line may break between two; an emoji takes two.
func TestMarkdownWideCharacters(t *testing.T) {
	src := "日本語の文章はスペースなしで続きますが、端末の幅で折り返されます。 Thumbs 👍🏽 up, family 👨‍👩‍👧 too."
	m := NewMarkdown(func() int { return 21 }, termenv.Ascii)
	out, err := m.render(src)
	if err != nil {
		t.Fatal(err)
	}
	want := `日本語の文章はスペー
スなしで続きますが、
端末の幅で折り返され
ます。 Thumbs 👍🏽 up,
family 👨‍👩‍👧 too.`
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
}

// In colour each line opens and closes its own styles, so that a style
// never spans a line break: here a bold phrase wrapped over two lines, a
// link's text underlined and its address faint, strike and italics.
func TestMarkdownColourLines(t *testing.T) {
	m := NewMarkdown(func() int { return 16 }, termenv.ANSI)
	out, err := m.render("# Title\n\nSay **a long bold phrase** then [docs](https://x.io) ~~no~~ *yes*.")
	if err != nil {
		t.Fatal(err)
	}
	want := "\x1b[2m#\x1b[0m \x1b[1;36mTitle\x1b[0m\n" +
		"\n" +
		"Say \x1b[1ma long bold\x1b[0m\n" +
		"\x1b[1mphrase\x1b[0m then\n" +
		"\x1b[4mdocs\x1b[0m\n" +
		"\x1b[2m(https://x.io)\x1b[0m\n" +
		"\x1b[9mno\x1b[0m \x1b[3myes\x1b[0m."
	if out != want {
		t.Errorf("got:\n%q\nwant:\n%q", out, want)
	}
}

// A link's address follows its text unless it is the text; an autolink is
// drawn once; an image is its alt text and address; HTML is text.
func TestMarkdownLinks(t *testing.T) {
	for src, want := range map[string]string{
		"[the spec](https://spec.commonmark.org)":        "the spec (https://spec.commonmark.org)",
		"[https://go.dev](https://go.dev)":               "https://go.dev",
		"<https://go.dev> and https://pkg.go.dev":        "https://go.dev and https://pkg.go.dev",
		"<me@example.com>":                               "me@example.com",
		"![a gopher](gopher.png)":                        "[image: a gopher] (gopher.png)",
		"a <kbd>Ctrl</kbd>-C &amp; &copy; &#x263A; \\*":  "a <kbd>Ctrl</kbd>-C & © ☺ *",
		"<details>\n<summary>More</summary>\n</details>": "<details>\n<summary>More</summary>\n</details>",
		"[a](foo\\)bar) ![b](x\\).png)":                  "a (foo)bar) [image: b] (x).png)",
		"[https://x.io/?a&amp;b](https://x.io/?a&amp;b)": "https://x.io/?a&b",
		// References to control characters and bidirectional overrides
		// (a clipboard write, a screen clear, a CSI, a reversal) are not
		// decoded into them.
		"&#x1b;[2J &#27;]52;c;aGk=&#7; &#x9b;2J &#x202e;abc &#X1B;": "\ufffd[2J \ufffd]52;c;aGk=\ufffd \ufffd2J \ufffdabc \ufffd",
	} {
		m := NewMarkdown(nil, termenv.Ascii)
		if got, err := m.render(src); err != nil || got != want {
			t.Errorf("%q: got %q, %v; want %q", src, got, err, want)
		}
	}
}
