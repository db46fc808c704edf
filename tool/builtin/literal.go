package builtin

import (
	"bytes"
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"
)

// literal is bytes every match of a pattern contains. text is nil when no
// such bytes are known. If fold is set, text is ASCII and lower case, and a
// match holds it with any of its letters in either case; text then has no
// letter whose case folds outside ASCII ('k' has the Kelvin sign, 's' the
// long s), so that comparing ASCII letters without their case finds it.
type literal struct {
	text []byte
	fold bool
}

// requiredLiteral returns a literal that every match of re contains, the
// longest it finds (a case-sensitive one when there is a tie).
func requiredLiteral(re *syntax.Regexp) literal {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase == 0 {
			return literal{text: []byte(string(re.Rune))}
		}
		return foldedLiteral(re.Rune)
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		var best literal
		for _, sub := range re.Sub {
			lit := requiredLiteral(sub)
			if len(lit.text) > len(best.text) || len(lit.text) == len(best.text) && best.fold && !lit.fold {
				best = lit
			}
		}
		return best
	}
	return literal{}
}

// foldedLiteral returns the longest run of runes that fold only within
// ASCII, lowered, as a folded literal.
func foldedLiteral(runes []rune) literal {
	var best, run []byte
	for _, r := range runes {
		if !foldsInASCII(r) {
			run = run[:0]
			continue
		}
		run = append(run, byte(unicode.ToLower(r)))
		if len(run) > len(best) {
			best = slices.Clone(run)
		}
	}
	if best == nil {
		return literal{}
	}
	return literal{text: best, fold: true}
}

// foldsInASCII reports whether r and every rune its case folds to are
// ASCII.
func foldsInASCII(r rune) bool {
	if r >= utf8.RuneSelf {
		return false
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// finder finds a literal by its rarest byte, the anchor: bytes.IndexByte
// runs through a file at memory speed to each place the anchor is, and
// only there is the whole literal compared. Starting from the literal's
// first byte instead, as bytes.Index does, is slow when that byte is
// common ('e' of "errors"); a folded literal, which bytes.Index cannot
// find at all, looks for its anchor in both cases.
type finder struct {
	text   []byte
	fold   bool
	at     int  // the anchor's offset in text
	b1, b2 byte // the anchor; b2 is its other case when folded, else b1
}

// newFinder returns the finder of lit, or nil if lit has no text.
func newFinder(lit literal) *finder {
	if lit.text == nil {
		return nil
	}
	f := &finder{text: lit.text, fold: lit.fold}
	rank := func(c byte) int {
		r := int(byteRank[c])
		if f.fold {
			r = max(r, int(byteRank[otherCase(c)]))
		}
		return r
	}
	for i, c := range f.text {
		if rank(c) < rank(f.text[f.at]) {
			f.at = i
		}
	}
	f.b1, f.b2 = f.text[f.at], f.text[f.at]
	if f.fold {
		f.b2 = otherCase(f.b1)
	}
	return f
}

// index returns the offset of the first occurrence of the literal in data,
// or -1.
func (f *finder) index(data []byte) int {
	n := len(f.text)
	last := len(data) - n + f.at // the last place the anchor can be
	if last < f.at {
		return -1
	}
	if f.b1 == f.b2 {
		for pos, misses := f.at, 0; pos <= last; misses++ {
			i := bytes.IndexByte(data[pos:last+1], f.b1)
			if i < 0 {
				return -1
			}
			start := pos + i - f.at
			if f.equal(data[start : start+n]) {
				return start
			}
			pos += i + 1
			// A file where the anchor is everywhere: for a literal with
			// case, bytes.Index, which compares many places at once,
			// does better from here.
			if !f.fold && misses > 16+pos>>4 {
				if j := bytes.Index(data[pos-f.at:], f.text); j >= 0 {
					return pos - f.at + j
				}
				return -1
			}
		}
		return -1
	}
	next := func(b byte, from int) int {
		if i := bytes.IndexByte(data[from:last+1], b); i >= 0 {
			return from + i
		}
		return len(data)
	}
	n1, n2 := next(f.b1, f.at), next(f.b2, f.at)
	for {
		p := min(n1, n2)
		if p > last {
			return -1
		}
		if start := p - f.at; f.equal(data[start : start+n]) {
			return start
		}
		if p == n1 {
			n1 = next(f.b1, p+1)
		} else {
			n2 = next(f.b2, p+1)
		}
	}
}

// equal reports whether b is the literal.
func (f *finder) equal(b []byte) bool {
	if !f.fold {
		return bytes.Equal(b, f.text)
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != f.text[i] {
			return false
		}
	}
	return true
}

// otherCase returns an ASCII letter in the other case, and any other byte
// as it is.
func otherCase(c byte) byte {
	switch {
	case 'a' <= c && c <= 'z':
		return c - ('a' - 'A')
	case 'A' <= c && c <= 'Z':
		return c + ('a' - 'A')
	}
	return c
}

// byteRank orders bytes by how often they occur in source code and text,
// 0 the rarest and 255 (the space) the commonest. The order was counted
// over the Go distribution's source tree, C headers (/usr/include), the
// Python and Perl standard libraries, Node modules and a Go module cache,
// each weighed alike. It only steers finder's choice of anchor; a poor
// rank costs time, never a match.
var byteRank = [256]byte{
	0, 23, 5, 9, 13, 11, 18, 40, 1, 234, 246, 10, 54, 70, 24, 4, // 0x00
	15, 22, 21, 20, 2, 19, 47, 17, 6, 7, 3, 43, 14, 8, 12, 16, // 0x10
	255, 168, 222, 195, 181, 163, 169, 211, 230, 229, 201, 170, 236, 207, 237, 224, // 0x20
	242, 226, 220, 206, 202, 198, 203, 189, 197, 191, 219, 190, 178, 214, 188, 161, // 0x30
	164, 232, 194, 216, 205, 231, 199, 186, 184, 221, 165, 175, 213, 196, 212, 210, // 0x40
	208, 166, 215, 225, 227, 187, 180, 176, 179, 177, 162, 183, 185, 182, 156, 241, // 0x50
	172, 248, 218, 244, 243, 254, 238, 228, 235, 249, 174, 204, 245, 233, 251, 247, // 0x60
	239, 173, 250, 252, 253, 240, 209, 200, 223, 217, 171, 193, 167, 192, 154, 37, // 0x70
	152, 134, 142, 137, 120, 128, 118, 111, 140, 115, 113, 112, 117, 110, 90, 103, // 0x80
	95, 105, 86, 87, 146, 141, 124, 101, 114, 148, 89, 93, 135, 121, 102, 100, // 0x90
	123, 125, 97, 108, 147, 133, 126, 122, 131, 107, 99, 91, 104, 94, 98, 88, // 0xa0
	136, 106, 116, 96, 109, 92, 84, 150, 143, 138, 139, 130, 132, 145, 129, 144, // 0xb0
	50, 48, 151, 127, 69, 71, 55, 57, 49, 61, 56, 63, 65, 53, 73, 67, // 0xc0
	119, 75, 58, 52, 51, 66, 60, 68, 77, 76, 62, 64, 44, 26, 34, 46, // 0xd0
	149, 79, 153, 78, 82, 159, 160, 158, 157, 155, 72, 81, 85, 74, 59, 80, // 0xe0
	83, 31, 41, 42, 35, 32, 39, 30, 45, 28, 36, 29, 33, 38, 27, 25, // 0xf0
}
