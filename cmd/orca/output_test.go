package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// orca run --output-schema FILE: the answer is a value of the schema —
// one that is not goes back to the model — printed as JSON, and with
// --json in turn_completed's "output"; the request's schema is the file's.
func TestRunOutputSchema(t *testing.T) {
	dir := t.TempDir()
	schema := filepath.Join(dir, "forecast.json")
	writeFileAt(t, dir, "forecast.json", `{"type": "object", "properties": {"city": {"type": "string"}, "celsius": {"type": "integer"}}, "required": ["city", "celsius"], "additionalProperties": false}`)
	sc := writeScript(t, `{"output": {"city": "Oslo", "celsius": "cold"}}`, `{"output": {"city": "Oslo", "celsius": 4}}`)
	ws := t.TempDir()

	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--json", "--output-schema", schema, "weather?")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	evs := parseEvents(t, stdout)
	last := evs[len(evs)-1]
	if out, _ := json.Marshal(last["output"]); last.str("name") != "turn_completed" || string(out) != `{"celsius":4,"city":"Oslo"}` || last.str("answer") != `{"city":"Oslo","celsius":4}` {
		t.Errorf("turn_completed: %v", last)
	}

	stdout, stderr, code = orca(t, t.Context(), "", "run", "--script", sc, "-w", t.TempDir(), "--output-schema", schema, "weather?")
	if code != 0 || !strings.Contains(stdout, `{"city": "Oslo", "celsius": 4}`) || !strings.Contains(stdout, "✗ not a value of the output schema, sent back (correction 1): invalid value for output forecast: at /celsius: got string, want integer") {
		t.Errorf("text: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// Still wrong after two corrections: the turn fails, naming the field.
	bad := writeScript(t, `{"output": {"city": 1, "celsius": 4}}`, `{"output": {"city": 2, "celsius": 4}}`, `{"output": {"city": 3, "celsius": 4}}`)
	stdout, stderr, code = orca(t, t.Context(), "", "run", "--script", bad, "-w", t.TempDir(), "--output-schema", schema, "weather?")
	if code != 1 || !strings.Contains(stdout+stderr, "at /city") || !strings.Contains(stdout+stderr, "does not match the output schema") {
		t.Errorf("still wrong: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// A schema file that is missing, not JSON, not an object schema or does
// not compile is a usage error naming the file, before anything runs.
func TestRunOutputSchemaErrors(t *testing.T) {
	dir := t.TempDir()
	sc := writeScript(t, `{"text": "never"}`)
	writeFileAt(t, dir, "notjson.json", `{"type": `)
	writeFileAt(t, dir, "array.json", `{"type": "array"}`)
	writeFileAt(t, dir, "bad.json", `{"type": "object", "properties": {"a": {"type": 7}}}`)
	for name, want := range map[string]string{
		"missing.json": "no such file",
		"notjson.json": "not JSON",
		"array.json":   `"type": "object"`,
		"bad.json":     "does not compile",
	} {
		path := filepath.Join(dir, name)
		_, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", t.TempDir(), "--output-schema", path, "go")
		if code != 2 || !strings.Contains(stderr, path) || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, %s", name, code, stderr)
		}
	}
}

// In plain output (a pipe, a CI log), the read-only calls of a response
// that run at once are each shown once, header and output together, as
// they end; a call that runs alone is still shown as it starts.
func TestPlainOutputShowsParallelCallsOnce(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeFileAt(t, ws, "a.txt", "alpha\n")
	writeFileAt(t, ws, "b.txt", "beta\n")
	sc := writeScript(t, `{"tool_calls": [
		{"id": "r1", "name": "Read", "input": {"file_path": "a.txt"}},
		{"id": "r2", "name": "Read", "input": {"file_path": "b.txt"}},
		{"id": "g", "name": "Glob", "input": {"pattern": "*.txt"}}]}`,
		bashCall("b", "echo from-bash"), `{"text": "done"}`)
	stdout, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, "--no-sandbox", "--permission-mode", "bypass", "go")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for header, output := range map[string]string{"● Read a.txt": "alpha", "● Read b.txt": "beta", "● Glob *.txt": "a.txt", "● Bash echo from-bash": "from-bash"} {
		if n := strings.Count(stdout, header+"\n"); n != 1 {
			t.Errorf("%q shown %d times:\n%s", header, n, stdout)
			continue
		}
		// The output follows its own header, before any other call's.
		after := stdout[strings.Index(stdout, header+"\n")+len(header)+1:]
		if next := strings.Index(after, "●"); !strings.Contains(after[:max(next, 0)], output) && !(next < 0 && strings.Contains(after, output)) {
			t.Errorf("%q is not followed by its output %q:\n%s", header, output, stdout)
		}
	}
}
