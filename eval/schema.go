package eval

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// Schema is the JSON Schema of orca's evaluation files: a suite (an
// object with "cases"), or one case. docs/eval.schema.json is it.
func Schema() (json.RawMessage, error) {
	opts := &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): {},
		reflect.TypeFor[time.Duration]():   {Type: "integer", Description: "nanoseconds"},
	}}
	suite, err := jsonschema.For[Suite](opts)
	if err != nil {
		return nil, err
	}
	one, err := jsonschema.For[Case](opts)
	if err != nil {
		return nil, err
	}
	suite.Title, one.Title = "a suite of cases", "one case"
	top := &jsonschema.Schema{
		Schema:      "https://json-schema.org/draft/2020-12/schema",
		ID:          "https://github.com/orca-agent/orca/docs/eval.schema.json",
		Title:       "orca eval",
		Description: "A file of orca's evaluations (*.eval.json): a suite of cases, or one case. See docs/eval.md.",
		Type:        "object",
		AnyOf:       []*jsonschema.Schema{suite, one},
	}
	return json.MarshalIndent(top, "", "  ")
}
