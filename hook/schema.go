package hook

import (
	"embed"
	"encoding/json"
)

//go:embed schema/*.schema.json
var schemaFiles embed.FS

// Schema returns the JSON Schema of hook n's payload (schema/<n>.schema.json
// in this package), or nil for an unknown hook.
func Schema(n Name) json.RawMessage {
	b, err := schemaFiles.ReadFile("schema/" + string(n) + ".schema.json")
	if err != nil {
		return nil
	}
	return b
}
