package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"regexp/syntax"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

const (
	grepDefaultLimit = 1000      // entries (files, counts or lines) shown without head_limit
	grepMaxOutput    = 64 << 10  // bytes of output, at most
	grepMaxLineChars = 1000      // longer lines are cut in content mode
	grepMaxFileSize  = 64 << 20  // larger files are skipped
	grepReadSize     = 256 << 10 // initial read buffer of a worker
	grepMaxPooled    = 4 << 20   // larger read buffers are not kept for reuse
)

// fileTypes are Grep's file types, named as rg names them. A pattern
// without a slash or a star is a whole file name.
var fileTypes = map[string][]string{
	"c":        {"*.c", "*.h"},
	"cpp":      {"*.cpp", "*.cc", "*.cxx", "*.c++", "*.hpp", "*.hh", "*.hxx", "*.h++", "*.h", "*.inl"},
	"cs":       {"*.cs"},
	"css":      {"*.css", "*.scss", "*.sass", "*.less"},
	"docker":   {"Dockerfile", "*.dockerfile", "Dockerfile.*"},
	"go":       {"*.go"},
	"html":     {"*.html", "*.htm", "*.xhtml"},
	"java":     {"*.java"},
	"js":       {"*.js", "*.jsx", "*.mjs", "*.cjs", "*.vue"},
	"json":     {"*.json", "*.jsonl", "*.json5"},
	"kotlin":   {"*.kt", "*.kts"},
	"lua":      {"*.lua"},
	"make":     {"Makefile", "makefile", "GNUmakefile", "*.mk", "*.mak"},
	"md":       {"*.md", "*.markdown", "*.mdx", "*.mkd", "*.mdown"},
	"php":      {"*.php"},
	"proto":    {"*.proto"},
	"py":       {"*.py", "*.pyi", "*.pyw"},
	"ruby":     {"*.rb", "*.gemspec", "Gemfile", "Rakefile"},
	"rust":     {"*.rs"},
	"scala":    {"*.scala", "*.sbt"},
	"sh":       {"*.sh", "*.bash", "*.zsh", ".bashrc", ".bash_profile", ".zshrc", ".profile"},
	"sql":      {"*.sql"},
	"swift":    {"*.swift"},
	"toml":     {"*.toml"},
	"ts":       {"*.ts", "*.tsx", "*.mts", "*.cts"},
	"txt":      {"*.txt"},
	"xml":      {"*.xml", "*.xsd", "*.xsl", "*.svg"},
	"yaml":     {"*.yaml", "*.yml"},
	"markdown": {"*.md", "*.markdown", "*.mdx", "*.mkd", "*.mdown"},
}

