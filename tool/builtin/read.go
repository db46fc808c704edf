package builtin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"unicode/utf8"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/media"
	"github.com/orca-agent/orca/media/pdf"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

const (
	readDefaultLimit = 2000      // lines shown when the model gives no limit
	readMaxLineChars = 2000      // longer lines are cut
	readMaxOutput    = 256 << 10 // bytes of numbered output, at most
	binarySniffLen   = 8 << 10   // a NUL byte in this prefix makes a file binary
)

type readTool struct{ fs workspace.FileSystem }

func (*readTool) Name() string { return "Read" }

func (*readTool) Description() string {
	return `Reads a file from the workspace.

Usage:
- file_path is an absolute path inside the workspace or a path relative to the workspace root.
- By default, it reads up to 2000 lines starting from the beginning of the file.
- You can optionally give a line offset and limit (handy for long files), but it is recommended to read the whole file by not giving these parameters.
- Lines longer than 2000 characters are truncated.
- Results are returned in cat -n format: each line is prefixed with its line number (starting at 1) and a tab.
- When the output is cut short, it ends with a note saying which lines were shown and how to read the rest.
- It reads images (PNG, JPEG, GIF, WebP) and PDFs too: you are shown them, as you are shown what the user attaches. Large images are scaled down first. A PDF of more than 10 pages is read in parts: give pages ("1-20"), at most 20 at a time. Other binary files are refused. To list a folder, use Glob or the Bash tool with ls.
- It is always better to read several potentially useful files at once, in parallel calls.
- Reading an empty file returns a note saying that it is empty.`
}

