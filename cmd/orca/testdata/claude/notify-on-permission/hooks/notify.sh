#!/bin/sh
# Notification hook: appends what Claude Code (or orca) waits for to
# .claude/<kind>.log, one tab-separated line a status bar or a desktop
# notifier could follow: type, message, session, event, transcript.
jq -r '[.notification_type, .message, .session_id, .hook_event_name, .transcript_path] | @tsv' \
  >> "$CLAUDE_PROJECT_DIR/.claude/$1.log"
