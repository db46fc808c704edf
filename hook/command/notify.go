package command

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/orca-agent/orca/hook"
)

// NotificationEvent is Claude Code's Notification event. orca has no hook
// for it — a notification decides nothing — so its entries run as a
// Notifier, which the runtime tells when it needs the user.
const NotificationEvent = "Notification"

// StopFailureEvent is Claude Code's StopFailure event: the user's turn
// ended because the model's provider failed. Like Notification, it
// decides nothing, and its entries run as a Notifier's
// (hook.NotifyStopFailure).
const StopFailureEvent = "StopFailure"

// PostCompactEvent is Claude Code's PostCompact event: a compaction has
// summarised the conversation. It only watches, so its entries run as a
// Notifier's too (hook.NotifyPostCompact), matched against the trigger.
const PostCompactEvent = "PostCompact"

// NotifierEvents are the settings event names whose entries run as a
// Notifier's, not as hooks.
var NotifierEvents = []string{NotificationEvent, StopFailureEvent, PostCompactEvent}

// IsNotifierEvent reports whether the settings event name is one whose
// entries run as a Notifier's (Notification, StopFailure, PostCompact),
// not as hooks.
func IsNotifierEvent(event string) bool { return slices.Contains(NotifierEvents, event) }

// NotifierEventOf is the settings event whose entries a notification of
// type typ is for: StopFailure for hook.NotifyStopFailure, PostCompact for
// hook.NotifyPostCompact, else Notification.
func NotifierEventOf(typ string) string {
	switch typ {
	case hook.NotifyStopFailure:
		return StopFailureEvent
	case hook.NotifyPostCompact:
		return PostCompactEvent
	}
	return NotificationEvent
}

// notifierSubjects are what the matchers of note's entries are matched
// against: the notification's type, the failure's type, or the
// compaction's trigger (recovery as auto too, as PreCompact's).
func notifierSubjects(note hook.Notification) []string {
	switch note.Type {
	case hook.NotifyStopFailure:
		return []string{note.ErrorType}
	case hook.NotifyPostCompact:
		return triggerSubjects(note.Trigger)
	}
	return []string{note.Type}
}

// Notifier runs the Notification and StopFailure entries of settings
// files (command and http hooks), each in the background, when the
// runtime tells it (hook.Notifier): Notification entries for the
// notifications of the user being needed, StopFailure ones for
// hook.NotifyStopFailure. The matcher is matched against the
// notification's type (permission_prompt, idle_prompt) or the failure's
// (rate_limit, …), as in Claude Code. A command gets the notification as
// JSON on stdin in Claude Code's shape: session_id, transcript_path, cwd,
// permission_mode, hook_event_name, and message, title and
// notification_type for a Notification, error_type and error_message for
// a StopFailure. What it prints is not read, and a status other than 0 is
// a failure, reported to the Notifier's onFail.
type Notifier struct {
	cmds   []*Command
	names  []string
	onFail func(note hook.Notification, handler string, err error)

	mu     sync.Mutex // guards closed against the WaitGroup's Add
	closed bool
	wg     sync.WaitGroup
	// ctx is the entries' runs' context, cancelled by Close once it has
	// waited wait (closeWait) for them.
	ctx    context.Context
	cancel context.CancelFunc
	wait   time.Duration
}

var _ hook.Notifier = (*Notifier)(nil)

// NewNotifier returns the Notifier of the Notification and StopFailure
// entries of specs (nil if there are none), running commands in the folder
// workspace.
// onFail (which may be nil) hears of each run that fails: the
// notification, the entry's name (Spec.Name) and what went wrong.
func NewNotifier(specs []Spec, workspace string, onFail func(note hook.Notification, handler string, err error)) (*Notifier, error) {
	dir, err := filepath.Abs(workspace)
	if err != nil {
		return nil, fmt.Errorf("notification hooks: workspace %s: %w", workspace, err)
	}
	n := &Notifier{onFail: onFail, wait: closeWait}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	for _, s := range specs {
		if !IsNotifierEvent(s.Event) {
			continue
		}
		if s.Type == "prompt" {
			return nil, fmt.Errorf("%s: %s: a prompt hook cannot answer a %s: nothing is asked (use a command or http hook)", s.File, s.Key, s.Event)
		}
		c, err := build(s, dir, Options{})
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", s.File, s.Key, err)
		}
		n.cmds = append(n.cmds, c)
		n.names = append(n.names, s.Name())
	}
	if len(n.cmds) == 0 {
		n.cancel()
		return nil, nil
	}
	return n, nil
}

// Notify starts the entries whose matcher selects note's type and returns
// at once. After Close it runs nothing.
func (n *Notifier) Notify(note hook.Notification) {
	in, err := notificationInput(note)
	if err != nil {
		n.fail(note, "", err)
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	event, subjects := NotifierEventOf(note.Type), notifierSubjects(note)
	for i, c := range n.cmds {
		if c.Event != event || !slices.ContainsFunc(subjects, c.match.matchesSubject) {
			continue
		}
		n.wg.Go(func() {
			// Not the turn's context: a run that parks the call ends
			// at once, and the notification is what tells the user.
			var r result
			var err error
			if c.http != nil {
				r, err = c.runHTTP(n.ctx, in)
			} else {
				r, err = c.run(n.ctx, in, nil)
			}
			if err == nil && r.code != 0 {
				err = fmt.Errorf("command %q exited with status %d%s", clip(c.Command), r.code, detail(r.stderr))
			}
			if err != nil && n.ctx.Err() != nil {
				err = fmt.Errorf("stopped: it was still running %v after orca began to close: %w", n.wait, err)
			}
			if err != nil {
				n.fail(note, n.names[i], err)
			}
		})
	}
}

func (n *Notifier) fail(note hook.Notification, handler string, err error) {
	if n.onFail != nil {
		n.onFail(note, handler, err)
	}
}

// Close waits for the entries still running, each up to its timeout but
// no longer than closeWait in all (a notify-send that waits for a
// notification daemon that is not there would otherwise hold orca's exit
// for its timeout): those still running then are stopped, and reported
// as failed. After Close, Notify runs nothing.
func (n *Notifier) Close() error {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	done := make(chan struct{})
	go func() {
		n.wg.Wait()
		close(done)
	}()
	timer := time.NewTimer(n.wait)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		n.cancel()
		<-done
	}
	n.cancel()
	return nil
}

// closeWait is how long Close waits for running entries before it stops
// them.
var closeWait = 5 * time.Second

// notificationInput is note as a Notification (or StopFailure) command
// reads it.
func notificationInput(note hook.Notification) ([]byte, error) {
	m, err := ccFields(note, "the notification")
	if err != nil {
		return nil, err
	}
	delete(m, "hook") // no hook of orca's
	m.common(NotifierEventOf(note.Type), &note.Common)
	// Claude Code's StopFailure has the error, and its PostCompact the
	// trigger and the summary, not a notification.
	switch note.Type {
	case hook.NotifyStopFailure:
		m.set("error_type", note.ErrorType)
		m.set("error_message", note.ErrorMessage)
	case hook.NotifyPostCompact:
		m.set("trigger", note.Trigger)
		m.set("compact_summary", note.CompactSummary)
	default:
		return json.Marshal(m)
	}
	delete(m, "notification_type")
	delete(m, "message")
	delete(m, "title")
	return json.Marshal(m)
}
