// Package names checks the names orca gives things — tools, structured
// outputs, skills, subagents, extensions, MCP servers — byte by byte.
//
// A regular expression with a counted repetition, such as
// ^[a-z0-9-]{1,64}$, compiles to a program of 64 copies of its class: some
// 26 KB that each such variable holds, and that the garbage collector marks,
// for the life of every program that imports the package.
package names

// MaxLen is the longest name: the providers' limit for tool names, which
// orca applies to every name it checks.
const MaxLen = 64

// Token reports whether s is 1 to 64 ASCII letters, digits, '_' and '-' —
// the providers' rule for tool names: ^[A-Za-z0-9_-]{1,64}$.
func Token(s string) bool {
	if len(s) == 0 || len(s) > MaxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !lowerOrDigit(c) && !('A' <= c && c <= 'Z') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// Lower reports whether s is 1 to 64 lowercase ASCII letters, digits and
// '-': ^[a-z0-9-]{1,64}$ (Agent Skills' names).
func Lower(s string) bool {
	if len(s) == 0 || len(s) > MaxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !lowerOrDigit(c) && c != '-' {
			return false
		}
	}
	return true
}

// Slug is Lower, but s may not start with '-': ^[a-z0-9][a-z0-9-]{0,63}$
// (subagents' and extensions' names).
func Slug(s string) bool { return Lower(s) && s[0] != '-' }

func lowerOrDigit(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }
