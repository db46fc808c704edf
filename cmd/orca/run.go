package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/extension"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
)

// provider is a model provider orca knows of.
type provider struct {
	name      string
	available bool // this build has it
}

// providers are the providers orca knows of, available or not, so that
// naming one that is not available yet says so.
var providers = []provider{
	{"script", true},
	{"anthropic", false},
	{"openai", false},
}

// runFlags are the flags of orca run.
type runFlags struct {
	provider      string
	script        string
	workspace     string
	maxIterations int
	json          bool
	session       string
	system        string
	perm          permFlags
	trust         bool
}

func newRunCmd(o options) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [flags] PROMPT",
		Short: "Run one turn of an agent in a workspace",
		Long: `Run one turn of an agent: PROMPT goes to the model, every tool call the
model asks for runs in the workspace (Read, Write, Edit, Glob, Grep, Bash,
TodoWrite), and the observations go back to the model until it answers.

The events of the turn are shown as they happen; with --json, stdout carries
exactly one JSON object per event and nothing else (llm_delta events
included), the last one being turn_completed.

PROMPT may be several arguments (joined with spaces), or - to read it from
standard input.

Every tool call goes through the permission policy: rules from the settings
files and from --allow, --deny and --ask (deny beats ask beats allow), and a
permission mode for calls no rule decides (--permission-mode; default: the
settings' defaultMode, else default, which runs read-only tools and asks
about the rest). When stdin and stdout are terminals, orca asks you about
such calls; otherwise they are refused, and the model is told which flag
would allow them.

Settings files: $XDG_CONFIG_HOME/orca/settings.json (default
~/.config/orca/settings.json), then .orca/settings.json and
.orca/settings.local.json in the workspace, in Claude Code's format
(permissions and command hooks). The workspace's own hooks, allow rules and
permissive defaultMode apply only once you trust it: 'orca trust DIR', or
--trust for one run.

Exit codes: 0 the turn answered; 1 it failed or reached --max-iterations;
2 usage errors (flags, provider, script file, workspace, settings files).`,
		Example: `  orca run --script fix.json "Fix the failing test"
  orca run --script fix.json --workspace ./project --json "Fix the failing test"
  orca run --script fix.json --allow "Bash(go test:*)" --permission-mode accept-edits "Fix the failing test"`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRun(cmd, args, &f, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.provider, "provider", "script", "`NAME` of the model provider: "+providerNames(true)+" ("+providerNames(false)+" are not available yet)")
	fl.StringVar(&f.script, "script", "", "JSON `FILE` of the scripted model's responses (for --provider script)")
	fl.StringVarP(&f.workspace, "workspace", "w", ".", "workspace `DIR`: the folder the tools work in")
	fl.IntVar(&f.maxIterations, "max-iterations", agent.DefaultMaxIterations, "end the turn after `N` model calls (iterations)")
	fl.BoolVar(&f.json, "json", false, "print the events as JSON lines instead of text")
	fl.StringVar(&f.session, "session", "", "session `ID` of the turn (default: a generated id)")
	fl.StringVar(&f.system, "system", "", "system `PROMPT` (default: orca's built-in coding-agent prompt; \"\" for none)")
	addPermFlags(cmd, &f.perm, "the settings' defaultMode, else default")
	fl.BoolVar(&f.trust, "trust", false, "trust the workspace for this run only: apply its own command hooks, allow rules and permission mode")
	return cmd
}

// providerNames lists the providers that are (or are not) available.
func providerNames(available bool) string {
	var s []string
	for _, p := range providers {
		if p.available == available {
			s = append(s, p.name)
		}
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

func runRun(cmd *cobra.Command, args []string, f *runFlags, o options) error {
	client, err := newClient(f.provider, f.script)
	if err != nil {
		return err
	}
	ws, err := checkWorkspace(f.workspace)
	if err != nil {
		return err
	}
	if f.maxIterations < 1 {
		return usageErrorf("--max-iterations must be at least 1, not %d", f.maxIterations)
	}
	configDir := o.userConfigDir()
	settings, warns, err := extension.Load(extension.LoadOptions{Workspace: ws, ConfigDir: configDir, TrustOverride: f.trust})
	if err != nil {
		return usageErrorf("%v", err)
	}
	pol, err := policyFor(cmd, &f.perm, settings, settings.Mode(), configDir)
	if err != nil {
		return err
	}
	// Last: a prompt read from stdin waits for it, and a usage error
	// should not.
	prompt, err := readPrompt(cmd.InOrStdin(), args)
	if err != nil {
		return err
	}
	system := f.system
	if !cmd.Flags().Changed("system") {
		system = defaultSystemPrompt
	}
	session := f.session
	if session == "" {
		session = newSessionID()
	}
	stdin, stdout, stderr := cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	reportWarnings(stderr, warns, ws)

	// The process's services: created here, closed here, after the
	// runtime that uses them.
	svc := agent.NewServices(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	defer svc.Close()
	unregister, err := settings.RegisterHooks(svc.Hooks, ws)
	if err != nil {
		return usageErrorf("%v", err)
	}
	defer unregister()
	return runTurn(cmd.Context(), stdout, stderr, turnConfig{
		client:        client,
		workspace:     ws,
		system:        system,
		maxIterations: f.maxIterations,
		sessionID:     session,
		prompt:        prompt,
		json:          f.json,
		policy:        pol,
		services:      svc,
		interactive:   isTerminal(stdin) && isTerminal(stdout),
		stdin:         stdin,
		configDir:     configDir,
	})
}

// readPrompt joins the arguments into the prompt; a single "-" reads it
// from stdin.
func readPrompt(stdin io.Reader, args []string) (string, error) {
	if len(args) == 1 && args[0] == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return "", usageErrorf("reading the prompt from standard input: %v", err)
		}
		args = []string{string(b)}
	}
	prompt := strings.TrimSpace(strings.Join(args, " "))
	if prompt == "" {
		return "", usageErrorf("the prompt is empty")
	}
	return prompt, nil
}

// newClient returns the model client of the provider called name.
func newClient(name, scriptFile string) (llm.Client, error) {
	i := slices.IndexFunc(providers, func(p provider) bool { return p.name == name })
	if i < 0 || !providers[i].available {
		what := fmt.Sprintf("unknown provider %q", name)
		if i >= 0 {
			what = fmt.Sprintf("provider %q is not available yet", name)
		}
		return nil, usageErrorf("%s: use --provider %s (the %s providers are not available yet)",
			what, providerNames(true), providerNames(false))
	}
	// The script provider is the only one available.
	if scriptFile == "" {
		return nil, usageErrorf("--provider script needs --script FILE, a JSON file of the model's responses")
	}
	return loadScript(scriptFile)
}

// loadScript reads a script file into a client that answers the session's
// model calls from it, in order.
func loadScript(path string) (llm.Client, error) {
	f, err := script.ParseFile(path)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	if len(f.Responses) == 0 {
		return nil, usageErrorf("script file %s has no responses: it needs {\"responses\": [...]} with one element per model response", path)
	}
	return script.New().ScriptAny(f.Responses...), nil
}

// checkWorkspace returns dir if it is a folder orca can work in, or a
// usage error naming it.
func checkWorkspace(dir string) (string, error) {
	if dir == "" {
		return "", usageErrorf("--workspace is empty")
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", usageErrorf("workspace %s does not exist", dir)
	case err != nil:
		return "", usageErrorf("workspace %s: %v", dir, err)
	case !fi.IsDir():
		return "", usageErrorf("workspace %s is not a folder", dir)
	}
	return dir, nil
}
