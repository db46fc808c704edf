// Package frontmatter splits Markdown files that open with YAML front
// matter (SKILL.md, subagent definitions) and reads their list fields.
package frontmatter

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Split returns the YAML between the opening and closing --- lines and the
// body after them. A byte order mark and CRLF line ends are accepted; only
// the first closing line ends the front matter, so a --- in the body is
// Markdown's.
func Split(data []byte) (head, body string, err error) {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	first, rest, _ := strings.Cut(text, "\n")
	if !isFence(first) {
		return "", "", errors.New("it must begin with a --- line opening YAML front matter")
	}
	for off := 0; ; {
		line, _, found := strings.Cut(rest[off:], "\n")
		if isFence(line) {
			body = rest[off+len(line):]
			return rest[:off], strings.TrimPrefix(body, "\n"), nil
		}
		if !found {
			return "", "", errors.New("the front matter opened on line 1 is never closed by a --- line")
		}
		off += len(line) + 1
	}
}

// Decode splits data and decodes its front matter into v; YAML errors name
// lines of the file.
func Decode(data []byte, v any) (body string, err error) {
	head, body, err := Split(data)
	if err != nil {
		return "", err
	}
	if err := yaml.Unmarshal([]byte(head), v); err != nil {
		// Claude Code reads front matter that is not quite YAML — the
		// shape its /agents command writes: a one-line description with
		// ": " and \n escapes inside, unquoted. So does orca, if reading
		// it key by key (Relax) makes it YAML; otherwise the error stands.
		relaxed, ok := Relax(head)
		if !ok || yaml.Unmarshal([]byte(relaxed), v) != nil {
			return "", fmt.Errorf("front matter is not valid YAML: %s", Lines(err.Error()))
		}
	}
	return body, nil
}

var topKey = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_-]*):(?:[ \t]+(.*))?$`)

// Relax rewrites front matter that is not valid YAML as YAML, reading it
// key by key: a line "key: value" at the start of a line opens a key, and
// the lines after it that open none continue its value. A key whose lines
// are YAML as they stand is kept as it is; a plain one-line value that is
// not (it has ": " or " #" inside) becomes a literal block of its text,
// with \n escapes as line breaks. ok is false for anything else: a line
// before the first key that is not blank or a comment, a broken value
// over several lines, or one that starts as YAML's quoted, flow or block
// values do.
func Relax(head string) (out string, ok bool) {
	type entry struct {
		key   string
		lines []string // the key's line, then its continuation lines
		value string   // what follows "key:" on its line
	}
	var entries []*entry
	for _, line := range strings.Split(head, "\n") {
		if m := topKey.FindStringSubmatch(line); m != nil {
			entries = append(entries, &entry{key: m[1], lines: []string{line}, value: m[2]})
			continue
		}
		if len(entries) == 0 {
			if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
				return "", false
			}
			continue
		}
		e := entries[len(entries)-1]
		e.lines = append(e.lines, line)
	}
	var b strings.Builder
	for _, e := range entries {
		own := strings.Join(e.lines, "\n")
		var probe map[string]any
		if yaml.Unmarshal([]byte(own), &probe) == nil {
			b.WriteString(own + "\n")
			continue
		}
		// Only a plain one-line value is read as text: a value that YAML
		// would quote, flow or fold, or one that goes on over lines, is
		// broken YAML, and stays an error.
		for _, l := range e.lines[1:] {
			if strings.TrimSpace(l) != "" {
				return "", false
			}
		}
		text := strings.TrimSpace(e.value)
		if text == "" || strings.ContainsRune("[]{}\"'|>&*!%@`#,?-", rune(text[0])) {
			return "", false
		}
		text = strings.ReplaceAll(text, `\n`, "\n")
		b.WriteString(e.key + ": |-\n")
		for _, l := range strings.Split(text, "\n") {
			b.WriteString("  " + l + "\n")
		}
	}
	return b.String(), true
}

var yamlLine = regexp.MustCompile(`\bline (\d+)\b`)

// Lines renumbers the lines a YAML error names, which count from the line
// after the opening ---, as lines of the file.
func Lines(msg string) string {
	return yamlLine.ReplaceAllStringFunc(msg, func(m string) string {
		n, err := strconv.Atoi(strings.TrimPrefix(m, "line "))
		if err != nil {
			return m
		}
		return "line " + strconv.Itoa(n+1)
	})
}

func isFence(line string) bool { return strings.TrimRight(line, " \t") == "---" }

// List reads a list field given as a YAML list or one string. Entries are
// split at commas and at blanks outside parentheses, so "Read, Grep",
// "Read Grep" and "Bash(git add:*)" all work. field names it in errors.
//
// A field that is missing or null gives nil; one that is given but names
// nothing ([] or "") gives an empty list that is not nil, so that a caller
// can tell "not said" from "none".
func List(n *yaml.Node, field string) ([]string, error) {
	out := []string{}
	switch {
	case n.Kind == 0, n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return nil, nil
	case n.Kind == yaml.ScalarNode:
		out = split(out, n.Value)
	case n.Kind == yaml.SequenceNode:
		for _, item := range n.Content {
			if item.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("%s (line %d) must list names as strings", field, item.Line+1)
			}
			out = split(out, item.Value)
		}
	default:
		return nil, fmt.Errorf("%s (line %d) must be a list or a comma-separated string", field, n.Line+1)
	}
	return out, nil
}

func split(out []string, s string) []string {
	depth, start := 0, 0
	for i, r := range s + "," {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0 && (r == ',' || r == ' ' || r == '\t' || r == '\n'):
			if t := strings.TrimSpace(s[start:i]); t != "" {
				out = append(out, t)
			}
			start = i + 1
		}
	}
	return out
}
