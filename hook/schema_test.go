package hook_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/orca-agent/orca/hook"
)

var update = flag.Bool("update", false, "rewrite the payload schema files from the Go types")

// The checked-in schema of every payload is the one its Go type describes;
// `go test ./hook -run Schema -update` regenerates them.
func TestSchemaFilesMatchThePayloadTypes(t *testing.T) {
	for _, p := range hook.Payloads() {
		s, err := jsonschema.ForType(reflect.TypeOf(p).Elem(), &jsonschema.ForOptions{
			TypeSchemas: map[reflect.Type]*jsonschema.Schema{
				reflect.TypeFor[json.RawMessage](): {Type: "object"},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		s.Schema = "https://json-schema.org/draft/2020-12/schema"
		s.ID = "https://orca-agent.dev/hook/" + string(p.Hook()) + ".schema.json"
		s.Title = string(p.Hook()) + " payload"
		s.Description = "What a handler of the " + string(p.Hook()) + " hook receives (version 1)."
		want, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, '\n')
		path := filepath.Join("schema", string(p.Hook())+".schema.json")
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if got := hook.Schema(p.Hook()); !bytes.Equal(got, want) {
			t.Errorf("%s is out of date with %T; run go test ./hook -run Schema -update", path, p)
		}
	}
}
