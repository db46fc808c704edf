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
