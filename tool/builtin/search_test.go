package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

// repo lays out a small project with ignore rules at several levels.
func repo(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	f.write(".gitignore", "*.log\n/build/\nvendor/\n!keep.log\n")
	f.write(".git/config", "needle\n")
	f.write(".git/info/exclude", "secret.go\n")
	f.write("main.go", "package main\n\nfunc main() { needle() }\n")
	f.write("secret.go", "package main // needle\n")
	f.write("debug.log", "needle\n")
	f.write("keep.log", "needle\n")
	f.write("build/out.go", "package build // needle\n")
	f.write("vendor/dep/dep.go", "package dep // needle\n")
	f.write("pkg/util.go", "package pkg\n\nfunc Needle() {}\n")
	f.write("pkg/.gitignore", "gen_*.go\n")
	f.write("pkg/gen_x.go", "package pkg // needle\n")
	f.write("pkg/sub/deep.go", "package sub // needle\n")
	f.write("other/gen_y.go", "package other // needle\n")
	f.write("docs/readme.md", "# needle\n")
	return f
}

func TestGlobRespectsGitignore(t *testing.T) {
	f := repo(t)
	got := f.ok(f.call("Glob", map[string]any{"pattern": "**/*.go"}))
	for _, want := range []string{"main.go", "pkg/util.go", "pkg/sub/deep.go", "other/gen_y.go"} {
		contains(t, got, want)
	}
	// Root and nested .gitignore, .git/info/exclude, and .git itself.
	lacks(t, got, "secret.go", "build/", "vendor/", "pkg/gen_x.go", ".git")

	got = f.ok(f.call("Glob", map[string]any{"pattern": "*.log"}))
	if got != "keep.log" {
		t.Fatalf("Glob *.log = %q, want only the re-included keep.log", got)
	}
}

func TestGlobSortsByModificationTime(t *testing.T) {
	f := newFixture(t)
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, name := range []string{"old.txt", "mid.txt", "b_tie.txt", "a_tie.txt", "new.txt"} {
		f.write(name, "x")
		f.touch(name, base.Add(time.Duration(min(i, 2))*time.Hour+time.Duration(i/4)*time.Hour))
	}
	got := f.ok(f.call("Glob", map[string]any{"pattern": "*.txt"}))
	want := "new.txt\na_tie.txt\nb_tie.txt\nmid.txt\nold.txt"
	if got != want {
		t.Fatalf("Glob order =\n%s\nwant\n%s", got, want)
	}
}

func TestGlobPathsAndPatterns(t *testing.T) {
	f := repo(t)
	// path narrows the search; output paths stay relative to the root.
	got := f.ok(f.call("Glob", map[string]any{"pattern": "**/*.go", "path": "pkg"}))
	contains(t, got, "pkg/util.go", "pkg/sub/deep.go")
	lacks(t, got, "main.go\n", "gen_x", "other/")
	// A fixed folder in the pattern, an absolute pattern and an absolute path.
	if got := f.ok(f.call("Glob", map[string]any{"pattern": "pkg/sub/*.go"})); got != "pkg/sub/deep.go" {
		t.Fatalf("Glob pkg/sub/*.go = %q", got)
	}
	if got := f.ok(f.call("Glob", map[string]any{"pattern": f.dir + "/pkg/sub/*.go"})); got != "pkg/sub/deep.go" {
		t.Fatalf("Glob absolute = %q", got)
	}
	if got := f.ok(f.call("Glob", map[string]any{"pattern": "*.go", "path": f.dir + "/pkg/sub"})); got != "pkg/sub/deep.go" {
		t.Fatalf("Glob absolute path = %q", got)
	}
	if got := f.ok(f.call("Glob", map[string]any{"pattern": "*.go"})); got != "main.go" {
		t.Fatalf("Glob *.go = %q, want the top folder's files only", got)
	}
	if got := f.ok(f.call("Glob", map[string]any{"pattern": "*/*/*.go"})); got != "pkg/sub/deep.go" {
		t.Fatalf("Glob */*/*.go = %q", got)
	}
	if got := f.ok(f.call("Glob", map[string]any{"pattern": "**/*.{md,txt}"})); got != "docs/readme.md" {
		t.Fatalf("Glob braces = %q", got)
	}
	if got := f.ok(f.call("Glob", map[string]any{"pattern": "*.rs"})); got != "No files found" {
		t.Fatalf("Glob without matches = %q", got)
	}
	if got := f.ok(f.call("Glob", map[string]any{"pattern": "nowhere/*.go"})); got != "No files found" {
		t.Fatalf("Glob in a missing folder = %q", got)
	}
	f.fails(f.call("Glob", map[string]any{"pattern": "*.go", "path": "nowhere"}), "nowhere")
	f.fails(f.call("Glob", map[string]any{"pattern": "*.go", "path": "main.go"}), "main.go is not a directory")
	f.fails(f.call("Glob", map[string]any{"pattern": "[a-"}), `"[a-"`)
}

