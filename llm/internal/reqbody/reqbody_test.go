package reqbody_test

import (
	"encoding/json"
	"testing"

	"github.com/orca-agent/orca/llm/internal/reqbody"
)

func TestWith(t *testing.T) {
	for _, c := range []struct {
		params, value any
		want          string
	}{
		{map[string]int{"max_tokens": 5}, []string{"a<b"}, `{"max_tokens":5,"messages":["a\u003cb"]}`},
		{map[string]int{"max_tokens": 5}, nil, `{"max_tokens":5}`},
		{struct{}{}, []int{}, `{"messages":[]}`},
	} {
		got, err := reqbody.With(c.params, "messages", c.value)
		if err != nil || string(got) != c.want {
			t.Errorf("With(%v, %v) = %s, %v; want %s", c.params, c.value, got, err, c.want)
		}
		if err == nil && !json.Valid(got) {
			t.Errorf("not JSON: %s", got)
		}
	}
	if _, err := reqbody.With([]int{1}, "messages", nil); err == nil {
		t.Error("params that are not an object: no error")
	}
	if _, err := reqbody.With(struct{}{}, "messages", func() {}); err == nil {
		t.Error("a value that does not encode: no error")
	}
}
