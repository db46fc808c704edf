package tailbuf_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/internal/tailbuf"
)

func TestBufferKeepsTheEnd(t *testing.T) {
	b := &tailbuf.Buffer{Max: 5}
	b.Write([]byte("abc"))
	if s, d := b.Tail(); s != "abc" || d != 0 {
		t.Errorf("Tail = %q, %d", s, d)
	}
	b.Write([]byte("defgh"))
	if s, d := b.Tail(); s != "defgh" || d != 3 {
		t.Errorf("Tail = %q, %d; want defgh, 3", s, d)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { b.Write([]byte(strings.Repeat("x", 100))) })
	}
	wg.Wait()
	if s, d := b.Tail(); s != "xxxxx" || d != 3+800 {
		t.Errorf("after concurrent writes: %q, %d", s, d)
	}
	if s, d := (&tailbuf.Buffer{}).Tail(); s != "" || d != 0 {
		t.Errorf("zero Buffer: %q, %d", s, d)
	}
}
