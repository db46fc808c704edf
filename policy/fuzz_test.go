package policy

import (
	"strings"
	"testing"
)

// FuzzBashDecision decides commands a model (or an attacker steering it)
// may write, under the rules most Bash cases run under, in each mode: the
// policy never panics, always says why, and decides the same command the
// same way twice.
func FuzzBashDecision(f *testing.F) {
	for _, c := range []string{
		"git status", "git status; touch x", "git status && rm -rf /", "git status $(rm x)", "git status `rm x`",
		"git status\nrm x", "git status | sh", "git status > ~/.bashrc", "git status <(rm x)", `git -c core.pager="rm x" status`,
		"GIT_DIR=x git status", "git status & rm x", "git st${IFS}atus", `git status "$(rm x)"`, `git status '$(rm x)'`,
		"git status <<< $(rm x)", "command git status; rm x", "git status #; rm x", "cat <<EOF\nrm x\nEOF", "echo \\\nrm",
		"ls -la | grep foo > out.txt 2>&1", "for f in *; do rm \"$f\"; done", "f() { rm x; }; f", "eval 'rm x'", "bash -c 'rm x'",
		"xargs rm < list", "find . -exec rm {} \\;", "(cd /; rm x)", "{ rm x; }", "if true; then rm x; fi", "a=$(b=$(rm x))",
		"echo ${x:-$(rm x)}", "echo $((1+$(rm x)))", "[[ -f x ]] && rm x", "case x in *) rm x;; esac", "coproc rm x",
		"time rm x", "! rm x", "exec rm x", "nohup rm x &", "sudo rm x", "env rm x", "\\rm x", "'r''m' x", "r\\m x",
		"", " ", ";", "&&", "'", "\"", "$(", "`", "<<", "\x00", "ls \xff\xfe", "echo 'unterminated", "echo $'\\x72m'",
	} {
		f.Add(c)
	}
	rules, err := ParseRules(stdAllow, append(stdDeny, "Read(./secrets/**)"), []string{"Bash(curl:*)"})
	if err != nil {
		f.Fatal(err)
	}
	_, _, opts := testOptions(f)
	var ps []*Policy
	for _, m := range []Mode{ModeDefault, ModeAcceptEdits, ModePlan, ModeDontAsk, ModeBypass} {
		p, err := New(m, rules, opts...)
		if err != nil {
			f.Fatal(err)
		}
		ps = append(ps, p)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		for _, p := range ps {
			req := declared(Request{ToolName: "Bash", Input: bashInput(t, cmd)})
			v := p.Decide(req)
			if v.Reason == "" {
				t.Errorf("Decide(%q) in %s: %s with no reason", cmd, p.mode, v.Decision)
			}
			if again := p.Decide(req); again.Decision != v.Decision || again.Reason != v.Reason {
				t.Errorf("Decide(%q) in %s: %s, then %s", cmd, p.mode, v.Decision, again.Decision)
			}
		}
	})
}

// FuzzParseRule parses permission rules as settings files write them: a
// rule parses or is an error wrapping ErrRule, never a panic, and a rule
// that parses is the rule its String parses to.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{
		"Bash", "Bash(git commit:*)", "Bash(npm test)", "Edit(src/**)", "Read(~/.ssh/**)", "Read(//etc/passwd)",
		"WebFetch(domain:example.com)", "mcp__github__create_issue", "mcp__github__*", "Bash(*)", "Bash(git * --force)",
		"Bash(", "Bash()", "(x)", "Bash(a)(b)", "Write(file_path:*.go)", "Bash(ls:*) ", " Read", "Task(Explore)",
		"Skill(pdf:*)", "Bash(> /dev:*)", "Bash(base64*|:*)", "Edit(/abs/**)", "Read(\x00)", "Bash(\\(:*)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		again, err := ParseRule(r.String())
		if err != nil || again != r {
			t.Errorf("ParseRule(%q) = %+v; its String %q parses to %+v, %v", s, r, r.String(), again, err)
		}
		_ = r.Inert()
	})
}

// A rule with a byte of another encoding (a settings file saved as
// Latin-1, an --allow typed in one) is an error naming it, not a panic
// (found by FuzzParseRule: the wildcard's regular expression refused it).
func TestRuleNotUTF8(t *testing.T) {
	for _, s := range []string{"Bash(A*\x86)", "Bash(git \xe9:*)", "Read(src/\xff/**)", "Bash(\xe9)", "T\xe9l"} {
		if _, err := ParseRule(s); err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
			t.Errorf("ParseRule(%q) = %v", s, err)
		}
	}
	if _, err := New(ModeDefault, Rules{Allow: []Rule{{Tool: "Bash", Pattern: "x*\x86"}}}); err == nil {
		t.Error("New took a rule that is not UTF-8")
	}
}
