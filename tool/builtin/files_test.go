package builtin

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestReadNumbersLines(t *testing.T) {
	f := newFixture(t)
	f.write("src/a.go", "package a\n\n\tfunc A() {}\n")
	got := f.ok(f.call("Read", map[string]any{"file_path": "src/a.go"}))
	want := "     1\tpackage a\n     2\t\n     3\t\tfunc A() {}\n"
	if got != want {
		t.Fatalf("Read =\n%q\nwant\n%q", got, want)
	}
	// An absolute path inside the workspace reads the same file.
	if abs := f.ok(f.call("Read", map[string]any{"file_path": filepath.Join(f.dir, "src", "a.go")})); abs != want {
		t.Fatalf("Read(absolute) =\n%q", abs)
	}
}

// A small file's Read allocates about its size, not the 64 KiB buffer
// and the 8 KiB line a large one takes.
func TestReadSmallFileAllocatesLittle(t *testing.T) {
	f := newFixture(t)
	f.write("tiny.txt", "hello\n")
	f.ok(f.call("Read", map[string]any{"file_path": "tiny.txt"}))
	const runs = 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f.call("Read", map[string]any{"file_path": "tiny.txt"})
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 32<<10 {
		t.Errorf("a Read of a 6-byte file allocates %d bytes", per)
	}
}

func TestReadOffsetAndLimit(t *testing.T) {
	f := newFixture(t)
	f.write("n.txt", numbered(10))
	got := f.ok(f.call("Read", map[string]any{"file_path": "n.txt", "offset": 3, "limit": 2}))
	contains(t, got, "     3\tline 3\n     4\tline 4\n", "[showing lines 3-4 of 10; use offset=5 to read more]")
	lacks(t, got, "line 2\n", "line 5\n", "truncated")

	got = f.ok(f.call("Read", map[string]any{"file_path": "n.txt", "offset": 9}))
	contains(t, got, "    10\tline 10\n", "[showing lines 9-10 of 10]")

	f.fails(f.call("Read", map[string]any{"file_path": "n.txt", "offset": 11}), "n.txt", "10 lines", "offset 11")
}

func TestReadDefaultLimitSaysTruncated(t *testing.T) {
	f := newFixture(t)
	f.write("big.txt", numbered(2500))
	got := f.ok(f.call("Read", map[string]any{"file_path": "big.txt"}))
	contains(t, got, "  2000\tline 2000\n", "[truncated: showing lines 1-2000 of 2500; use offset=2001 to read more]")
	lacks(t, got, "line 2001\n")
}

func TestReadCutsLongLinesAndCapsOutput(t *testing.T) {
	f := newFixture(t)
	long := strings.Repeat("é", 2500)
	f.write("long.txt", "short\n"+long+"\nend\n")
	got := f.ok(f.call("Read", map[string]any{"file_path": "long.txt"}))
	contains(t, got, "     2\t"+strings.Repeat("é", 2000)+" …[line truncated]\n", "     3\tend\n", "[1 line longer than 2000 characters truncated]")
	lacks(t, got, strings.Repeat("é", 2001))

	// 400 lines of 1000 bytes is more than the 256 KiB the output holds.
	line := strings.Repeat("x", 1000) + "\n"
	f.write("wide.txt", strings.Repeat(line, 400))
	got = f.ok(f.call("Read", map[string]any{"file_path": "wide.txt"}))
	if len(got) > readMaxOutput+1000 {
		t.Fatalf("output is %d bytes, over the cap", len(got))
	}
	contains(t, got, "[truncated: output is capped at 256 KiB; showing lines 1-", "of 400; use offset=")
}

