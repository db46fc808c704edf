package names

import (
	"regexp"
	"strings"
	"testing"
)

// The expressions each check replaced: the oracle.
var (
	tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	lowerRE = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)
	slugRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
)

var cases = []string{
	"", "a", "A", "0", "-", "_", "Read", "mcp__server__tool", "code-reviewer", "-x", "x-", "_x",
	"a b", "a.b", "a/b", "é", "ä-b", "a\n", "\na", "a\x00", "Ｒead", "ı", "K", // Kelvin sign, dotless i
	strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 65),
	strings.Repeat("-", 64), "-" + strings.Repeat("a", 63), strings.Repeat("Z", 64) + "\n",
}

func TestAgreesWithTheExpressions(t *testing.T) {
	for _, s := range cases {
		checkAgrees(t, s)
	}
}

func FuzzAgreesWithTheExpressions(f *testing.F) {
	for _, s := range cases {
		f.Add(s)
	}
	f.Fuzz(checkAgrees)
}

func checkAgrees(t *testing.T, s string) {
	for _, c := range []struct {
		name string
		re   *regexp.Regexp
		fn   func(string) bool
	}{{"Token", tokenRE, Token}, {"Lower", lowerRE, Lower}, {"Slug", slugRE, Slug}} {
		if got, want := c.fn(s), c.re.MatchString(s); got != want {
			t.Errorf("%s(%q) = %v, %s says %v", c.name, s, got, c.re, want)
		}
	}
}
