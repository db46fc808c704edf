package tui

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// inputs records what an Input did.
type inputs struct {
	sent, answers []string
	interrupts    int
	expands       int
	pastes        int
	typed         int
	eof           bool
}

func newTestInput(t *testing.T, h *History) (*Input, *inputs) {
	t.Helper()
	rec := &inputs{}
	m := NewInput(Theme{}, h, Handlers{
		Submit:    func(s string) { rec.sent = append(rec.sent, s) },
		Answer:    func(k string) { rec.answers = append(rec.answers, k) },
		Interrupt: func() { rec.interrupts++ },
		EOF:       func() { rec.eof = true },
		Expand:    func() { rec.expands++ },
		Paste:     func() { rec.pastes++ },
		Typed:     func() { rec.typed++ },
	})
	m.Update(tea.WindowSizeMsg{Width: 60, Height: 20})
	return m, rec
}

func keys(m *Input, msgs ...tea.Msg) {
	for _, k := range msgs {
		m.Update(k)
	}
}

// runes is s typed (as one key press, as a terminal's input method may
// send it).
func runes(s string) tea.KeyPressMsg {
	r := []rune(s)
	return tea.KeyPressMsg{Code: r[0], Text: s}
}

// ctrl is Ctrl and the key c.
func ctrl(c rune) tea.KeyPressMsg { return tea.KeyPressMsg{Code: c, Mod: tea.ModCtrl} }

var (
	enter = tea.KeyPressMsg{Code: tea.KeyEnter}
	up    = tea.KeyPressMsg{Code: tea.KeyUp}
	down  = tea.KeyPressMsg{Code: tea.KeyDown}
	left  = tea.KeyPressMsg{Code: tea.KeyLeft}
	ctrlC = ctrl('c')
	ctrlD = ctrl('d')
	ctrlJ = ctrl('j')
)

