package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/extension"
)

func newTrustCmd(o options) *cobra.Command {
	var list, revoke bool
	cmd := &cobra.Command{
		Use:   "trust [DIR]",
		Short: "Trust a workspace, so that its own command hooks and permissions apply",
		Long: `Trust the workspace DIR (default: the current folder): from now on, orca
applies its .orca/settings.json and .orca/settings.local.json in full,
running their command hooks and applying their allow rules and defaultMode.
Until then only their deny and ask rules apply, because a workspace (a cloned
repository, say) must not be able to run commands or grant itself
permissions on its own.

Trust is recorded in $XDG_CONFIG_HOME/orca/trust.json (default
~/.config/orca/trust.json), outside every workspace, by the folder's real
path; it does not extend to subfolders. 'orca run --trust' trusts a
workspace for one run without recording it.`,
		Example: `  orca trust                 trust the current folder
  orca trust ~/src/project   trust another folder
  orca trust --list          show the trusted folders
  orca trust --revoke        stop trusting the current folder`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			configDir := o.userConfigDir()
			if configDir == "" {
				_, err := extension.UserConfigDir()
				return &exitError{code: exitTurn, err: fmt.Errorf("trust: %v", err)}
			}
			store := extension.NewTrustStore(configDir)
			out := cmd.OutOrStdout()
			if list {
				if len(args) > 0 || revoke {
					return usageErrorf("--list takes no folder and no --revoke")
				}
				dirs, err := store.List()
				if err != nil {
					return &exitError{code: exitTurn, err: err}
				}
				if len(dirs) == 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "orca: no workspace is trusted (%s)\n", store.Path())
				}
				for _, d := range dirs {
					fmt.Fprintln(out, d)
				}
				return nil
			}
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			if revoke {
				real, removed, err := store.Revoke(dir)
				if err != nil {
					return &exitError{code: exitTurn, err: err}
				}
				if !removed {
					fmt.Fprintf(out, "%s was not trusted.\n", real)
					return nil
				}
				fmt.Fprintf(out, "%s is no longer trusted: its command hooks will not run, and its allow rules and defaultMode will not apply.\n", real)
				return nil
			}
			if _, err := checkWorkspace(dir); err != nil {
				return err
			}
			real, err := store.Trust(dir)
			if err != nil {
				return &exitError{code: exitTurn, err: err}
			}
			fmt.Fprintf(out, "%s is trusted: orca applies its .orca/settings.json and .orca/settings.local.json in full.\n", real)
			// Show what that means, now that it runs.
			s, _, err := extension.Load(extension.LoadOptions{Workspace: real, ConfigDir: configDir})
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "orca: warning: %v\n", err)
				return nil
			}
			var project []extension.CommandHook
			for _, h := range s.Hooks {
				if h.Project {
					project = append(project, h)
				}
			}
			if len(project) > 0 {
				fmt.Fprintf(out, "Its command hooks:\n")
				for _, h := range project {
					m := ""
					if h.Matcher != "" {
						m = " (" + h.Matcher + ")"
					}
					fmt.Fprintf(out, "  %s%s: %s\n", h.Event, m, h.Command)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&list, "list", false, "list the trusted folders")
	cmd.Flags().BoolVar(&revoke, "revoke", false, "stop trusting DIR")
	return cmd
}
