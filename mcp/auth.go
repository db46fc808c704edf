package mcp

import (
	"fmt"
	"strings"
)

// explain says what a failed connection to a remote server needs, where
// orca can tell: a server that answers 401 (or 403) wants authorization —
// MCP's OAuth flow, which orca does not run yet — so the error names the
// server and says how to give it a token instead.
func explain(srv Server, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "401") || strings.Contains(msg, "Unauthorized"):
		return fmt.Errorf("%s asks for authorization (HTTP 401): orca does not run MCP's OAuth flow yet; give the server's token in its \"headers\" (\"Authorization\": \"Bearer ${TOKEN}\"), or use a stdio server: %w", srv.URL, err)
	case strings.Contains(msg, "403") || strings.Contains(msg, "Forbidden"):
		return fmt.Errorf("%s refuses orca (HTTP 403): check the token in its \"headers\": %w", srv.URL, err)
	}
	return fmt.Errorf("connecting to %s: %w", srv.URL, err)
}
