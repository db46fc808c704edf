// Command links checks the links between the repository's Markdown pages
// (README.md, ARCHITECTURE.md, docs/*.md): every relative link names a
// file that exists, and every #anchor one of the target page's headings,
// as GitHub names them. CI runs it:
//
//	go run ./.ci/links
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

func main() {
	pages, _ := filepath.Glob("docs/*.md")
	pages = append([]string{"README.md", "ARCHITECTURE.md"}, pages...)
	bad := 0
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for i, line := range prose(string(text)) {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				file := page
				if path != "" {
					file = filepath.Join(filepath.Dir(page), path)
				}
				if _, err := os.Stat(file); err != nil {
					fmt.Printf("%s:%d: %s: no such file\n", page, i+1, target)
					bad++
					continue
				}
				if anchor != "" && strings.HasSuffix(file, ".md") && !anchors(file)[anchor] {
					fmt.Printf("%s:%d: %s: %s has no heading #%s\n", page, i+1, target, file, anchor)
					bad++
				}
			}
		}
	}
	if bad > 0 {
		os.Exit(1)
	}
}

// prose returns the page's lines with those of fenced code blocks blanked,
// so that line numbers stay true.
func prose(text string) []string {
	lines := strings.Split(text, "\n")
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
			lines[i] = ""
		} else if fenced {
			lines[i] = ""
		}
	}
	return lines
}

// read are the pages' anchors, by file, as anchors found them.
var read = map[string]map[string]bool{}

// anchors returns the anchors of a page's headings: lower case, spaces
// as hyphens, punctuation but hyphens and underscores dropped, a repeated
// one numbered (-1, -2, …).
func anchors(file string) map[string]bool {
	if a, ok := read[file]; ok {
		return a
	}
	text, _ := os.ReadFile(file)
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range prose(string(text)) {
		title, ok := strings.CutPrefix(strings.TrimLeft(l, "#"), " ")
		if !ok || !strings.HasPrefix(l, "#") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(title)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	read[file] = out
	return out
}
