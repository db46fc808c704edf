package tui

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// MaxHistory is how many inputs a History keeps.
const MaxHistory = 500

// History is the inputs typed in a chat, oldest first, kept in a file of
// JSON strings, one a line (an input may hold line breaks). The zero
// History keeps nothing on disk.
type History struct {
	path    string
	entries []string
}

// OpenHistory reads the history kept in path (none yet if it does not
// exist); Add appends to it.
func OpenHistory(path string) (*History, error) {
	h := &History{path: path}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var s string
		if json.Unmarshal(sc.Bytes(), &s) == nil && s != "" {
			h.entries = append(h.entries, s)
		}
	}
	if len(h.entries) > MaxHistory {
		h.entries = h.entries[len(h.entries)-MaxHistory:]
		h.rewrite()
	}
	return h, nil
}

// Entries returns the inputs, oldest first.
func (h *History) Entries() []string { return append([]string(nil), h.entries...) }

// Add appends s, unless it repeats the last input. A failure to write the
// file loses the entry on disk only: the history is a convenience.
func (h *History) Add(s string) {
	if n := len(h.entries); n > 0 && h.entries[n-1] == s {
		return
	}
	h.entries = append(h.entries, s)
	if h.path == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(h.path), 0o700); err != nil {
		return
	}
	f, err := os.OpenFile(h.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	b, _ := json.Marshal(s)
	f.Write(append(b, '\n'))
	f.Close()
}

// rewrite writes the entries kept, dropping the older ones from the file.
func (h *History) rewrite() {
	var b bytes.Buffer
	for _, s := range h.entries {
		j, _ := json.Marshal(s)
		b.Write(append(j, '\n'))
	}
	tmp := h.path + ".tmp"
	if os.WriteFile(tmp, b.Bytes(), 0o600) == nil {
		os.Rename(tmp, h.path)
	}
}
