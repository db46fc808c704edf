package builtin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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
		s := &search{re: re, literal: lit, mode: modeCount, multiline: c.multiline}
		n := 0
		s.matchLines([]byte(c.text), func(int) bool { n++; return true })
		if n != c.want {
			t.Errorf("%q (multiline %v) on %q: %d matching lines, want %d", c.pattern, c.multiline, c.text, n, c.want)
		}
	}
	if _, lit, _ := compilePattern(`func \w+\(ctx context\.Context`, false, false); string(lit) != "(ctx context.Context" {
		t.Errorf("required literal = %q", lit)
	}
	if _, lit, _ := compilePattern(`foo|barbaz`, false, false); lit != nil {
		t.Errorf("required literal of an alternation = %q", lit)
	}
	if _, lit, _ := compilePattern(`Context`, true, false); lit != nil {
		t.Errorf("required literal of a case-insensitive pattern = %q", lit)
	}
}

func TestSearchHonoursCancellation(t *testing.T) {
	f := repo(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.fails(f.callCtx(ctx, "s1", "Grep", map[string]any{"pattern": "needle"}), "context canceled")
	f.fails(f.callCtx(ctx, "s1", "Glob", map[string]any{"pattern": "**"}), "context canceled")
}
