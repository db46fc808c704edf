package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/policy"
)

// permFlags are the permission flags of run and demo.
type permFlags struct {
	allow, deny, ask []string
	mode             string
}

func addPermFlags(cmd *cobra.Command, p *permFlags, modeDefault string) {
	fl := cmd.Flags()
	fl.StringArrayVar(&p.allow, "allow", nil, "allow tool calls that match `RULE`, such as \"Bash(go test:*)\" or \"Edit(src/**)\" (repeatable)")
	fl.StringArrayVar(&p.deny, "deny", nil, "deny tool calls that match `RULE`, in every mode (repeatable)")
	fl.StringArrayVar(&p.ask, "ask", nil, "ask before tool calls that match `RULE`, whatever allows them (repeatable)")
	fl.StringVar(&p.mode, "permission-mode", "", "permission `MODE` for calls no rule decides: default, accept-edits, plan, dont-ask (deny what would be asked about) or bypass (default: "+modeDefault+")")
}

// apply puts the permission flags into cfg: their rules after the
// settings', and --permission-mode (when given) over the settings'
// defaultMode. A rule or mode that is not one is a usage error naming the
// flag.
func (p *permFlags) apply(cmd *cobra.Command, cfg *app.Config) error {
	for _, l := range []struct {
		flag  string
		rules []string
	}{{"--allow", p.allow}, {"--deny", p.deny}, {"--ask", p.ask}} {
		for _, r := range l.rules {
			if _, err := policy.ParseRule(r); err != nil {
				return usageErrorf("%s: %v", l.flag, err)
			}
		}
	}
	cfg.Allow, cfg.Deny, cfg.Ask = p.allow, p.deny, p.ask
	if cmd.Flags().Changed("permission-mode") {
		m, err := policy.ParseMode(p.mode)
		if err != nil {
			return usageErrorf("--permission-mode: %v", err)
		}
		cfg.Mode = m
	}
	return nil
}

// reportWarnings prints what loading the settings skipped on w: the
// project settings an untrusted workspace may not use once, with how to
// trust it, and every other warning as it is.
func reportWarnings(w io.Writer, warns []config.Warning, ws string) {
	var untrusted []string
	for _, wn := range warns {
		if wn.Untrusted {
			untrusted = append(untrusted, wn.String())
			continue
		}
		fmt.Fprintf(w, "orca: warning: %s\n", wn)
	}
	if len(untrusted) == 0 {
		return
	}
	dir := ws
	if abs, err := config.Canonical(ws); err == nil {
		dir = abs
	}
	fmt.Fprintf(w, "orca: the workspace's own settings were only partly applied, because it is not trusted:\n  %s\n"+
		"Its deny and ask rules apply. To run its command hooks and apply its allow rules and permission mode, "+
		"run 'orca trust %s' (or pass --trust for this run only).\n",
		strings.Join(untrusted, "\n  "), shellQuote(dir))
}

// shellQuote quotes s for a shell command line when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
