package main

import (
	"regexp"
	"strings"
	"testing"
)

var sgrSeq = regexp.MustCompile("\x1b\\[[0-9;]*m")

// In a real terminal the demo is in colour: green bullets for the calls
// that succeeded, red for the one refused (--deny Bash, which also spares
// the test a go test run), the summary's mark, the model's markdown rendered (no
// backticks left) with its inline code styled.
func TestTerminalDemoColour(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	p := startPTY(t, t.TempDir(), []string{"TMPDIR=" + tmp}, "demo", "--fast", "--deny", "Bash")
	sc := p.waitFor("The workspace is kept:", 1)
	if code := p.wait(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, sc)
	}
	for _, want := range []string{"● Grep", "● Edit calc.go", "● Bash go test ./...", "✓ answered · 7 iterations · 6 tool calls"} {
		if !strings.Contains(sc, want) {
			t.Errorf("the screen lacks %q:\n%s", want, sc)
		}
	}
	if strings.Contains(sc, "`") || !strings.Contains(sc, "Fixed:  Sum  in calc.go") {
		t.Errorf("the answer's markdown is not rendered:\n%s", sc)
	}
	raw := p.Raw()
	for _, want := range []string{"\x1b[32m●\x1b[0m \x1b[1mEdit\x1b[0m", "\x1b[31m●\x1b[0m \x1b[1mBash\x1b[0m", "\x1b[32m✓ answered\x1b[0m", "\x1b[38;5;203;48;5;236m Sum \x1b[0m"} {
		if !strings.Contains(raw, want) {
			t.Errorf("the output lacks %q:\n%q", want, raw)
		}
	}
}

// NO_COLOR: not one style is written; the markdown is still rendered,
// without colour.
func TestTerminalNoColor(t *testing.T) {
	t.Parallel()
	p := startPTY(t, t.TempDir(), []string{"TMPDIR=" + t.TempDir(), "NO_COLOR=1"}, "demo", "--fast", "--deny", "Bash")
	sc := p.waitFor("The workspace is kept:", 1)
	if code := p.wait(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, sc)
	}
	if m := sgrSeq.FindAllString(p.Raw(), 3); len(m) > 0 {
		t.Errorf("styles written with NO_COLOR: %q", m)
	}
	if !strings.Contains(sc, "✓ answered") || !strings.Contains(sc, "Fixed: Sum in calc.go") {
		t.Errorf("screen:\n%s", sc)
	}
}