// Editing, new lines, the history (kept on disk), Ctrl-C and Ctrl-D.
func TestInputEditing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h", "history.jsonl")
	h, err := OpenHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	m, rec := newTestInput(t, h)
	keys(m, runes("wrld"), left, left, left, runes("o"), enter)
	if rec.typed != 6 {
		t.Errorf("Typed heard %d keys, want 6", rec.typed)
	}
	keys(m, runes("a"), tea.KeyPressMsg{Code: tea.KeyEnter, Mod: tea.ModAlt}, runes("b"), tea.KeyPressMsg{Code: tea.KeyEnter, Mod: tea.ModShift}, runes("c"), enter)
	keys(m, runes("two"), ctrlJ, runes("lines"), enter)
	keys(m, runes(`old\`), enter, runes("style"), enter)
	keys(m, enter) // nothing typed: nothing sent
	if want := []string{"world", "a\nb\nc", "two\nlines", "old\nstyle"}; !slices.Equal(rec.sent, want) {
		t.Fatalf("sent %q, want %q", rec.sent, want)
	}

	// ↑ walks back, ↓ forward to what was being typed.
	keys(m, runes("draft"), up)
	if got := m.ta.Value(); got != "old\nstyle" {
		t.Errorf("↑: %q", got)
	}
	keys(m, up) // the cursor is on the last line of "old\nstyle": ↑ moves it first
	keys(m, up)
	if got := m.ta.Value(); got != "two\nlines" {
		t.Errorf("↑↑↑: %q", got)
	}
	keys(m, down, down, down, down)
	if got := m.ta.Value(); got != "draft" {
		t.Errorf("back down: %q", got)
	}

	// Ctrl-C clears what is typed; with nothing typed it interrupts.
	keys(m, ctrlC)
	if m.ta.Value() != "" || rec.interrupts != 0 {
		t.Errorf("Ctrl-C with text: %q, %d interrupts", m.ta.Value(), rec.interrupts)
	}
	keys(m, runes("kept"), ctrl('o'))
	if rec.expands != 1 || m.ta.Value() != "kept" {
		t.Errorf("Ctrl-O: %d expands, editor %q", rec.expands, m.ta.Value())
	}
	keys(m, ctrlC, ctrlC, ctrlD)
	if rec.interrupts != 1 || !rec.eof {
		t.Errorf("%d interrupts, eof %v", rec.interrupts, rec.eof)
	}

	// The history is on disk, for the next chat.
	h2, err := OpenHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := h2.Entries(); !slices.Equal(got, rec.sent) {
		t.Errorf("the history kept %q", got)
	}
}

// A bracketed paste is inserted whole and sent by Enter as one message.
func TestInputPaste(t *testing.T) {
	m, rec := newTestInput(t, nil)
	block := "panic: boom\n\ngoroutine 1:\nmain.main()\n\t/x/main.go:3"
	keys(m, tea.PasteMsg{Content: block})
	if len(rec.sent) != 0 {
		t.Fatalf("the paste was sent: %q", rec.sent)
	}
	if v := m.View().Content; !strings.Contains(v, "\u2409/x/main.go:3") {
		t.Errorf("the tab is not shown as ␉:\n%s", v)
	}
	keys(m, enter)
	// The tab reaches the model as a tab, not the editor's spaces.
	if len(rec.sent) != 1 || rec.sent[0] != block {
		t.Errorf("sent %q, want one message %q", rec.sent, block)
	}
	// Recalled from the history, it is a tab again when sent.
	keys(m, up, enter)
	if len(rec.sent) != 2 || rec.sent[1] != block {
		t.Errorf("sent again %q", rec.sent)
	}
}

// Ctrl-V asks for the clipboard's image, and leaves what is typed alone.
func TestInputPasteImage(t *testing.T) {
	m, rec := newTestInput(t, nil)
	keys(m, runes("look at this"), ctrl('v'))
	if rec.pastes != 1 || len(rec.sent) != 0 || m.value() != "look at this" {
		t.Errorf("pastes %d, sent %q, editor %q", rec.pastes, rec.sent, m.value())
	}
}

// An approval takes only its keys pressed once it is asked: not a paste,
// not another key, and the editor keeps what was typed. While a turn
// runs, what is sent is listed as queued until the turn takes it.
func TestInputApproval(t *testing.T) {
	m, rec := newTestInput(t, nil)
	m.Update(Busy{Activity: "Thinking…"})
	keys(m, runes("also this"), enter, runes("half typ"))
	if v := m.View().Content; !strings.Contains(v, "↳ queued: also this") || !strings.Contains(v, "Thinking…") {
		t.Errorf("view:\n%s", v)
	}
	m.Update(Ask{Question: "Allow Bash rm x?", Keys: "yn", Choices: "[y] yes · [n] no"})
	keys(m, tea.PasteMsg{Content: "y"}, runes("a"), runes("x"), ctrl('y'), enter)
	if len(rec.answers) != 0 || len(rec.sent) != 1 {
		t.Fatalf("answers %q, sent %q", rec.answers, rec.sent)
	}
	if v := m.View().Content; !strings.Contains(v, "? Allow Bash rm x?") || strings.Contains(v, "half typ") {
		t.Errorf("view during the question:\n%s", v)
	}
	keys(m, tea.KeyPressMsg{Code: 'n', Text: "N", Mod: tea.ModCapsLock}) // as kitty's protocol reports it
	m.Update(Answered{})
	if !slices.Equal(rec.answers, []string{"n"}) || m.ta.Value() != "half typ" {
		t.Errorf("answers %q, editor %q", rec.answers, m.ta.Value())
	}
	m.Update(Entered{})
	// The seconds the call's spinner counts start at the answer: the wait
	// for it was not the call's.
	m.Update(Busy{Activity: "Bash rm x", Since: time.Now().Add(-90 * time.Second)})
	m.Update(Ask{Question: "Allow Bash rm x?", Keys: "yn", Choices: "[y] yes · [n] no"})
	m.Update(Answered{})
	if v := m.View().Content; !strings.Contains(v, "Bash rm x (0s") {
		t.Errorf("the spinner after the answer:\n%s", v)
	}
	m.Update(Idle{})
	if v := m.View().Content; strings.Contains(v, "queued") || strings.Contains(v, "Thinking") {
		t.Errorf("view after the turn:\n%s", v)
	}
}

// A line asked for (a field of an MCP server's form) stands above the
// editor; Enter answers it with what the editor holds — nothing too —
// and the answer is not queued into the turn.
func TestInputPrompt(t *testing.T) {
	m, rec := newTestInput(t, nil)
	m.Update(Busy{Activity: "mcp__hotel__book"})
	m.Update(Prompt{Question: "Nights (a whole number, 1–30) [2] ›"})
	keys(m, enter, runes("3"), enter)
	if !slices.Equal(rec.sent, []string{"", "3"}) {
		t.Errorf("sent %q", rec.sent)
	}
	if v := m.View().Content; !strings.Contains(v, "Nights (a whole number, 1–30) [2] ›") || strings.Contains(v, "queued") {
		t.Errorf("view during the question:\n%s", v)
	}
	m.Update(Answered{})
	keys(m, enter)
	if v := m.View().Content; strings.Contains(v, "Nights") || len(rec.sent) != 2 {
		t.Errorf("after the answer (sent %q):\n%s", rec.sent, v)
	}
}
