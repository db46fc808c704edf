package serve

import (
	"encoding/json"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/schedule"
)

// The OpenAPI document describes the handlers exactly: every route is in
// it with its path parameters, nothing else is, and each request body's
// fields are the Go request type's.
func TestOpenAPIMatchesTheHandlers(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	s, err := New(&app.App{}, Options{Token: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seen := map[string]bool{}
	params := regexp.MustCompile(`\{(\w+)\}`)
	for _, rt := range s.routes {
		if rt.page {
			continue
		}
		method := strings.ToLower(rt.method)
		ops, ok := doc.Paths[rt.pattern]
		if !ok || ops[method] == nil {
			t.Errorf("%s %s is not in openapi.json", rt.method, rt.pattern)
			continue
		}
		seen[method+" "+rt.pattern] = true
		var names []string
		var shared []struct {
			Ref string `json:"$ref"`
		}
		json.Unmarshal(ops["parameters"], &shared)
		for _, p := range shared {
			names = append(names, strings.TrimPrefix(p.Ref, "#/components/parameters/"))
		}
		for _, m := range params.FindAllStringSubmatch(rt.pattern, -1) {
			if !slices.Contains(names, m[1]) {
				t.Errorf("%s: the path parameter %s is not described", rt.pattern, m[1])
			}
		}
		var op struct {
			RequestBody *struct {
				Content map[string]struct {
					Schema struct {
						Properties           map[string]json.RawMessage `json:"properties"`
						Required             []string                   `json:"required"`
						AdditionalProperties *bool                      `json:"additionalProperties"`
					} `json:"schema"`
				} `json:"content"`
			} `json:"requestBody"`
		}
		if err := json.Unmarshal(ops[method], &op); err != nil {
			t.Fatalf("%s %s: %v", rt.method, rt.pattern, err)
		}
		if (op.RequestBody != nil) != (rt.body != nil) {
			t.Errorf("%s %s: body described %v, handler takes one %v", rt.method, rt.pattern, op.RequestBody != nil, rt.body != nil)
			continue
		}
		if rt.body == nil {
			continue
		}
		schema := op.RequestBody.Content["application/json"].Schema
		var fields []string
		typ := reflect.TypeOf(rt.body)
		for i := range typ.NumField() {
			fields = append(fields, strings.Split(typ.Field(i).Tag.Get("json"), ",")[0])
		}
		var described []string
		for k := range schema.Properties {
			described = append(described, k)
		}
		slices.Sort(fields)
		slices.Sort(described)
		if !slices.Equal(fields, described) {
			t.Errorf("%s %s: the body's fields %v, described %v", rt.method, rt.pattern, fields, described)
		}
		for _, r := range schema.Required {
			if !slices.Contains(fields, r) {
				t.Errorf("%s %s: required %s is not a field", rt.method, rt.pattern, r)
			}
		}
		if schema.AdditionalProperties == nil || *schema.AdditionalProperties {
			t.Errorf("%s %s: the document must say unknown fields are refused (additionalProperties: false)", rt.method, rt.pattern)
		}
	}
	for path, ops := range doc.Paths {
		for method := range ops {
			if method != "parameters" && !seen[method+" "+path] {
				t.Errorf("openapi.json describes %s %s, which no handler serves", strings.ToUpper(method), path)
			}
		}
	}
}

// The document's Session, Totals, Budget and the checkpoints' and
// rewinds' schemas are the JSON the handlers write, key for key.
func TestOpenAPISchemasMatchTheViews(t *testing.T) {
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
	keys := func(v any) []string {
		b, _ := json.Marshal(v)
		var m map[string]any
		json.Unmarshal(b, &m)
		return slices.Sorted(maps.Keys(m))
	}
	full := sessionJSON{SessionView: app.SessionView{Budget: &app.BudgetView{}}, Running: "turn", Parked: []Parked{{}}, Transcript: []llm.Message{{}}}
	views := map[string]any{"Session": full, "Totals": app.TotalsView{}, "Budget": app.BudgetView{},
		"Checkpoint": app.CheckpointView{Note: "n"}, "Change": app.ChangeView{}, "CheckpointDiff": app.DiffView{},
		"FileDiff": app.FileDiff{Diff: "d", Note: "n"}, "Rewound": app.RewoundView{Branch: "b"}, "Conflict": app.ConflictView{},
		"Schedule": schedule.View{TimeZone: "z", SessionID: "s", BudgetUSD: 1, CapUSD: 1, ExpiresAt: &time.Time{}, NextAt: &time.Time{}, Fires: []schedule.FireView{{}}},
		"Fire":     schedule.FireView{SessionID: "s", Note: "n", EndedAt: &time.Time{}}}
	for name, v := range views {
		if got, want := keys(v), slices.Sorted(maps.Keys(doc.Components.Schemas[name].Properties)); !slices.Equal(got, want) {
			t.Errorf("%s: the handlers write %v, openapi.json describes %v", name, got, want)
		}
	}
}