func TestGlobCapsResults(t *testing.T) {
	f := newFixture(t)
	for i := range 130 {
		f.write(fmt.Sprintf("f%03d.txt", i), "x")
	}
	got := f.ok(f.call("Glob", map[string]any{"pattern": "*.txt"}))
	lines := strings.Split(got, "\n")
	if len(lines) != 101 {
		t.Fatalf("Glob returned %d lines, want 100 paths and a note", len(lines))
	}
	contains(t, lines[100], "truncated", "100", "130 files")
}

func TestGrepFilesWithMatches(t *testing.T) {
	f := repo(t)
	// Ignored files (root and nested .gitignore, .git/info/exclude, .git
	// itself) are left out; the rest is sorted by path.
	got := f.ok(f.call("Grep", map[string]any{"pattern": "needle"}))
	if got != "Found 5 files\ndocs/readme.md\nkeep.log\nmain.go\nother/gen_y.go\npkg/sub/deep.go" {
		t.Fatalf("Grep =\n%s", got)
	}

	got = f.ok(f.call("Grep", map[string]any{"pattern": "needle", "-i": true, "path": "pkg"}))
	if got != "Found 2 files\npkg/sub/deep.go\npkg/util.go" {
		t.Fatalf("Grep -i in pkg =\n%s", got)
	}
	got = f.ok(f.call("Grep", map[string]any{"pattern": "zebra"}))
	contains(t, got, "No matches found", `"zebra"`)
}

func TestGrepFilters(t *testing.T) {
	f := repo(t)
	cases := []struct {
		input map[string]any
		want  string
	}{
		{map[string]any{"type": "go"}, "Found 3 files\nmain.go\nother/gen_y.go\npkg/sub/deep.go"},
		{map[string]any{"type": "md"}, "Found 1 file\ndocs/readme.md"},
		{map[string]any{"glob": "*.log"}, "Found 1 file\nkeep.log"},
		{map[string]any{"glob": "pkg/**"}, "Found 1 file\npkg/sub/deep.go"},
		{map[string]any{"glob": "!*.go"}, "Found 2 files\ndocs/readme.md\nkeep.log"},
		{map[string]any{"glob": "*.{md,log}"}, "Found 2 files\ndocs/readme.md\nkeep.log"},
		{map[string]any{"glob": "sub/*.go", "path": "pkg"}, "Found 1 file\npkg/sub/deep.go"},
		// A file named explicitly is searched even if ignored.
		{map[string]any{"path": "debug.log"}, "Found 1 file\ndebug.log"},
	}
	for _, c := range cases {
		c.input["pattern"] = "needle"
		if got := f.ok(f.call("Grep", c.input)); got != c.want {
			t.Errorf("Grep %v =\n%s\nwant\n%s", c.input, got, c.want)
		}
	}
	f.fails(f.call("Grep", map[string]any{"pattern": "x", "type": "cobol"}), `"cobol"`, "go, ", "py")
	f.fails(f.call("Grep", map[string]any{"pattern": "x", "glob": "[z-"}), `"[z-"`)
	f.fails(f.call("Grep", map[string]any{"pattern": "(unclosed"}), `"(unclosed"`, "invalid regular expression")
	f.fails(f.call("Grep", map[string]any{"pattern": "x", "path": "missing"}), "missing")
}

