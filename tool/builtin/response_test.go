package builtin

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
)

// The structured responses carry Claude Code's field names and the
// call's facts, so that hooks written for its tool_response work.
func TestResponsesHaveClaudeCodesShape(t *testing.T) {
	f := newFixture(t)
	abs := func(rel string) string { return filepath.Join(f.dir, rel) }
	obj := func(name string, input any) map[string]any {
		t.Helper()
		r := f.call(name, input)
		if r.IsError || r.Response == nil {
			t.Fatalf("%s: %+v", name, r)
		}
		b, err := json.Marshal(r.Response)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: response %s is not an object", name, b)
		}
		return m
	}
	check := func(name string, got map[string]any, want map[string]any) {
		t.Helper()
		for k, v := range want {
			if !reflect.DeepEqual(got[k], v) {
				t.Errorf("%s: %s = %#v, want %#v (response %v)", name, k, got[k], v, got)
			}
		}
	}
	check("Write", obj("Write", map[string]any{"file_path": "a.go", "content": "package a\n"}),
		map[string]any{"type": "create", "filePath": abs("a.go"), "content": "package a\n"})
	check("Write again", obj("Write", map[string]any{"file_path": abs("a.go"), "content": "package b\n"}),
		map[string]any{"type": "update", "filePath": abs("a.go")})
	check("Edit", obj("Edit", map[string]any{"file_path": "a.go", "old_string": "b", "new_string": "c"}),
		map[string]any{"filePath": abs("a.go"), "oldString": "b", "newString": "c", "originalFile": "package b\n", "replaceAll": false, "userModified": false})
	read := obj("Read", map[string]any{"file_path": "a.go"})
	check("Read", read, map[string]any{"type": "text"})
	check("Read file", read["file"].(map[string]any), map[string]any{"filePath": abs("a.go"), "content": "package c\n", "numLines": 1.0, "startLine": 1.0, "totalLines": 1.0})
	check("Glob", obj("Glob", map[string]any{"pattern": "*.go"}), map[string]any{"filenames": []any{"a.go"}, "numFiles": 1.0, "truncated": false})
	check("Grep", obj("Grep", map[string]any{"pattern": "package"}), map[string]any{"mode": "files_with_matches"})
	check("Bash", obj("Bash", map[string]any{"command": "echo out; echo err >&2"}), map[string]any{"stdout": "out\nerr\n", "stderr": "", "interrupted": false, "isImage": false})
}
