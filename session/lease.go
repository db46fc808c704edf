package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/orca-agent/orca/store"
)

// The writer lease a LiveSession holds while it is open: renewed every
// leaseRenew, it lapses leaseTTL after the last renewal (a writer that
// died without releasing it holds the session that long at most).
const (
	leaseTTL   = 30 * time.Second
	leaseRenew = 10 * time.Second
)

// leaseOwner names a new writer: the process and a handle of its own, so
// that two sessions of one process are two writers too.
func leaseOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("pid %d on %s (handle %s)", os.Getpid(), cmp.Or(host, "this host"), randomID()[:8])
}

// deadHolder reports whether owner (as leaseOwner names writers) is a
// process of this host that no longer exists.
func deadHolder(owner string) bool {
	var pid int
	var host string
	if n, _ := fmt.Sscanf(owner, "pid %d on %s", &pid, &host); n != 2 || pid <= 0 {
		return false
	}
	if me, _ := os.Hostname(); host != cmp.Or(me, "this host") && host != "this" {
		return false
	}
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

// lease takes the session's writer lease, waiting up to wait for its
// holder to let go, and starts renewing it.
func (s *LiveSession) lease(ctx context.Context, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		_, err := s.r.store.AcquireLease(ctx, s.id, s.owner, leaseTTL)
		if err == nil {
			break
		}
		var le *store.LeaseError
		if errors.As(err, &le) && deadHolder(le.Owner) {
			// Its process died (killed, crashed) on this host without
			// letting go: its lease would hold the session for nothing.
			if err := s.r.store.ReleaseLease(ctx, s.id, le.Owner); err != nil {
				return fmt.Errorf("session %s: %w", s.id, err)
			}
			continue
		}
		left := time.Until(deadline)
		if !errors.Is(err, store.ErrLeased) || left <= 0 {
			if le != nil {
				return &BusyError{SessionID: s.id, Holder: le.Owner, Until: le.Expires, err: err}
			}
			return fmt.Errorf("session %s: %w", s.id, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("session %s: %w", s.id, ctx.Err())
		case <-time.After(min(left, 100*time.Millisecond)):
		}
	}
	s.stopRenew, s.renewDone = make(chan struct{}), make(chan struct{})
	go s.renew()
	return nil
}

// renew renews the lease until the session closes; if another writer took
// the session over, the running turn ends (ErrLeaseLost) and so does every
// later write.
func (s *LiveSession) renew() {
	defer close(s.renewDone)
	t := time.NewTicker(leaseRenew)
	defer t.Stop()
	for {
		select {
		case <-s.stopRenew:
			return
		case <-t.C:
		}
		_, err := s.r.store.AcquireLease(context.Background(), s.id, s.owner, leaseTTL)
		switch {
		case errors.Is(err, store.ErrLeased):
			s.lost.Store(true)
			s.mu.Lock()
			if s.running && s.cancel != nil {
				s.cancel(ErrLeaseLost)
			}
			s.mu.Unlock()
			return
		case err != nil:
			// The store failed for a moment: the lease lasts three periods.
			s.r.rt.Logger().Warn("could not renew the session's writer lease", "session", s.id, "err", err)
		}
	}
}

// release stops renewing and gives the lease up.
func (s *LiveSession) release() {
	if s.stopRenew == nil {
		return
	}
	close(s.stopRenew)
	<-s.renewDone
	if err := s.r.store.ReleaseLease(context.Background(), s.id, s.owner); err != nil && !errors.Is(err, store.ErrClosed) {
		s.r.rt.Logger().Warn("could not release the session's writer lease", "session", s.id, "err", err)
	}
}
