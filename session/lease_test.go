package session_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/orcatest"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
)

// One writer per session, within one process too: a second Open of an
// open session is refused, naming the holder, or waits for it.
func TestOpenHeldSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := orcatest.NewNode(t)
		first, err := n.Router.Open(t.Context(), "s", session.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = n.Router.Open(t.Context(), "s", session.OpenOptions{})
		var busy *session.BusyError
		if !errors.As(err, &busy) || !errors.Is(err, store.ErrLeased) || busy.SessionID != "s" || busy.Holder == "" {
			t.Fatalf("a second Open: %v, want a *BusyError", err)
		}
		// Waiting: the second Open gets the session once the first closes.
		go func() {
			time.Sleep(2 * time.Second)
			first.Close(context.Background())
		}()
		start := time.Now()
		second, err := n.Router.Open(t.Context(), "s", session.OpenOptions{Wait: 5 * time.Second})
		if err != nil {
			t.Fatalf("Open with Wait: %v", err)
		}
		if waited := time.Since(start); waited < 2*time.Second || waited > 3*time.Second {
			t.Errorf("waited %v, want about 2s", waited)
		}
		// A wait that ends first is refused.
		if _, err := n.Router.Open(t.Context(), "s", session.OpenOptions{Wait: time.Second}); !errors.As(err, &busy) {
			t.Errorf("Open with a short Wait: %v", err)
		}
		second.Close(context.Background())
	})
}

// failingRenewals is a store whose lease renewals fail while fail is set
// (the process was stopped: it renews nothing).
type failingRenewals struct {
	store.Store
	fail atomic.Bool
}

func (s *failingRenewals) AcquireLease(ctx context.Context, id, owner string, ttl time.Duration) (time.Time, error) {
	if s.fail.Load() && owner != "intruder" {
		return time.Time{}, errors.New("stopped")
	}
	return s.Store.AcquireLease(ctx, id, owner, ttl)
}

// A writer that could not renew its lease (it was stopped longer than the
// lease lasts) and was taken over writes nothing more, and says so.
func TestLeaseTakenOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &failingRenewals{Store: store.NewMemory()}
		n := orcatest.NewNode(t, orcatest.WithStore(st))
		n.Script("s", script.Text("first"), script.Text("never"))
		s, err := n.Router.Open(t.Context(), "s", session.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close(context.Background())
		if _, err := s.Run(t.Context(), "hello"); err != nil {
			t.Fatal(err)
		}
		// The lease renews while the session is open.
		time.Sleep(time.Minute)
		if _, err := st.Store.AcquireLease(t.Context(), "s", "intruder", time.Minute); !errors.Is(err, store.ErrLeased) {
			t.Fatalf("the lease lapsed although it was renewed: %v", err)
		}
		st.fail.Store(true)
		time.Sleep(31 * time.Second) // past its last renewal's lease
		if _, err := st.Store.AcquireLease(t.Context(), "s", "intruder", time.Hour); err != nil {
			t.Fatalf("the lapsed lease could not be taken over: %v", err)
		}
		st.fail.Store(false)
		time.Sleep(11 * time.Second) // the next renewal finds the intruder
		if _, err := s.Run(t.Context(), "again"); !errors.Is(err, session.ErrLeaseLost) {
			t.Errorf("Run after the takeover: %v, want ErrLeaseLost", err)
		}
		recs, _ := st.Records(t.Context(), "s", store.RecordFilter{})
		if len(recs) != 2 {
			t.Errorf("%d records, want the first turn's 2", len(recs))
		}
	})
}