func knownTypes() string {
	names := make([]string, 0, len(fileTypes))
	for name := range fileTypes {
		names = append(names, name)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

type grepTool struct {
	fs     workspace.FileSystem
	hidden func(string) bool
}

func (*grepTool) Name() string { return "Grep" }

func (*grepTool) Description() string {
	return `A powerful search tool with ripgrep-like options.

Usage:
- ALWAYS use Grep for search tasks. NEVER invoke ` + "`grep` or `rg`" + ` as a Bash command.
- Supports regular expressions (Go RE2 syntax, close to ripgrep's), e.g. "log.*Error", "function\\s+\\w+"
- Filter files with the glob parameter (e.g. "*.js", "**/*.tsx", "!*_test.go") or the type parameter (e.g. "js", "py", "rust", "go")
- Output modes: "content" shows matching lines, "files_with_matches" shows only file paths (default), "count" shows match counts
- Pattern syntax: literal braces need escaping (use ` + "`interface\\{\\}`" + ` to find ` + "`interface{}`" + ` in Go code)
- Multiline matching: by default patterns match within single lines only. For cross-line patterns like ` + "`struct \\{[\\s\\S]*?field`" + `, use multiline: true
- Files ignored by .gitignore, the .git folder and binary files are not searched
- Paths are relative to the workspace root and sorted by path; the output says when it was cut short`
}

func (*grepTool) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {
      "type": "string",
      "description": "The regular expression pattern to search for in file contents"
    },
    "path": {
      "type": "string",
      "description": "File or directory to search in (rg PATH). Defaults to the workspace root."
    },
    "glob": {
      "type": "string",
      "description": "Glob pattern to filter files (e.g. \"*.js\", \"*.{ts,tsx}\") - maps to rg --glob"
    },
    "output_mode": {
      "type": "string",
      "enum": ["content", "files_with_matches", "count"],
      "description": "Output mode: \"content\" shows matching lines (supports -A/-B/-C context, -n line numbers, head_limit), \"files_with_matches\" shows file paths (supports head_limit), \"count\" shows match counts (supports head_limit). Defaults to \"files_with_matches\"."
    },
    "-B": {
      "type": "number",
      "minimum": 0,
      "description": "Number of lines to show before each match (rg -B). Requires output_mode: \"content\", ignored otherwise."
    },
    "-A": {
      "type": "number",
      "minimum": 0,
      "description": "Number of lines to show after each match (rg -A). Requires output_mode: \"content\", ignored otherwise."
    },
    "-C": {
      "type": "number",
      "minimum": 0,
      "description": "Number of lines to show before and after each match (rg -C). Requires output_mode: \"content\", ignored otherwise."
    },
    "-n": {
      "type": "boolean",
      "description": "Show line numbers in output (rg -n). Requires output_mode: \"content\", ignored otherwise. Defaults to true."
    },
    "-i": {
      "type": "boolean",
      "description": "Case insensitive search (rg -i)"
    },
    "type": {
      "type": "string",
      "description": "File type to search (rg --type). Common types: js, ts, py, rust, go, java, c, cpp, md, json, yaml, sh. More efficient than glob for standard file types."
    },
    "head_limit": {
      "type": "number",
      "minimum": 0,
      "description": "Limit output to first N lines/entries, equivalent to \"| head -N\". Works across all output modes: content (limits output lines), files_with_matches (limits file paths), count (limits count entries). When unspecified, at most 1000 entries are shown."
    },
    "multiline": {
      "type": "boolean",
      "description": "Enable multiline mode where . matches newlines and patterns can span lines (rg -U --multiline-dotall). Default: false."
    }
  },
  "required": ["pattern"],
  "additionalProperties": false
}`)
}

type grepInput struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path"`
	Glob       string `json:"glob"`
	Type       string `json:"type"`
	OutputMode string `json:"output_mode"`
	Before     count  `json:"-B"`
	After      count  `json:"-A"`
	Context    count  `json:"-C"`
	LineNums   *bool  `json:"-n"`
	IgnoreCase bool   `json:"-i"`
	HeadLimit  count  `json:"head_limit"`
	Multiline  bool   `json:"multiline"`
}

const (
	modeFiles   = "files_with_matches"
	modeContent = "content"
	modeCount   = "count"
)

// search is one Grep call, compiled.
type search struct {
	re        *regexp.Regexp
	literal   literal // every match contains it
	find      *finder // finds literal; nil if there is none
	mode      string
	multiline bool
	before    int
	after     int
	lineNums  bool
	limit     int // entries to show
}

// fileResult is what one file contributed.
type fileResult struct {
	count   int      // matching lines
	lines   []string // content mode: output lines, "--" between groups
	entries int      // entries this file adds to the output
	skipped string   // why the file was not searched, if it was not
}

