package policy

import (
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// scriptInterpreters run the script file their first operand names.
var scriptInterpreters = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "fish": true,
	"node": true, "nodejs": true, "deno": true, "bun": true, "tsx": true, "ts-node": true,
	"python": true, "python3": true, "python2": true, "pypy3": true, "ruby": true, "perl": true, "php": true,
	"lua": true, "pwsh": true, "Rscript": true, "osascript": true,
	"source": true, ".": true,
}

// Scripts returns the files that the shell command line runs as code —
// for package protect's targets: a hook's script is protected state:
// each simple command's program when it is given as a path
// ("$CLAUDE_PROJECT_DIR"/.claude/hooks/check.sh, ./scripts/lint), and the
// script an interpreter is given (bash scripts/check.sh, node hook.js,
// python3 -u tools/x.py), also inside sh -c '…'. Relative paths are taken
// from dir; vars are the variables a word may use ($CLAUDE_PROJECT_DIR,
// ${CLAUDE_PLUGIN_ROOT}, $HOME for ~). A word that is only known when the
// shell runs names nothing. What a script runs in turn (python -m, npm
// run, make) is not followed: those stay the user's to judge.
func Scripts(command, dir string, vars map[string]string) []string {
	var out []string
	scriptsOf(command, dir, vars, &out, 0)
	return out
}

func scriptsOf(command, dir string, vars map[string]string, out *[]string, depth int) {
	if depth > 4 {
		return
	}
	f, err := parseShell(command)
	if err != nil {
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		ce, ok := n.(*syntax.CallExpr)
		if !ok {
			return true
		}
		var args []string
		for _, w := range ce.Args {
			s, ok := scriptWord(w, vars)
			if !ok {
				s = "\x00" // known only when the shell runs
			}
			args = append(args, s)
		}
		argvScripts(args, dir, vars, out, depth)
		return true
	})
}

// Argv returns the script files the command argv runs, as Scripts does
// for each simple command of a line: an MCP server's command and args.
func Argv(argv []string, dir string, vars map[string]string) []string {
	var out []string
	argvScripts(argv, dir, vars, &out, 0)
	return out
}

func argvScripts(argv []string, dir string, vars map[string]string, out *[]string, depth int) {
	// The program, after the wrappers that run it (timeout 30, nice -n 5,
	// env FOO=1, sudo -u x), as the policy's judgement of commands
	// finds it.
	ws := make([]word, len(argv))
	for i, a := range argv {
		if strings.Contains(a, "\x00") {
			ws[i] = word{pat: "*"}
		} else {
			ws[i] = lit(a)
		}
	}
	starts, dynamic, _, _ := unwrap(ws, false)
	if dynamic || len(starts) == 0 {
		return
	}
	argv = argv[starts[len(starts)-1]:]
	prog := argv[0]
	if strings.Contains(prog, "/") {
		addScript(out, dir, prog)
	}
	name := filepath.Base(prog)
	if !scriptInterpreters[name] {
		return
	}
	rest := argv[1:]
	if (name == "deno" || name == "bun") && len(rest) > 0 && rest[0] == "run" {
		rest = rest[1:]
	}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "-c" && i+1 < len(rest) && shells[name]:
			scriptsOf(rest[i+1], dir, vars, out, depth+1)
			return
		case a == "-c" || a == "-e" || a == "-m" || a == "--eval" || a == "-p" || a == "--print":
			return // code or a module, not a file
		case a == "--":
			if i+1 < len(rest) {
				addScript(out, dir, rest[i+1])
			}
			return
		case strings.HasPrefix(a, "-"):
			continue
		}
		addScript(out, dir, a)
		return
	}
}

func addScript(out *[]string, dir, p string) {
	if p == "" || strings.Contains(p, "\x00") {
		return
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	p = filepath.Clean(p)
	for _, o := range *out {
		if o == p {
			return
		}
	}
	*out = append(*out, p)
}

// scriptWord returns the value of the word w when it is known before the
// shell runs: literal text and quotes, the variables in vars, and a
// leading ~ (vars["HOME"]).
func scriptWord(w *syntax.Word, vars map[string]string) (string, bool) {
	var b strings.Builder
	for i, p := range w.Parts {
		if !scriptPart(&b, p, vars, i == 0) {
			return "", false
		}
	}
	return b.String(), true
}

func scriptPart(b *strings.Builder, p syntax.WordPart, vars map[string]string, first bool) bool {
	switch p := p.(type) {
	case *syntax.Lit:
		v := p.Value
		if first && (v == "~" || strings.HasPrefix(v, "~/")) {
			home, ok := vars["HOME"]
			if !ok {
				return false
			}
			v = home + v[1:]
		}
		b.WriteString(v)
	case *syntax.SglQuoted:
		b.WriteString(p.Value)
	case *syntax.DblQuoted:
		for _, q := range p.Parts {
			if !scriptPart(b, q, vars, false) {
				return false
			}
		}
	case *syntax.ParamExp:
		if p.Param == nil || p.Exp != nil || p.Repl != nil || p.Slice != nil || p.Index != nil || p.Excl || p.Length || p.Width {
			return false
		}
		v, ok := vars[p.Param.Value]
		if !ok {
			return false
		}
		b.WriteString(v)
	default:
		return false
	}
	return true
}
