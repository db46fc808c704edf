package tui

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tool"
)

// WriteRecord writes one transcript record for people: a header line,
// then the message's blocks, indented; display says how tools show their
// calls.
func WriteRecord(b *strings.Builder, r store.Record, display func(name string, input json.RawMessage) tool.Display) {
	head := []string{fmt.Sprintf("#%d %s", r.Seq, r.Message.Role)}
	if r.Kind == store.KindSummary {
		head = append(head, "summary")
	}
	if r.TurnID != "" {
		head = append(head, r.TurnID)
	}
	if r.Model != "" {
		head = append(head, Printable(r.Model))
	}
	if r.Compacted {
		head = append(head, "compacted")
	}
	b.WriteString(strings.Join(head, " · ") + "\n")
	for _, bl := range r.Message.Content {
		switch bl.Type {
		case llm.BlockText:
			b.WriteString(Indent("   ", "   ", printableLines(bl.Text)) + "\n")
		case llm.BlockToolUse:
			b.WriteString("   → " + strings.TrimPrefix(ToolHeader(bl.Name, bl.Input, display(bl.Name, bl.Input)), "● "))
		case llm.BlockToolResult:
			// Under the tool use it answers, one column further in.
			b.WriteString(Indent(" ", " ", Observation(bl.Content, bl.IsError)) + "\n")
		case llm.BlockImage, llm.BlockDocument:
			if bl.ToolUseID != "" {
				// What a tool's result showed: under it.
				b.WriteString("     " + MediaLabel(bl.Media) + "\n")
				break
			}
			b.WriteString("   " + MediaLabel(bl.Media) + "\n")
		default:
			fmt.Fprintf(b, "   (%s block)\n", bl.Type)
		}
	}
}

// printableLines drops control characters from each line of s.
func printableLines(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = Printable(l)
	}
	return strings.Join(lines, "\n")
}

// MediaLabel names an image or a document for people, never its bytes:
// "[image 1200×800 png, 310 KB: shots/bug.png]", "[pdf, 2.1 MB: spec.pdf]".
func MediaLabel(m *llm.Media) string {
	if m == nil {
		return "[media]"
	}
	kind, sub, _ := strings.Cut(m.MediaType, "/")
	var parts []string
	switch {
	case m.MediaType == llm.MediaPDF:
		parts = append(parts, "pdf")
	case kind == "image" && m.Width > 0 && m.Height > 0:
		parts = append(parts, fmt.Sprintf("image %d×%d %s", m.Width, m.Height, sub))
	case kind == "image":
		parts = append(parts, "image "+sub)
	default:
		parts = append(parts, m.MediaType)
	}
	label := "[" + parts[0] + ", " + llm.ByteSize(m.Len())
	if m.Name != "" {
		label += ": " + Printable(m.Name)
	}
	return label + "]"
}
