// Package pdf counts a PDF's pages and cuts out the ones a model asked
// for, on pdfcpu (the field's pure-Go PDF processor), so that Read can
// show a long document a part at a time, as Claude Code's Read does.
//
// pdfcpu keeps a configuration folder of its own by default (and exits
// the process when it cannot write it); this package turns that off
// before any use: it reads and writes PDFs in memory only.
package pdf

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
)

// MaxPages is how many pages one selection may hold (Claude Code's Read
// takes 20 at a time).
const MaxPages = 20

var setup sync.Once

func config() *model.Configuration {
	setup.Do(api.DisableConfigDir)
	conf := model.NewDefaultConfiguration()
	conf.ValidationMode = model.ValidationRelaxed
	return conf
}

// Doc is a PDF read in.
type Doc struct {
	ctx *model.Context
}

// Read reads data as a PDF. A document pdfcpu cannot read (damaged,
// encrypted) is an error saying why; a panic of the parser on hostile
// bytes is one too.
func Read(data []byte) (d *Doc, err error) {
	defer func() {
		if r := recover(); r != nil {
			d, err = nil, fmt.Errorf("not a PDF that can be read: %v", r)
		}
	}()
	ctx, err := api.ReadValidateAndOptimize(bytes.NewReader(data), config())
	if err != nil {
		return nil, fmt.Errorf("not a PDF that can be read: %v", err)
	}
	return &Doc{ctx: ctx}, nil
}

// Pages is how many pages the document has.
func (d *Doc) Pages() int { return d.ctx.PageCount }

// Extract returns a PDF of the pages given (numbered from 1, in
// increasing order, as Parse returns them).
func (d *Doc) Extract(pages []int) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("the pages could not be cut out: %v", r)
		}
	}()
	dest, err := pdfcpu.ExtractPages(d.ctx, pages, false)
	if err != nil {
		return nil, fmt.Errorf("the pages could not be cut out: %v", err)
	}
	var buf bytes.Buffer
	if err := api.WriteContext(dest, &buf); err != nil {
		return nil, fmt.Errorf("the pages could not be written: %v", err)
	}
	return buf.Bytes(), nil
}

// Parse reads a page selection of a document of count pages: page
// numbers and ranges, separated by commas ("3", "1-5", "1,4,10-12"; a
// range may end open, "18-"). It returns the pages in increasing order,
// each once; a selection of none, of pages the document does not have,
// or of more than MaxPages is an error saying so.
func Parse(spec string, count int) ([]int, error) {
	var pages []int
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := number(lo, part)
		if err != nil {
			return nil, err
		}
		last := first
		if isRange {
			if strings.TrimSpace(hi) == "" {
				last = count
			} else if last, err = number(hi, part); err != nil {
				return nil, err
			}
		}
		if last < first {
			return nil, fmt.Errorf("pages %q: %d comes after %d", part, first, last)
		}
		if first > count {
			return nil, fmt.Errorf("pages %q: the document has %d page%s", part, count, plural(count))
		}
		last = min(last, count)
		if len(pages)+last-first+1 > MaxPages*4 {
			return nil, fmt.Errorf("pages %q: at most %d pages at a time", spec, MaxPages)
		}
		for p := first; p <= last; p++ {
			pages = append(pages, p)
		}
	}
	slices.Sort(pages)
	pages = slices.Compact(pages)
	switch {
	case len(pages) == 0:
		return nil, fmt.Errorf("pages %q names no page: give numbers and ranges such as \"3\" or \"1-5\"", spec)
	case len(pages) > MaxPages:
		return nil, fmt.Errorf("pages %q is %d pages: at most %d at a time", spec, len(pages), MaxPages)
	}
	return pages, nil
}

func number(s, part string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("pages %q: %q is not a page number (pages count from 1)", part, strings.TrimSpace(s))
	}
	return n, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Ranges says pages for people: "1-3, 7".
func Ranges(pages []int) string {
	var b strings.Builder
	for i := 0; i < len(pages); {
		j := i
		for j+1 < len(pages) && pages[j+1] == pages[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(pages[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(pages[j]))
		}
		i = j + 1
	}
	return b.String()
}
