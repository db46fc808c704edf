package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"
)

// ptyProc is orca — the test binary, as the command line — running in a
// pseudo-terminal of its own: the test types into it and reads its screen
// (see screen). Nothing sleeps: waitFor wakes on every write.
type ptyProc struct {
	t    *testing.T
	f    *os.File
	cmd  *exec.Cmd
	cols int
	rows int

	mu      sync.Mutex
	raw     bytes.Buffer
	changed chan struct{}
	done    chan struct{} // closed when the output has ended
	exit    chan int
}

// startPTY starts orca args in a terminal 100 columns wide, in the
// configuration folder cfgDir, with TERM=xterm-256color and env.
func startPTY(t *testing.T, cfgDir string, env []string, args ...string) *ptyProc {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), asCLI+"=1", "XDG_CONFIG_HOME="+cfgDir, "TERM=xterm-256color", "NO_COLOR=", "COLORTERM=")
	cmd.Env = append(cmd.Env, env...)
	p := &ptyProc{t: t, cmd: cmd, cols: 100, rows: 50, done: make(chan struct{}), exit: make(chan int, 1)}
	p.f, err = pty.StartWithSize(cmd, &pty.Winsize{Rows: uint16(p.rows), Cols: uint16(p.cols)})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		buf := make([]byte, 4096)
		for {
			n, err := p.f.Read(buf)
			p.mu.Lock()
			p.raw.Write(buf[:n])
			if p.changed != nil {
				close(p.changed)
				p.changed = nil
			}
			p.mu.Unlock()
			if err != nil {
				return // EIO once the process has exited
			}
		}
	}()
	go func() {
		err := cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		p.exit <- code
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
		p.f.Close()
	})
	return p
}

// typ types s, as a person would: keys, control characters and escape
// sequences (arrows, bracketed paste) as they are.
func (p *ptyProc) typ(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.f, s); err != nil {
		p.t.Fatalf("typing %q: %v", s, err)
	}
}

// Raw returns everything orca wrote.
func (p *ptyProc) Raw() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.raw.String()
}

// screen returns what the terminal shows (see render).
func (p *ptyProc) screen() string { return screenOf(p.Raw(), p.cols, p.rows) }

// waitFor waits until the screen holds s n times, and returns the screen.
func (p *ptyProc) waitFor(s string, n int) string {
	p.t.Helper()
	return p.waitUntil(s, func(sc string) bool { return strings.Count(sc, s) >= n })
}

// waitUntil waits until ok holds of the screen, and returns the screen;
// what names what is waited for.
func (p *ptyProc) waitUntil(what string, ok func(screen string) bool) string {
	p.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		// The channel is taken with the output it follows, and ok runs
		// unlocked: it may read the output itself.
		p.mu.Lock()
		raw := p.raw.String()
		if p.changed == nil {
			p.changed = make(chan struct{})
		}
		ch := p.changed
		p.mu.Unlock()
		if sc := screenOf(raw, p.cols, p.rows); ok(sc) {
			return sc
		}
		select {
		case <-ch:
		case <-p.done:
			if sc := p.screen(); ok(sc) {
				return sc
			}
			p.t.Fatalf("orca ended before the screen showed %q:\n%s", what, p.screen())
		case <-deadline:
			p.t.Fatalf("the screen never showed %q:\n%s", what, p.screen())
		}
	}
}

// wait waits for orca to exit and returns its exit code.
func (p *ptyProc) wait() int {
	p.t.Helper()
	select {
	case code := <-p.exit:
		<-p.done
		return code
	case <-time.After(30 * time.Second):
		p.t.Fatalf("orca did not exit:\n%s", p.screen())
		return -1
	}
}

