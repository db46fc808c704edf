#!/bin/sh
# Notification and StopFailure hook: appends what Claude Code (or orca)
# tells the user to .claude/<kind>.log, one tab-separated line a status bar
# or a desktop notifier could follow: event, type, message, session,
# transcript.
jq -r '[.hook_event_name, (.notification_type // .error_type), (.message // .error_message), .session_id, .transcript_path] | @tsv' \
  >> "$CLAUDE_PROJECT_DIR/.claude/$1.log"