func (t *grepTool) Execute(ctx context.Context, call *tool.Call) tool.Result {
	var in grepInput
	if err := decode("Grep", call.Input, &in); err != nil {
		return tool.Errorf("%v", err)
	}
	s := &search{mode: in.OutputMode, multiline: in.Multiline, lineNums: true, limit: grepDefaultLimit}
	if s.mode == "" {
		s.mode = modeFiles
	}
	if s.mode != modeFiles && s.mode != modeContent && s.mode != modeCount {
		return tool.Errorf("Grep: unknown output_mode %q; use content, files_with_matches or count", in.OutputMode)
	}
	if in.Before < 0 || in.After < 0 || in.Context < 0 || in.HeadLimit < 0 {
		return tool.Errorf("Grep: -A, -B, -C and head_limit must not be negative")
	}
	s.before, s.after = int(in.Context), int(in.Context)
	if in.Before > 0 {
		s.before = int(in.Before)
	}
	if in.After > 0 {
		s.after = int(in.After)
	}
	if in.LineNums != nil {
		s.lineNums = *in.LineNums
	}
	if in.HeadLimit > 0 {
		s.limit = int(min(in.HeadLimit, 1<<20))
	}
	var err error
	s.re, s.literal, err = compilePattern(in.Pattern, in.IgnoreCase, in.Multiline)
	if err != nil {
		return tool.Errorf("Grep: %v", err)
	}
	s.find = newFinder(s.literal)
	keep, err := fileFilter(in.Glob, in.Type)
	if err != nil {
		return tool.Errorf("Grep: %v", err)
	}

	target := in.Path
	if target == "" {
		target = "."
	}
	rel, err := t.fs.Resolve(target)
	if err != nil {
		return tool.Errorf("Grep path %s: %v", target, err)
	}
	fi, err := t.fs.Stat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return tool.Errorf("Grep path %s: no such file or directory", target)
	}
	if err != nil {
		return fileError(target, err)
	}
	if !fi.IsDir() && !fi.Mode().IsRegular() {
		return tool.Errorf("Grep path %s is not a regular file or a directory (%v)", target, fi.Mode().Type())
	}
	var files []string
	opener, _ := t.fs.(workspace.DirOpener)
	if fi.IsDir() {
		var mu sync.Mutex
		err = walkVisible(ctx, t.fs, rel, t.hidden, func(p string, d fs.DirEntry) error {
			if !d.Type().IsRegular() || !keep(p, rel) {
				return nil
			}
			mu.Lock()
			files = append(files, p)
			mu.Unlock()
			return nil
		})
		if err != nil {
			return tool.Errorf("Grep %q in %s: %v", in.Pattern, target, err)
		}
		slices.Sort(files)
	} else {
		// A file named explicitly is searched whatever the filters say, as
		// rg does, and opened by its path, through a symlink if it is one.
		files = []string{rel}
		opener = nil
	}

	results, n := t.run(ctx, s, files, opener)
	if err := ctx.Err(); err != nil {
		return tool.Errorf("Grep %q in %s: %v", in.Pattern, target, err)
	}
	out := s.render(files[:n], results[:n])
	if out == "" {
		msg := fmt.Sprintf("No matches found for pattern %q in %s", in.Pattern, target)
		if !fi.IsDir() && results[0].skipped != "" {
			msg += " (" + results[0].skipped + ")"
		}
		return tool.Result{Content: msg, Response: &grepResponse{Mode: s.mode, Content: msg}}
	}
	return tool.Result{Content: out, Response: &grepResponse{Mode: s.mode, Content: out}}
}

