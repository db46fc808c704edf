package tui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/orca-agent/orca/elicit"
)

// Elicitor is an elicit.Elicitor that asks the person at the terminal an
// MCP server's question, a line at a time: whether to answer it (or to
// decline or cancel it), then each field of its form — its title and
// description, what it takes (yes or no, a number and its bounds, the
// choices, numbered), its default, which Enter keeps (SEP-1034) — and,
// once filled in, whether to send it; a URL question shows the URL, which
// orca never opens itself. What a field does not take is said, and the
// field asked again. It asks one question at a time. Read and Out are
// required; the rest is for a program that owns the terminal (orca chat).
type Elicitor struct {
	// Read reads the next line the person types (LineReader), giving up
	// when ctx ends.
	Read func(ctx context.Context) (string, error)
	// Out is where the question is written.
	Out io.Writer
	// Begin and End, if set, frame each question, as Approver's do.
	Begin func(ctx context.Context) error
	End   func()
	// Ready, if set, waits until the screen is free for the question of
	// an elicitation asked in a turn (ApprovalGate.Wait, by its id).
	Ready func(ctx context.Context, id string) error
	// Asking, if set, is told each prompt as it is asked, after Begin: a
	// terminal UI shows it above its editor (Prompt), which Out then does
	// not repeat; Out gets the prompt and its answer once answered.
	Asking func(prompt string)

	mu sync.Mutex
}

// errCancelled is the person's cancel, as ask returns it.
var errCancelled = errors.New("cancelled")

// Elicit asks req and waits for the answer, or for ctx to end.
func (e *Elicitor) Elicit(ctx context.Context, req elicit.Request) (elicit.Answer, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.Ready != nil && req.TurnID != "" {
		if err := e.Ready(ctx, req.ID); err != nil {
			return elicit.Answer{}, err
		}
	}
	if e.Begin != nil {
		if err := e.Begin(ctx); err != nil {
			return elicit.Answer{}, err
		}
		if e.End != nil {
			defer e.End()
		}
	}
	f := &form{e: e, ctx: ctx, width: widthOf(e.Out)}
	ans, err := f.run(req)
	switch {
	case err == nil:
		return ans, nil
	case ctx.Err() != nil:
		f.say("(no answer: the call ended)")
		return elicit.Answer{}, ctx.Err()
	case errors.Is(err, errCancelled):
		return elicit.Answer{Action: elicit.Cancel, Reason: "The user cancelled the question."}, nil
	}
	f.say("no answer came: " + err.Error())
	return elicit.Answer{Action: elicit.Cancel, Reason: fmt.Sprintf("No answer came from the user (%v).", err)}, nil
}

// form is one question being asked.
type form struct {
	e     *Elicitor
	ctx   context.Context
	width int
}

// write writes s, failing the question when the terminal is gone.
func (f *form) write(s string) error {
	if _, err := io.WriteString(f.e.Out, s); err != nil {
		return fmt.Errorf("asking the question: %w", err)
	}
	return nil
}

// say writes a line of orca's under the question.
func (f *form) say(s string) { f.write(Wrap(Printable(s), "    ", f.width) + "\n") }

// prompt asks prompt and reads the answer, trimmed: on Out, where the
// terminal shows what is typed after it; or, with Asking, in the UI's own
// place, Out getting the prompt and its answer once answered.
func (f *form) prompt(prompt string) (string, error) {
	if f.e.Asking != nil {
		f.e.Asking(prompt + " ›")
	} else if err := f.write(Wrap(prompt+" ›", "    ", f.width) + " "); err != nil {
		return "", err
	}
	s, err := f.e.Read(f.ctx)
	if err != nil && s == "" {
		if f.e.Asking == nil {
			f.write("\n")
		}
		return "", err
	}
	s = strings.TrimSpace(strings.TrimRight(s, "\r\n"))
	if f.e.Asking != nil {
		f.write(Wrap(prompt+" › "+Printable(s), "    ", f.width) + "\n")
	}
	return s, nil
}

