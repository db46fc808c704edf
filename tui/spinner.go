package tui

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/muesli/termenv"
	"golang.org/x/term"
)

// Options says how the text renderer may draw on its writer.
type Options struct {
	// Terminal: the writer is a terminal, so the line of a running tool
	// call is animated with a spinner. Pipes and files never are.
	Terminal bool
	// Width is the terminal's width in columns (0: unknown). Spinner lines
	// are clipped to it: a line that wrapped could not be redrawn in place.
	Width int
	// HideInput: the turn's input was typed on this terminal (orca chat),
	// so turn_started does not show it again.
	HideInput bool
	// Theme colours the output (a real terminal, without NO_COLOR); the
	// zero theme colours nothing.
	Theme Theme
	// Markdown renders the model's text as markdown, block by block, in
	// Profile's colours (a real terminal; plain text elsewhere).
	Markdown bool
	Profile  termenv.Profile
	// Size returns the terminal's width now (0: unknown), for a terminal
	// that may be resized; nil: Width.
	Size func() int
}

// cols returns the terminal's width now.
func (o Options) cols() int {
	if o.Size != nil {
		return o.Size()
	}
	return o.Width
}

// TerminalWriter is a writer that says itself whether it is a terminal:
// the fake terminals of the tests.
type TerminalWriter interface {
	Terminal() (width int, ok bool)
}

// OptionsFor returns the options of a text renderer writing to w: the
// spinner only when w is a terminal, colour and markdown only when it is a
// real one (the tests' fake terminals get today's plain lines).
func OptionsFor(w io.Writer) Options {
	switch w := w.(type) {
	case TerminalWriter:
		width, ok := w.Terminal()
		return Options{Terminal: ok, Width: width}
	case *os.File:
		fd := int(w.Fd())
		if !term.IsTerminal(fd) {
			return Options{}
		}
		size := func() int {
			width, _, err := term.GetSize(fd)
			if err != nil {
				return 0
			}
			return width
		}
		p := Profile(true, os.Getenv)
		return Options{Terminal: true, Width: size(), Size: size, Markdown: true, Profile: p, Theme: NewTheme(w, p)}
	}
	return Options{}
}

// Spinner frames and pace.
const (
	SpinFrames   = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
	SpinInterval = 100 * time.Millisecond
)

// EraseLine moves to the start of the line and clears it.
const EraseLine = "\r\x1b[2K"

// spinner animates the line of a running tool call: its goroutine calls
// draw with the next frame and the time elapsed every SpinInterval, until
// halt is called or ctx is done.
//
// While it runs, the spinner's goroutine is the only one that draws: the
// renderer halts it, which waits for the goroutine to exit, before it
// writes anything else. So the two never write at the same time, and
// whatever the goroutine wrote happens before the renderer's next write.
type spinner struct {
	stop chan struct{} // closed by halt
	done chan struct{} // closed when the goroutine has exited
}

// startSpinner draws the first frame at once, then starts the goroutine
// that redraws.
func startSpinner(ctx context.Context, draw func(frame rune, elapsed time.Duration)) *spinner {
	frames := []rune(SpinFrames)
	s := &spinner{stop: make(chan struct{}), done: make(chan struct{})}
	start := time.Now()
	draw(frames[0], 0)
	go func() {
		defer close(s.done)
		tick := time.NewTicker(SpinInterval)
		defer tick.Stop()
		for i := 1; ; i++ {
			select {
			case <-s.stop:
				return
			case <-ctx.Done():
				// The turn is being cancelled: stop animating. The line
				// stays as it is until the tool call's end replaces it.
				return
			case <-tick.C:
				draw(frames[i%len(frames)], time.Since(start))
			}
		}
	}()
	return s
}

// halt stops the spinner and returns once its goroutine has exited. It
// must be called exactly once.
func (s *spinner) halt() {
	close(s.stop)
	<-s.done
}
