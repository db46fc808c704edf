package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/tool"
)

func TestObservation(t *testing.T) {
	long := strings.Repeat("x", 500)
	lines := make([]string, 20)
	for i := range lines {
		lines[i] = "line"
	}
	for _, tc := range []struct {
		name, out string
		isError   bool
		want      string
	}{
		{"empty", "", false, "  ⎿  (no output)\n"},
		{"one line", "ok\n", false, "  ⎿  ok\n"},
		{"error", "no such file: a.txt", true, "  ✗  no such file: a.txt\n"},
		{"long line", long, false, "  ⎿  " + strings.Repeat("x", MaxLineRunes-1) + "…\n"},
		{"long error", long, true, "  ✗  " + long + "\n"}, // a refusal's hint comes last: never cut
		{"many lines", strings.Join(lines, "\n"), false,
			"  ⎿  line\n" + strings.Repeat("     line\n", maxObservationLines-1) + "     … +12 lines\n"},
		{"control characters", "a\x1b[31mred\r\n", false, "  ⎿  ared\n"},
		{"diagnostics after many lines", strings.Join(lines, "\n") + "\n\n<diagnostics>\nThe language servers found new problems in the files changed:\nmain.go:6:14: error: undefined: x [compiler]\n</diagnostics>", false,
			"  ⎿  line\n" + strings.Repeat("     line\n", maxObservationLines-1) + "     … +12 lines\n" +
				"     ⚠ The language servers found new problems in the files changed:\n     ⚠ main.go:6:14: error: undefined: x [compiler]\n"},
		{"diagnostics alone", "\n\n<diagnostics>\nNot checked (a.go): gopls exited\n</diagnostics>", false, "  ⎿  ⚠ Not checked (a.go): gopls exited\n"},
	} {
		if got := Observation(tc.out, tc.isError); got != tc.want {
			t.Errorf("%s: got\n%q\nwant\n%q", tc.name, got, tc.want)
		}
	}
}

// The header of a call says what its tool declares it does (tool.Display),
// and shows the arguments of a tool that declares nothing.
func TestToolHeader(t *testing.T) {
	display := app.ToolDisplays(t.TempDir())
	for _, tc := range []struct {
		name, input, want string
	}{
		{"Read", `{"file_path": "a.go", "offset": 10, "limit": 5}`, "● Read a.go from line 10 (5 lines)\n"},
		{"Edit", `{"file_path": "a.go", "old_string": "a", "new_string": "b", "replace_all": true}`, "● Edit a.go (all occurrences)\n"},
		{"Grep", `{"pattern": "func Sum", "path": "pkg", "glob": "*.go"}`, "● Grep \"func Sum\" in pkg (*.go)\n"},
		{"Glob", `{"pattern": "**/*.go"}`, "● Glob **/*.go\n"},
		{"Bash", `{"command": "go test ./...\necho done"}`, "● Bash go test ./... …\n"},
		{"TodoWrite", `{"todos": [{"content": "a", "status": "completed", "activeForm": "A"}, {"content": "b", "status": "in_progress", "activeForm": "B"}, {"content": "c", "status": "pending", "activeForm": "C"}]}`,
			"● TodoWrite\n  ☒ a\n  ◐ b\n  ☐ c\n"},
		{"TodoWrite", `{"todos": [{"content": "x", "status": "weird"}]}`, "● TodoWrite\n  ? x\n"},
		{"Other", `{"x": 1}`, "● Other {\"x\":1}\n"},
		{"Other", `{}`, "● Other\n"},
		{"Read", `{"file_path": `, "● Read (arguments are not valid JSON: {\"file_path\":)\n"},
	} {
		if got := ToolHeader(tc.name, json.RawMessage(tc.input), display(tc.name, json.RawMessage(tc.input))); got != tc.want {
			t.Errorf("%s %s: got %q, want %q", tc.name, tc.input, got, tc.want)
		}
	}
}

