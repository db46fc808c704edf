package queue_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/orca-agent/orca/queue"
)

type counter struct {
	mu       sync.Mutex
	enq, deq []int
}

func (c *counter) Enqueued(_ string, depth int) {
	c.mu.Lock()
	c.enq = append(c.enq, depth)
	c.mu.Unlock()
}
func (c *counter) Dequeued(_ string, n, depth int) {
	c.mu.Lock()
	c.deq = append(c.deq, n, depth)
	c.mu.Unlock()
}

func TestQueuePerSession(t *testing.T) {
	m := queue.NewManager()
	var c counter
	detach := m.Listen("a", &c)
	if d := m.Enqueue("a", "one"); d != 1 {
		t.Errorf("depth = %d", d)
	}
	m.Enqueue("a", "two")
	m.Enqueue("b", "other session")
	if m.Depth("a") != 2 || m.Depth("b") != 1 {
		t.Errorf("depths a=%d b=%d", m.Depth("a"), m.Depth("b"))
	}
	if got := m.Drain("a"); !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("drain a = %v", got)
	}
	if got := m.Drain("a"); got != nil {
		t.Errorf("second drain = %v", got)
	}
	if !slices.Equal(c.enq, []int{1, 2}) || !slices.Equal(c.deq, []int{2, 0}) {
		t.Errorf("listener saw enq %v deq %v", c.enq, c.deq)
	}
	detach()
	detach()
	m.Enqueue("a", "after")
	if len(c.enq) != 2 {
		t.Errorf("detached listener still called: %v", c.enq)
	}
	if got := m.Drain("b"); !slices.Equal(got, []string{"other session"}) {
		t.Errorf("drain b = %v", got)
	}
}

func TestQueueConcurrent(t *testing.T) {
	m := queue.NewManager()
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 4 {
		wg.Go(func() {
			for range 100 {
				m.Enqueue("s", "x")
			}
		})
		wg.Go(func() {
			for range 100 {
				n := len(m.Drain("s"))
				mu.Lock()
				total += n
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	total += len(m.Drain("s"))
	if total != 400 {
		t.Errorf("drained %d of 400", total)
	}
}
