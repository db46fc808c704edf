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
		return "", fmt.Errorf("front matter is not valid YAML: %s", Lines(err.Error()))
	}
	return body, nil
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
