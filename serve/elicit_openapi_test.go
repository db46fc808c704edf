package serve

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/orca-agent/orca/elicit"
)

// The document's Elicitation and ElicitationField are the JSON the API
// writes, key for key.
func TestOpenAPIElicitationSchemas(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	one := 1.0
	n := 1
	field := elicit.Field{Name: "a", Title: "A", Description: "d", Kind: "enum", Format: "email", Required: true, Default: "x", Options: []elicit.Option{{Value: "x", Title: "X"}},
		Minimum: &one, Maximum: &one, MinLength: &n, MaxLength: &n, MinItems: &n, MaxItems: &n}
	full := Elicitation{ID: "el", SessionID: "s", TurnID: "t", ToolUseID: "u", ToolName: "n", Server: "s", Mode: "form", Message: "m", URL: "u",
		Fields: []elicit.Field{field}, Content: map[string]any{"a": "x"}, AskedAt: time.Now(), Expires: time.Now()}
	keys := func(v any) []string {
		b, _ := json.Marshal(v)
		var m map[string]any
		json.Unmarshal(b, &m)
		return slices.Sorted(maps.Keys(m))
	}
	for name, v := range map[string]any{"Elicitation": full, "ElicitationField": field} {
		if got, want := keys(v), slices.Sorted(maps.Keys(doc.Components.Schemas[name].Properties)); !slices.Equal(got, want) {
			t.Errorf("%s: the API writes %v, openapi.json describes %v", name, got, want)
		}
	}
}