func TestSummary(t *testing.T) {
	for _, tc := range []struct {
		usage llm.Usage
		took  time.Duration
		want  string
	}{
		{llm.Usage{}, 0, "✓ answered · 2 iterations · 1 tool call\n"},
		{llm.Usage{InputTokens: 1000, CacheReadTokens: 200, OutputTokens: 340}, 1500 * time.Millisecond,
			"✓ answered · 2 iterations · 1 tool call · 1.2k tokens in · 340 out · 1.5s\n"},
		{llm.Usage{InputTokens: 12}, 677 * time.Millisecond, "✓ answered · 2 iterations · 1 tool call · 12 tokens in · 677ms\n"},
		{llm.Usage{OutputTokens: 9}, 0, "✓ answered · 2 iterations · 1 tool call · 9 tokens out\n"},
	} {
		d := &event.TurnCompletedData{StopReason: "answered", Iterations: 2, ToolCalls: 1, Usage: tc.usage}
		if got := summary(d, tc.took); got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.usage, got, tc.want)
		}
	}
	d := &event.TurnCompletedData{StopReason: "max_iterations", Iterations: 1, Error: "it broke\nbadly"}
	if got, want := summary(d, 0), "✗ max iterations · 1 iteration · 0 tool calls\n  it broke\n  badly\n"; got != want {
		t.Errorf("failed turn: got %q, want %q", got, want)
	}
}

func TestTokenCount(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 340: "340", 999: "999", 1000: "1k", 1234: "1.2k", 12_345: "12.3k", 99_949: "99.9k",
		99_950: "100k", 123_456: "123k", 999_499: "999k", 999_500: "1M", 1_234_567: "1.2M",
	} {
		if got := TokenCount(n); got != want {
			t.Errorf("TokenCount(%d) = %q, want %q", n, got, want)
		}
	}
}

// fakeTerminal is a writer that passes for a terminal width columns wide
// (0: unknown). It is safe for concurrent use: the spinner writes from its
// own goroutine.
type fakeTerminal struct {
	width int
	mu    sync.Mutex
	buf   bytes.Buffer
}

func (f *fakeTerminal) Terminal() (int, bool) { return f.width, true }

func (f *fakeTerminal) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.Write(p)
}

func (f *fakeTerminal) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.String()
}

// newEvent returns an event called name, stamped now.
func newEvent(name event.Name, data any) event.Event {
	return event.Event{Name: name, Time: time.Now(), Data: data}
}

// toolEvent returns a tool event as the runtime emits it: a start says how
// the tool shows the call.
func toolEvent(name event.Name, tool, input, output string) event.Event {
	if name == event.ToolExecStarted {
		display := testDisplays()(tool, json.RawMessage(input))
		return newEvent(name, &event.ToolStartedData{ToolName: tool, Input: json.RawMessage(input), Summary: display.Summary, Detail: display.Detail})
	}
	return newEvent(name, &event.ToolData{ToolName: tool, Input: json.RawMessage(input), Output: output, IsError: name == event.ToolExecFailed})
}

// testDisplays is how the default tools show their calls.
var testDisplays = sync.OnceValue(func() func(string, json.RawMessage) tool.Display { return app.ToolDisplays(os.TempDir()) })

// spinFrame returns the line the spinner draws for tick i (0: the first
// frame, drawn at once) of a tool call shown as line, at SpinInterval per
// tick.
func spinFrame(i int, line string) string {
	frames := []rune(SpinFrames)
	elapsed := time.Duration(i) * SpinInterval
	return EraseLine + string(frames[i%len(frames)]) + " " + line + " (" + strconv.Itoa(int(elapsed/time.Second)) + "s)"
}

// The spinner's tests run in a synctest bubble: time is fake, so a
// time.Sleep there advances the clock at once, and synctest.Wait returns
// when the spinner's goroutine is blocked again, having drawn what it had
// to. synctest.Test also fails if the goroutine outlives the test.

