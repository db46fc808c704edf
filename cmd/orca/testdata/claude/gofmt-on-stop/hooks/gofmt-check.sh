#!/bin/sh
# Stop: keep the agent at work while Go files are not gofmt'd, once a
# turn: a second stop (stop_hook_active) ends the turn whatever the files.
if jq -e '.stop_hook_active' >/dev/null; then
  exit 0
fi
files=$(gofmt -l .)
if [ -n "$files" ]; then
  printf 'These files are not gofmt'"'"'d; run gofmt -w on them before you stop:\n%s\n' "$files" >&2
  exit 2
fi
