package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

// rgCase is one search that Grep and ripgrep both run on the Go source
// tree: Grep's input, and the rg arguments that ask rg the same question.
type rgCase struct {
	name    string
	pattern string // Grep's pattern
	rgExpr  string // the same pattern in rg's syntax
	fold    bool   // -i
	mode    string // Grep's output_mode
}

// rgCases are the searches BenchmarkGrep times and TestGrepAgreesWithRipgrep
// checks.
//
// Grep's \w is ASCII (Go's RE2); rg's is Unicode, so the rg form of a
// pattern with \w says (?-u:\w). Case folding is Unicode in both.
var rgCases = []rgCase{
	{name: "ctx", pattern: `func \w+\(ctx context\.Context`, rgExpr: `func (?-u:\w)+\(ctx context\.Context`, mode: modeFiles},
	{name: "ctx-i", pattern: `func \w+\(ctx context\.Context`, rgExpr: `func (?-u:\w)+\(ctx context\.Context`, fold: true, mode: modeFiles},
	{name: "literal", pattern: `errors\.New`, rgExpr: `errors\.New`, mode: modeContent},
	{name: "literal-i", pattern: `deadline exceeded`, rgExpr: `deadline exceeded`, fold: true, mode: modeContent},
}

// grepInput returns the Grep call of c. The head_limit is high enough that
// Grep searches every file, as rg does, rather than stop at the default
// 1000 entries; what it renders is still capped at grepMaxOutput.
func (c rgCase) call(mode string) *tool.Call {
	in := map[string]any{"pattern": c.pattern, "output_mode": mode, "head_limit": 1 << 20}
	if c.fold {
		in["-i"] = true
	}
	if mode == modeContent {
		in["-n"] = true
	}
	raw, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	return &tool.Call{Name: "Grep", Input: raw}
}

// rgArgs returns the rg command line that searches the current folder as
// Grep searches its workspace, in rg's output mode for mode.
//
// Grep reads .gitignore files (and .git/info/exclude) whether or not the
// folder is a git repository, and nothing else: not .ignore or .rgignore,
// not the .gitignore files above the workspace, not the user's global
// excludes file. It searches hidden files and skips only ".git". Binary
// files are those with a NUL byte in their first 8 KiB; rg gives up on a
// file at the first NUL it reads, wherever it is, so a file with a NUL
// further in may be counted differently (the Go tree has none that
// matches these patterns).
func (c rgCase) rgArgs(mode string) []string {
	args := []string{
		"--no-config", "--no-messages",
		"--hidden", "--glob", "!.git",
		"--no-require-git", "--no-ignore-dot", "--no-ignore-parent", "--no-ignore-global",
	}
	if c.fold {
		args = append(args, "-i")
	}
	switch mode {
	case modeFiles:
		args = append(args, "--files-with-matches")
	case modeCount:
		args = append(args, "--count")
	default:
		args = append(args, "-n", "--no-heading", "--color", "never")
	}
	return append(args, "--regexp", c.rgExpr)
}

// goSource opens the Go distribution's source tree as a workspace.
func goSource(tb testing.TB) (*workspace.Local, string) {
	tb.Helper()
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		tb.Skipf("go env GOROOT: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(goroot)), "src")
	fsys, err := workspace.OpenLocal(dir)
	if err != nil {
		tb.Skipf("no GOROOT source tree: %v", err)
	}
	tb.Cleanup(func() { fsys.Close() })
	return fsys, fsys.Root()
}

// runRg runs rg with args in dir and returns its standard output. rg exits
// with 1 when nothing matched, which is not a failure here.
func runRg(tb testing.TB, dir string, args []string) []byte {
	tb.Helper()
	cmd := exec.Command("rg", args...)
	cmd.Dir = dir
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			tb.Fatalf("rg %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
	}
	return out.Bytes()
}

// counts parses "path:N" lines (rg --count, or Grep's count mode before its
// summary) into a map; a line without a count (rg --files-with-matches,
// Grep's file list) counts as 0.
func counts(lines []string) map[string]int {
	m := make(map[string]int, len(lines))
	for _, l := range lines {
		if l == "" {
			continue
		}
		if i := strings.LastIndexByte(l, ':'); i >= 0 {
			if n, err := strconv.Atoi(l[i+1:]); err == nil {
				m[l[:i]] = n
				continue
			}
		}
		m[l] = 0
	}
	return m
}

// TestGrepAgreesWithRipgrep checks that Grep and rg find the same files —
// and, for the content searches, the same number of matching lines in each
// — for the searches BenchmarkGrep times. It is not a timed test: it is
// what makes the benchmark's ratio a comparison of equal work.
func TestGrepAgreesWithRipgrep(t *testing.T) {
	if testing.Short() {
		t.Skip("searches the Go source tree")
	}
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("rg is not installed")
	}
	fsys, dir := goSource(t)
	grep := &grepTool{fs: fsys}
	for _, c := range rgCases {
		t.Run(c.name, func(t *testing.T) {
			mode := modeFiles
			if c.mode != modeFiles {
				mode = modeCount
			}
			r := grep.Execute(context.Background(), c.call(mode))
			if r.IsError {
				t.Fatalf("Grep: %s", r.Content)
			}
			if strings.Contains(r.Content, "[truncated") {
				t.Fatalf("Grep output was cut short:\n%.300s", r.Content)
			}
			var lines []string
			if mode == modeFiles {
				lines = strings.Split(r.Content, "\n")[1:] // after "Found N files"
			} else {
				body, _, _ := strings.Cut(r.Content, "\n\nFound ")
				lines = strings.Split(body, "\n")
			}
			got := counts(lines)
			want := counts(strings.Split(string(runRg(t, dir, c.rgArgs(mode))), "\n"))
			if len(want) == 0 {
				t.Fatal("rg found nothing; the case does not test anything")
			}
			for _, p := range slices.Sorted(maps.Keys(want)) {
				if n, ok := got[p]; !ok {
					t.Errorf("rg finds %s (%d lines), Grep does not", p, want[p])
				} else if n != want[p] {
					t.Errorf("%s: Grep counts %d matching lines, rg %d", p, n, want[p])
				}
			}
			for _, p := range slices.Sorted(maps.Keys(got)) {
				if _, ok := want[p]; !ok {
					t.Errorf("Grep finds %s, rg does not", p)
				}
			}
			t.Logf("%d files", len(got))
		})
	}
}