// run searches files (sorted by path) with a bounded pool of goroutines,
// taking them in path order in batches of the files of one folder. With an
// opener, a worker opens a folder once and each of its files relative to
// it, refusing any that is no longer a regular file; without, it opens
// each file by its path with Open. It stops taking
// files once the files searched so far, in order, hold more entries than
// the output can show, so the result is the same whichever goroutine
// finishes first. It returns the results and the length of the searched
// prefix of files.
func (t *grepTool) run(ctx context.Context, s *search, files []string, opener workspace.DirOpener) ([]fileResult, int) {
	results := make([]fileResult, len(files))
	batches := folderBatches(files)
	var (
		next     atomic.Int64
		stop     atomic.Bool
		mu       sync.Mutex
		done     = make([]bool, len(files))
		frontier int // every file before it is done
		total    int // entries in files[:frontier]
		wg       sync.WaitGroup
		panicked atomic.Pointer[any] // what a worker panicked with
	)
	finish := func(i int) {
		mu.Lock()
		defer mu.Unlock()
		done[i] = true
		for frontier < len(files) && done[frontier] {
			total += results[frontier].entries
			frontier++
		}
		if total > s.limit {
			stop.Store(true)
		}
	}
	workers := min(len(batches), max(4, 2*runtime.GOMAXPROCS(0)), 16)
	for range workers {
		wg.Go(func() {
			// A bug of the search is the call's failure, not the
			// process's: the panic goes on on the caller's goroutine,
			// where the registry turns it into an error observation.
			defer func() {
				if v := recover(); v != nil {
					panicked.CompareAndSwap(nil, &v)
					stop.Store(true)
				}
			}()
			r := readerPool.Get().(*reader)
			defer r.release()
			for !stop.Load() && ctx.Err() == nil {
				k := int(next.Add(1) - 1)
				if k >= len(batches) {
					return
				}
				b := batches[k]
				var dir workspace.Dir
				if opener != nil {
					// A folder that cannot be opened is left to Open, file
					// by file, which says why in each file's result.
					dir, _ = opener.OpenDir(b.dir)
				}
				for _, i := range b.files {
					if stop.Load() || ctx.Err() != nil {
						break
					}
					var f fs.File
					var err error
					if dir != nil {
						f, err = dir.OpenFile(path.Base(files[i]))
					} else {
						f, err = t.fs.Open(files[i])
					}
					results[i] = s.file(f, err, files[i], r)
					finish(i)
				}
				if dir != nil {
					dir.Close()
				}
			}
		})
	}
	wg.Wait()
	if p := panicked.Load(); p != nil {
		panic(*p)
	}
	return results, frontier
}

// grepBatchFiles bounds a batch, so that a large folder is still searched
// by several workers.
const grepBatchFiles = 64

// batch is files of one folder, by their index in the sorted list.
type batch struct {
	dir   string
	files []int
}

// folderBatches groups sorted files by folder, in the order of each
// folder's first file, each folder's files in order and at most
// grepBatchFiles to a batch. The files of a folder need not be adjacent:
// "a/b.go" < "a/b/c.go" < "a/c.go".
func folderBatches(files []string) []batch {
	var batches []batch
	open := make(map[string]int) // folder → its batch that still has room
	for i, f := range files {
		dir := path.Dir(f)
		k, ok := open[dir]
		if !ok || len(batches[k].files) == grepBatchFiles {
			k = len(batches)
			batches = append(batches, batch{dir: dir})
			open[dir] = k
		}
		batches[k].files = append(batches[k].files, i)
	}
	return batches
}

// reader is a Grep worker's buffers; the pool lets a search reuse the
// memory of the one before.
type reader struct {
	buf   bytes.Buffer
	limit io.LimitedReader
}

var readerPool = sync.Pool{New: func() any {
	r := &reader{}
	r.buf.Grow(grepReadSize)
	return r
}}

func (r *reader) release() {
	r.limit.R = nil
	if r.buf.Cap() <= grepMaxPooled {
		readerPool.Put(r)
	}
}