func TestSpinner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &fakeTerminal{}
		r := NewText(t.Context(), out, OptionsFor(out))
		r.Render(newEvent(event.TurnStarted, &event.TurnStartedData{Input: "fix it"}))
		r.Render(toolEvent(event.ToolExecStarted, "Read", `{"file_path": "calc.go"}`, ""))
		// The first frame is drawn at once.
		want := "❯ fix it\n\n" + spinFrame(0, "Read calc.go")
		if got := out.String(); got != want {
			t.Fatalf("when the tool starts:\ngot  %q\nwant %q", got, want)
		}
		synctest.Wait()
		if got := out.String(); got != want {
			t.Fatalf("the spinner drew before its first tick:\ngot  %q\nwant %q", got, want)
		}
		// One frame per tick, with the seconds elapsed.
		time.Sleep(1200 * time.Millisecond)
		synctest.Wait()
		for i := 1; i <= 12; i++ {
			want += spinFrame(i, "Read calc.go")
		}
		if got := out.String(); got != want {
			t.Fatalf("after 1.2s:\ngot  %q\nwant %q", got, want)
		}
		// The tool's end stops the spinner at once: its goroutine has
		// exited when render returns, and the bullet line is written once.
		sp := r.spin
		r.Render(toolEvent(event.ToolExecCompleted, "Read", `{"file_path": "calc.go"}`, "package calc\n"))
		select {
		case <-sp.done:
		default:
			t.Fatal("the spinner's goroutine is still running after the tool completed")
		}
		if r.spin != nil {
			t.Error("the renderer still has a spinner")
		}
		want += EraseLine + "● Read calc.go\n  ⎿  package calc\n"
		time.Sleep(time.Second)
		synctest.Wait()
		if got := out.String(); got != want {
			t.Fatalf("after the tool completed:\ngot  %q\nwant %q", got, want)
		}
		// The next tool call gets a spinner of its own, from frame 0; a
		// failure ends it too. TodoWrite spins on its first line and shows
		// its list when it ends.
		r.Render(toolEvent(event.ToolExecStarted, "TodoWrite", `{"todos": [{"content": "a", "status": "pending"}]}`, ""))
		time.Sleep(SpinInterval)
		synctest.Wait()
		r.Render(toolEvent(event.ToolExecFailed, "TodoWrite", `{"todos": [{"content": "a", "status": "pending"}]}`, "bad list"))
		want += "\n" + spinFrame(0, "TodoWrite") + spinFrame(1, "TodoWrite") + EraseLine + "● TodoWrite\n  ☐ a\n  ✗  bad list\n"
		r.Close()
		if got := out.String(); got != want {
			t.Fatalf("after a failed tool:\ngot  %q\nwant %q", got, want)
		}
		if err := r.Err(); err != nil {
			t.Error(err)
		}
	})
}

// A running call's progress is shown in its spinner's line, after the
// seconds, from the next frame on; another call's, or a fork's, changes
// nothing, and nothing is written where lines are written once.
func TestSpinnerShowsProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &fakeTerminal{}
		r := NewText(t.Context(), out, OptionsFor(out))
		start := newEvent(event.ToolExecStarted, &event.ToolStartedData{ToolUseID: "u1", ToolName: "mcp__files__index", Input: json.RawMessage(`{}`)})
		progress := func(id string, depth int, p, total float64, msg string) event.Event {
			e := newEvent(event.ToolProgress, &event.ToolProgressData{ToolUseID: id, ToolName: "mcp__files__index", Progress: p, Total: total, Message: msg})
			e.Depth = depth
			return e
		}
		r.Render(start)
		want := spinFrame(0, "mcp__files__index")
		r.Render(progress("u1", 0, 2, 5, "indexing\nsrc/"))
		r.Render(progress("other", 0, 9, 9, "not this call"))
		r.Render(progress("u1", 1, 1, 1, "a fork's"))
		time.Sleep(SpinInterval)
		synctest.Wait()
		want += EraseLine + string([]rune(SpinFrames)[1]) + " mcp__files__index (0s · 2/5 indexing src/)"
		r.Render(progress("u1", 0, 40, 100, ""))
		time.Sleep(SpinInterval)
		synctest.Wait()
		want += EraseLine + string([]rune(SpinFrames)[2]) + " mcp__files__index (0s · 40%)"
		r.Render(newEvent(event.ToolExecCompleted, &event.ToolData{ToolUseID: "u1", ToolName: "mcp__files__index", Input: json.RawMessage(`{}`), Output: "done"}))
		want += EraseLine + "● mcp__files__index\n  ⎿  done\n"
		r.Close()
		if got := out.String(); got != want {
			t.Fatalf("got  %q\nwant %q", got, want)
		}

		var plain bytes.Buffer
		r = NewText(t.Context(), &plain, Options{})
		r.Render(start)
		r.Render(progress("u1", 0, 1, 2, "half"))
		r.Close()
		if got := plain.String(); strings.Contains(got, "half") {
			t.Errorf("progress written where lines are written once: %q", got)
		}
	})
}

func TestSpinnerStopsWhenCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		out := &fakeTerminal{}
		r := NewText(ctx, out, OptionsFor(out))
		r.Render(toolEvent(event.ToolExecStarted, "Bash", `{"command": "sleep 100"}`, ""))
		time.Sleep(SpinInterval)
		synctest.Wait()
		sp := r.spin
		cancel()
		synctest.Wait()
		select {
		case <-sp.done:
		default:
			t.Fatal("the spinner's goroutine is still running after the context was cancelled")
		}
		// No more frames; the call's end still replaces the line.
		time.Sleep(time.Second)
		synctest.Wait()
		want := spinFrame(0, "Bash sleep 100") + spinFrame(1, "Bash sleep 100")
		if got := out.String(); got != want {
			t.Fatalf("after the cancellation:\ngot  %q\nwant %q", got, want)
		}
		r.Render(toolEvent(event.ToolExecFailed, "Bash", `{"command": "sleep 100"}`, "cancelled"))
		want += EraseLine + "● Bash sleep 100\n  ✗  cancelled\n"
		if got := out.String(); got != want {
			t.Fatalf("after the tool failed:\ngot  %q\nwant %q", got, want)
		}
	})
}

func TestSpinnerEndsWithTheTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The stream ends while a tool runs: close stops the spinner and
		// leaves the bullet line.
		out := &fakeTerminal{}
		r := NewText(t.Context(), out, OptionsFor(out))
		r.Render(toolEvent(event.ToolExecStarted, "Glob", `{"pattern": "*.go"}`, ""))
		sp := r.spin
		r.Close()
		select {
		case <-sp.done:
		default:
			t.Fatal("the spinner's goroutine is still running after close")
		}
		r.Close() // twice is fine
		if got, want := out.String(), spinFrame(0, "Glob *.go")+EraseLine+"● Glob *.go\n"; got != want {
			t.Fatalf("closed:\ngot  %q\nwant %q", got, want)
		}

		// Any other event ends the spinner too, before it is shown.
		out = &fakeTerminal{}
		r = NewText(t.Context(), out, OptionsFor(out))
		r.Render(toolEvent(event.ToolExecStarted, "Glob", `{"pattern": "*.go"}`, ""))
		r.Render(newEvent(event.TurnCompleted, &event.TurnCompletedData{StopReason: "failed", Iterations: 1, ToolCalls: 1, Error: "boom"}))
		r.Close()
		if got, want := out.String(), spinFrame(0, "Glob *.go")+EraseLine+"● Glob *.go\n\n✗ failed · 1 iteration · 1 tool call\n  boom\n"; got != want {
			t.Fatalf("turn completed:\ngot  %q\nwant %q", got, want)
		}
	})
}

func TestSpinnerWidth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The spinner's line fits in the terminal, less its last column;
		// the final bullet line is not clipped.
		out := &fakeTerminal{width: 20}
		r := NewText(t.Context(), out, OptionsFor(out))
		r.Render(toolEvent(event.ToolExecStarted, "Read", `{"file_path": "a/long/path/to/file.go"}`, ""))
		r.Close()
		line := "⠋ Read a/long… (0s)"
		if n := utf8.RuneCountInString(line); n != 19 {
			t.Fatalf("the test's line is %d runes", n)
		}
		if got, want := out.String(), EraseLine+line+EraseLine+"● Read a/long/path/to/file.go\n"; got != want {
			t.Fatalf("got  %q\nwant %q", got, want)
		}
	})
}

