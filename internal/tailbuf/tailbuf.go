// Package tailbuf keeps the end of what is written to it: the output of a
// command or the stderr of a server, of which only the last bytes matter
// and all of which may be too much to keep.
package tailbuf

import "sync"

// Buffer keeps the last Max bytes written to it and counts the bytes it
// let go. It is safe for concurrent use; the zero value keeps nothing.
type Buffer struct {
	// Max is how many bytes are kept.
	Max int

	mu      sync.Mutex
	buf     []byte
	dropped int
}

// Write keeps p's end; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.Max; over > 0 {
		b.dropped += over
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// Tail returns what is kept, and how many bytes written before it are not.
func (b *Buffer) Tail() (string, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf), b.dropped
}