// file searches one file, f (or the error that opening it gave), named
// name, reading it with r, and closes it.
func (s *search) file(f fs.File, err error, name string, r *reader) fileResult {
	if err != nil {
		return fileResult{skipped: "cannot open it: " + err.Error()}
	}
	r.buf.Reset()
	r.limit = io.LimitedReader{R: f, N: grepMaxFileSize + 1}
	_, err = r.buf.ReadFrom(&r.limit)
	f.Close()
	switch {
	case err != nil:
		return fileResult{skipped: "cannot read it: " + err.Error()}
	case r.buf.Len() > grepMaxFileSize:
		return fileResult{skipped: fmt.Sprintf("it is larger than %d MiB", grepMaxFileSize>>20)}
	}
	data := r.buf.Bytes()
	if bytes.IndexByte(data[:min(len(data), binarySniffLen)], 0) >= 0 {
		return fileResult{skipped: "it is a binary file"}
	}
	switch {
	case s.find == nil:
	case s.multiline:
		if s.find.index(data) < 0 {
			return fileResult{}
		}
	case s.mode == modeFiles:
		// The first line that holds the literal and matches is enough.
		found := false
		s.literalLines(data, func(start, end int) bool {
			found = s.re.Match(data[start:end])
			return !found
		})
		if found {
			return fileResult{count: 1, entries: 1}
		}
		return fileResult{}
	}
	switch s.mode {
	case modeFiles:
		if s.re.Match(data) {
			return fileResult{count: 1, entries: 1}
		}
		return fileResult{}
	case modeCount:
		n := 0
		s.matchLines(data, func(int) bool { n++; return true })
		if n == 0 {
			return fileResult{}
		}
		return fileResult{count: n, entries: 1}
	}
	var matched []int
	s.matchLines(data, func(line int) bool {
		matched = append(matched, line)
		// Enough for the output; the rest could not be shown.
		return len(matched) <= s.limit
	})
	if len(matched) == 0 {
		return fileResult{}
	}
	return s.content(name, data, matched)
}

// literalLines calls fn with the bounds (without the line break) of every
// line of data that holds s.literal, once per line and in order, until fn
// returns false.
func (s *search) literalLines(data []byte, fn func(start, end int) bool) {
	n := len(s.literal.text)
	for pos := 0; pos < len(data); { // pos is where a line begins
		i := s.find.index(data[pos:])
		if i < 0 {
			return
		}
		at := pos + i
		start := pos + bytes.LastIndexByte(data[pos:at], '\n') + 1
		end := len(data)
		if j := bytes.IndexByte(data[at+n:], '\n'); j >= 0 {
			end = at + n + j
		}
		if !fn(start, end) {
			return
		}
		pos = end + 1
	}
}

// matchLines calls fn with the 0-based number of every line of data that
// holds a match (in multiline mode, every line a match spans), once per line
// and in increasing order, until fn returns false.
func (s *search) matchLines(data []byte, fn func(line int) bool) {
	if len(data) == 0 {
		return
	}
	if !s.multiline && s.find != nil {
		// Every match lies on one line and holds the literal: only the
		// lines that hold it need the regular expression, which sees each
		// alone. That is the same as seeing it in the file: ^ and $ match
		// at line boundaries, \b sees no word character past either end.
		line, at := 0, 0 // line is the number of the line that starts at at
		s.literalLines(data, func(start, end int) bool {
			if !s.re.Match(data[start:end]) {
				return true
			}
			line += bytes.Count(data[at:start], nl)
			at = start
			return fn(line)
		})
		return
	}
	if s.multiline {
		line, at := 0, 0 // line is the number of the line that starts at at
		last := -1
		for _, m := range s.re.FindAllIndex(data, -1) {
			if m[0] == len(data) && m[0] > 0 && data[m[0]-1] == '\n' {
				break // an empty match after the final line break: no line is there
			}
			end := max(m[1]-1, m[0])
			first := line + bytes.Count(data[at:m[0]], nl)
			line = first + bytes.Count(data[m[0]:end], nl)
			at = end
			for l := max(first, last+1); l <= line; l++ {
				if !fn(l) {
					return
				}
				last = l
			}
		}
		return
	}
	// No match can span a line break (compilePattern sees to that), so
	// each match lies on one line; after a match, go on at the next line.
	line, pos := 0, 0
	for pos <= len(data) {
		m := s.re.FindIndex(data[pos:])
		if m == nil {
			return
		}
		start := pos + m[0]
		line += bytes.Count(data[pos:start], nl)
		if !fn(line) {
			return
		}
		eol := bytes.IndexByte(data[start:], '\n')
		if eol < 0 {
			return
		}
		pos = start + eol + 1
		line++
		if pos == len(data) {
			return // no line after the final line break
		}
	}
}

var nl = []byte{'\n'}

