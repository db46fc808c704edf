package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/orca-agent/orca/agent"
)

// The Temporal engine lives in a module of its own (so that orca links no
// Temporal SDK), with its own command, orca-temporal: orca worker and
// orca run --engine temporal run it.

// engineEnv names the orca-temporal command to run; else the one beside
// orca's own executable, else the one on PATH.
const engineEnv = "ORCA_TEMPORAL"

// engineInstall says how to install it from a clone (the temporal module
// takes the core from the clone, by a replace directive).
const engineInstall = "cd temporal && go install ./cmd/orca-temporal, in a clone of orca"

// engineCommand finds orca-temporal.
func engineCommand(o options) (string, error) {
	getenv := o.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if p := getenv(engineEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", usageErrorf("%s=%s: %v", engineEnv, p, err)
		}
		return p, nil
	}
	if self, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), "orca-temporal"); isExecutable(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath("orca-temporal"); err == nil {
		return p, nil
	}
	return "", usageErrorf("the Temporal engine's command, orca-temporal, is not installed: %s (or set %s to it)", engineInstall, engineEnv)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// runEngine runs orca-temporal with args, its standard streams the
// command's, and ends as it does (its exit code is orca's). An interrupt
// reaches it as SIGINT: a worker gives its turns back to Temporal.
func runEngine(cmd *cobra.Command, o options, args ...string) error {
	bin, err := engineCommand(o)
	if err != nil {
		return err
	}
	c := exec.CommandContext(cmd.Context(), bin, args...)
	c.Stdin, c.Stdout, c.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	c.Cancel = func() error { return c.Process.Signal(os.Interrupt) }
	c.WaitDelay = time.Minute
	err = c.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee) && ee.ExitCode() > 0:
		// orca-temporal said why on stderr already.
		return &exitError{code: ee.ExitCode(), err: err, quiet: true}
	default:
		return &exitError{code: exitTurn, err: err}
	}
}

func newWorkerCmd(o options) *cobra.Command {
	return &cobra.Command{
		Use:   "worker [flags]",
		Short: "Run a Temporal worker: durable turns of the task queue's sessions (orca-temporal worker)",
		Long: `Run a Temporal worker (orca-temporal worker, from the module
github.com/orca-agent/orca/temporal: ` + engineInstall + `).
Its turns survive it: if it dies, another worker of the task queue goes on
with them, and no tool call takes effect twice. 'orca run --engine temporal'
asks for turns; 'orca worker --help' lists its flags. See docs/scale-out.md
in orca's repository.`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := engineCommand(o); err != nil && (slices.Contains(args, "--help") || slices.Contains(args, "-h")) {
				return cmd.Help() // what it is and how to install it
			}
			return runEngine(cmd, o, append([]string{"worker"}, args...)...)
		},
	}
}

// engineFlags are orca run's flags that are orca-temporal run's alone,
// passed on as they are.
var engineFlags = []string{"turn-id", "address", "namespace", "task-queue"}

// engineRunFlags are the flags orca run takes with --engine temporal: the
// turn's own; the model, the permissions and the rest are the worker's.
var engineRunFlags = append([]string{"engine", "session", "json", "output-schema"}, engineFlags...)

// engineRun is orca run --engine temporal: the turn runs on a worker;
// orca-temporal run asks for it and waits.
func engineRun(cmd *cobra.Command, args []string, f *runFlags, o options) error {
	var wrong string
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if wrong == "" && !slices.Contains(engineRunFlags, fl.Name) {
			wrong = fl.Name
		}
	})
	if wrong != "" {
		return usageErrorf("--%s is not for --engine temporal: the turn runs on a worker, as it is set up (orca worker --help); orca run takes --%s with it", wrong, strings.Join(engineRunFlags[1:], ", --"))
	}
	if f.agent.session == "" {
		return usageErrorf("--engine temporal needs --session ID: the session whose turn the workers run (a new id starts one)")
	}
	all := []string{"run", "--session", f.agent.session}
	if f.json {
		all = append(all, "--json")
	}
	if f.outputSchema != "" {
		// Checked here as orca run checks it; orca-temporal reads it again.
		if _, err := agent.ReadOutput(f.outputSchema); err != nil {
			return usageErrorf("--output-schema: %v", err)
		}
		all = append(all, "--output-schema", f.outputSchema)
	}
	for _, name := range engineFlags {
		if fl := cmd.Flags().Lookup(name); fl.Changed {
			all = append(all, "--"+name, fl.Value.String())
		}
	}
	return runEngine(cmd, o, append(append(all, "--"), args...)...)
}