func TestGrepContent(t *testing.T) {
	f := newFixture(t)
	f.write("a.txt", "one\ntwo match\nthree\nfour\nfive\nsix match\nseven\n")
	f.write("b.txt", "match here\n")
	got := f.ok(f.call("Grep", map[string]any{"pattern": "match", "output_mode": "content"}))
	want := "a.txt:2:two match\na.txt:6:six match\nb.txt:1:match here"
	if got != want {
		t.Fatalf("content =\n%s\nwant\n%s", got, want)
	}
	got = f.ok(f.call("Grep", map[string]any{"pattern": "match", "output_mode": "content", "-n": false}))
	if got != "a.txt:two match\na.txt:six match\nb.txt:match here" {
		t.Fatalf("content -n=false =\n%s", got)
	}
	got = f.ok(f.call("Grep", map[string]any{"pattern": "match", "output_mode": "content", "-C": 1}))
	want = "a.txt-1-one\na.txt:2:two match\na.txt-3-three\n--\na.txt-5-five\na.txt:6:six match\na.txt-7-seven\n--\nb.txt:1:match here"
	if got != want {
		t.Fatalf("content -C 1 =\n%s\nwant\n%s", got, want)
	}
	got = f.ok(f.call("Grep", map[string]any{"pattern": "match", "output_mode": "content", "-B": 2, "-A": 0, "path": "a.txt"}))
	want = "a.txt-1-one\na.txt:2:two match\n--\na.txt-4-four\na.txt-5-five\na.txt:6:six match"
	if got != want {
		t.Fatalf("content -B 2 =\n%s\nwant\n%s", got, want)
	}
	// A limit cuts lines, never leaves a dangling separator.
	got = f.ok(f.call("Grep", map[string]any{"pattern": "match", "output_mode": "content", "-C": 1, "head_limit": 6}))
	want = "a.txt-1-one\na.txt:2:two match\na.txt-3-three\n--\na.txt-5-five\na.txt:6:six match\na.txt-7-seven\n\n[truncated: showing the first 6 lines"
	if !strings.HasPrefix(got, want) {
		t.Fatalf("content -C 1 head_limit 6 =\n%s\nwant\n%s", got, want)
	}
	// Overlapping context is merged.
	got = f.ok(f.call("Grep", map[string]any{"pattern": "match", "output_mode": "content", "-A": 3, "path": "a.txt"}))
	want = "a.txt:2:two match\na.txt-3-three\na.txt-4-four\na.txt-5-five\na.txt:6:six match\na.txt-7-seven"
	if got != want {
		t.Fatalf("content -A 3 =\n%s\nwant\n%s", got, want)
	}
}

func TestGrepCountAndHeadLimit(t *testing.T) {
	f := newFixture(t)
	f.write("a.txt", "x\nx x\ny\nx\n")
	f.write("b.txt", "x\n")
	f.write("c.txt", "y\n")
	got := f.ok(f.call("Grep", map[string]any{"pattern": "x", "output_mode": "count"}))
	if got != "a.txt:3\nb.txt:1\n\nFound 4 matching lines in 2 files." {
		t.Fatalf("count =\n%s", got)
	}
	got = f.ok(f.call("Grep", map[string]any{"pattern": "x", "output_mode": "count", "head_limit": 1}))
	contains(t, got, "a.txt:3\n", "[truncated: showing the first 1 count")
	lacks(t, got, "b.txt")

	got = f.ok(f.call("Grep", map[string]any{"pattern": "x", "head_limit": 1}))
	contains(t, got, "a.txt", "Found more than 1 file", "truncated")
	lacks(t, got, "b.txt")

	got = f.ok(f.call("Grep", map[string]any{"pattern": "x", "output_mode": "content", "head_limit": 2}))
	contains(t, got, "a.txt:1:x\na.txt:2:x x\n\n[truncated: showing the first 2 lines")
	lacks(t, got, "a.txt:4", "b.txt")

	// A limit that is exactly reached is not a truncation.
	got = f.ok(f.call("Grep", map[string]any{"pattern": "x", "head_limit": 2}))
	if got != "Found 2 files\na.txt\nb.txt" {
		t.Fatalf("head_limit reached exactly =\n%s", got)
	}
}