func (*readTool) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "file_path": {
      "type": "string",
      "description": "The absolute path to the file to read (or a path relative to the workspace root)"
    },
    "offset": {
      "type": "number",
      "minimum": 0,
      "description": "The line number to start reading from (1 is the first line). Only provide if the file is too large to read at once"
    },
    "limit": {
      "type": "number",
      "minimum": 1,
      "description": "The number of lines to read. Only provide if the file is too large to read at once."
    },
    "pages": {
      "type": "string",
      "description": "For a PDF, the pages to read (\"1-5\", \"3\", \"1,4,10-12\"), at most 20 at a time. Required for a PDF of more than 10 pages."
    }
  },
  "required": ["file_path"],
  "additionalProperties": false
}`)
}

type readInput struct {
	FilePath string `json:"file_path"`
	Offset   count  `json:"offset"`
	Limit    count  `json:"limit"`
	Pages    string `json:"pages"`
}

func (t *readTool) Execute(ctx context.Context, call *tool.Call) tool.Result {
	var in readInput
	if err := decode("Read", call.Input, &in); err != nil {
		return tool.Errorf("%v", err)
	}
	if in.FilePath == "" {
		return tool.Errorf("Read: file_path is empty")
	}
	if in.Offset < 0 || in.Limit < 0 {
		return tool.Errorf("Read %s: offset and limit must not be negative (got offset %d, limit %d)", in.FilePath, in.Offset, in.Limit)
	}
	first := max(int(in.Offset), 1)
	limit := int(in.Limit)
	explicit := limit > 0
	if !explicit {
		limit = readDefaultLimit
	}

	// Stat before opening: opening a FIFO would block.
	fi, err := t.fs.Stat(in.FilePath)
	if err != nil {
		return fileError(in.FilePath, err)
	}
	if fi.IsDir() {
		return tool.Errorf("%s is a directory, not a file; use Glob (or Bash with ls) to list its contents", in.FilePath)
	}
	if !fi.Mode().IsRegular() {
		return tool.Errorf("%s is not a regular file (%v)", in.FilePath, fi.Mode().Type())
	}
	f, err := t.fs.Open(in.FilePath)
	if err != nil {
		return fileError(in.FilePath, err)
	}
	defer f.Close()

	// Buffers as large as the file, up to 64 KiB: a small file's Read
	// allocates little (the line buffer grows if the file does).
	bufSize, lineMax := 64<<10, readMaxLineChars*utf8.UTFMax+2
	if fi.Size() < int64(bufSize) {
		bufSize = max(int(fi.Size())+1, 16)
	}
	br := bufio.NewReaderSize(f, bufSize)
	head, err := br.Peek(binarySniffLen)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return fileError(in.FilePath, err)
	}
	if len(head) == 0 {
		return tool.Result{Content: fmt.Sprintf("%s is empty (0 bytes).", in.FilePath),
			Response: &readResponse{Type: "text", File: readFile{FilePath: absPath(t.fs, in.FilePath), StartLine: 1}}}
	}
	if _, named := media.Named(in.FilePath); named || media.Sniff(head) != "" {
		return t.readMedia(in.FilePath, in.Pages, br, fi.Size())
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return tool.Errorf("%s is a binary file (it has a NUL byte in its first 8 KiB); Read shows text files, images and PDFs only", in.FilePath)
	}

	var (
		out        strings.Builder
		raw        strings.Builder // the lines shown, unnumbered (the response's content)
		line       []byte
		n          int // lines read so far
		last       int // last line shown
		capped     bool
		longLines  int
		lineBuffer = make([]byte, 0, min(lineMax, int(fi.Size())+2))
	)
	for {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return tool.Errorf("Read %s: %v", in.FilePath, err)
			}
		}
		keep := 0
		if n+1 >= first && n+1 < first+limit && !capped {
			keep = lineMax
		}
		var (
			whole bool
			size  int
		)
		line, whole, size, err = nextLine(br, lineBuffer, keep)
		if size == 0 && err != nil {
			break
		}
		n++
		if keep > 0 {
			text, cut := clipLine(line, whole, readMaxLineChars)
			if cut {
				longLines++
			}
			entry := fmt.Sprintf("%6d\t%s\n", n, text)
			if out.Len()+len(entry) > readMaxOutput && last >= first {
				capped = true
			} else {
				out.WriteString(entry)
				raw.WriteString(text)
				raw.WriteByte('\n')
				last = n
			}
		}
		if err != nil {
			break
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fileError(in.FilePath, err)
	}
	if first > n {
		return tool.Errorf("%s has %s; offset %d is past the end of the file", in.FilePath, plural(n, "line"), first)
	}
	var notes []string
	if longLines > 0 {
		notes = append(notes, fmt.Sprintf("[%s longer than %d characters truncated]", plural(longLines, "line"), readMaxLineChars))
	}
	if first > 1 || last < n {
		what := fmt.Sprintf("showing lines %d-%d of %d", first, last, n)
		switch {
		case capped:
			notes = append(notes, fmt.Sprintf("[truncated: output is capped at %d KiB; %s; use offset=%d to read more]", readMaxOutput>>10, what, last+1))
		case last < n && !explicit:
			notes = append(notes, fmt.Sprintf("[truncated: %s; use offset=%d to read more]", what, last+1))
		case last < n:
			notes = append(notes, fmt.Sprintf("[%s; use offset=%d to read more]", what, last+1))
		default:
			notes = append(notes, fmt.Sprintf("[%s]", what))
		}
	}
	if len(notes) > 0 {
		out.WriteString("\n" + strings.Join(notes, "\n"))
	}
	return tool.Result{Content: out.String(),
		Response: &readResponse{Type: "text", File: readFile{FilePath: absPath(t.fs, in.FilePath), Content: raw.String(), NumLines: last - first + 1, StartLine: first, TotalLines: n}}}
}

// nextLine reads one line from br into buf, keeping at most keep bytes of
// it (line ending included). It returns the kept bytes without the line
// ending, whether the whole line was kept, the full length of the line in
// bytes, and io.EOF when the line is the last one.
func nextLine(br *bufio.Reader, buf []byte, keep int) (line []byte, whole bool, size int, err error) {
	buf = buf[:0]
	for {
		chunk, err := br.ReadSlice('\n')
		size += len(chunk)
		if room := keep - len(buf); room > 0 {
			buf = append(buf, chunk[:min(room, len(chunk))]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		whole = len(buf) == size
		buf = bytes.TrimSuffix(buf, []byte("\n"))
		buf = bytes.TrimSuffix(buf, []byte("\r"))
		return buf, whole, size, err
	}
}

// clipLine returns line cut to max characters, and whether it was cut;
// whole says whether line holds the whole line or only a prefix of it.
func clipLine(line []byte, whole bool, max int) (string, bool) {
	cut := !whole
	if len(line) > max && utf8.RuneCount(line) > max {
		i := 0
		for r := 0; r < max; r++ {
			_, w := utf8.DecodeRune(line[i:])
			i += w
		}
		line, cut = line[:i], true
	}
	if cut {
		return string(line) + " …[line truncated]", true
	}
	return string(line), false
}

// fileError turns a file system error into an observation that names path.
func fileError(path string, err error) tool.Result {
	switch {
	case errors.Is(err, workspace.ErrOutside):
		return tool.Errorf("%v", err)
	case errors.Is(err, fs.ErrNotExist):
		return tool.Errorf("file not found: %s", path)
	}
	msg := err.Error()
	if !strings.Contains(msg, path) {
		msg = path + ": " + msg
	}
	return tool.Errorf("%s", msg)
}

// readMedia reads an image or a PDF, of size bytes, whole, and shows it to
// the model (media.Prepare: scaled down when it is too large, known by
// its bytes, not its name).
func (t *readTool) readMedia(path, pages string, r io.Reader, size int64) tool.Result {
	if err := media.CheckSize(path, size); err != nil {
		return tool.Errorf("%v", err)
	}
	data, err := io.ReadAll(io.LimitReader(r, media.MaxInputBytes+1))
	if err != nil {
		return fileError(path, err)
	}
	m, note, err := media.Prepare(data, path)
	if err != nil {
		return tool.Errorf("%v", err)
	}
	kind, what := "image", ""
	resp := readMedia{FilePath: absPath(t.fs, path), OriginalSize: int64(len(data))}
	if m.MediaType == llm.MediaPDF {
		kind = "pdf"
		var failed tool.Result
		if m, what, failed = pdfPages(path, pages, m, &resp); m == nil {
			return failed
		}
	}
	text := fmt.Sprintf("%s: %s%s, shown to you here.", path, what, m)
	if note != "" {
		text += " " + note
	}
	resp.MediaType, resp.Size, resp.Digest, resp.Width, resp.Height = m.MediaType, m.Size, m.Digest, m.Width, m.Height
	return tool.Result{Content: text, Media: []*llm.Media{m}, Response: &readMediaResponse{Type: kind, File: resp}}
}

// wholePDFPages is how many pages a PDF may have for Read to show it whole
// (as Claude Code's Read does): a longer one is read in parts.
const wholePDFPages = 10

// pdfPages returns the PDF doc (the file at path) as Read shows it: the
// pages asked for cut out, or all of it, and what says which pages it is
// ("pages 2-3 of 64: "). A PDF whose pages cannot be counted is shown
// whole when no pages are asked for, with a line saying so. A nil media is
// the observation failed gives instead: pages that do not exist, or none
// asked for of a long PDF.
func pdfPages(path, pages string, doc *llm.Media, resp *readMedia) (m *llm.Media, what string, failed tool.Result) {
	d, err := pdf.Read(doc.Data)
	if err != nil {
		if pages != "" {
			return nil, "", tool.Errorf("%s: pages %q cannot be cut out of it: it is %v. Read it without pages to be shown it whole.", path, pages, err)
		}
		return doc, fmt.Sprintf("pages not counted (%v), whole, ", err), tool.Result{}
	}
	n := d.Pages()
	resp.PageCount = n
	if pages == "" {
		if n > wholePDFPages {
			return nil, "", tool.Errorf("%s is a PDF of %d pages: read it in parts of at most %d pages, with pages (\"1-%d\", then \"%d-%d\", …)", path, n, pdf.MaxPages, pdf.MaxPages, pdf.MaxPages+1, min(n, 2*pdf.MaxPages))
		}
		return doc, plural(n, "page") + ", ", tool.Result{}
	}
	sel, err := pdf.Parse(pages, n)
	if err != nil {
		return nil, "", tool.Errorf("%s: %v", path, err)
	}
	if len(sel) == n {
		return doc, plural(n, "page") + ", ", tool.Result{}
	}
	out, err := d.Extract(sel)
	if err == nil {
		m, _, err = media.Prepare(out, path)
	}
	if err != nil {
		return nil, "", tool.Errorf("%s: %v", path, err)
	}
	resp.Pages = pdf.Ranges(sel)
	return m, fmt.Sprintf("pages %s of %d, ", resp.Pages, n), tool.Result{}
}
