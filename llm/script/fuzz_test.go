package script_test

import (
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm/script"
)

// FuzzParse reads script files as users write them (orca run --script):
// a script or an error, never a panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`[{"text":"hi"}]`, `[{"tool_calls":[{"name":"Read","input":{"file_path":"a"}}]},{"text":"done"}]`,
		`{"responses":[{"text":"x","usage":{"input_tokens":1}}]}`, `[{"error":{"kind":"authentication","message":"x"}}]`,
		`[{"tool_calls":[{"name":"","input":5}]}]`, `[{"text":1}]`, `{`, `[]`, `null`, "\uFEFF[{\"text\":\"bom\"}]",
		`{"routes":{"a":[{"text":"x"}]}}`, `[{"thinking":"t","text":"x","stop_reason":"max_tokens"}]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		script.Parse(strings.NewReader(data))
	})
}
