package mcp

import (
	"errors"
	"fmt"
	"strings"
)

// explain says what a failed connection to a remote server needs, where
// orca can tell: a sign-in (a LoginError, as it says), or — a server that
// answers 401 though orca may not sign in to it (an sse server, or one
// whose headers carry their own Authorization) — a token in its headers.
func explain(srv Server, err error) error {
	var le *LoginError
	if errors.As(err, &le) {
		return le
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "401") || strings.Contains(msg, "Unauthorized"):
		return fmt.Errorf("%s asks for authorization (HTTP 401): give the server's token in its \"headers\" (\"Authorization\": \"Bearer ${TOKEN}\"), or reach it over streamable HTTP (\"type\": \"http\"), where orca signs in with OAuth: %w", srv.URL, err)
	case strings.Contains(msg, "403") || strings.Contains(msg, "Forbidden"):
		return fmt.Errorf("%s refuses orca (HTTP 403): check the token in its \"headers\": %w", srv.URL, err)
	}
	return fmt.Errorf("connecting to %s: %w", srv.URL, err)
}
