package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"

	"github.com/orca-agent/orca/config"
)

var sgrSeq = regexp.MustCompile("\x1b\\[[0-9;]*m")

// In a real terminal the demo is in colour: green bullets for the calls
// that succeeded, red for the one refused (--deny Bash, which also spares
// the test a go test run), the summary's mark, the model's markdown rendered (no
// backticks left) with its inline code styled.
func TestTerminalDemoColour(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	p := startPTY(t, t.TempDir(), []string{"TMPDIR=" + tmp}, "demo", "--fast", "--deny", "Bash")
	sc := p.waitFor("The workspace is kept:", 1)
	if code := p.wait(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, sc)
	}
	for _, want := range []string{"● Grep", "● Edit calc.go", "● Bash go test ./...", "✓ answered · 7 iterations · 6 tool calls"} {
		if !strings.Contains(sc, want) {
			t.Errorf("the screen lacks %q:\n%s", want, sc)
		}
	}
	if strings.Contains(sc, "`") || !strings.Contains(sc, "Fixed: Sum in calc.go") {
		t.Errorf("the answer's markdown is not rendered:\n%s", sc)
	}
	raw := p.Raw()
	for _, want := range []string{"\x1b[32m●\x1b[0m \x1b[1mEdit\x1b[0m", "\x1b[31m●\x1b[0m \x1b[1mBash\x1b[0m", "\x1b[32m✓ answered\x1b[0m", "\x1b[38;5;203mSum\x1b[0m"} {
		if !strings.Contains(raw, want) {
			t.Errorf("the output lacks %q:\n%q", want, raw)
		}
	}
}

// orca asks its terminal nothing it would wait for. Bubble Tea v1 asked
// for the background colour (OSC 11, then a cursor position report) in its
// package's init, at every start of every command, and waited 5 s for a
// terminal that does not answer (as this test's does not, nor script(1)'s,
// nor expect's). CI= keeps the question asked: termenv skips it under CI.
func TestTerminalIsNotAskedAnything(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"demo", "--fast", "--deny", "Bash"}} {
		p := startPTY(t, t.TempDir(), []string{"TMPDIR=" + t.TempDir(), "CI="}, args...)
		if code := p.wait(); code != 0 {
			t.Fatalf("orca %s: exit %d:\n%s", args[0], code, p.screen())
		}
		raw := p.Raw()
		for _, q := range []string{"\x1b]11;?", "\x1b]10;?", "\x1b[6n"} {
			if strings.Contains(raw, q) {
				t.Errorf("orca %s asked the terminal %q:\n%q", args[0], q, raw[:min(len(raw), 200)])
			}
		}
		if !strings.Contains(p.screen(), "orca") {
			t.Errorf("orca %s wrote:\n%s", args[0], p.screen())
		}
	}
}

// NO_COLOR: not one style is written; the markdown is still rendered,
// without colour.
func TestTerminalNoColor(t *testing.T) {
	t.Parallel()
	p := startPTY(t, t.TempDir(), []string{"TMPDIR=" + t.TempDir(), "NO_COLOR=1"}, "demo", "--fast", "--deny", "Bash")
	sc := p.waitFor("The workspace is kept:", 1)
	if code := p.wait(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, sc)
	}
	if m := sgrSeq.FindAllString(p.Raw(), 3); len(m) > 0 {
		t.Errorf("styles written with NO_COLOR: %q", m)
	}
	if !strings.Contains(sc, "✓ answered") || !strings.Contains(sc, "Fixed: Sum in calc.go") {
		t.Errorf("screen:\n%s", sc)
	}
}

