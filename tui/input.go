package tui

import (
	"fmt"
	"math"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// Input is the chat's input, a bubbletea model drawn under the
// conversation (which the program prints above it): a multi-line editor
// with history, the messages queued while a turn runs, a spinner saying
// what the turn does, an approval question, and a status line.
//
// Keys: Enter sends; Alt+Enter, Shift+Enter (where the terminal tells it
// from Enter) or Ctrl+J (or a line ending with \) starts a new line; ↑
// and ↓ on the first and last line walk the history; a bracketed paste is
// inserted whole, line breaks included, and sent only with Enter; Ctrl-C clears what is typed, or with nothing typed
// interrupts (the chat decides what that means); Ctrl-D with nothing
// typed ends the input; Ctrl-O unfolds the last tool call's output.
//
// While an approval is asked (Ask), the editor is set aside, what it holds
// kept: only a key pressed from then on answers — one of Ask.Keys, or Esc
// for no — so that nothing typed ahead, or pasted, can answer for the
// user. While a line is asked for (Prompt: a field of an MCP server's
// form), the question stands above the editor, and Enter sends what the
// editor holds, even nothing, as the answer: not a message, not queued.
type Input struct {
	ta      textarea.Model
	theme   Theme
	on      Handlers
	history *History
	browse  int    // index into the history while walking it; len: not walking
	draft   string // what was typed before walking the history

	queued   []string // sent while a turn runs, not yet taken by it
	busy     bool
	activity string
	since    time.Time
	now      time.Time
	ask      *Ask
	prompt   *Prompt
	status   string
	width    int
	done     bool
}

// Handlers are what Input does with the user's input. They are called on
// the program's goroutine and must not block.
type Handlers struct {
	// Submit sends an input: a message or a command.
	Submit func(s string)
	// Answer answers the approval question with one of its keys.
	Answer func(key string)
	// Interrupt is Ctrl-C with nothing typed.
	Interrupt func()
	// EOF is Ctrl-D with nothing typed.
	EOF func()
	// Typed, if set, is told of every key pressed (the chat's idle
	// notification waits for a minute without any).
	Typed func()
	// Expand is Ctrl-O: show the last tool call's output whole (nil: the
	// key does nothing).
	Expand func()
	// Paste is Ctrl-V: attach the clipboard's image (nil: the editor's own
	// Ctrl-V, which pastes the clipboard's text).
	Paste func()
}

// Messages the chat sends the Input (tea.Program.Send).
type (
	// Busy says a turn runs and what it does now ("Thinking…", a tool
	// call's line), since when; no Activity: no spinner is shown (the
	// model's text was just printed).
	Busy struct {
		Activity string
		Since    time.Time
	}
	// Idle says no turn runs.
	Idle struct{}
	// Entered says the turn took the queued messages (or a new turn
	// started with them).
	Entered struct{}
	// Ask asks for an approval: Question is shown, and Keys are the
	// answers (such as "yan"), each described in Choices.
	Ask struct {
		Question string
		Keys     string
		Choices  string
	}
	// Prompt asks for a line of text: Question is shown above the
	// editor, whose next Enter answers it (Handlers.Submit), until
	// Answered.
	Prompt struct {
		Question string
	}
	// Answered says the approval question (or the Prompt) was answered.
	Answered struct{}
	// Status sets the status line.
	Status string
	// Quit ends the program, its view erased.
	Quit struct{}
)

type tick time.Time

// NewInput returns the chat's input, its history from h (nil: none kept).
func NewInput(theme Theme, h *History, on Handlers) *Input {
	ta := textarea.New()
	ta.Prompt = "  "
	ta.SetPromptFunc(2, func(p textarea.PromptInfo) string {
		if p.LineNumber == 0 {
			return theme.Prompt("❯ ")
		}
		return "  "
	})
	ta.ShowLineNumbers = false
	ta.CharLimit = 0
	// As tall as what it holds, soft-wrapped lines counted, up to 10
	// rows; what it may hold is not capped by its height.
	ta.DynamicHeight = true
	ta.MinHeight = 1
	ta.MaxHeight = 10
	ta.MaxContentHeight = math.MaxInt32
	ta.Placeholder = "Type a message · /help for the commands"
	st := ta.Styles()
	st.Focused.CursorLine = lipgloss.NewStyle()
	st.Focused.Base = lipgloss.NewStyle()
	ta.SetStyles(st)
	ta.KeyMap.InsertNewline = key.NewBinding(key.WithKeys("alt+enter", "shift+enter", "ctrl+j"))
	// The terminal pastes (bracketed): no reading the system clipboard
	// behind the user's back.
	ta.KeyMap.Paste.SetEnabled(false)
	ta.Focus()
	if h == nil {
		h = &History{}
	}
	return &Input{ta: ta, theme: theme, on: on, history: h, browse: len(h.entries)}
}

// Init implements tea.Model.
func (m *Input) Init() tea.Cmd { return textarea.Blink }

// Update implements tea.Model.
func (m *Input) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width = msg.Width
		m.ta.SetWidth(max(10, msg.Width-1))
		return m, nil
	case Busy:
		start := !m.busy
		m.busy, m.activity = true, msg.Activity
		if !msg.Since.IsZero() {
			m.since, m.now = msg.Since, msg.Since
		}
		if start {
			return m, m.tick()
		}
		return m, nil
	case Idle:
		m.busy, m.activity, m.ask, m.prompt = false, "", nil, nil
		return m, nil
	case Entered:
		m.queued = nil
		return m, nil
	case Ask:
		m.ask = &msg
		return m, nil
	case Prompt:
		m.prompt = &msg
		return m, nil
	case Answered:
		m.ask, m.prompt = nil, nil
		if m.busy {
			// The call runs from now: the wait for the answer was not its.
			m.since, m.now = time.Now(), time.Now()
		}
		return m, nil
	case Status:
		m.status = string(msg)
		return m, nil
	case Quit:
		m.done = true
		return m, tea.Quit
	case tick:
		if !m.busy {
			return m, nil
		}
		m.now = time.Time(msg)
		return m, m.tick()
	case tea.KeyPressMsg:
		return m, m.key(msg)
	case tea.PasteMsg:
		return m, m.paste(msg)
	}
	var cmd tea.Cmd
	m.ta, cmd = m.ta.Update(msg)
	return m, cmd
}

