package acp

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/png"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

// TestPromptOf: a prompt's blocks as orca's input — text, a file embedded
// as context, a file linked by its path, an image shown — and the blocks
// it refuses, named.
func TestPromptOf(t *testing.T) {
	text, shown, err := promptOf([]sdk.ContentBlock{
		sdk.TextBlock("look at"),
		sdk.ResourceLinkBlock("main.go", "file:///w/main.go"),
		sdk.ResourceBlock(sdk.EmbeddedResourceResource{TextResourceContents: &sdk.TextResourceContents{Uri: "file:///w/notes.md", Text: "# Notes"}}),
		sdk.ImageBlock(base64.StdEncoding.EncodeToString(pngOf(t)), "image/png"),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"look at @/w/main.go ", "<context uri=\"file:///w/notes.md\">\n# Notes\n</context>", "image-4"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in %q", want, text)
		}
	}
	if len(shown) != 1 || shown[0].MediaType != "image/png" {
		t.Errorf("shown: %+v", shown)
	}
	for _, c := range []struct {
		blocks []sdk.ContentBlock
		want   string
	}{
		{[]sdk.ContentBlock{sdk.ImageBlock("%%%", "image/png")}, "block 0: the image is not base64"},
		{[]sdk.ContentBlock{sdk.ImageBlock(base64.StdEncoding.EncodeToString([]byte("not an image")), "image/png")}, "block 0:"},
		{[]sdk.ContentBlock{sdk.AudioBlock("AAAA", "audio/wav")}, "block 0: orca takes text, images, and files embedded or linked"},
		{[]sdk.ContentBlock{sdk.TextBlock("  ")}, "the prompt is empty"},
	} {
		if _, _, err := promptOf(c.blocks); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
}

// TestMCPServersOfTheClient: the client's servers as orca's settings name
// them, sorted; one with no name, or of a transport orca lacks, refused.
func TestMCPServersOfTheClient(t *testing.T) {
	got, err := mcpServers([]sdk.McpServer{
		{Stdio: &sdk.McpServerStdio{Name: "b", Command: "node", Args: []string{"s.js"}, Env: []sdk.EnvVariable{{Name: "K", Value: "v"}}}},
		{Http: &sdk.McpServerHttpInline{Name: "a", Url: "https://x/mcp", Headers: []sdk.HttpHeader{{Name: "Authorization", Value: "Bearer t"}}}},
	})
	if err != nil || len(got) != 2 || got[0].Name != "a" || got[0].Type != "http" || got[0].Headers["Authorization"] != "Bearer t" ||
		got[1].Command != "node" || got[1].Env["K"] != "v" {
		t.Errorf("%+v %v", got, err)
	}
	if _, err := mcpServers([]sdk.McpServer{{Stdio: &sdk.McpServerStdio{Command: "x"}}}); err == nil || !strings.Contains(err.Error(), "server 0 has no name") {
		t.Errorf("nameless: %v", err)
	}
	if _, err := mcpServers([]sdk.McpServer{{}}); err == nil || !strings.Contains(err.Error(), "orca starts stdio, http and sse servers") {
		t.Errorf("other transport: %v", err)
	}
}

func TestPlanAndKinds(t *testing.T) {
	entries := plan([]byte(`{"todos": [{"content": "a", "status": "completed"}, {"content": "b", "status": "in_progress"}, {"content": "c", "status": "pending"}]}`))
	if len(entries) != 3 || entries[0].Status != sdk.PlanEntryStatusCompleted || entries[1].Status != sdk.PlanEntryStatusInProgress || entries[2].Status != sdk.PlanEntryStatusPending {
		t.Errorf("%+v", entries)
	}
	if plan([]byte(`not json`)) != nil {
		t.Error("a bad input made a plan")
	}
	for name, want := range map[string]sdk.ToolKind{"Edit": sdk.ToolKindEdit, "Bash": sdk.ToolKindExecute, "Grep": sdk.ToolKindSearch, "mcp__x__y": sdk.ToolKindOther} {
		if got := kindOf(name); got != want {
			t.Errorf("%s: %s", name, got)
		}
	}
}

// pngOf is a 4×4 PNG.
func pngOf(t *testing.T) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestContent: what the editor is shown of a finished call — an edit's
// diff, with what the language servers found in it; a command's output
// fenced; a failure's text.
func TestContent(t *testing.T) {
	s := &live{}
	c := s.content("Edit", []byte(`{"file_path": "/w/a.go", "old_string": "a", "new_string": "b"}`), "Edited a.go.\n\n<diagnostics>\na.go:1:1: error: x\n</diagnostics>", true)
	if len(c) != 2 || c[0].Diff == nil || c[0].Diff.Path != "/w/a.go" || *c[0].Diff.OldText != "a" || c[0].Diff.NewText != "b" ||
		c[1].Content == nil || c[1].Content.Content.Text.Text != "<diagnostics>\na.go:1:1: error: x\n</diagnostics>" {
		t.Errorf("edit: %+v", c)
	}
	if c := s.content("Bash", []byte(`{"command": "ls"}`), "a\nb\n", true); len(c) != 1 || c[0].Content.Content.Text.Text != "```console\na\nb\n```" {
		t.Errorf("bash: %+v", c)
	}
	if c := s.content("Edit", []byte(`{"file_path": "/w/a.go"}`), "old_string not found", false); len(c) != 1 || c[0].Content.Content.Text.Text != "old_string not found" {
		t.Errorf("a failed edit: %+v", c)
	}
}