// content renders the matched lines of one file with their context.
func (s *search) content(name string, data []byte, matched []int) fileResult {
	starts := []int{0} // where each line begins
	for at := 0; ; {
		i := bytes.IndexByte(data[at:], '\n')
		if i < 0 || at+i+1 == len(data) {
			break
		}
		at += i + 1
		starts = append(starts, at)
	}
	lineText := func(l int) string {
		end := len(data)
		if l+1 < len(starts) {
			end = starts[l+1]
		}
		b := bytes.TrimSuffix(data[starts[l]:end], nl)
		b = bytes.TrimSuffix(b, []byte{'\r'})
		text, _ := clipLine(b, true, grepMaxLineChars)
		return text
	}
	r := fileResult{count: len(matched)}
	emit := func(l int, sep byte) {
		var line string
		if s.lineNums {
			line = fmt.Sprintf("%s%c%d%c%s", name, sep, l+1, sep, lineText(l))
		} else {
			line = fmt.Sprintf("%s%c%s", name, sep, lineText(l))
		}
		r.lines = append(r.lines, line)
		r.entries++
	}
	next := 0                                           // first line not yet shown
	room := func() bool { return r.entries <= s.limit } // more could not be shown
	for i := 0; i < len(matched) && room(); i++ {
		l := matched[i]
		from := max(l-s.before, next)
		if from > next && next > 0 && (s.before > 0 || s.after > 0) {
			r.lines = append(r.lines, "--")
		}
		for c := from; c < l && room(); c++ {
			emit(c, '-')
		}
		emit(l, ':')
		next = l + 1
		// After-context stops at the next match, which prints itself.
		until := min(l+s.after, len(starts)-1)
		if i+1 < len(matched) {
			until = min(until, matched[i+1]-1)
		}
		for c := next; c <= until && room(); c++ {
			emit(c, '-')
		}
		next = max(next, until+1)
	}
	return r
}

// render joins the results of files, in order, into the observation.
func (s *search) render(files []string, results []fileResult) string {
	var (
		b         strings.Builder
		shown     int
		matches   int
		withMatch int
		cut       string
		sep       bool // a "--" is due before the next line
	)
	grouped := s.mode == modeContent && (s.before > 0 || s.after > 0)
out:
	for i, r := range results {
		if r.count == 0 {
			continue
		}
		withMatch++
		matches += r.count
		var lines []string
		switch s.mode {
		case modeFiles:
			lines = []string{files[i]}
		case modeCount:
			lines = []string{fmt.Sprintf("%s:%d", files[i], r.count)}
		default:
			lines = r.lines
			sep = sep || grouped && shown > 0
		}
		for _, line := range lines {
			if line == "--" {
				sep = true
				continue
			}
			if shown == s.limit {
				cut = "showing the first " + plural(s.limit, s.unit())
				break out
			}
			if sep {
				line = "--\n" + line
				sep = false
			}
			if b.Len()+len(line)+1 > grepMaxOutput {
				cut = fmt.Sprintf("output is capped at %d KiB", grepMaxOutput>>10)
				break out
			}
			b.WriteString(line)
			b.WriteByte('\n')
			shown++
		}
	}
	if shown == 0 {
		return ""
	}
	body := strings.TrimSuffix(b.String(), "\n")
	switch s.mode {
	case modeFiles:
		if cut != "" {
			return fmt.Sprintf("Found more than %s (%s, in path order)\n%s\n\n[truncated: narrow the search with path, glob or type, or raise head_limit]", plural(shown, "file"), cut, body)
		}
		return fmt.Sprintf("Found %s\n%s", plural(withMatch, "file"), body)
	case modeCount:
		if cut != "" {
			return fmt.Sprintf("%s\n\n[truncated: %s in path order; narrow the search with path, glob or type, or raise head_limit]", body, cut)
		}
		return fmt.Sprintf("%s\n\nFound %s in %s.", body, plural(matches, "matching line"), plural(withMatch, "file"))
	}
	if cut != "" {
		return fmt.Sprintf("%s\n\n[truncated: %s in path order; narrow the search with path, glob or type, or raise head_limit]", body, cut)
	}
	return body
}

