// Package queue holds the user messages that arrive for a session while a
// turn of it runs — the user typing while the agent works. The executor
// drains a session's queue at every iteration boundary, so the messages
// enter the running turn instead of waiting for the next one.
//
// Listeners can be attached to a session's queue and detached again; the
// queue-metrics interceptor attaches one for the length of a run.
package queue

import (
	"slices"
	"sync"
)

// Listener observes one session's queue. Its methods are called with the
// queue's lock released, possibly from several goroutines; depth is the
// queue's length after the change.
type Listener interface {
	Enqueued(sessionID string, depth int)
	Dequeued(sessionID string, n, depth int)
}

// Manager owns the queues of every session. It is safe for concurrent use;
// create one per process and share it.
type Manager struct {
	mu     sync.Mutex
	queues map[string]*state
}

type state struct {
	msgs      []string
	listeners []*Listener // pointers, so that removal finds the right one
}

// NewManager returns an empty manager.
func NewManager() *Manager { return &Manager{queues: make(map[string]*state)} }

func (m *Manager) get(sessionID string) *state {
	s := m.queues[sessionID]
	if s == nil {
		s = &state{}
		m.queues[sessionID] = s
	}
	return s
}

// Enqueue appends a message to the session's queue and returns the new
// depth.
func (m *Manager) Enqueue(sessionID, text string) int {
	m.mu.Lock()
	s := m.get(sessionID)
	s.msgs = append(s.msgs, text)
	depth, ls := len(s.msgs), slices.Clone(s.listeners)
	m.mu.Unlock()
	for _, l := range ls {
		(*l).Enqueued(sessionID, depth)
	}
	return depth
}

// Drain removes and returns every queued message of the session, oldest
// first (nil if there are none).
func (m *Manager) Drain(sessionID string) []string {
	m.mu.Lock()
	s := m.queues[sessionID]
	if s == nil || len(s.msgs) == 0 {
		m.mu.Unlock()
		return nil
	}
	msgs := s.msgs
	s.msgs = nil
	ls := slices.Clone(s.listeners)
	if len(ls) == 0 {
		delete(m.queues, sessionID)
	}
	m.mu.Unlock()
	for _, l := range ls {
		(*l).Dequeued(sessionID, len(msgs), 0)
	}
	return msgs
}

// Depth returns how many messages wait in the session's queue.
func (m *Manager) Depth(sessionID string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.queues[sessionID]; s != nil {
		return len(s.msgs)
	}
	return 0
}

// Listen attaches l to the session's queue and returns the function that
// detaches it (safe to call more than once).
func (m *Manager) Listen(sessionID string, l Listener) (detach func()) {
	p := &l
	m.mu.Lock()
	s := m.get(sessionID)
	s.listeners = append(s.listeners, p)
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		s := m.queues[sessionID]
		if s == nil {
			return
		}
		if i := slices.Index(s.listeners, p); i >= 0 {
			s.listeners = slices.Delete(s.listeners, i, i+1)
		}
		if len(s.listeners) == 0 && len(s.msgs) == 0 {
			delete(m.queues, sessionID)
		}
	}
}
