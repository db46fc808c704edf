package serve

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// apiError is an error with its HTTP status, code and the field at fault.
type apiError struct {
	status int
	code   string
	msg    string
	field  string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(field, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "invalid_request", field: field, msg: fmt.Sprintf(format, args...)}
}

func writeError(w http.ResponseWriter, e *apiError) {
	body := map[string]any{"code": e.code, "message": e.msg}
	if e.field != "" {
		body["field"] = e.field
	}
	writeJSON(w, e.status, map[string]any{"error": body})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// decode reads the JSON body into v strictly: one value, no unknown
// field; errors name the field.
func decode(r *http.Request, v any) error { return decodeWith(r, v, true) }

// decodeWith reads the JSON body into v, strictly or not (a protocol's
// objects that are open to fields of their own: AG-UI's).
func decodeWith(r *http.Request, v any, strict bool) error {
	dec := json.NewDecoder(r.Body)
	if strict {
		dec.DisallowUnknownFields()
	}
	err := dec.Decode(v)
	if err == nil {
		if dec.More() {
			return badRequest("", "the body has more than one JSON value")
		}
		if _, err := dec.Token(); err != io.EOF {
			return badRequest("", "the body has more than one JSON value")
		}
		return nil
	}
	var mbe *http.MaxBytesError
	var ute *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &mbe):
		return &apiError{status: http.StatusRequestEntityTooLarge, code: "too_large", msg: fmt.Sprintf("the body is over %d bytes", mbe.Limit)}
	case errors.Is(err, io.EOF):
		return badRequest("", "the body is empty: want a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("", "the body is not JSON: it ends in the middle of a value")
	case errors.As(err, &ute):
		return badRequest(ute.Field, "%s: want %s, got %s", cmp.Or(ute.Field, "the body"), ute.Type, ute.Value)
	case errors.As(err, &se):
		return badRequest("", "the body is not JSON: %v (at byte %d)", se, se.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return badRequest(f, "unknown field %q", f)
	}
	return badRequest("", "the body: %v", err)
}
