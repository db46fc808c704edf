package main

import (
	"cmp"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/extension"
	"github.com/orca-agent/orca/hook/command"
	"github.com/orca-agent/orca/tui"
)

func newTrustCmd(o options) *cobra.Command {
	var list, revoke bool
	cmd := &cobra.Command{
		Use:   "trust [DIR | hook:NAME [DIR]]",
		Short: "Trust a workspace's settings, or grant one of its extensions",
		Long: `Trust the workspace DIR (default: the current folder): from now on, orca
applies its settings files (.orca/settings.json, .orca/settings.local.json
and Claude Code's .claude/settings.json and .claude/settings.local.json) in
full, running their command hooks and applying their allow rules and defaultMode.
Until then only their deny and ask rules apply, because a workspace (a cloned
repository, say) must not be able to run commands or grant itself
permissions on its own. Trusting also records the workspace's .mcp.json
servers as they are now: a server added or changed since (by the agent,
by a pull) does not start until you trust the workspace again.

Trust is recorded in $XDG_CONFIG_HOME/orca/trust.json (default
~/.config/orca/trust.json), outside every workspace, by the folder's real
path; it does not extend to subfolders. 'orca run --trust' trusts a
workspace for one run without recording it.

'orca trust hook:NAME [DIR]' grants the filesystem extension
DIR/.orca/hooks/NAME (see its hook.yaml) instead: from then on its handler
runs, with every port its manifest asks for. hook:NAME:events and
hook:NAME:hooks grant one port; hook:NAME:resource:KEY adds the resource
KEY (its value comes from the user's settings.json, "extensions":
{"resources": {...}}). Grants are per workspace and independent of
trusting the workspace. --revoke hook:NAME removes the grant (and its port
and resource grants).`,
		Example: `  orca trust                         trust the current folder
  orca trust ~/src/project           trust another folder
  orca trust hook:failure-metrics    run the current folder's extension failure-metrics
  orca trust --revoke hook:failure-metrics
  orca trust --list                  show the trusted folders and the grants
  orca trust --revoke                stop trusting the current folder`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			configDir := o.userConfigDir()
			if configDir == "" {
				_, err := config.Dir()
				return &exitError{code: exitTurn, err: fmt.Errorf("trust: %v", err)}
			}
			store := config.NewTrustStore(configDir)
			out := cmd.OutOrStdout()
			if list {
				if len(args) > 0 || revoke {
					return usageErrorf("--list takes no folder and no --revoke")
				}
				return listTrust(out, cmd.ErrOrStderr(), store)
			}
			if len(args) > 0 && strings.HasPrefix(args[0], config.GrantPrefix) {
				dir := "."
				if len(args) == 2 {
					dir = args[1]
				}
				if revoke {
					return revokeGrant(out, store, args[0], dir)
				}
				return grant(out, cmd.ErrOrStderr(), store, args[0], dir)
			}
			if len(args) > 1 {
				return usageErrorf("trust takes one folder, or a grant (hook:NAME) and a folder")
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
			fmt.Fprintf(out, "%s is trusted: orca applies its settings (.orca/settings.json, .claude/settings.json and their .local.json) in full.\n", real)
			// Show what that means, now that it runs.
			s, _, err := config.Load(config.LoadOptions{Workspace: real, ConfigDir: configDir})
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "orca: warning: %v\n", err)
				return nil
			}
			var project []command.Spec
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
	cmd.Flags().BoolVar(&list, "list", false, "list the trusted folders and the extension grants")
	cmd.Flags().BoolVar(&revoke, "revoke", false, "stop trusting DIR, or remove the grant hook:NAME")
	return cmd
}

// listTrust lists the trusted folders, and under each folder its
// extension grants; a folder with grants that is not trusted says so.
func listTrust(out, stderr io.Writer, store *config.TrustStore) error {
	dirs, err := store.List()
	if err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	grants, err := store.AllGrants()
	if err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	all := slices.Clone(dirs)
	for d := range grants {
		if !slices.Contains(all, d) {
			all = append(all, d)
		}
	}
	slices.Sort(all)
	if len(all) == 0 {
		fmt.Fprintf(stderr, "orca: no workspace is trusted and no extension is granted (%s)\n", store.Path())
		return nil
	}
	var b strings.Builder
	for _, d := range all {
		b.WriteString(d)
		if !slices.Contains(dirs, d) {
			b.WriteString(" (not trusted: extension grants only)")
		}
		b.WriteString("\n")
		for _, g := range grants[d] {
			b.WriteString("  " + g + "\n")
		}
	}
	_, err = io.WriteString(out, b.String())
	return err
}