func TestGrepDefaultCap(t *testing.T) {
	f := newFixture(t)
	for i := range grepDefaultLimit + 5 {
		f.write(fmt.Sprintf("d%02d/f%04d.txt", i%50, i), "hit\n")
	}
	got := f.ok(f.call("Grep", map[string]any{"pattern": "hit"}))
	lines := strings.Split(got, "\n")
	contains(t, lines[0], "Found more than 1000 files")
	contains(t, got, "d00/f0000.txt\n", "[truncated:")
	if n := strings.Count(got, ".txt\n"); n != grepDefaultLimit {
		t.Fatalf("%d paths shown, want %d", n, grepDefaultLimit)
	}
	// The cut is in path order, so the result is the same every time.
	for range 3 {
		if again := f.ok(f.call("Grep", map[string]any{"pattern": "hit"})); again != got {
			t.Fatal("Grep output differs between runs")
		}
	}
}

func TestGrepMultiline(t *testing.T) {
	f := newFixture(t)
	f.write("s.go", "type T struct {\n\tA int\n\tB string\n}\n\nfunc f() {}\n")
	f.fails(f.call("Grep", map[string]any{"pattern": `struct \{\n`}), "multiline")

	got := f.ok(f.call("Grep", map[string]any{"pattern": `struct \{.*?B string`, "multiline": true, "output_mode": "content"}))
	if got != "s.go:1:type T struct {\ns.go:2:\tA int\ns.go:3:\tB string" {
		t.Fatalf("multiline content =\n%s", got)
	}
	got = f.ok(f.call("Grep", map[string]any{"pattern": `\{\s+A`, "multiline": true, "output_mode": "count"}))
	contains(t, got, "s.go:2\n")

	// Without multiline, \s and [^x] stop at line ends and ^ $ anchor lines.
	got = f.ok(f.call("Grep", map[string]any{"pattern": `\{\s+A`}))
	contains(t, got, "No matches found")
	got = f.ok(f.call("Grep", map[string]any{"pattern": `\{[^}]*A`}))
	contains(t, got, "No matches found")
	got = f.ok(f.call("Grep", map[string]any{"pattern": `^func f\(\) \{\}$`, "output_mode": "content"}))
	if got != "s.go:6:func f() {}" {
		t.Fatalf("anchored content = %q", got)
	}
	got = f.ok(f.call("Grep", map[string]any{"pattern": `(?s)A.*B`}))
	contains(t, got, "No matches found")

	// A pattern that matches empty, after the final line break too (found
	// by FuzzFileTools: orca crashed on a line that is not there). It
	// matches each line, as it does without multiline.
	f.write("two.txt", "a\nb\n")
	for _, pattern := range []string{"", "$", `\z|b`, "(?m)^"} {
		in := map[string]any{"pattern": pattern, "path": "two.txt", "output_mode": "content", "multiline": true}
		got = f.ok(f.call("Grep", in))
		want := "two.txt:1:a\ntwo.txt:2:b"
		if pattern == `\z|b` {
			want = "two.txt:2:b"
		}
		if got != want {
			t.Errorf("multiline %q: %q, want %q", pattern, got, want)
		}
	}
}

