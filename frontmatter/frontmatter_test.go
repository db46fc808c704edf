package frontmatter_test

import (
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/orca-agent/orca/frontmatter"
)

// A list field that is not there, or null, is nil: not said. One that is
// there and names nothing is empty but not nil: none.
func TestList(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want []string
	}{
		{"other: 1", nil},
		{"tools:", nil},
		{"tools: ~", nil},
		{"tools: null", nil},
		{"tools: []", []string{}},
		{`tools: ""`, []string{}},
		{"tools: ' , '", []string{}},
		{"tools: Read, Grep", []string{"Read", "Grep"}},
		{"tools: Read Bash(git add:*)", []string{"Read", "Bash(git add:*)"}},
		{"tools: [Read, 'Glob, Grep']", []string{"Read", "Glob", "Grep"}},
	} {
		var fm struct {
			Tools yaml.Node `yaml:"tools"`
		}
		if err := yaml.Unmarshal([]byte(tc.yaml), &fm); err != nil {
			t.Fatal(err)
		}
		got, err := frontmatter.List(&fm.Tools, "tools")
		if err != nil || !reflect.DeepEqual(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("%s: List = %#v, %v; want %#v", tc.yaml, got, err, tc.want)
		}
	}
	var fm struct {
		Tools yaml.Node `yaml:"tools"`
	}
	yaml.Unmarshal([]byte("tools: {Read: 1}"), &fm)
	if _, err := frontmatter.List(&fm.Tools, "tools"); err == nil {
		t.Error("a map is not a list")
	}
}

// Front matter as Claude Code's /agents writes it — an unquoted one-line
// description with ": " and \n escapes — is read as Claude Code reads it;
// the other keys keep their YAML types; what cannot be read stays an
// error.
func TestDecodeRelaxed(t *testing.T) {
	data := []byte("---\nname: test-runner\ndescription: Use this agent when tests fail. Examples:\\n\\n<example>\\nContext: The user ran go test.\\nuser: \"fix it\"\\n</example>\nmodel: sonnet\ntools: Read, Bash\ncolor: green\ndisable-model-invocation: true\n---\nYou run tests.\n")
	var fm struct {
		Name        string    `yaml:"name"`
		Description string    `yaml:"description"`
		Model       string    `yaml:"model"`
		Tools       yaml.Node `yaml:"tools"`
		NoModel     bool      `yaml:"disable-model-invocation"`
	}
	body, err := frontmatter.Decode(data, &fm)
	if err != nil {
		t.Fatal(err)
	}
	want := "Use this agent when tests fail. Examples:\n\n<example>\nContext: The user ran go test.\nuser: \"fix it\"\n</example>"
	if fm.Name != "test-runner" || fm.Description != want || fm.Model != "sonnet" || !fm.NoModel || body != "You run tests.\n" {
		t.Errorf("decoded %+v, body %q", fm, body)
	}
	if tools, _ := frontmatter.List(&fm.Tools, "tools"); !reflect.DeepEqual(tools, []string{"Read", "Bash"}) {
		t.Errorf("tools %v", tools)
	}
	for _, bad := range []string{"---\n: no key\nname: x\n---\n", "---\nname: [unclosed\n---\n"} {
		if _, err := frontmatter.Decode([]byte(bad), &fm); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}
