package main

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/muesli/termenv"
	"golang.org/x/term"

	"github.com/orca-agent/orca/tui"
)

// textOptions says how the text renderer may draw on its writer.
type textOptions struct {
	// terminal: the writer is a terminal, so the line of a running tool
	// call is animated with a spinner. Pipes and files never are.
	terminal bool
	// width is the terminal's width in columns (0: unknown). Spinner lines
	// are clipped to it: a line that wrapped could not be redrawn in place.
	width int
	// hideInput: the turn's input was typed on this terminal (orca chat),
	// so turn_started does not show it again.
	hideInput bool
	// theme colours the output (a real terminal, without NO_COLOR); the
	// zero theme colours nothing.
	theme tui.Theme
	// markdown renders the model's text as markdown, block by block, in
	// the profile's colours (a real terminal; plain text elsewhere).
	markdown bool
	profile  termenv.Profile
	// size returns the terminal's width now (0: unknown), for a terminal
	// that may be resized; nil: width.
	size func() int
}

// cols returns the terminal's width now.
func (o textOptions) cols() int {
	if o.size != nil {
		return o.size()
	}
	return o.width
}

// terminalWriter is a writer that says itself whether it is a terminal:
// the fake terminals of the tests.
type terminalWriter interface {
	terminal() (width int, ok bool)
}

// textOptionsFor returns the options of a text renderer writing to w: the
// spinner only when w is a terminal, colour and markdown only when it is a
// real one (the tests' fake terminals get today's plain lines).
func textOptionsFor(w io.Writer) textOptions {
	switch w := w.(type) {
	case terminalWriter:
		width, ok := w.terminal()
		return textOptions{terminal: ok, width: width}
	case *os.File:
		fd := int(w.Fd())
		if !term.IsTerminal(fd) {
			return textOptions{}
		}
		size := func() int {
			width, _, err := term.GetSize(fd)
			if err != nil {
				return 0
			}
			return width
		}
		p := tui.Profile(true, os.Getenv)
		return textOptions{terminal: true, width: size(), size: size, markdown: true, profile: p, theme: tui.NewTheme(w, p)}
	}
	return textOptions{}
}

// Spinner frames and pace.
const (
	spinFrames   = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
	spinInterval = 100 * time.Millisecond
)

// eraseLine moves to the start of the line and clears it.
const eraseLine = "\r\x1b[2K"

// spinner animates the line of a running tool call: its goroutine calls
// draw with the next frame and the time elapsed every spinInterval, until
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
	frames := []rune(spinFrames)
	s := &spinner{stop: make(chan struct{}), done: make(chan struct{})}
	start := time.Now()
	draw(frames[0], 0)
	go func() {
		defer close(s.done)
		tick := time.NewTicker(spinInterval)
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
