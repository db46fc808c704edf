package tui

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
)

// example is a piece of Markdown written by others and the HTML it
// stands for (testdata/markdown: the CommonMark spec's examples and
// goldmark's tests of GitHub's extensions).
type example struct {
	name, markdown, html string
}

func examples(t *testing.T) []example {
	t.Helper()
	b, err := os.ReadFile("testdata/markdown/spec.json")
	if err != nil {
		t.Fatal(err)
	}
	var spec []struct {
		Markdown, HTML, Section string
		Example                 int
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	var out []example
	for _, e := range spec {
		out = append(out, example{fmt.Sprintf("spec %d (%s)", e.Example, e.Section), e.Markdown, e.HTML})
	}
	for _, name := range []string{"table", "strikethrough", "tasklist", "linkify"} {
		out = append(out, goldmarkCases(t, filepath.Join("testdata/markdown", name+".txt"))...)
	}
	if len(out) != 652+14+5+4+19 {
		t.Fatalf("%d examples read", len(out))
	}
	return out
}

// goldmarkCases reads a file of goldmark's test cases: a number (and a
// description), options, then the Markdown and the HTML, each ended by a
// separator line.
func goldmarkCases(t *testing.T, path string) []example {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const part, end = "//- - - - - - - - -//", "//= = = = = = = = = = = = = = = = = = = = = = = =//"
	var out []example
	var e example
	var buf []string
	state, escape := 0, false // 0: before a case, 1: its header, 2: Markdown, 3: HTML
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case state == 0 && strings.TrimSpace(l) != "":
			e, state, escape = example{name: filepath.Base(path) + " " + l}, 1, false
		case state == 1 && strings.Contains(l, "OPTIONS:"):
			escape = strings.Contains(l, `"enableEscape": true`)
		case state == 1 && l == part:
			state, buf = 2, nil
		case state == 2 && l == part:
			e.markdown, state, buf = strings.Join(buf, "\n"), 3, nil // as goldmark reads it: no newline at the end
			if escape {
				e.markdown = strings.ReplaceAll(e.markdown, `\t`, "\t")
			}
		case state == 3 && l == end:
			e.html, state = strings.Join(buf, "\n")+"\n", 0
			out = append(out, e)
		case state >= 2:
			buf = append(buf, l)
		}
	}
	if err := sc.Err(); err != nil || len(out) == 0 {
		t.Fatalf("%s: %d cases, %v", path, len(out), err)
	}
	return out
}

var (
	htmlTag  = regexp.MustCompile(`<[^>]*>`)
	htmlCode = regexp.MustCompile(`(?s)<pre><code[^>]*>(.*?)</code></pre>`)
	sgrAny   = regexp.MustCompile("\x1b\\[[0-9;]*m")
	// the parts of a line that frame its text: bars, bullets, numbers,
	// task boxes, heading marks
	frame = regexp.MustCompile(`^ *(│|•|[0-9]+[.)]|\[[ x]\]|#{1,6})( |$)`)
)

// Every example is drawn, whole and streamed in small pieces, at widths
// 20, 80 and 200, with and without colour: no error, no line wider than
// the width but for code and a word longer than it, no padding, no style
// left open at a line's end, no escape sequence without colour, and every
// word of the example's text in what is drawn.
func TestMarkdownExamples(t *testing.T) {
	for _, e := range examples(t) {
		var code []string // the lines of its code blocks
		for _, m := range htmlCode.FindAllStringSubmatch(e.html, -1) {
			for _, l := range strings.Split(html.UnescapeString(m[1]), "\n") {
				code = append(code, strings.TrimSpace(expandTabs(l)))
			}
		}
		words := strings.Fields(html.UnescapeString(htmlTag.ReplaceAllString(e.html, " ")))
		for _, w := range []int{20, 80, 200} {
			for _, p := range []termenv.Profile{termenv.Ascii, termenv.ANSI256} {
				m := NewMarkdown(func() int { return w }, p)
				whole, err := m.render(e.markdown)
				if err != nil {
					t.Errorf("%s, width %d: %v", e.name, w, err)
					continue
				}
				var streamed strings.Builder
				for s := e.markdown; s != ""; {
					n := min(len(s), 5)
					out, err := m.Write(s[:n])
					if err != nil {
						t.Errorf("%s, width %d, streamed: %v", e.name, w, err)
					}
					streamed.WriteString(out + "\n")
					s = s[n:]
				}
				rest, err := m.Flush()
				if err != nil {
					t.Errorf("%s, width %d, streamed: %v", e.name, w, err)
				}
				streamed.WriteString(rest)
				checkDrawn(t, e, whole, w, p, code)
				// Streamed, a list item's later block, cut from its item
				// at a blank line, may be drawn as code where the whole
				// example has none: wider than w.
				checkDrawn(t, e, streamed.String(), 1<<20, p, nil)
				text := ansi.Strip(whole)
				if p == termenv.Ascii { // emphasis is between marks
					text = strings.NewReplacer("*", "", "~", "").Replace(text)
				}
				for _, word := range words {
					if p == termenv.Ascii {
						word = strings.NewReplacer("*", "", "~", "").Replace(word)
					}
					if !strings.Contains(text, word) {
						t.Errorf("%s, width %d, %v: %q is not drawn:\n%s\n---\n%s", e.name, w, p, word, e.markdown, whole)
						break
					}
				}
			}
		}
	}
}

// checkDrawn checks the lines of out, example e drawn at width w.
func checkDrawn(t *testing.T, e example, out string, w int, p termenv.Profile, code []string) {
	t.Helper()
	if p == termenv.Ascii && strings.Contains(out, "\x1b") {
		t.Errorf("%s: an escape sequence without colour: %q", e.name, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if seqs := sgrAny.FindAllString(l, -1); len(seqs) > 0 && seqs[len(seqs)-1] != "\x1b[0m" {
			t.Errorf("%s: a style is left open at the line's end: %q", e.name, l)
		}
		l = ansi.Strip(l)
		if strings.HasSuffix(l, " ") || strings.HasSuffix(l, "\t") {
			t.Errorf("%s: padding: %q", e.name, l)
		}
		if ansi.StringWidth(l) <= w-1 {
			continue
		}
		body := l
		for loc := frame.FindStringIndex(body); loc != nil; loc = frame.FindStringIndex(body) {
			body = body[loc[1]:]
		}
		// Too wide, it must be code, or one word too long for the width
		// (a link's address), not a rule.
		body = strings.TrimSpace(body)
		if !contains(code, body) && (len(strings.Fields(body)) > 1 || strings.Trim(body, "─┼") == "") {
			t.Errorf("%s: a line wider than %d: %q\n%s", e.name, w-1, l, e.markdown)
		}
	}
}

func contains(lines []string, l string) bool {
	for _, c := range lines {
		if c == l || strings.Contains(c, l) {
			return true
		}
	}
	return false
}
