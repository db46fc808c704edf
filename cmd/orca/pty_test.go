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
	p := &ptyProc{t: t, cmd: cmd, cols: 100, done: make(chan struct{}), exit: make(chan int, 1)}
	p.f, err = pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: uint16(p.cols)})
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
func (p *ptyProc) screen() string { return screenOf(p.Raw(), p.cols) }

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
		if sc := screenOf(raw, p.cols); ok(sc) {
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

// screenOf plays raw, a terminal's output, on a screen cols wide and
// returns its lines, trailing spaces and blank lines dropped: the
// characters as they stand after every carriage return, erase, cursor
// move and line wrap. Styles (SGR), modes and OSC strings change nothing
// it shows and are skipped. It knows the sequences orca's output uses.
func screenOf(raw string, cols int) string {
	var lines [][]rune
	row, col := 0, 0
	at := func(r int) []rune {
		for len(lines) <= r {
			lines = append(lines, nil)
		}
		return lines[r]
	}
	put := func(c rune) {
		if col >= cols {
			row, col = row+1, 0
		}
		l := at(row)
		for len(l) <= col {
			l = append(l, ' ')
		}
		l[col] = c
		lines[row] = l
		col++
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
			n := 1
			if v, err := strconv.Atoi(strings.TrimLeft(params, "?")); err == nil {
				n = v
			}
			switch final {
			case 'K': // erase in line
				l := at(row)
				switch params {
				case "", "0":
					if col < len(l) {
						lines[row] = l[:col]
					}
				case "2":
					lines[row] = nil
				}
			case 'J': // erase in display
				if params == "2" {
					lines = nil
				} else {
					if col < len(at(row)) {
						lines[row] = lines[row][:col]
					}
					lines = lines[:row+1]
				}
			case 'A':
				row = max(0, row-max(n, 1))
			case 'B':
				row += max(n, 1)
			case 'C':
				col += max(n, 1)
			case 'D':
				col = max(0, col-max(n, 1))
			case 'G':
				col = max(n, 1) - 1
			case 'H':
				r, c, _ := strings.Cut(params, ";")
				rn, _ := strconv.Atoi(r)
				cn, _ := strconv.Atoi(c)
				row, col = max(rn, 1)-1, max(cn, 1)-1
			}
			i = j + 1
		case c == 0x1b && i+1 < len(raw) && raw[i+1] == ']': // OSC, to BEL or ST
			j := i + 2
			for j < len(raw) && raw[j] != 0x07 && !(raw[j] == 0x1b && j+1 < len(raw) && raw[j+1] == '\\') {
				j++
			}
			if j < len(raw) && raw[j] == 0x1b {
				j++
			}
			i = j + 1
		case c == 0x1b:
			i += 2
		case c == '\r':
			col = 0
			i++
		case c == '\n':
			row++
			at(row)
			i++
		case c == '\b':
			col = max(0, col-1)
			i++
		case c == '\t':
			col = (col/8 + 1) * 8
			i++
		case c < 0x20:
			i++
		default:
			r, size := utf8.DecodeRuneInString(raw[i:])
			put(r)
			i += size
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRight(string(l), " ")
	}
	return strings.TrimRight(strings.Join(out, "\n"), "\n")
}