// unit names an entry of the output.
func (s *search) unit() string {
	switch s.mode {
	case modeFiles:
		return "file"
	case modeCount:
		return "count"
	}
	return "line"
}

// compilePattern compiles a Grep pattern as rg would: ^ and $ match at line
// boundaries; unless multiline is set, no match may span a line break, so
// character classes lose "\n", "." never matches it and a pattern that
// needs a line break is refused. It also returns a literal every match
// contains, for a quick test of whole files and lines.
func compilePattern(pattern string, ignoreCase, multiline bool) (*regexp.Regexp, literal, error) {
	flags := syntax.Perl &^ syntax.OneLine
	if ignoreCase {
		flags |= syntax.FoldCase
	}
	if multiline {
		flags |= syntax.DotNL
	}
	re, err := syntax.Parse(pattern, flags)
	if err != nil {
		return nil, literal{}, fmt.Errorf("invalid regular expression %q: %v", pattern, err)
	}
	if !multiline && !singleLine(re) {
		return nil, literal{}, fmt.Errorf("pattern %q matches a line break; set multiline to true to match across lines", pattern)
	}
	rx, err := regexp.Compile(re.String())
	if err != nil {
		return nil, literal{}, fmt.Errorf("invalid regular expression %q: %v", pattern, err)
	}
	lit := requiredLiteral(re)
	if len(lit.text) < 2 {
		lit = literal{}
	}
	return rx, lit, nil
}

// singleLine rewrites re so that it cannot match "\n", and reports false if
// that is impossible (re has a literal line break).
func singleLine(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpLiteral:
		if slices.Contains(re.Rune, '\n') {
			return false
		}
	case syntax.OpAnyChar:
		re.Op = syntax.OpAnyCharNotNL
	case syntax.OpBeginText:
		re.Op = syntax.OpBeginLine
	case syntax.OpEndText:
		re.Op = syntax.OpEndLine
		re.Flags &^= syntax.WasDollar
	case syntax.OpCharClass:
		var out []rune
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if lo <= '\n' && '\n' <= hi {
				if lo < '\n' {
					out = append(out, lo, '\n'-1)
				}
				if hi > '\n' {
					out = append(out, '\n'+1, hi)
				}
				continue
			}
			out = append(out, lo, hi)
		}
		if len(out) == 0 {
			return false // a class of "\n" alone
		}
		re.Rune = out
	}
	for _, sub := range re.Sub {
		if !singleLine(sub) {
			return false
		}
	}
	return true
}

// fileFilter returns the test a file found below the searched folder dir
// must pass, from Grep's glob and type parameters.
func fileFilter(glob, typ string) (func(p, dir string) bool, error) {
	var typeGlobs []string
	if typ != "" {
		var ok bool
		if typeGlobs, ok = fileTypes[typ]; !ok {
			return nil, fmt.Errorf("unknown type %q; known types: %s", typ, knownTypes())
		}
	}
	negate := strings.HasPrefix(glob, "!")
	pattern := strings.TrimPrefix(glob, "!")
	if glob != "" && (pattern == "" || !doublestar.ValidatePattern(pattern)) {
		return nil, fmt.Errorf("invalid glob %q", glob)
	}
	byName := !strings.Contains(pattern, "/")
	return func(p, dir string) bool {
		name := path.Base(p)
		if typeGlobs != nil && !slices.ContainsFunc(typeGlobs, func(g string) bool {
			ok, _ := path.Match(g, name)
			return ok
		}) {
			return false
		}
		if glob == "" {
			return true
		}
		var match bool
		if byName {
			match = doublestar.MatchUnvalidated(pattern, name)
		} else {
			// Relative to the searched folder, as rg has it, or to the
			// workspace root, as the paths in the output are.
			match = doublestar.MatchUnvalidated(pattern, p)
			if !match && dir != "." {
				match = doublestar.MatchUnvalidated(pattern, strings.TrimPrefix(p, dir+"/"))
			}
		}
		return match != negate
	}, nil
}