func TestNoSpinnerOffTerminal(t *testing.T) {
	// Not a terminal: the bullet line is written when the tool starts, no
	// goroutine is started and nothing is redrawn.
	var out bytes.Buffer
	if opt := OptionsFor(&out); opt.Terminal {
		t.Fatal("a buffer passes for a terminal")
	}
	if opt := OptionsFor(os.Stdout); opt.Terminal {
		t.Skip("the tests' stdout is a terminal") // go test runs them with stdout on a pipe
	}
	r := NewText(t.Context(), &out, OptionsFor(os.Stdout))
	r.Render(toolEvent(event.ToolExecStarted, "Read", `{"file_path": "calc.go"}`, ""))
	if r.spin != nil {
		t.Fatal("a spinner started off a terminal")
	}
	if got, want := out.String(), "● Read calc.go\n"; got != want {
		t.Fatalf("when the tool starts: got %q, want %q", got, want)
	}
	r.Render(toolEvent(event.ToolExecCompleted, "Read", `{"file_path": "calc.go"}`, "ok"))
	r.Close()
	if got, want := out.String(), "● Read calc.go\n  ⎿  ok\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// A failed hook is shown under the tool call it belongs to, or on its own.
func TestHookFailedLine(t *testing.T) {
	var out bytes.Buffer
	r := NewText(t.Context(), &out, Options{})
	r.Render(newEvent(event.TurnStarted, &event.TurnStartedData{Input: "go"}))
	r.Render(newEvent(event.HookFailed, &event.HookFailedData{Hook: "USER_PROMPT_SUBMIT", Handler: "s.json#UserPromptSubmit[0].hooks[0]", Error: "command \"x\" exited with status 1: boom"}))
	r.Render(toolEvent(event.ToolExecStarted, "Read", `{"file_path": "a.go"}`, ""))
	r.Render(newEvent(event.HookFailed, &event.HookFailedData{Hook: "PRE_TOOL_USE", Handler: "s.json#PreToolUse[0].hooks[0]", Error: "timed out\nafter 1s"}))
	r.Render(toolEvent(event.ToolExecCompleted, "Read", `{"file_path": "a.go"}`, "package a"))
	r.Close()
	want := "❯ go\n\n" +
		"! hook s.json#UserPromptSubmit[0].hooks[0] failed: command \"x\" exited with status 1: boom\n\n" +
		"● Read a.go\n" +
		"  ! hook s.json#PreToolUse[0].hooks[0] failed: timed out after 1s\n" +
		"  ⎿  package a\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestForkLines(t *testing.T) {
	var out bytes.Buffer
	r := NewText(t.Context(), &out, Options{})
	fork := func(depth int, ev event.Event) event.Event { ev.Depth = depth; return ev }
	r.Render(newEvent(event.TurnStarted, &event.TurnStartedData{Input: "go"}))
	r.Render(toolEvent(event.ToolExecStarted, "Task", `{"description": "Find it", "prompt": "…", "subagent_type": "explorer"}`, ""))
	r.Render(fork(1, newEvent(event.TurnStarted, &event.TurnStartedData{Input: "…"})))
	r.Render(fork(1, toolEvent(event.ToolExecStarted, "Read", `{"file_path": "a.go"}`, "")))
	r.Render(fork(1, toolEvent(event.ToolExecCompleted, "Read", `{"file_path": "a.go"}`, "package a")))
	r.Render(fork(2, toolEvent(event.ToolExecStarted, "Grep", `{"pattern": "x"}`, "")))
	r.Render(fork(2, toolEvent(event.ToolExecFailed, "Grep", `{"pattern": "x"}`, "bad pattern\nmore")))
	r.Render(fork(1, newEvent(event.TurnCompleted, &event.TurnCompletedData{StopReason: "answered", Iterations: 2, ToolCalls: 1})))
	r.Render(toolEvent(event.ToolExecCompleted, "Task", `{}`, "found it"))
	r.Close()
	want := "❯ go\n\n" +
		"● Task Find it (explorer)\n" +
		"  │ ● Read a.go\n" +
		"  │   │ ● Grep \"x\"\n" +
		"  │   │   ✗ bad pattern\n" +
		"  │ ✓ answered · 2 iterations · 1 tool call\n" +
		"  ⎿  found it\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// No control sequence the model writes reaches the terminal or the pipe:
// not a title, a clipboard write, a clear screen, a cursor move, a
// carriage return over a line or a bidirectional override.
func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"plain text\n\twith a tab":              "plain text\n\twith a tab",
		"\x1b]0;pwned title\x07after":           "after",
		"\x1b]52;c;Y3VybCBldmlsfHNo\x1b\\after": "after",
		"\x1b[2J\x1b[H? Allow Read x? [y]":      "? Allow Read x? [y]",
		"\x1b[1A\x1b[2Kover the line above":     "over the line above",
		"rm -rf x\r? Allow ls":                  "rm -rf x? Allow ls",
		"\u202egnp.exe":                         "gnp.exe",
		"\x9b2Jone-byte CSI":                    "2Jone-byte CSI",
		"split at the end \x1b":                 "split at the end ",
		"bells \a and back\bspaces":             "bells  and backspaces",
		"\x1bc reset":                           " reset",
		"ünïcødé, emoji 🐋 and CJK 漢字 stay":      "ünïcødé, emoji 🐋 and CJK 漢字 stay",
	} {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

// While the model is asked, a terminal shows a spinner with the seconds
// elapsed and, from the second call on, the turn's tokens so far; thinking
// deltas of a tool call's input keep it, the first words erase it, and the text starts on its
// line. Off a terminal nothing of it is written.
func TestThinkingSpinner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &fakeTerminal{}
		r := NewText(t.Context(), out, OptionsFor(out))
		call := func(name event.Name, u *llm.Usage) event.Event {
			if name == event.LLMCallStarted {
				return newEvent(name, &event.LLMCallStartedData{Iteration: 1})
			}
			return newEvent(name, &event.LLMCallData{Iteration: 1, Usage: u})
		}
		delta := func(typ llm.DeltaType, text string) event.Event {
			return newEvent(event.LLMDelta, &event.LLMDeltaData{Iteration: 1, Delta: llm.Delta{Type: typ, Text: text}})
		}
		r.Render(newEvent(event.TurnStarted, &event.TurnStartedData{Input: "fix it"}))
		r.Render(call(event.LLMCallStarted, nil))
		want := "❯ fix it\n\n" + spinFrame(0, "Thinking…")
		if got := out.String(); got != want {
			t.Fatalf("when the model is asked:\ngot  %q\nwant %q", got, want)
		}
		time.Sleep(1000 * time.Millisecond)
		synctest.Wait()
		r.Render(delta(llm.DeltaToolInput, `{"pat`))
		for i := 1; i <= 10; i++ {
			want += spinFrame(i, "Thinking…")
		}
		if got := out.String(); got != want {
			t.Fatalf("after 1s and a tool input delta:\ngot  %q\nwant %q", got, want)
		}
		r.Render(delta(llm.DeltaText, "I'll look."))
		r.Render(call(event.LLMCallCompleted, &llm.Usage{InputTokens: 1200, OutputTokens: 30}))
		want += EraseLine + "I'll look.\n"
		if got := out.String(); got != want {
			t.Fatalf("after the first words:\ngot  %q\nwant %q", got, want)
		}
		// A tool call, then the next model call: its spinner says the
		// tokens so far; a call that ends without text just erases it.
		r.Render(toolEvent(event.ToolExecStarted, "Glob", `{"pattern": "*.go"}`, ""))
		r.Render(toolEvent(event.ToolExecCompleted, "Glob", `{"pattern": "*.go"}`, "a.go"))
		r.Render(call(event.LLMCallStarted, nil))
		r.Render(call(event.LLMCallCompleted, nil))
		r.Close()
		want += "\n" + spinFrame(0, "Glob *.go") + EraseLine + "● Glob *.go\n  ⎿  a.go\n\n" +
			EraseLine + "⠋ Thinking… (0s · 1.2k tokens in · 30 out)" + EraseLine
		if got := out.String(); got != want {
			t.Fatalf("the second call:\ngot  %q\nwant %q", got, want)
		}

		var plain bytes.Buffer
		r = NewText(t.Context(), &plain, Options{})
		r.Render(call(event.LLMCallStarted, nil))
		r.Render(delta(llm.DeltaText, "Hi."))
		r.Render(call(event.LLMCallCompleted, nil))
		r.Close()
		if got := plain.String(); got != "Hi.\n" {
			t.Errorf("off a terminal: %q", got)
		}
	})
}