// choose asks prompt until the answer is one of keys (or its word).
func (f *form) choose(prompt string, keys map[string]string) (string, error) {
	for {
		s, err := f.prompt(prompt)
		if err != nil {
			return "", err
		}
		s = strings.ToLower(s)
		for k, word := range keys {
			if s == k || s == word {
				return k, nil
			}
		}
		if s == "\x1b" {
			return "c", nil
		}
		f.say("Please answer " + strings.Join(sortedKeys(keys), ", ") + ".")
	}
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for _, k := range []string{"y", "e", "d", "c"} {
		if _, ok := m[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

func (f *form) run(req elicit.Request) (elicit.Answer, error) {
	question := "? MCP server " + Printable(req.Server) + " asks"
	if IsTerminal(f.e.Out) && os.Getenv("NO_COLOR") == "" {
		// In reverse video, which the server's text (stripped of control
		// sequences) can never be: no question of a server can pass for
		// orca's own.
		question = "\x1b[1;7m " + question + " \x1b[0m"
	}
	if err := f.write("  " + question + "\n"); err != nil {
		return elicit.Answer{}, err
	}
	if msg := strings.TrimSpace(req.Message); msg != "" {
		for _, l := range strings.Split(msg, "\n") {
			f.say(l)
		}
	}
	if req.Mode == elicit.ModeURL {
		f.say("It asks you to open this page (orca does not open it; open it yourself if you trust it):")
		if err := f.write("    " + Printable(req.URL) + "\n"); err != nil {
			return elicit.Answer{}, err
		}
		k, err := f.choose("[y] yes, I open it · [d] decline · [c] cancel", map[string]string{"y": "yes", "d": "decline", "c": "cancel"})
		if err != nil {
			return elicit.Answer{}, err
		}
		return answerOf(k, nil)
	}
	fields := 0
	if req.Form != nil {
		fields = len(req.Form.Fields)
	}
	k, err := f.choose(fmt.Sprintf("[y] answer (%s) · [d] decline · [c] cancel", Plural(fields, "field")), map[string]string{"y": "yes", "d": "decline", "c": "cancel"})
	if err != nil || k != "y" {
		if err != nil {
			return elicit.Answer{}, err
		}
		return answerOf(k, nil)
	}
	start := req.Content
	for {
		content, err := f.fill(req.Form, start)
		if err != nil {
			return elicit.Answer{}, err
		}
		if req.Form == nil || len(req.Form.Fields) == 0 {
			return elicit.Answer{Action: elicit.Accept, Content: content}, nil
		}
		f.say("Send " + formSummary(req.Form, content) + "?")
		k, err := f.choose("[y] send · [e] edit · [d] decline · [c] cancel", map[string]string{"y": "yes", "e": "edit", "d": "decline", "c": "cancel"})
		if err != nil {
			return elicit.Answer{}, err
		}
		if k != "e" {
			return answerOf(k, content)
		}
		start = content
	}
}

// answerOf is the answer key k gives.
func answerOf(k string, content map[string]any) (elicit.Answer, error) {
	switch k {
	case "y":
		return elicit.Answer{Action: elicit.Accept, Content: content}, nil
	case "d":
		return elicit.Answer{Action: elicit.Decline, Reason: "The user declined."}, nil
	}
	return elicit.Answer{}, errCancelled
}

// fill asks each field of form, starting from values (the defaults, or
// what the person gave before): Enter keeps a field's value, "-" leaves
// an optional one out.
func (f *form) fill(form *elicit.Form, values map[string]any) (map[string]any, error) {
	content := map[string]any{}
	if form == nil {
		return content, nil
	}
	f.say("Enter keeps the value in brackets; - leaves a field that is not required empty.")
	for i := range form.Fields {
		fl := &form.Fields[i]
		label := Printable(cmp.Or(fl.Title, fl.Name))
		if d := strings.TrimSpace(fl.Description); d != "" {
			label += " — " + Printable(d)
		}
		if len(fl.Options) > 0 {
			f.say(label + ":")
			var opts []string
			for j, o := range fl.Options {
				opts = append(opts, fmt.Sprintf("%d) %s", j+1, Printable(o.Title)))
			}
			f.write(wrapItems(opts, "      ", f.width) + "\n")
			label = ""
		}
		hint := fieldHint(fl)
		current, has := values[fl.Name]
		if has && current != nil {
			hint += " [" + Printable(fl.Text(current)) + "]"
		}
		prompt := strings.TrimSpace(label + " " + hint)
		for {
			s, err := f.prompt(prompt)
			if err != nil {
				return nil, err
			}
			switch {
			case s == "" && has && current != nil:
				content[fl.Name] = current
			case s == "" || s == "-":
				if fl.Required {
					f.say("✗ " + fl.Name + " is required.")
					continue
				}
			default:
				v, err := fl.Parse(s)
				if err != nil {
					f.say("✗ " + err.Error())
					continue
				}
				content[fl.Name] = v
			}
			break
		}
	}
	return content, nil
}

// fieldHint says what a field takes.
func fieldHint(fl *elicit.Field) string {
	var h []string
	switch fl.Kind {
	case elicit.KindBoolean:
		h = append(h, "y/n")
	case elicit.KindEnum:
		h = append(h, fmt.Sprintf("1–%d", len(fl.Options)))
	case elicit.KindMulti:
		h = append(h, "numbers, separated by commas")
	case elicit.KindInteger, elicit.KindNumber:
		what := "a number"
		if fl.Kind == elicit.KindInteger {
			what = "a whole number"
		}
		switch {
		case fl.Minimum != nil && fl.Maximum != nil:
			what += fmt.Sprintf(", %g–%g", *fl.Minimum, *fl.Maximum)
		case fl.Minimum != nil:
			what += fmt.Sprintf(", at least %g", *fl.Minimum)
		case fl.Maximum != nil:
			what += fmt.Sprintf(", at most %g", *fl.Maximum)
		}
		h = append(h, what)
	case elicit.KindString:
		if fl.Format != "" {
			h = append(h, fl.Format)
		}
	}
	if fl.Required {
		h = append(h, "required")
	}
	if len(h) == 0 {
		return ""
	}
	return "(" + strings.Join(h, ", ") + ")"
}

// formSummary lists content's values, in the form's order.
func formSummary(form *elicit.Form, content map[string]any) string {
	var parts []string
	for i := range form.Fields {
		fl := &form.Fields[i]
		if v, ok := content[fl.Name]; ok {
			parts = append(parts, fl.Name+" = "+OneLine(fl.Text(v), 60))
		}
	}
	if len(parts) == 0 {
		return "an empty form"
	}
	return strings.Join(parts, ", ")
}