func (m *Input) tick() tea.Cmd {
	return tea.Tick(100*time.Millisecond, func(t time.Time) tea.Msg { return tick(t) })
}

// tabMark stands for a tab in the editor, which would turn a tab into
// spaces: the user sees ␉, and the message carries the tab.
const tabMark = "\u2409"

// value is what the editor holds, its tabs given back.
func (m *Input) value() string { return strings.ReplaceAll(m.ta.Value(), tabMark, "\t") }

// paste inserts a bracketed paste whole, line breaks included; while an
// approval is asked, nothing pasted answers it or reaches the editor.
func (m *Input) paste(msg tea.PasteMsg) tea.Cmd {
	if m.on.Typed != nil {
		m.on.Typed()
	}
	if m.ask != nil {
		return nil
	}
	msg.Content = strings.ReplaceAll(msg.Content, "\t", tabMark)
	var cmd tea.Cmd
	m.ta, cmd = m.ta.Update(msg)
	return cmd
}

func (m *Input) key(msg tea.KeyPressMsg) tea.Cmd {
	if m.on.Typed != nil {
		m.on.Typed()
	}
	if strings.Contains(msg.Text, "\t") {
		msg.Text = strings.ReplaceAll(msg.Text, "\t", tabMark)
	}
	k := msg.String()
	if m.ask != nil {
		switch r := []rune(msg.Text); {
		case k == "ctrl+c":
			m.on.Interrupt()
		case k == "esc":
			m.on.Answer("n")
		case len(r) == 1 && msg.Mod&(tea.ModCtrl|tea.ModAlt|tea.ModMeta|tea.ModSuper|tea.ModHyper) == 0 && strings.ContainsRune(m.ask.Keys, r[0]|0x20):
			m.on.Answer(string(r[0] | 0x20))
		}
		return nil // nothing else answers, and the editor waits
	}
	switch k {
	case "ctrl+o":
		if m.on.Expand != nil {
			m.on.Expand()
		}
		return nil
	case "ctrl+v":
		if m.on.Paste != nil {
			m.on.Paste()
			return nil
		}
	case "ctrl+c":
		if m.ta.Value() != "" {
			m.ta.Reset()
			m.browse = len(m.history.entries)
			return nil
		}
		m.on.Interrupt()
		return nil
	case "ctrl+d":
		if m.ta.Value() == "" {
			m.on.EOF()
			return nil
		}
	case "enter":
		v := m.value()
		if m.prompt != nil {
			// The answer to the question, whatever it is: an empty one
			// keeps a field's default.
			m.ta.Reset()
			m.on.Submit(v)
			return nil
		}
		if strings.HasSuffix(v, `\`) && m.ta.Line() == m.ta.LineCount()-1 {
			// The old way to go on on the next line.
			m.set(strings.TrimSuffix(v, `\`) + "\n")
			return nil
		}
		if strings.TrimSpace(v) == "" {
			return nil
		}
		m.history.Add(v)
		m.browse, m.draft = len(m.history.entries), ""
		m.ta.Reset()
		if m.busy && !strings.HasPrefix(v, "/") {
			m.queued = append(m.queued, v)
		}
		m.on.Submit(v)
		return nil
	case "up":
		if m.ta.Line() == 0 && m.browse > 0 {
			if m.browse == len(m.history.entries) {
				m.draft = m.value()
			}
			m.browse--
			m.set(m.history.entries[m.browse])
			return nil
		}
	case "down":
		if m.ta.Line() == m.ta.LineCount()-1 && m.browse < len(m.history.entries) {
			m.browse++
			if m.browse == len(m.history.entries) {
				m.set(m.draft)
			} else {
				m.set(m.history.entries[m.browse])
			}
			return nil
		}
	}
	var cmd tea.Cmd
	m.ta, cmd = m.ta.Update(msg)
	return cmd
}

// set replaces what is typed with s, the cursor at its end.
func (m *Input) set(s string) {
	m.ta.SetValue(strings.ReplaceAll(s, "\t", tabMark))
}

// View implements tea.Model.
func (m *Input) View() tea.View { return tea.NewView(m.view()) }

func (m *Input) view() string {
	if m.done {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n") // apart from what is printed above
	for _, q := range m.queued {
		first, _, more := strings.Cut(q, "\n")
		if more {
			first += " …"
		}
		b.WriteString(m.theme.Faint(clipTo("  ↳ queued: "+first, m.width)) + "\n")
	}
	if m.busy && m.activity != "" {
		frames := []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
		el := m.now.Sub(m.since)
		f := string(frames[int(el/(100*time.Millisecond))%len(frames)])
		line := clipTo(m.activity, m.width-30)
		b.WriteString(m.theme.Spin(f) + " " + line + m.theme.Faint(fmt.Sprintf(" (%ds · Ctrl-C interrupts)", int(el/time.Second))) + "\n")
	}
	if m.ask != nil {
		q := " ? " + m.ask.Question + " "
		if m.theme.On() {
			q = "\x1b[1;7m" + q + "\x1b[0m"
		}
		b.WriteString("  " + q + "\n    " + m.ask.Choices + "\n")
	} else {
		if m.prompt != nil {
			// The question, wrapped (a field's title and description
			// can be long), in reverse video.
			for _, l := range strings.Split(Wrap(m.prompt.Question, "", max(m.width-4, 0)), "\n") {
				if m.theme.On() {
					l = "\x1b[7m " + l + " \x1b[0m"
				}
				b.WriteString("  " + l + "\n")
			}
		}
		b.WriteString(m.ta.View() + "\n")
	}
	if m.status != "" {
		b.WriteString(m.theme.Faint(clipTo(m.status, m.width-1)))
	}
	return b.String()
}

// clipTo cuts s to n columns (runes), with an ellipsis; n <= 0: no cut.
func clipTo(s string, n int) string {
	r := []rune(s)
	if n <= 0 || len(r) <= n {
		return s
	}
	return string(r[:max(1, n-1)]) + "…"
}