func TestReadEdgeCases(t *testing.T) {
	f := newFixture(t)
	f.write("empty.txt", "")
	contains(t, f.ok(f.call("Read", map[string]any{"file_path": "empty.txt"})), "empty.txt is empty")

	f.write("bin.dat", "abc\x00def")
	f.fails(f.call("Read", map[string]any{"file_path": "bin.dat"}), "bin.dat", "binary")

	f.write("dir/x.txt", "x")
	f.fails(f.call("Read", map[string]any{"file_path": "dir"}), "dir is a directory")

	f.fails(f.call("Read", map[string]any{"file_path": "missing/nope.txt"}), "file not found: missing/nope.txt")

	f.write("crlf.txt", "one\r\ntwo\r\n")
	if got := f.ok(f.call("Read", map[string]any{"file_path": "crlf.txt"})); got != "     1\tone\n     2\ttwo\n" {
		t.Fatalf("CRLF read = %q", got)
	}
	if err := syscall.Mkfifo(filepath.Join(f.dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.fails(f.call("Read", map[string]any{"file_path": "fifo"}), "fifo", "not a regular file")
	f.fails(f.call("Edit", map[string]any{"file_path": "fifo", "old_string": "a", "new_string": "b"}), "fifo", "not a regular file")
	f.fails(f.call("Grep", map[string]any{"pattern": "a", "path": "fifo"}), "fifo", "not a regular file")

	f.write("nofinal.txt", "a\nb")
	if got := f.ok(f.call("Read", map[string]any{"file_path": "nofinal.txt"})); got != "     1\ta\n     2\tb\n" {
		t.Fatalf("read without final newline = %q", got)
	}
}

// outside makes a file outside the workspace and a symlink "link" inside
// it that leads there; it returns the outside file's path.
func outside(t *testing.T, f *fixture) string {
	t.Helper()
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.txt")
	if err := os.WriteFile(secret, []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(f.dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Join(f.dir, "linkdir")); err != nil {
		t.Fatal(err)
	}
	return secret
}

func TestFileToolsStayInsideTheWorkspace(t *testing.T) {
	f := newFixture(t)
	secret := outside(t, f)
	f.write("a.txt", "secret\n")
	for _, p := range []string{"../x", "a/../../x", secret, "link", "linkdir/secret.txt"} {
		f.fails(f.call("Read", map[string]any{"file_path": p}), p, "outside the workspace")
		f.fails(f.call("Write", map[string]any{"file_path": p, "content": "pwned"}), p, "outside the workspace")
		f.fails(f.call("Edit", map[string]any{"file_path": p, "old_string": "secret", "new_string": "pwned"}), p, "outside the workspace")
	}
	if b, _ := os.ReadFile(secret); string(b) != "secret\n" {
		t.Fatalf("the file outside was changed: %q", b)
	}
	for _, p := range []string{"../", secret, "linkdir"} {
		f.fails(f.call("Glob", map[string]any{"pattern": "*", "path": p}), p, "outside the workspace")
		f.fails(f.call("Grep", map[string]any{"pattern": "secret", "path": p}), p, "outside the workspace")
	}
	f.fails(f.call("Glob", map[string]any{"pattern": "../**/*.txt"}), "../**/*.txt", "outside the workspace")
	// A walk never follows the symlinks, so nothing outside is searched.
	got := f.ok(f.call("Grep", map[string]any{"pattern": "secret"}))
	contains(t, got, "a.txt")
	lacks(t, got, "link")
}

func TestWriteCreatesAndOverwrites(t *testing.T) {
	f := newFixture(t)
	got := f.ok(f.call("Write", map[string]any{"file_path": "deep/er/new.txt", "content": "a\nb\n"}))
	contains(t, got, "Created deep/er/new.txt", "4 bytes", "2 lines")
	if s := f.read("deep/er/new.txt"); s != "a\nb\n" {
		t.Fatalf("file holds %q", s)
	}
	abs := filepath.Join(f.dir, "deep", "er", "new.txt")
	got = f.ok(f.call("Write", map[string]any{"file_path": abs, "content": "x"}))
	contains(t, got, "Overwrote "+abs, "1 byte", "1 line")
	if s := f.read("deep/er/new.txt"); s != "x" {
		t.Fatalf("file holds %q", s)
	}
	f.fails(f.call("Write", map[string]any{"file_path": "deep", "content": "x"}), "deep is a directory")
	got = f.ok(f.call("Write", map[string]any{"file_path": "empty", "content": ""}))
	contains(t, got, "Created empty", "0 bytes", "0 lines")
}

func TestEditReplacesOnce(t *testing.T) {
	f := newFixture(t)
	f.write("a.go", "package a\n\nfunc A() int {\n\treturn 1\n}\n")
	got := f.ok(f.call("Edit", map[string]any{"file_path": "a.go", "old_string": "return 1", "new_string": "return 2"}))
	contains(t, got, "Edited a.go: replaced 1 occurrence.", "     4\t\treturn 2\n", "     1\tpackage a\n", "     5\t}\n")
	if s := f.read("a.go"); s != "package a\n\nfunc A() int {\n\treturn 2\n}\n" {
		t.Fatalf("file holds %q", s)
	}
}

func TestEditRefusals(t *testing.T) {
	f := newFixture(t)
	f.write("a.txt", "x = 1\nx = 1\n")
	f.fails(f.call("Edit", map[string]any{"file_path": "a.txt", "old_string": "x = 1", "new_string": "x = 2"}), "a.txt", "matches 2 times", "replace_all")
	f.fails(f.call("Edit", map[string]any{"file_path": "a.txt", "old_string": "y", "new_string": "z"}), "a.txt", "not found")
	f.fails(f.call("Edit", map[string]any{"file_path": "a.txt", "old_string": "", "new_string": "z"}), "a.txt", "old_string is empty")
	f.fails(f.call("Edit", map[string]any{"file_path": "a.txt", "old_string": "x", "new_string": "x"}), "a.txt", "the same")
	f.fails(f.call("Edit", map[string]any{"file_path": "nope.txt", "old_string": "x", "new_string": "y"}), "file not found: nope.txt")
	if s := f.read("a.txt"); s != "x = 1\nx = 1\n" {
		t.Fatalf("a refused edit changed the file: %q", s)
	}

	got := f.ok(f.call("Edit", map[string]any{"file_path": "a.txt", "old_string": "x = 1", "new_string": "x = 2", "replace_all": true}))
	contains(t, got, "replaced 2 occurrences")
	if s := f.read("a.txt"); s != "x = 2\nx = 2\n" {
		t.Fatalf("file holds %q", s)
	}
}

func TestEditKeepsCRLF(t *testing.T) {
	f := newFixture(t)
	f.write("win.txt", "one\r\ntwo\r\nthree\r\n")
	got := f.ok(f.call("Edit", map[string]any{"file_path": "win.txt", "old_string": "one\ntwo\n", "new_string": "uno\ndos\nmas\n"}))
	contains(t, got, "replaced 1 occurrence", "     3\tmas\n")
	if s := f.read("win.txt"); s != "uno\r\ndos\r\nmas\r\nthree\r\n" {
		t.Fatalf("file holds %q", s)
	}
	// A model that sends CRLF itself matches too.
	f.ok(f.call("Edit", map[string]any{"file_path": "win.txt", "old_string": "mas\r\n", "new_string": "más\r\n"}))
	if s := f.read("win.txt"); s != "uno\r\ndos\r\nmás\r\nthree\r\n" {
		t.Fatalf("file holds %q", s)
	}
}

func TestWriteAndEditGoThroughSymlinks(t *testing.T) {
	f := newFixture(t)
	f.write("AGENTS.md", "be nice\n")
	if err := os.Symlink("AGENTS.md", filepath.Join(f.dir, "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	f.ok(f.call("Edit", map[string]any{"file_path": "CLAUDE.md", "old_string": "nice", "new_string": "kind"}))
	f.ok(f.call("Write", map[string]any{"file_path": "CLAUDE.md", "content": f.read("AGENTS.md") + "be brief\n"}))
	if s := f.read("AGENTS.md"); s != "be kind\nbe brief\n" {
		t.Fatalf("AGENTS.md holds %q", s)
	}
	if fi, err := os.Lstat(filepath.Join(f.dir, "CLAUDE.md")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("CLAUDE.md is no longer a symlink: %v, %v", fi.Mode(), err)
	}
}

func TestEditKeepsPermissions(t *testing.T) {
	f := newFixture(t)
	p := f.write("run.sh", "echo hi\n")
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	f.ok(f.call("Edit", map[string]any{"file_path": "run.sh", "old_string": "hi", "new_string": "ho"}))
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode = %v, want 0755", fi.Mode().Perm())
	}
}

func TestSnippet(t *testing.T) {
	s := numbered(20)
	at := strings.Index(s, "line 10\n")
	got := snippet(s, at, at+len("line 10\n"))
	want := "     7\tline 7\n     8\tline 8\n     9\tline 9\n    10\tline 10\n    11\tline 11\n    12\tline 12\n    13\tline 13\n"
	if got != want {
		t.Fatalf("snippet =\n%s\nwant\n%s", got, want)
	}
	if got := snippet("a", 0, 1); got != "     1\ta\n" {
		t.Fatalf("snippet of one line = %q", got)
	}
	if got := snippet("a\nb\n", 4, 4); got != "     1\ta\n     2\tb\n" {
		t.Fatalf("snippet at the end = %q", got)
	}
}
