// Package reqbody builds a provider request's JSON body from two parts:
// the SDK's encoding of the request's parameters, and one field — the
// conversation — that the client encodes itself with encoding/json (the
// SDKs' reflection-based encoders took milliseconds a call for a long
// conversation). The SDK sends the body as given (option.WithRequestBody).
package reqbody

import (
	"encoding/json"
	"fmt"
)

// With returns params encoded as JSON (by their own MarshalJSON: the
// SDK's) with field key, which params leave out, set to value's encoding;
// a nil value leaves the field out.
func With(params any, key string, value any) ([]byte, error) {
	head, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	if len(head) < 2 || head[len(head)-1] != '}' {
		return nil, fmt.Errorf("the request encoded as %.40q, not an object", head)
	}
	if value == nil {
		return head, nil
	}
	v, err := json.Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("the %s: %w", key, err)
	}
	out := head[:len(head)-1]
	if len(head) > 2 {
		out = append(out, ',')
	}
	out = append(out, '"')
	out = append(out, key...)
	out = append(out, `":`...)
	out = append(out, v...)
	return append(out, '}'), nil
}