// screenOf plays raw, a terminal's output, on a terminal cols wide and
// rows high, and returns what scrolled off its top followed by what it
// shows, trailing spaces and blank lines dropped: the characters as they
// stand after every carriage return, line feed (scrolling at the bottom),
// erase, insertion, deletion, cursor move and line wrap. Styles (SGR),
// modes, queries and OSC strings change nothing it shows and are skipped.
// It knows the sequences orca's output and its terminal UI use.
func screenOf(raw string, cols, rows int) string {
	var back []string // scrolled off the top
	scr := make([][]rune, rows)
	row, col := 0, 0
	savedRow, savedCol := 0, 0
	var last rune // the last character put (REP repeats it)
	clamp := func(v, lo, hi int) int { return max(lo, min(v, hi)) }
	// The lines from..rows-1 move down by n (n < 0: up by -n); what moves
	// past the bottom (top) is gone, and blank lines take the room left.
	shift := func(from, n int) {
		if n > 0 {
			n = min(n, rows-from)
			copy(scr[from+n:], scr[from:rows-n])
			clear(scr[from : from+n])
		} else if n < 0 {
			n = min(-n, rows-from)
			copy(scr[from:], scr[from+n:])
			clear(scr[rows-n:])
		}
	}
	lineFeed := func() {
		if row < rows-1 {
			row++
			return
		}
		back = append(back, string(scr[0]))
		shift(0, -1)
	}
	put := func(c rune) {
		if col >= cols { // the wrap a character past the last column makes
			col = 0
			lineFeed()
		}
		l := scr[row]
		for len(l) <= col {
			l = append(l, ' ')
		}
		l[col] = c
		scr[row] = l
		col++
		last = c
	}
	blank := func(r, from, to int) { // columns [from, to) of row r
		l := scr[r]
		for c := from; c < min(to, len(l)); c++ {
			l[c] = ' '
		}
	}
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == 0x1b && i+1 < len(raw) && raw[i+1] == '[':
			j := i + 2
			for j < len(raw) && (raw[j] < 0x40 || raw[j] > 0x7e) {
				j++
			}
			if j >= len(raw) {
				i = j
				continue
			}
			params, final := raw[i+2:j], raw[j]
			i = j + 1
			if params != "" && strings.ContainsRune("?<=>", rune(params[0])) {
				continue // a private mode, a query, a keyboard protocol
			}
			n := 1
			if v, err := strconv.Atoi(params); err == nil && v > 0 {
				n = v
			}
			col = min(col, cols-1)
			switch final {
			case 'K': // erase in line
				switch params {
				case "", "0":
					if col < len(scr[row]) {
						scr[row] = scr[row][:col]
					}
				case "1":
					blank(row, 0, col+1)
				case "2":
					scr[row] = nil
				}
			case 'J': // erase in display
				switch params {
				case "", "0":
					if col < len(scr[row]) {
						scr[row] = scr[row][:col]
					}
					clear(scr[row+1:])
				case "1":
					clear(scr[:row])
					blank(row, 0, col+1)
				case "2":
					clear(scr)
				case "3":
					back = nil
				}
			case 'A':
				row = max(0, row-n)
			case 'B', 'e':
				row = min(rows-1, row+n)
			case 'C', 'a':
				col = min(cols-1, col+n)
			case 'D':
				col = max(0, col-n)
			case 'E':
				row, col = min(rows-1, row+n), 0
			case 'F':
				row, col = max(0, row-n), 0
			case 'G', '`':
				col = clamp(n-1, 0, cols-1)
			case 'd':
				row = clamp(n-1, 0, rows-1)
			case 'H', 'f':
				r, c, _ := strings.Cut(params, ";")
				rn, _ := strconv.Atoi(r)
				cn, _ := strconv.Atoi(c)
				row, col = clamp(rn-1, 0, rows-1), clamp(cn-1, 0, cols-1)
			case 'L': // insert lines
				shift(row, n)
				col = 0
			case 'M': // delete lines
				shift(row, -n)
				col = 0
			case 'S': // scroll up
				for range min(n, rows) {
					back = append(back, string(scr[0]))
					shift(0, -1)
				}
			case 'T': // scroll down
				shift(0, n)
			case 'X': // erase characters
				blank(row, col, col+n)
			case 'P': // delete characters
				if l := scr[row]; col < len(l) {
					scr[row] = append(l[:col], l[min(len(l), col+n):]...)
				}
			case '@': // insert characters
				if l := scr[row]; col < len(l) {
					l = append(l[:col], append([]rune(strings.Repeat(" ", n)), l[col:]...)...)
					scr[row] = l[:min(len(l), cols)]
				}
			case 'b': // repeat the last character
				for range n {
					put(last)
				}
			}
		case c == 0x1b && i+1 < len(raw) && raw[i+1] == ']': // OSC, to BEL or ST
			j := i + 2
			for j < len(raw) && raw[j] != 0x07 && !(raw[j] == 0x1b && j+1 < len(raw) && raw[j+1] == '\\') {
				j++
			}
			if j < len(raw) && raw[j] == 0x1b {
				j++
			}
			i = j + 1
		case c == 0x1b && i+1 < len(raw):
			switch raw[i+1] {
			case 'M': // reverse index
				if row > 0 {
					row--
				} else {
					shift(0, 1)
				}
			case 'D': // index
				lineFeed()
			case 'E': // next line
				col = 0
				lineFeed()
			case '7':
				savedRow, savedCol = row, col
			case '8':
				row, col = savedRow, savedCol
			}
			i += 2
		case c == '\r':
			col = 0
			i++
		case c == '\n':
			lineFeed()
			i++
		case c == '\b':
			col = max(0, min(col, cols-1)-1)
			i++
		case c == '\t':
			col = min(cols-1, (col/8+1)*8)
			i++
		case c < 0x20:
			i++
		default:
			r, size := utf8.DecodeRuneInString(raw[i:])
			put(r)
			i += size
		}
	}
	out := back
	for _, l := range scr {
		out = append(out, string(l))
	}
	for i := range out {
		out[i] = strings.TrimRight(out[i], " ")
	}
	return strings.TrimRight(strings.Join(out, "\n"), "\n")
}