// orca chat in a real terminal: the editor, the history, a bracketed
// paste, the thinking spinner, markdown, an approval that typed-ahead
// input cannot answer, Ctrl-C, Ctrl-D — and what reached the store is
// exactly what the person meant.
func TestTerminalChat(t *testing.T) {
	t.Parallel()
	ws, cfg := t.TempDir(), t.TempDir()
	sc := writeScript(t,
		`{"text": "Hello with **bold** and `+"`code`"+`.", "delay_ms": 1500}`,
		`{"tool_calls": [{"id": "t", "name": "Bash", "input": {"command": "touch x.txt"}}], "delay_ms": 1500, "usage": {"input_tokens": 1200, "output_tokens": 30}}`,
		`{"text": "Touched.", "delay_ms": 500, "usage": {"input_tokens": 50000, "output_tokens": 10}}`,
		`{"text": "never", "delay_ms": 60000}`,
	)
	p := startPTY(t, cfg, nil, "chat", "--script", sc, "-w", ws, "--session", "c")
	p.waitFor("session c · 0 turns", 1) // the status line

	// Typed with a typo, mended with the arrows.
	p.typ("hllo")
	p.typ("\x1b[D\x1b[D\x1b[De")
	p.waitFor("❯ hello", 1)
	sent := time.Now()
	p.typ("\r")
	p.waitFor("Thinking…", 1)
	if d := time.Since(sent); d > time.Second {
		t.Errorf("the spinner came %v after Enter", d)
	}
	// The turn has ended once its summary is drawn (turn_completed): until
	// then, what is typed goes into it, as the chat says ("↳ into the
	// turn"), and on a loaded machine the answer may show well before.
	p.waitUntil("the answer, its turn's end, and no spinner", func(s string) bool {
		return strings.Contains(s, "Hello with bold and code.") && strings.Count(s, "✓ answered") == 1 && !strings.Contains(s, "Thinking…")
	})
	if !regexp.MustCompile("\x1b\\[[0-9;]*1m[^\x1b]*bold").MatchString(p.Raw()) {
		t.Error("the answer's bold is not drawn bold")
	}

	// ↑ recalls it; Ctrl-C clears the editor.
	p.typ("\x1b[A")
	p.waitUntil("hello recalled", func(s string) bool {
		return strings.HasSuffix(lastLines(s, 3), "❯ hello") || strings.Contains(lastLines(s, 3), "❯ hello\n")
	})
	p.typ("\x03")
	p.waitUntil("the editor cleared", func(s string) bool { return !strings.Contains(lastLines(s, 3), "❯ hello") })

	// A pasted block of five lines is one message, sent by Enter, its
	// tab a tab (shown as ␉ in the editor).
	paste := "line one\nline\ttwo\nline three\nline four\nline five"
	p.typ("\x1b[200~" + paste + "\x1b[201~")
	p.waitFor("  line five", 1)
	p.waitFor("line\u2409two", 1)
	p.typ("\r")
	p.waitFor("Thinking…", 1)
	// Typed ahead of the question: a message for the turn, not an answer.
	// While it is typed, the spinner's line stays whole.
	p.typ("y")
	p.waitUntil("the spinner above the editor", func(s string) bool {
		l := strings.Split(lastLines(s, 3), "\n")
		return len(l) == 3 && strings.Contains(l[0], " Thinking… (") && strings.HasSuffix(l[0], "s · Ctrl-C interrupts)") && l[1] == "❯ y"
	})
	p.typ("\r")
	p.waitFor("↳ queued: y", 1)
	p.waitFor("? Allow Bash touch x.txt?", 1)
	if fileExists(filepath.Join(ws, "x.txt")) {
		t.Fatal("the typed-ahead y answered the question")
	}
	p.typ("y")
	p.waitFor("Thinking… · 1.2k tokens in · 30 out (", 1) // the turn's tokens so far
	p.waitFor("Touched.", 1)
	p.waitFor("✓ answered", 2)          // the turn has ended
	p.waitFor("context 25% of 200k", 1) // the status line: how full the window is
	if !fileExists(filepath.Join(ws, "x.txt")) {
		t.Error("the approved command did not run")
	}

	// Ctrl-C interrupts the turn; Ctrl-D leaves, naming the session.
	p.typ("wait\r")
	p.waitFor("Thinking…", 1)
	p.typ("\x03")
	p.waitFor("✗ interrupted", 1)
	p.typ("\x04")
	last := p.waitFor("resume it with: orca chat --session c", 1)
	if code := p.wait(); code != 0 {
		t.Errorf("exit %d:\n%s", code, last)
	}
	want := []string{"hello", paste, "y", "wait"}
	stored := show(t, ws, "c")
	if got := stored.prompts(); !slices.Equal(got, want) {
		t.Errorf("the store holds %q, want %q", got, want)
	}
	// Three turns, the interrupted one too (y went with the second); said
	// here, with the records' turns and the screen, should input typed
	// before a turn's end go into it again.
	if stored.Session.Turns != 3 {
		var recs strings.Builder
		for _, r := range stored.Records {
			fmt.Fprintf(&recs, "  %d %s %s %s\n", r.Seq, r.TurnID, r.Role, r.Kind)
		}
		t.Errorf("the store counts %d turns, want 3; its records:\n%sthe screen at the end:\n%s", stored.Session.Turns, recs.String(), last)
	}

	// The history is the workspace's: a new chat there recalls it.
	long := strings.TrimSpace(strings.Repeat("All the words of a long answer wrap at the terminal's new width. ", 4))
	var big strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&big, "row %d\n", i)
	}
	writeFileAt(t, ws, "big.txt", big.String())
	p = startPTY(t, cfg, nil, "chat", "--script", writeScript(t, `{"tool_calls": [{"name": "Read", "input": {"file_path": "big.txt"}}]}`, `{"text": "`+long+`"}`), "-w", ws, "--continue")
	p.waitFor("session c · 3 turns", 1)
	p.typ("\x1b[A")
	p.waitUntil("wait recalled", func(s string) bool { return strings.Contains(lastLines(s, 3), "❯ wait") })
	p.typ("\x1b[A")
	p.waitUntil("y recalled", func(s string) bool { return strings.Contains(lastLines(s, 3), "❯ y") })
	p.typ("\x03")

	// Narrowed to 50 columns, the next answer is wrapped to them.
	if err := pty.Setsize(p.f, &pty.Winsize{Rows: 50, Cols: 50}); err != nil {
		t.Fatal(err)
	}
	from := len(p.Raw())
	p.typ("narrow\r")
	p.waitUntil("the long answer", func(string) bool { return strings.Contains(p.Raw()[from:], "✓ answered") })
	printed := regexp.MustCompile("\x1b\\[[0-9;?]*[A-Za-z]").ReplaceAllString(p.Raw()[from:], "")
	_, answer, _ := strings.Cut(printed, "All the words")
	answer, _, _ = strings.Cut(answer, "✓ answered")
	for _, l := range strings.Split(answer, "\r\n") {
		if n := utf8.RuneCountInString(strings.TrimRight(l, " ")); n > 50 {
			t.Errorf("a line of %d columns in a terminal of 50: %q", n, l)
		}
	}
	if strings.Count(answer, "\r\n") < 5 {
		t.Errorf("the answer is not wrapped: %q", answer)
	}
	// The Read's output was folded; Ctrl-O shows it whole.
	if sc := p.screen(); !strings.Contains(sc, "… +12 lines") || strings.Contains(sc, "row 20") {
		t.Errorf("the Read's output is not folded:\n%s", sc)
	}
	p.typ("\x0f")
	p.waitFor("⎿  Read big.txt · 20 lines, whole:", 1)
	p.waitFor("row 20", 1)
	p.typ("\x04")
	if code := p.wait(); code != 0 {
		t.Errorf("exit %d:\n%s", code, p.screen())
	}
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	l := strings.Split(s, "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// One approval widget, in the chat and in orca run at a terminal: the
// question once, the policy's reason wrapped to the terminal under it with
// its indent, one key for the answer (no Enter), the answer said, and the
// call's output on a line of its own after it.
func TestTerminalApprovalWidget(t *testing.T) {
	t.Parallel()
	const cols = 80
	ask := func(t *testing.T, args ...string) *ptyProc {
		ws, cfg := t.TempDir(), t.TempDir()
		sc := writeScript(t, bashCall("b", "echo made x > x.txt && echo made-it"), `{"text": "Done."}`, `{"text": "never"}`)
		p := startPTY(t, cfg, nil, append(args, "--script", sc, "-w", ws, "--no-sandbox")...)
		if err := pty.Setsize(p.f, &pty.Winsize{Rows: 40, Cols: cols}); err != nil {
			t.Fatal(err)
		}
		p.cols = cols
		return p
	}
	check := func(t *testing.T, sc, answer string) {
		t.Helper()
		if n := strings.Count(sc, "Allow Bash echo made x > x.txt && echo made-it?"); n > 1 {
			t.Errorf("the question is shown %d times:\n%s", n, sc)
		}
		lines := strings.Split(sc, "\n")
		i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "› "+answer) })
		if i < 0 || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "  ⎿  made-it") {
			t.Errorf("the answer %q, then the output on a line of its own:\n%s", answer, sc)
		}
		// The reason's lines, from its first to the answer, each indented
		// and within the terminal (the screen would wrap a wider one).
		from := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "needs the user's") })
		if from < 0 || i < from+2 {
			t.Fatalf("no reason of two lines or more before the answer:\n%s", sc)
		}
		for _, l := range lines[from:i] {
			if !strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "     ") {
				t.Errorf("a line of the question without its indent: %q\n%s", l, sc)
			}
		}
		if !strings.HasPrefix(lines[from], "    Bash command") {
			t.Errorf("the reason's first line: %q", lines[from])
		}
	}
	t.Run("chat", func(t *testing.T) {
		p := ask(t, "chat")
		p.waitFor("session", 1)
		p.typ("go\r")
		p.waitFor("[y] yes, once · [a] yes, and allow", 1)
		p.typ("a")
		sc := p.waitFor("✓ answered", 1)
		check(t, sc, "yes, and allow Bash(echo:*), Edit(x.txt) for this session")
		p.typ("\x04")
		p.wait()
	})
	t.Run("run", func(t *testing.T) {
		p := ask(t, "run", "go")
		p.waitFor("[n] no ›", 1)
		p.typ("y") // one key, no Enter
		sc := p.waitFor("✓ answered", 1)
		check(t, sc, "yes, once")
		if code := p.wait(); code != 0 {
			t.Errorf("exit %d:\n%s", code, sc)
		}
	})
}

