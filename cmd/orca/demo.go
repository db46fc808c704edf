package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/sandbox"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tui"
)

// The demo project: a Go package with no dependencies whose Sum skips the
// first number, and a test that catches it.
var demoFiles = []struct{ name, content string }{
	{"go.mod", "module example.com/calc\n\ngo 1.21\n"},
	{"calc.go", demoBuggy},
	{"calc_test.go", `package calc

import "testing"

func TestSum(t *testing.T) {
	cases := []struct {
		xs   []int
		want int
	}{
		{nil, 0},
		{[]int{5}, 5},
		{[]int{1, 2, 3}, 6},
	}
	for _, c := range cases {
		if got := Sum(c.xs); got != c.want {
			t.Errorf("Sum(%v) = %d, want %d", c.xs, got, c.want)
		}
	}
}

func TestMean(t *testing.T) {
	if got := Mean([]int{2, 4, 6}); got != 4 {
		t.Errorf("Mean([2 4 6]) = %v, want 4", got)
	}
}
`},
}

// demoBug and demoFix are the loop header before and after the fix.
const (
	demoBug = "for i := 1; i < len(xs); i++ {"
	demoFix = "for i := 0; i < len(xs); i++ {"
)

const demoBuggy = `// Package calc does small sums.
package calc

// Sum returns the sum of xs.
func Sum(xs []int) int {
	total := 0
	` + demoBug + `
		total += xs[i]
	}
	return total
}

// Mean returns the average of xs, 0 for none.
func Mean(xs []int) float64 {
	if len(xs) == 0 {
		return 0
	}
	return float64(Sum(xs)) / float64(len(xs))
}
`

const demoPrompt = "The tests of the calc package fail. Find the bug and fix it."

// demoThinking is how long the demo's model thinks before each response,
// when it is paced: about what a fast real model takes.
var demoThinking = []int{1400, 900, 700, 1600, 800, 700, 1500}

// demoScript is what the scripted model answers, one response per model
// call. Only the responses are scripted: the tools really run, in the demo
// workspace, and their observations are real. paced: each response comes
// after a model's thinking time (demoThinking), for a person to watch.
func demoScript(paced bool) []script.Response {
	rs := demoResponses()
	if paced {
		for i := range rs {
			rs[i].DelayMS = demoThinking[i%len(demoThinking)]
		}
	}
	return rs
}

func demoResponses() []script.Response {
	type todo struct {
		Content    string `json:"content"`
		Status     string `json:"status"`
		ActiveForm string `json:"activeForm"`
	}
	plan := func(status ...string) map[string]any {
		return map[string]any{"todos": []todo{
			{"Find Sum", status[0], "Finding Sum"},
			{"Fix the bug in Sum", status[1], "Fixing the bug in Sum"},
			{"Run the tests", status[2], "Running the tests"},
		}}
	}
	say := func(text string, r script.Response) script.Response {
		r.Text = text
		return r
	}
	return []script.Response{
		say("I'll make a plan first.",
			script.Call("TodoWrite", plan("in_progress", "pending", "pending"))),
		say("Let me find Sum.",
			script.Call("Grep", map[string]any{"pattern": `func Sum\(`, "output_mode": "content", "-n": true})),
		script.Call("Read", map[string]any{"file_path": "calc.go"}),
		say("The loop starts at index 1, so the first number is never added: Sum([5]) is 0. Starting at 0 fixes it.",
			script.Call("Edit", map[string]any{"file_path": "calc.go", "old_string": demoBug, "new_string": demoFix})),
		script.Call("Bash", map[string]any{"command": "go test ./...", "description": "Run the tests", "timeout": 120000}),
		script.Call("TodoWrite", plan("completed", "completed", "completed")),
		script.Text("Fixed: `Sum` in calc.go started its loop at index 1 and skipped the first number. " +
			"It now starts at 0, and `go test ./...` ran after the fix (see its output above). " +
			"`Mean` was wrong too, because it calls `Sum`; it needed no change of its own."),
	}
}

// demoMode is the demo's permission mode: the scenario is scripted and its
// workspace is a fresh temporary folder, so every call runs unasked, as
// with --permission-mode bypass. The policy still applies: --deny and --ask
// rules, built-in protection, and --permission-mode to see approvals.
const demoMode = policy.ModeBypass

func newDemoCmd(o options) *cobra.Command {
	var asJSON, fast bool
	var perm permFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Watch a scripted agent fix a bug in a tiny Go project",
		Long: `Watch an agent fix a bug: orca writes a tiny Go project with a failing test
into a new temporary folder and runs one turn of the real runtime there. The
model is scripted (no network, no API key), but every tool call it asks for
(TodoWrite, Grep, Read, Edit, Bash 'go test ./...') really runs, and what you
see are the real observations. The folder is kept so you can look at it.

The demo runs in permission mode bypass, so that nothing asks; it reads no
settings files. The permission flags still apply: try --permission-mode
default to be asked about the Edit and the Bash call, or --deny "Bash" to see
a refused call.

On a terminal the model takes a moment before each response, as a real one
does, so that you see the agent think, call its tools and finish (about
eight seconds in all); --fast, --json and an output that is not a terminal
skip the pauses.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd, asJSON, fast, &perm, o)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the events as JSON lines (like run --json); the workspace is named on stderr")
	cmd.Flags().BoolVar(&fast, "fast", false, "answer at once: no thinking time before the scripted model's responses")
	addPermFlags(cmd, &perm, string(demoMode))
	return cmd
}

func runDemo(cmd *cobra.Command, asJSON, fast bool, perm *permFlags, o options) error {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	paced := !fast && !asJSON && tui.IsTerminal(out)
	cfg := app.Config{
		ConfigDir:    o.configDir,
		NoSettings:   true,
		Client:       script.New().ScriptAny(demoScript(paced)...),
		SystemPrompt: app.DefaultSystemPrompt,
		Mode:         demoMode,
		// The demo's session is its own: nothing is kept but the folder.
		Store: store.NewMemory(),
	}
	defer cfg.Store.Close()
	if err := perm.apply(cmd, &cfg); err != nil {
		return err
	}
	dir, err := writeDemoProject()
	if err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	cfg.Workspace = dir
	if err := sandbox.Available(); err != nil {
		// The demo must run anywhere; it says so rather than refuse.
		cfg.NoSandbox = true
		fmt.Fprintf(errOut, "orca demo: %v.\nThe demo runs its commands without it, in its own temporary folder.\n\n", err)
	}
	if !asJSON {
		fmt.Fprintf(out, "orca demo: a scripted model fixes a bug in a tiny Go project in\n  %s\n"+
			"Only the model's responses are scripted: every tool call below really runs.\n\n", dir)
	}
	prompt := func(context.Context) (string, error) { return demoPrompt, nil }
	err = runTurn(cmd, o, cfg, &agentFlags{}, asJSON, prompt, nil)
	if asJSON {
		fmt.Fprintf(errOut, "orca demo: the workspace is %s\n", dir)
	} else {
		fmt.Fprintf(out, "\nThe workspace is kept: %s\n", dir)
	}
	return err
}

// writeDemoProject writes the demo project into a new temporary folder and
// returns the folder.
func writeDemoProject() (string, error) {
	dir, err := os.MkdirTemp("", "orca-demo-")
	if err != nil {
		return "", fmt.Errorf("creating the demo workspace: %w", err)
	}
	for _, f := range demoFiles {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.content), 0o644); err != nil {
			return "", fmt.Errorf("writing the demo project: %w", err)
		}
	}
	return dir, nil
}
