package tui

import (
	"fmt"
	"strings"
	"testing"
)

// A long input (a file given as the prompt) is shown by its start, with
// what is left out counted; a short one whole.
func TestInputShown(t *testing.T) {
	if got := inputShown("fix it\nplease\n"); got != "fix it\nplease" {
		t.Errorf("a short input: %q", got)
	}
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	got := inputShown(b.String())
	if !strings.HasPrefix(got, "line 0\n") || !strings.Contains(got, "line 19…") || strings.Contains(got, "line 20") ||
		!strings.HasSuffix(got, fmt.Sprintf("… (80 more lines, %d characters, not shown)", len(b.String())-strings.Index(b.String(), "\nline 20")-1)) {
		t.Errorf("100 lines:\n%s", got)
	}
	got = inputShown(strings.Repeat("é", 5000))
	if n := strings.Count(got, "é"); n != inputRunes || !strings.HasSuffix(got, "(3000 more characters, not shown)") {
		t.Errorf("one long line: %d runes shown, ends %q", n, got[len(got)-60:])
	}
}