// A workspace that ships what only trust enables is asked about at the
// start of a chat (and of orca run) at a terminal, naming it: y trusts it
// (recorded), o for this run, n goes on without — and the warnings then
// come as whole lines above the chat, not stair-stepped by raw mode.
func TestTerminalTrustQuestion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key           string
		ran, recorded bool
	}{{"y", true, true}, {"o", true, false}, {"n", false, false}} {
		t.Run(tc.key, func(t *testing.T) {
			ws, cfg := t.TempDir(), t.TempDir()
			writeFileAt(t, ws, ".claude/settings.json", `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "touch started"}]}]}, "permissions": {"allow": ["Bash"]}}`)
			p := startPTY(t, cfg, nil, "chat", "--script", writeScript(t, `{"text": "hi"}`), "-w", ws)
			p.waitFor("Do you trust the files in this folder?", 1)
			sc := p.waitFor("[o] only for this run   [n] no ›", 1)
			if !strings.Contains(sc, ".claude/settings.json: 1 command hook and 1 allow rule") {
				t.Errorf("the question does not say what trust enables:\n%s", sc)
			}
			p.typ(tc.key)
			sc = p.waitFor("Type /help for the commands", 1)
			p.typ("\x04")
			p.wait()
			if ran := fileExists(filepath.Join(ws, "started")); ran != tc.ran {
				t.Errorf("the SessionStart hook ran: %v, want %v\n%s", ran, tc.ran, sc)
			}
			if got := config.NewTrustStore(cfg).Trusted(ws); got != tc.recorded {
				t.Errorf("trusted in the store: %v, want %v", got, tc.recorded)
			}
			if tc.key == "n" {
				// Whole lines: each starts at the left edge, none under
				// the end of the line before (a line feed without a
				// carriage return in raw mode).
				for _, want := range []string{"\norca: the workspace's own settings were only partly applied", "\nIts deny and ask rules apply."} {
					if !strings.Contains(sc, want) {
						t.Errorf("the warnings are not whole lines (%q):\n%s", want, sc)
					}
				}
			}
		})
	}
}
