package pdf_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/orca-agent/orca/media/pdf"
	"github.com/orca-agent/orca/media/pdf/pdftest"
)

// TestMain runs the tests with a configuration folder of their own, and
// fails them if pdfcpu wrote anything in it (it writes one of its own by
// default, and exits the process when it cannot).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pdf-config")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	os.Setenv("HOME", dir)
	code := m.Run()
	if left, _ := os.ReadDir(dir); len(left) > 0 && code == 0 {
		fmt.Fprintf(os.Stderr, "pdfcpu wrote %s in the configuration folder\n", left[0].Name())
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// Pages 2 and 3 of a 5-page document, cut out, are a PDF of two pages
// that says what those pages say and nothing of the others; what it
// writes is read back as a PDF.
func TestExtract(t *testing.T) {
	d, err := pdf.Read(pdftest.Document(5))
	if err != nil {
		t.Fatal(err)
	}
	if d.Pages() != 5 {
		t.Fatalf("%d pages", d.Pages())
	}
	pages, err := pdf.Parse("3, 2", d.Pages())
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.Extract(pages)
	if err != nil {
		t.Fatal(err)
	}
	back, err := pdf.Read(out)
	if err != nil {
		t.Fatalf("the pages cut out do not read back: %v", err)
	}
	if back.Pages() != 2 || !bytes.Contains(out, []byte("orca page 2")) || !bytes.Contains(out, []byte("orca page 3")) ||
		bytes.Contains(out, []byte("orca page 1")) || bytes.Contains(out, []byte("orca page 4")) {
		t.Errorf("%d pages:\n%s", back.Pages(), out)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		spec  string
		count int
		want  string // pdf.Ranges of the pages, or the error's text
	}{
		{"3", 5, "3"},
		{"1-5", 10, "1-5"},
		{" 1, 4 ,10-12", 12, "1, 4, 10-12"},
		{"4-", 6, "4-6"},
		{"2-9", 5, "2-5"},
		{"2,2,1-2", 5, "1-2"},
		{"7", 5, `pages "7": the document has 5 pages`},
		{"0", 5, `"0" is not a page number`},
		{"a-b", 5, `"a" is not a page number`},
		{"5-3", 9, "5 comes after 3"},
		{"", 5, "names no page"},
		{"1-30", 40, "is 30 pages: at most 20 at a time"},
		{"1-1000000000", 40, "at most 20"},
	} {
		pages, err := pdf.Parse(tc.spec, tc.count)
		got := pdf.Ranges(pages)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("Parse(%q, %d) = %s, want %s", tc.spec, tc.count, got, tc.want)
		}
	}
}

// Bytes that are no PDF, or a PDF cut short, are an error, not a panic.
func TestReadBadBytes(t *testing.T) {
	doc := pdftest.Document(3)
	for _, data := range [][]byte{nil, []byte("%PDF-1.4\n"), doc[:len(doc)/2], bytes.Repeat([]byte{0xff}, 100)} {
		if _, err := pdf.Read(data); err == nil || !strings.Contains(err.Error(), "not a PDF that can be read") {
			t.Errorf("%.20q: %v", data, err)
		}
	}
}
