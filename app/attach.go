package app

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/media"
)

// Mentioned returns the images and PDFs a prompt names, to show the model
// with it, and the prompt with a line naming each ("Attached: …"): an
// @path mention (@shots/bug.png, relative to the workspace root or
// absolute; ~/ is the home folder) or a path pasted alone on a line, as a
// terminal pastes a file dropped on it (quoted, or with its spaces
// escaped). A mention of a file that is missing, or is no image or PDF,
// stays text; problems says why for those that are named as images or
// PDFs but cannot be shown.
func Mentioned(root, prompt string) (shown []*llm.Media, text string, problems []string) {
	text = prompt
	seen := map[string]bool{}
	consider := func(ref string) {
		path := unquotePath(ref)
		if _, ok := media.Named(path); !ok {
			return
		}
		switch {
		case strings.HasPrefix(path, "~/"):
			home, err := os.UserHomeDir()
			if err != nil {
				return
			}
			path = filepath.Join(home, path[2:])
		case !filepath.IsAbs(path):
			path = filepath.Join(root, path)
		}
		path = filepath.Clean(path)
		if seen[path] {
			return
		}
		seen[path] = true
		name := path
		if rel, err := filepath.Rel(root, path); err == nil && filepath.IsLocal(rel) {
			name = rel
		}
		m, note, err := media.ReadFile(path, name)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, media.ErrNotFile):
			return // text, as written
		case err != nil:
			problems = append(problems, fmt.Sprintf("not attached: %v", err))
			return
		}
		shown = append(shown, m)
		text += "\n\n" + media.Attached(m, note)
	}
	for _, line := range strings.Split(prompt, "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "@") &&
			(strings.HasPrefix(t, "/") || strings.HasPrefix(t, "'/") || strings.HasPrefix(t, `"/`) || strings.HasPrefix(t, "~/") || strings.HasPrefix(t, "file://")) {
			// A path alone on its line: pasted.
			consider(t)
			continue
		}
		for _, ref := range mentions(line) {
			consider(ref)
		}
	}
	return shown, text, problems
}

// mentions are the @paths of line: an @ at its start or after a space or
// an opening bracket, then a path — quoted ('…' or "…"), or up to the next
// space that is not escaped by a backslash — less the punctuation that
// ends a sentence.
func mentions(line string) []string {
	var out []string
	for i := 0; i < len(line); i++ {
		if line[i] != '@' || i > 0 && !strings.ContainsRune(" \t([{", rune(line[i-1])) {
			continue
		}
		rest := line[i+1:]
		var ref string
		if len(rest) > 0 && (rest[0] == '\'' || rest[0] == '"') {
			end := strings.IndexByte(rest[1:], rest[0])
			if end < 0 {
				continue
			}
			ref = rest[:end+2]
		} else {
			end := 0
			for end < len(rest) && rest[end] != ' ' && rest[end] != '\t' {
				if rest[end] == '\\' && end+1 < len(rest) {
					end++
				}
				end++
			}
			ref = strings.TrimRight(rest[:end], ".,;:!?)]}")
		}
		if ref != "" {
			out = append(out, ref)
		}
		i += len(ref)
	}
	return out
}

// unquotePath is a path as a terminal pastes it: quoted ('…' or "…"), a
// file:// URL, or with its spaces and other specials escaped by a
// backslash.
func unquotePath(s string) string {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	if u, err := url.Parse(s); err == nil && u.Scheme == "file" && (u.Host == "" || u.Host == "localhost") {
		return u.Path
	}
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