func TestGrepSkipsBinaryFilesAndFIFOs(t *testing.T) {
	f := newFixture(t)
	// Opening a FIFO blocks; neither a FIFO in the tree nor one named
	// .gitignore may hang the search.
	for _, name := range []string{"pipe", "sub/.gitignore"} {
		f.write(name, "")
		p := filepath.Join(f.dir, name)
		os.Remove(p)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f.write("bin.dat", "needle\x00\x01")
	f.write("text.txt", "needle\n")
	if got := f.ok(f.call("Grep", map[string]any{"pattern": "needle"})); got != "Found 1 file\ntext.txt" {
		t.Fatalf("Grep = %q", got)
	}
	got := f.ok(f.call("Grep", map[string]any{"pattern": "needle", "path": "bin.dat"}))
	contains(t, got, "No matches found", "binary")
}

func TestCompilePatternMatchesLines(t *testing.T) {
	cases := []struct {
		pattern   string
		multiline bool
		text      string
		want      int // matching lines
	}{
		{`a.b`, false, "a\nb\naxb\n", 1},
		{`a[^z]b`, false, "a\nb\n", 0},
		{`a\sb`, false, "a\nb\na b\n", 1},
		{`^b`, false, "a\nb\nab\n", 1},
		{`a$`, false, "a\nba\nab\n", 2},
		{`\Ab`, false, "a\nb\n", 1},
		{`x*`, false, "a\nb\n", 2},
		{`a.b`, true, "a\nb\n", 2},
		{``, false, "", 0},
		{`a`, false, "a", 1},
	}
	for _, c := range cases {
		re, lit, err := compilePattern(c.pattern, false, c.multiline)
		if err != nil {
			t.Fatalf("%q: %v", c.pattern, err)
		}
		s := &search{re: re, literal: lit, find: newFinder(lit), mode: modeCount, multiline: c.multiline}
		n := 0
		s.matchLines([]byte(c.text), func(int) bool { n++; return true })
		if n != c.want {
			t.Errorf("%q (multiline %v) on %q: %d matching lines, want %d", c.pattern, c.multiline, c.text, n, c.want)
		}
	}
	for _, c := range []struct {
		pattern string
		fold    bool
		want    string
		folded  bool
	}{
		{`func \w+\(ctx context\.Context`, false, "(ctx context.Context", false},
		{`foo|barbaz`, false, "", false},
		{`Context`, true, "context", true},
		// K and S fold to the Kelvin sign and the long s: the literal
		// stops at them.
		{`KubernetesCluster`, true, "ubernete", true},
		{`(?-i:Foo)bar`, true, "Foo", false},
		{`(?i)Deadline exceeded`, false, "deadline exceeded", true},
		{`(?i)ks`, false, "", false},
		{`x`, false, "", false},
	} {
		_, lit, err := compilePattern(c.pattern, c.fold, false)
		if err != nil {
			t.Fatal(err)
		}
		if string(lit.text) != c.want || lit.fold != c.folded || (c.want == "") != (lit.text == nil) {
			t.Errorf("required literal of %q (-i %v) = %q folded %v, want %q folded %v", c.pattern, c.fold, lit.text, lit.fold, c.want, c.folded)
		}
	}
}

// The literal's lines are a shortcut: with it, every line Grep reports is
// the one the regular expression alone finds in the whole file.
func TestLiteralLinesMatchTheRegexpAlone(t *testing.T) {
	text := "func f(ctx context.Context) {}\n" +
		"\tfunc g(ctx context.Context)\n" +
		"FUNC H(CTX CONTEXT.CONTEXT)\n" +
		"// not func (ctx context.Context)\n" +
		"x := errors.New(\"Deadline exceeded\")\r\n" +
		"deadline exceeded deadline exceeded\n" +
		"DEADLINE EXCEEDED\u212a\n" + // the Kelvin sign folds to k
		"errors.New\n" +
		"errors.News errorsxNew\n" +
		"\n" +
		"kind ſtate KIND State\n" + // the long s folds to s
		"deadline exceeded"
	for _, pattern := range []string{
		`func \w+\(ctx context\.Context`, `^func \w+\(ctx`, `Context\)$`, `Context\) \{\}$`,
		`errors.New`, `\berrors\.New\b`, `errors\.New$`, `deadline exceeded`, `"Deadline exceeded"\)`,
		`exceeded\r$`, `(?-i:DEADLINE) exceeded`, `kind state`, `exceeded.k`, `\bnot\b.*func`,
	} {
		for _, fold := range []bool{false, true} {
			re, lit, err := compilePattern(pattern, fold, false)
			if err != nil {
				t.Fatal(err)
			}
			data := []byte(text)
			lines := func(lit literal) []int {
				s := &search{re: re, literal: lit, find: newFinder(lit), mode: modeContent}
				var got []int
				s.matchLines(data, func(l int) bool { got = append(got, l); return true })
				return got
			}
			with, without := lines(lit), lines(literal{})
			if !slices.Equal(with, without) {
				t.Errorf("%q -i %v: lines %v with the literal %q, %v without", pattern, fold, with, lit.text, without)
			}
			if lit.text == nil {
				t.Errorf("%q -i %v: no literal", pattern, fold)
			}
		}
	}
}

// finder finds what a plain search finds: the first place the literal is,
// with ASCII case ignored when it is folded, at every offset of texts made
// to be hard (anchors everywhere, near misses, the literal at either end).
func TestFinderFindsTheFirstOccurrence(t *testing.T) {
	naive := func(data []byte, lit literal) int {
		for i := 0; i+len(lit.text) <= len(data); i++ {
			w := data[i : i+len(lit.text)]
			if lit.fold && bytes.Equal(bytes.ToLower(w), lit.text) && !bytes.ContainsFunc(w, func(r rune) bool { return r >= 0x80 }) || !lit.fold && bytes.Equal(w, lit.text) {
				return i
			}
		}
		return -1
	}
	texts := []string{
		"", "e", "errors", "errors.Ne", "errors.New", "xerrors.New", "ERRORS.NEW", "errors.NeW(",
		strings.Repeat("NNNNNNNNNe", 300) + "errors.New",
		strings.Repeat("errors.Nex", 200) + "errors.New" + strings.Repeat("e", 50),
		strings.Repeat(".", 5000) + "ERRORS.new",
		"deadline exceedeD", "DEADLINE exceeded\u212a", "x\x00deadline exceeded\xff",
		strings.Repeat("aA", 3000) + "aAa",
	}
	lits := []literal{
		{text: []byte("errors.New")}, {text: []byte("errors.new"), fold: true},
		{text: []byte("deadline exceeded"), fold: true}, {text: []byte("deadline exceeded")},
		{text: []byte("aaa")}, {text: []byte("aaa"), fold: true}, {text: []byte("aA")}, {text: []byte("e.")},
	}
	for _, text := range texts {
		for _, lit := range lits {
			f := newFinder(lit)
			for off := range min(len(text)+1, 40) {
				data := []byte(text[off:])
				if got, want := f.index(data), naive(data, lit); got != want {
					t.Fatalf("index of %q (folded %v) in %.40q… = %d, want %d", lit.text, lit.fold, data, got, want)
				}
			}
		}
	}
	if newFinder(literal{}) != nil {
		t.Error("a finder for no literal")
	}
}

func TestSearchHonoursCancellation(t *testing.T) {
	f := repo(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.fails(f.callCtx(ctx, "s1", "Grep", map[string]any{"pattern": "needle"}), "context canceled")
	f.fails(f.callCtx(ctx, "s1", "Glob", map[string]any{"pattern": "**"}), "context canceled")
}

// swapping is a workspace whose Walk calls swap once: when it reports the
// entry at, or after the walk if at is "".
type swapping struct {
	*workspace.Local // and so its OpenDir
	at               string
	swap             func()
	once             sync.Once
}

func (s *swapping) Walk(ctx context.Context, dir string, fn workspace.WalkFunc) error {
	err := s.Local.Walk(ctx, dir, func(p string, d fs.DirEntry) error {
		if p == s.at {
			s.once.Do(s.swap)
		}
		return fn(p, d)
	})
	s.once.Do(s.swap)
	return err
}

// A folder swapped for a symlink to a folder outside the workspace, while
// Grep walks or between its walk and its reading, cannot make Grep read
// what is outside: at worst the walk lists the outside folder's names,
// and opening them is refused.
func TestGrepDoesNotFollowAFolderSwappedOut(t *testing.T) {
	for _, at := range []string{"sub", ""} {
		f := newFixture(t)
		outside := t.TempDir()
		if err := os.WriteFile(filepath.Join(outside, "f.txt"), []byte("needle secret\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		f.write("sub/f.txt", "needle inside\n")
		f.write("top.txt", "needle top\n")
		sub := filepath.Join(f.dir, "sub")
		fsys := &swapping{Local: f.fs, at: at, swap: func() {
			if err := os.Rename(sub, sub+".moved"); err != nil {
				t.Error(err)
			}
			if err := os.Symlink(outside, sub); err != nil {
				t.Error(err)
			}
		}}
		grep := &grepTool{fs: fsys}
		r := grep.Execute(context.Background(), &tool.Call{Name: "Grep", Input: json.RawMessage(`{"pattern": "needle", "output_mode": "content"}`)})
		if r.IsError {
			t.Fatalf("swap at %q: %s", at, r.Content)
		}
		lacks(t, r.Content, "secret")
		contains(t, r.Content, "top.txt:1:needle top")
	}
}

// plainFS hides the DirOpener of the workspace it wraps.
type plainFS struct{ workspace.FileSystem }

// Grep finds the same with a workspace that cannot hold folders open,
// opening every file by its path.
func TestGrepWithoutDirOpener(t *testing.T) {
	f := repo(t)
	f.write("pkg/sub/more.go", "package sub\n\n// Needle again\nvar x = 1 // needle\n")
	f.write("pkg/sub/.hidden", "needle\n")
	if err := os.Symlink("../../main.go", filepath.Join(f.dir, "pkg", "sub", "link.go")); err != nil {
		t.Fatal(err)
	}
	// A .gitignore that is a symlink (inside the workspace) is read
	// through it, as Grep always has; git has ignored such files since
	// 2.32, but the walk keeps its rule.
	f.write("shared-ignore", "more.go\n")
	f.write("other/deeper/more.go", "needle\n")
	if err := os.Symlink("../../shared-ignore", filepath.Join(f.dir, "other", "deeper", ".gitignore")); err != nil {
		t.Fatal(err)
	}
	got := f.ok(f.call("Grep", map[string]any{"pattern": "needle"}))
	contains(t, got, "pkg/sub/more.go")
	lacks(t, got, "other/deeper/more.go")
	with, without := &grepTool{fs: f.fs}, &grepTool{fs: plainFS{f.fs}}
	if _, ok := without.fs.(workspace.DirOpener); ok {
		t.Fatal("plainFS is a DirOpener")
	}
	for _, in := range []string{
		`{"pattern": "needle"}`,
		`{"pattern": "needle", "-i": true, "output_mode": "content", "-C": 1}`,
		`{"pattern": "Needle", "output_mode": "count"}`,
		`{"pattern": "^package \\w+", "output_mode": "content", "head_limit": 3}`,
	} {
		call := &tool.Call{Name: "Grep", Input: json.RawMessage(in)}
		a := with.Execute(context.Background(), call)
		b := without.Execute(context.Background(), call)
		if a.IsError || a.Content != b.Content {
			t.Errorf("Grep %s:\nwith OpenDir:\n%s\nwithout:\n%s", in, a.Content, b.Content)
		}
	}
	// The walk does not follow symlinks, but a path named explicitly is
	// searched through one.
	got = f.ok(f.call("Grep", map[string]any{"pattern": "needle", "path": "pkg/sub/link.go", "output_mode": "content"}))
	if got != "pkg/sub/link.go:3:func main() { needle() }" {
		t.Errorf("Grep through an explicit symlink = %q", got)
	}
}

// FuzzLiteralLines checks on any pattern and text what
// TestLiteralLinesMatchTheRegexpAlone checks on chosen ones: the lines
// found through the literal are those the regular expression alone finds,
// and in multiline mode no text the pattern matches lacks the literal.
func FuzzLiteralLines(f *testing.F) {
	f.Add(`func \w+\(ctx`, "func f(ctx)\nFUNC G(CTX\n", true)
	f.Add(`errors\.New`, "errors.New\nerrors.Nex\n", false)
	f.Add(`^dead(line)+ exc$`, "deadlinelineEXC\n\u212a\n", true)
	f.Fuzz(func(t *testing.T, pattern, text string, fold bool) {
		re, lit, err := compilePattern(pattern, fold, false)
		if err != nil || lit.text == nil {
			return
		}
		data := []byte(text)
		lines := func(lit literal) []int {
			s := &search{re: re, literal: lit, find: newFinder(lit), mode: modeContent}
			var got []int
			s.matchLines(data, func(l int) bool { got = append(got, l); return true })
			return got
		}
		if with, without := lines(lit), lines(literal{}); !slices.Equal(with, without) {
			t.Errorf("%q -i %v on %q: lines %v with the literal %q, %v without", pattern, fold, text, with, lit.text, without)
		}
		// In multiline mode the literal only rules out whole files.
		if re, lit, err := compilePattern(pattern, fold, true); err == nil && lit.text != nil {
			if re.Match(data) && newFinder(lit).index(data) < 0 {
				t.Errorf("%q -i %v multiline matches %q, which lacks the literal %q", pattern, fold, text, lit.text)
			}
		}
	})
}
