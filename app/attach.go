package app

import (
	"fmt"
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
		fi, err := os.Stat(path)
		if err != nil || !fi.Mode().IsRegular() {
			return
		}
		seen[path] = true
		if fi.Size() > media.MaxInputBytes {
			problems = append(problems, fmt.Sprintf("%s is %s, more than the %s a file shown to the model may be: not attached", ref, llm.ByteSize(fi.Size()), llm.ByteSize(media.MaxInputBytes)))
			return
		}
		data, err := os.ReadFile(path)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: not attached: %v", ref, err))
			return
		}
		name := path
		if rel, err := filepath.Rel(root, path); err == nil && filepath.IsLocal(rel) {
			name = rel
		}
		m, note, err := media.Prepare(data, name)
		if err != nil {
			problems = append(problems, fmt.Sprintf("not attached: %v", err))
			return
		}
		shown = append(shown, m)
		text += "\n\n" + media.Attached(m, note)
	}
	for _, line := range strings.Split(prompt, "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "@") && (strings.HasPrefix(t, "/") || strings.HasPrefix(t, "'/") || strings.HasPrefix(t, `"/`) || strings.HasPrefix(t, "~/")) {
			// A path alone on its line: pasted.
			consider(t)
			continue
		}
		for _, word := range strings.Fields(line) {
			if ref, ok := strings.CutPrefix(word, "@"); ok && ref != "" {
				consider(strings.TrimRight(ref, ".,;:!?)"))
			}
		}
	}
	return shown, text, problems
}

// unquotePath is a path as a terminal pastes it: quoted ('…' or "…"), or
// with its spaces and other specials escaped by a backslash.
func unquotePath(s string) string {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
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