// Calls of one response that ran at once end in any order: each output is
// drawn under its own call's header, the header drawn again when another
// call's was drawn since.
func TestParallelCallsEachUnderTheirHeader(t *testing.T) {
	var out bytes.Buffer
	r := NewText(t.Context(), &out, Options{})
	ev := func(name event.Name, d any) event.Event { return event.Event{Name: name, Data: d} }
	glob := &event.ToolStartedData{ToolUseID: "g", ToolName: "Glob", Input: json.RawMessage(`{"pattern":"*"}`), Summary: "*"}
	read := &event.ToolStartedData{ToolUseID: "r", ToolName: "Read", Input: json.RawMessage(`{"file_path":"a.go"}`), Summary: "a.go"}
	r.Render(ev(event.ToolExecStarted, glob))
	r.Render(ev(event.ToolExecStarted, read))
	r.Render(ev(event.ToolExecCompleted, &event.ToolData{ToolUseID: "r", ToolName: "Read", Output: "package a"}))
	r.Render(ev(event.ToolExecCompleted, &event.ToolData{ToolUseID: "g", ToolName: "Glob", Output: "a.go\nb.go"}))
	got := out.String()
	readAt, globAgain := strings.Index(got, "● Read a.go\n  ⎿  package a"), strings.LastIndex(got, "● Glob *\n  ⎿  a.go")
	if readAt < 0 || globAgain < readAt || strings.Count(got, "● Glob *") != 2 {
		t.Errorf("output:\n%s", got)
	}
}
