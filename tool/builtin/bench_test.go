package builtin

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

// BenchmarkGrep searches the Go distribution's source tree, as a model
// looking for context-taking functions in a large repository would.
func BenchmarkGrep(b *testing.B) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skipf("go env GOROOT: %v", err)
	}
	fsys, err := workspace.OpenLocal(filepath.Join(strings.TrimSpace(string(goroot)), "src"))
	if err != nil {
		b.Skipf("no GOROOT source tree: %v", err)
	}
	defer fsys.Close()
	grep := &grepTool{fs: fsys}
	call := &tool.Call{Name: "Grep", Input: json.RawMessage(`{"pattern": "func \\w+\\(ctx context\\.Context", "output_mode": "files_with_matches"}`)}
	r := grep.Execute(context.Background(), call)
	if r.IsError || !strings.HasPrefix(r.Content, "Found ") {
		b.Fatalf("Grep failed: %.300s", r.Content)
	}
	b.Logf("%s", r.Content[:strings.IndexByte(r.Content, '\n')])
	b.ReportAllocs()
	for b.Loop() {
		grep.Execute(context.Background(), call)
	}
}