// grant records the grant g for the workspace dir and says what the
// extension it names asks for and now gets; it warns when dir has no such
// extension (the grant applies once it does).
func grant(out, stderr io.Writer, store *config.TrustStore, g, dir string) error {
	parsed, err := config.ParseGrant(g)
	if err != nil {
		return usageErrorf("%v", err)
	}
	if _, err := checkWorkspace(dir); err != nil {
		return err
	}
	real, err := store.Grant(dir, parsed.String())
	if err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	fmt.Fprintf(out, "Granted %s in %s.\n", parsed, real)
	exts, err := extension.LoadExtensions(extension.ExtensionOptions{Workspace: real, Trust: store})
	if err != nil {
		fmt.Fprintf(stderr, "orca: warning: the workspace's extensions cannot be loaded, so none of them runs:\n%v\n", err)
		return nil
	}
	i := slices.IndexFunc(exts, func(x *extension.Extension) bool { return x.Manifest.Name == parsed.Extension })
	if i < 0 {
		fmt.Fprintf(stderr, "orca: warning: %s has no extension %s (%s/%s/%s): the grant applies once it does\n",
			real, parsed.Extension, extension.ExtensionsDir, parsed.Extension, extension.ManifestFile)
		return nil
	}
	x := exts[i]
	b := "It asks for:\n" + tui.Indent("  ", "  ", x.Describe()) + "\n" + x.Standing()
	_, err = io.WriteString(out, b)
	return err
}

// revokeGrant removes the grant g (with its port and resource grants, for
// hook:NAME) from the workspace dir.
func revokeGrant(out io.Writer, store *config.TrustStore, g, dir string) error {
	parsed, err := config.ParseGrant(g)
	if err != nil {
		return usageErrorf("%v", err)
	}
	real, removed, err := store.RevokeGrant(dir, parsed.String())
	if err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	if len(removed) == 0 {
		_, err = fmt.Fprintf(out, "%s was not granted in %s.\n", parsed, real)
		return err
	}
	_, err = fmt.Fprintf(out, "Revoked %s in %s.\n", strings.Join(removed, ", "), real)
	return err
}

// askTrust asks the person at the terminal, before a run or a chat opens
// its workspace, whether to trust a workspace that ships what only trust
// enables (hooks, allow rules, MCP servers, a permissive mode …), naming
// it, as Claude Code asks "Do you trust the files in this folder?": y
// trusts it (recorded, as orca trust does), o trusts it for this run
// (--trust), n goes on without. Never asked off a terminal, with --trust,
// in a trusted workspace, or when nothing would change.
func askTrust(cmd *cobra.Command, o options, cfg *app.Config) error {
	in, out := cmd.InOrStdin(), cmd.OutOrStdout()
	dir := o.userConfigDir()
	if cfg.Trust || cfg.NoSettings || dir == "" || !tui.IsTerminal(in) || !tui.IsTerminal(out) {
		return nil
	}
	root, err := app.CheckWorkspace(cfg.Workspace)
	if err != nil {
		return nil // opening it says why
	}
	store := config.NewTrustStore(dir)
	if store.Trusted(root) {
		return nil
	}
	claude := cfg.ClaudeDir
	if claude == "" {
		claude, _ = config.ClaudeDir()
	}
	_, warns, err := config.Load(config.LoadOptions{Workspace: root, ConfigDir: dir, ClaudeDir: cmp.Or(claude, "-"), NoClaude: cfg.NoClaude, PluginDirs: cfg.PluginDirs})
	if err != nil {
		return nil // opening it says why
	}
	var what []string
	for _, w := range warns {
		if !w.Untrusted {
			continue
		}
		file := w.File
		if rel, err := filepath.Rel(root, file); err == nil && filepath.IsLocal(rel) {
			file = rel
		}
		what = append(what, "  "+file+": "+tui.Printable(w.Withheld))
	}
	if len(what) == 0 {
		return nil
	}
	fmt.Fprintf(out, "%s ships settings that take effect only in a folder you trust:\n%s\n", root, strings.Join(what, "\n"))
	fmt.Fprintf(out, "Do you trust the files in this folder? Its hooks and MCP servers would run on this machine.\n  [y] yes, trust it   [o] only for this run   [n] no › ")
	key, err := tui.KeyReader(in)(cmd.Context())
	switch strings.ToLower(strings.TrimSpace(key)) {
	case "y":
		if _, err := store.Trust(root); err != nil {
			fmt.Fprintln(out)
			return &exitError{code: exitTurn, err: err}
		}
		fmt.Fprintf(out, "yes: trusted ('orca trust --revoke %s' undoes it)\n\n", shellQuote(root))
	case "o":
		cfg.Trust = true
		fmt.Fprintf(out, "only for this run\n\n")
	default:
		if err != nil && cmd.Context().Err() != nil {
			fmt.Fprintln(out)
			return cmd.Context().Err()
		}
		fmt.Fprintf(out, "no: its settings that grant stay out ('orca trust %s' trusts it)\n\n", shellQuote(root))
	}
	return nil
}
