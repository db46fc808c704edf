package lsp

import (
	"unicode/utf16"
	"unicode/utf8"
)

// Positions: the model counts characters from 1, LSP counts UTF-16 code
// units from 0.

// runeColumn is the column, from 1 in characters, of the UTF-16 offset
// u in line.
func runeColumn(line string, u int) int {
	col, units := 1, 0
	for _, r := range line {
		if units >= u {
			break
		}
		units += unitsOf(r)
		col++
	}
	return col
}

// utf16Offset is the UTF-16 offset in line of the column col (from 1, in
// characters); past the end, the end.
func utf16Offset(line string, col int) int {
	units := 0
	for i := 1; i < col && line != ""; i++ {
		r, size := utf8.DecodeRuneInString(line)
		line = line[size:]
		units += unitsOf(r)
	}
	return units
}

// unitsOf is how many UTF-16 units r takes (an invalid rune: one).
func unitsOf(r rune) int {
	if n := utf16.RuneLen(r); n > 0 {
		return n
	}
	return 1
}
