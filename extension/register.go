package extension

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
)

// hookGrace is how much longer the hook registry waits for an extension's
// answer than the extension's own timeout, so that a handler that times
// out is killed and reported in the extension's words first.
const hookGrace = time.Second

// Loaded are the extensions RegisterExtensions registered. Close them when
// the runtimes that use the services are done: Close is what stops their
// handler processes.
type Loaded struct {
	exts []*Extension
	runs []*registered

	ready chan struct{} // closed when registration succeeded or failed
	armed atomic.Bool   // set before ready is closed, if it succeeded

	closeOnce sync.Once
}

// registered is one extension on the services.
type registered struct {
	x    *Extension
	proc *proc
	undo []func()
}

// SubscriptionName is the bus subscription of extension name: "ext:<name>".
// One subscription covers all of its runtime events, so that its handler
// receives them in the order they happened.
func SubscriptionName(name string) string { return "ext:" + name }

// HandlerName is the hook handler name of extension name: "ext:<name>".
func HandlerName(name string) string { return "ext:" + name }

// RegisterExtensions registers the trusted extensions of exts (from
// LoadExtensions) on svc, in order, without starting any handler (each
// starts on its first request): one bus subscription for its runtime
// events, named SubscriptionName, with the manifest's priority, if the extension
// has the events port; one hook handler per public hook, named
// HandlerName, with the manifest's priority and timeout, if it has the
// hooks port. Untrusted extensions are skipped.
//
// Registration is all or nothing: a name already taken on the hook
// registry or the bus, two extensions of one name, or a port without its
// service on svc fails it, nothing stays registered and no handler has
// run. Events and hooks that arrive while it is under way wait for it to
// finish.
func RegisterExtensions(svc *agent.Services, exts []*Extension) (*Loaded, error) {
	l := &Loaded{ready: make(chan struct{})}
	if svc == nil {
		svc = &agent.Services{}
	}
	var names []string
	for _, x := range exts {
		if !x.Trusted {
			continue
		}
		name := x.Manifest.Name
		if slices.Contains(names, name) {
			return nil, &ManifestError{File: x.File, Field: "name", Msg: fmt.Sprintf("two extensions are named %q", name)}
		}
		names = append(names, name)
		if x.Has(CapabilityEvents) && svc.Bus == nil {
			return nil, fmt.Errorf("%s: the extension receives events, but there is no event bus", x.File)
		}
		if x.Has(CapabilityHooks) {
			if svc.Hooks == nil {
				return nil, fmt.Errorf("%s: the extension answers hooks, but there is no hook registry", x.File)
			}
			for _, h := range x.Manifest.Hooks() {
				if slices.Contains(svc.Hooks.Handlers(h), HandlerName(name)) {
					return nil, &ManifestError{File: x.File, Field: "name", Msg: fmt.Sprintf("%s is already registered on %s", HandlerName(name), h)}
				}
			}
		}
		l.exts = append(l.exts, x)
	}
	for _, x := range l.exts {
		r := &registered{x: x, proc: newProc(x)}
		l.runs = append(l.runs, r)
		if err := l.register(svc, r); err != nil {
			close(l.ready) // not armed: waiting listeners do nothing
			l.unregister()
			return nil, err
		}
	}
	l.armed.Store(true)
	close(l.ready)
	return l, nil
}

// register puts r's subscriptions and hook handlers on svc.
func (l *Loaded) register(svc *agent.Services, r *registered) error {
	m := &r.x.Manifest
	if r.x.Has(CapabilityEvents) {
		if events := m.RuntimeEvents(); len(events) > 0 {
			s, err := svc.Bus.SubscribeNames(SubscriptionName(m.Name), events, l.listener(r), event.Priority(m.Priority))
			if err != nil {
				return &ManifestError{File: r.x.File, Field: "name", Msg: err.Error()}
			}
			r.undo = append(r.undo, s.Unsubscribe)
		}
	}
	if r.x.Has(CapabilityHooks) {
		for _, h := range m.Hooks() {
			u, err := svc.Hooks.Register(h, HandlerName(m.Name), l.handler(r), hook.Priority(m.Priority), hook.Timeout(m.Timeout+hookGrace), hook.MayBlock())
			if err != nil {
				return &ManifestError{File: r.x.File, Field: "name", Msg: err.Error()}
			}
			r.undo = append(r.undo, u)
		}
	}
	return nil
}

// admit waits for the registration to finish and reports whether it
// succeeded.
func (l *Loaded) admit() bool {
	<-l.ready
	return l.armed.Load()
}

// listener delivers events to r's handler.
func (l *Loaded) listener(r *registered) event.Listener {
	return func(e event.Event) error {
		if !l.admit() {
			return nil
		}
		raw, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("extension %s: encoding the %s event: %w", r.x.Manifest.Name, e.Name, err)
		}
		a, err := r.proc.call(context.Background(), request{Kind: "event", Event: raw})
		if err != nil {
			return fmt.Errorf("extension %s: %s: %w", r.x.Manifest.Name, e.Name, err)
		}
		if a.Error != "" {
			return fmt.Errorf("extension %s: %s: the handler reported: %s", r.x.Manifest.Name, e.Name, a.Error)
		}
		if a.Decision != nil {
			return fmt.Errorf("extension %s: %s: the handler answered an event with a decision; events only observe", r.x.Manifest.Name, e.Name)
		}
		return nil
	}
}

// handler answers hooks with r's handler.
func (l *Loaded) handler(r *registered) hook.Handler {
	return hook.HandlerFunc(func(ctx context.Context, p hook.Payload) (*hook.Decision, error) {
		if !l.admit() {
			return nil, nil
		}
		raw, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("extension %s: encoding the %s payload: %w", r.x.Manifest.Name, p.Hook(), err)
		}
		a, err := r.proc.call(ctx, request{Kind: "hook", Hook: p.Hook(), Payload: raw})
		if err != nil {
			return nil, fmt.Errorf("extension %s: %w", r.x.Manifest.Name, err)
		}
		if a.Error != "" {
			return nil, fmt.Errorf("extension %s: the handler reported: %s", r.x.Manifest.Name, a.Error)
		}
		if a.Decision == nil {
			return nil, nil
		}
		d, err := a.Decision.hookDecision()
		if err != nil {
			return nil, fmt.Errorf("extension %s: %w", r.x.Manifest.Name, err)
		}
		return d, nil
	})
}

// Extensions returns the extensions that were registered, in order.
func (l *Loaded) Extensions() []*Extension { return slices.Clone(l.exts) }

// Close unregisters the extensions in reverse order and stops their
// handlers: for each, its hook handlers and subscriptions are removed (the
// events already queued for it are delivered first, to the running
// handler), then the handler gets EOF on its stdin and a moment to exit
// before its process group is killed. Close returns once no handler
// process is left; it is idempotent.
func (l *Loaded) Close() error {
	if l == nil {
		return nil
	}
	l.closeOnce.Do(l.unregister)
	return nil
}

func (l *Loaded) unregister() {
	for i := len(l.runs) - 1; i >= 0; i-- {
		r := l.runs[i]
		r.proc.drain()
		for j := len(r.undo) - 1; j >= 0; j-- {
			r.undo[j]()
		}
		r.undo = nil
		r.proc.close()
	}
}
