package tui

import (
	"sync"

	"github.com/orca-agent/orca/event"
)

// TurnView passes on the events of a session's feed that orca run shows:
// one turn, from its turn_started to its turn_completed, its forks' events
// among them, and nothing after (a background fork still running) but
// what SessionEnd hooks say; never session_started or session_ended.
// Its Feed is the session's OnEvent; it is safe for concurrent use.
type TurnView struct {
	// Show shows an event.
	Show func(event.Event)
	// AfterTurn, if set, takes what hooks say after the turn instead of
	// Show (orca run --json, whose last line is turn_completed, writes it
	// on stderr).
	AfterTurn func(event.Event)

	mu   sync.Mutex
	done bool
}

// Feed takes the feed's next event: give it as the session's OnEvent.
func (v *TurnView) Feed(ev event.Event) {
	if ev.Name == event.SessionStarted || ev.Name == event.SessionEnded {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.done {
		switch {
		case !sessionNote(ev):
		case v.AfterTurn != nil:
			v.AfterTurn(ev)
		default:
			v.Show(ev)
		}
		return
	}
	v.Show(ev)
	if ev.Depth == 0 && ev.Name == event.TurnCompleted {
		v.done = true
	}
}

// sessionNote reports whether ev is what a hook had to say outside any
// turn (SessionEnd's systemMessage, a failed SessionEnd hook): shown even
// after the turn, since the user would not learn it otherwise.
func sessionNote(ev event.Event) bool {
	return ev.TurnID == "" && ev.Depth == 0 && (ev.Name == event.HookMessage || ev.Name == event.HookFailed)
}

// Stop ends what is shown: nothing is, after it (a background fork that
// outlives the turn, say) but what SessionEnd hooks say.
func (v *TurnView) Stop() {
	v.mu.Lock()
	v.done = true
	v.mu.Unlock()
}
