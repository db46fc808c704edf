#!/bin/sh
# PostToolUse on Write|Edit: gofmt the Go file the tool wrote.
file=$(jq -r '.tool_response.filePath // empty')
case "$file" in
*.go) gofmt -w "$file" ;;
esac
