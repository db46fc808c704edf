package builtin

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// excluded reports whether every simple command of the shell line is one
// of names (run without the sandbox, as the settings' excludedCommands
// say). A line that does not parse, or whose command names are only known
// when it runs, is not.
func excluded(names []string, line string) bool {
	if len(names) == 0 {
		return false
	}
	f, err := syntax.NewParser().Parse(strings.NewReader(line), "")
	if err != nil {
		return false
	}
	calls, ok := 0, true
	syntax.Walk(f, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CallExpr:
			if len(x.Args) == 0 {
				return true // assignments only
			}
			calls++
			name := x.Args[0].Lit()
			if name == "" || !slices.Contains(names, filepath.Base(name)) {
				ok = false
			}
		case *syntax.CmdSubst, *syntax.ProcSubst, *syntax.FuncDecl, *syntax.Redirect:
			ok = false // more than the commands named
		}
		return ok
	})
	return ok && calls > 0
}

var (
	refusedFS  = regexp.MustCompile(`(?i)(read-only file system|permission denied|operation not permitted)`)
	quotedPath = regexp.MustCompile("['\"`‘]([^'\"`’]*/[^'\"`’]*|\\.[^'\"`’]*)['\"`’]")
	barePath   = regexp.MustCompile(`(?:^|[\s:])((?:/|\./|\.\./|~/|\.orca|\.git)[^\s:'"]*)`)
	unresolved = regexp.MustCompile(`(?i)(?:could not resolve host|resolve host|name or service not known|temporary failure in name resolution)[:\s]*([A-Za-z0-9.-]*)`)
	noNetwork  = regexp.MustCompile(`(?i)network is unreachable|connection refused`)
)

// refusals says, for a failed sandboxed command, what the sandbox may
// have refused, naming the paths and hosts its output names; "" when the
// output shows no refusal.
func refusals(output string) string {
	var paths, hosts []string
	add := func(list *[]string, s string) {
		s = strings.TrimRight(s, ".,;)")
		if s != "" && !slices.Contains(*list, s) && len(*list) < 5 {
			*list = append(*list, s)
		}
	}
	network := false
	for _, line := range strings.Split(output, "\n") {
		if loc := refusedFS.FindStringIndex(line); loc != nil {
			found := false
			for _, m := range quotedPath.FindAllStringSubmatch(line, -1) {
				add(&paths, m[1])
				found = true
			}
			if !found {
				// "sh: 1: cannot create x: Read-only file system", "bash:
				// line 1: x: Permission denied": the path is the part
				// before the error.
				before := strings.Split(strings.TrimRight(line[:loc[0]], ": "), ": ")
				if last := strings.TrimPrefix(before[len(before)-1], "cannot create "); len(before) > 1 && last != "" && !strings.Contains(last, " ") {
					add(&paths, last)
					found = true
				}
			}
			if !found {
				for _, m := range barePath.FindAllStringSubmatch(line, -1) {
					add(&paths, m[1])
				}
			}
		}
		if m := unresolved.FindStringSubmatch(line); m != nil {
			network = true
			add(&hosts, m[1])
		} else if noNetwork.MatchString(line) {
			network = true
		}
	}
	var b strings.Builder
	if len(paths) > 0 {
		fmt.Fprintf(&b, "[orca sandbox] The OS refused writing %s: commands may write only in the workspace and the temp folders, "+
			"and never to protected state — .orca, .claude, git's configuration and hooks, orca's configuration folder, what links in them lead to and the scripts hooks run (the user can add folders with the settings' sandbox.filesystem.allowWrite; protected state is theirs to change).",
			strings.Join(quote(paths), ", "))
	}
	if network {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		what := "the network"
		if len(hosts) > 0 && hosts[0] != "" {
			what = strings.Join(quote(hosts), ", ")
		}
		fmt.Fprintf(&b, "[orca sandbox] Commands run without network access, so %s could not be reached (the user can open the network with the settings' sandbox.network.allowAll).", what)
	}
	return b.String()
}

func quote(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
