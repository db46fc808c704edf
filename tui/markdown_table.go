package tui

import (
	"slices"
	"strings"

	east "github.com/yuin/goldmark/extension/ast"
)

// table draws a GFM table: its columns aligned by display width, as the
// table aligns them, between bars; the header bold over a rule. A table
// wider than w has its cells wrapped in narrower columns (a rule between
// its rows then); one whose columns cannot be narrower than their longest
// words is drawn a record a row, "header: cell" a line.
func (d *drawer) table(t *east.Table, w int) []string {
	var rows [][][]tok // row, cell, its text
	cols := 0
	for r := t.FirstChild(); r != nil; r = r.NextSibling() {
		st := style(0)
		if _, ok := r.(*east.TableHeader); ok {
			st = sBold
		}
		var cells [][]tok
		for c := r.FirstChild(); c != nil; c = c.NextSibling() {
			cells = append(cells, tokens(d.inline(c, st, nil)))
		}
		cols = max(cols, len(cells))
		rows = append(rows, cells)
	}
	if cols == 0 {
		return nil
	}
	natural, least := make([]int, cols), make([]int, cols)
	for _, r := range rows {
		for i, c := range r {
			all, word := measure(c)
			natural[i], least[i] = max(natural[i], all, 1), max(least[i], word, 1)
		}
	}
	widths := fit(natural, least, w-3*(cols-1))
	if widths == nil {
		return d.records(rows, w)
	}

	// Each row's cells in lines of their column's width.
	laid := make([][][][]tok, len(rows))
	wrapped := false
	for ri, r := range rows {
		laid[ri] = make([][][]tok, cols)
		for i, c := range r {
			laid[ri][i] = layout(c, widths[i])
			wrapped = wrapped || (ri > 0 && len(laid[ri][i]) > 1)
		}
	}
	rule := make([]string, cols)
	for i, n := range widths {
		rule[i] = strings.Repeat("─", n)
	}
	sep := " " + d.style(sFaint, "│") + " "
	var out []string
	for ri, r := range laid {
		if ri > 1 && wrapped {
			out = append(out, d.style(sFaint, strings.Join(rule, "─┼─")))
		}
		h := 1
		for _, c := range r {
			h = max(h, len(c))
		}
		for j := range h {
			var b strings.Builder
			for i, c := range r {
				if i > 0 {
					b.WriteString(sep)
				}
				var l []tok
				if j < len(c) {
					l = c[j]
				}
				pad := max(0, widths[i]-width(l))
				left := 0
				if i < len(t.Alignments) {
					switch t.Alignments[i] {
					case east.AlignRight:
						left = pad
					case east.AlignCenter:
						left = pad / 2
					}
				}
				b.WriteString(strings.Repeat(" ", left) + d.line(l) + strings.Repeat(" ", pad-left))
			}
			out = append(out, strings.TrimRight(b.String(), " "))
		}
		if ri == 0 {
			out = append(out, d.style(sFaint, strings.Join(rule, "─┼─")))
		}
	}
	return out
}

// fit returns the widths of columns that take natural columns each on a
// line, and least at the narrowest, in avail columns: natural if they
// fit, else least and what is left shared among the columns that want
// more; nil if least does not fit.
func fit(natural, least []int, avail int) []int {
	sum := func(a []int) int {
		n := 0
		for _, v := range a {
			n += v
		}
		return n
	}
	if sum(natural) <= avail {
		return natural
	}
	if sum(least) > avail {
		return nil
	}
	widths := slices.Clone(least)
	for left := avail - sum(least); left > 0; {
		var want []int
		for i := range widths {
			if widths[i] < natural[i] {
				want = append(want, i)
			}
		}
		if len(want) == 0 {
			break
		}
		share := max(1, left/len(want))
		for _, i := range want {
			g := min(share, natural[i]-widths[i], left)
			widths[i] += g
			left -= g
		}
	}
	return widths
}

// records draws a table's rows one after the other, a blank line between
// two: each cell on its own line after its header and a colon.
func (d *drawer) records(rows [][][]tok, w int) []string {
	head := rows[0]
	var out []string
	add := func(ts []tok) {
		for i, l := range layout(ts, max(1, w-2)) {
			if i > 0 {
				out = append(out, "  "+d.line(l))
			} else {
				out = append(out, d.line(l))
			}
		}
	}
	if len(rows) == 1 {
		for _, c := range head {
			add(c)
		}
		return out
	}
	for ri, r := range rows[1:] {
		if ri > 0 {
			out = append(out, "")
		}
		for i, c := range r {
			var ts []tok
			if i < len(head) {
				ts = append(ts, head[i]...)
			}
			ts = append(ts, tok{s: ":", st: sBold, w: 1, kind: 'w'}, tok{s: " ", w: 1, kind: ' '})
			add(append(ts, c...))
		}
	}
	return out
}
