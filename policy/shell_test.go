package policy

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// The rules most Bash cases run under.
var (
	stdAllow = []string{"Bash(git status:*)", "Bash(ls:*)", "Bash(cat:*)", "Bash(echo:*)", "Bash(go test:*)", "Bash(npm test)"}
	stdDeny  = []string{"Bash(rm:*)", "Bash(git push:*)"}
)

type bashCase struct {
	name             string
	mode             Mode
	allow, deny, ask []string // nil: the std rules (ask: none); use []string{} for none
	cmd              string
	want             Decision
	rule             string // if set, Verdict.Rule
	reason           string // if set, a substring of Verdict.Reason
	suggest          string // if set, Verdict.Suggest
}

func bashInput(t testing.TB, cmd string) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(map[string]string{"command": cmd})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testOptions keeps tests away from the real home and config folders.
func testOptions(t testing.TB) (home, configDir string, opts []Option) {
	home = filepath.Join(t.TempDir(), "home")
	configDir = filepath.Join(home, ".config")
	return home, configDir, []Option{WithHomeDir(home), WithUserConfigDir(configDir)}
}

func (c bashCase) run(t *testing.T) {
	t.Helper()
	allow, deny := c.allow, c.deny
	if allow == nil {
		allow = stdAllow
	}
	if deny == nil {
		deny = stdDeny
	}
	rules, err := ParseRules(allow, deny, c.ask)
	if err != nil {
		t.Fatal(err)
	}
	_, _, opts := testOptions(t)
	p, err := New(c.mode, rules, opts...)
	if err != nil {
		t.Fatal(err)
	}
	v := p.Decide(declared(Request{ToolName: "Bash", Input: bashInput(t, c.cmd)}))
	if v.Decision != c.want {
		t.Fatalf("Decide(%q) = %s, want %s\nreason: %s\nrule: %s", c.cmd, v.Decision, c.want, v.Reason, v.Rule)
	}
	if c.rule != "" && v.Rule != c.rule {
		t.Errorf("Decide(%q).Rule = %q, want %q", c.cmd, v.Rule, c.rule)
	}
	if c.reason != "" && !strings.Contains(v.Reason, c.reason) {
		t.Errorf("Decide(%q).Reason = %q, want it to contain %q", c.cmd, v.Reason, c.reason)
	}
	if c.suggest != "" && v.Suggest != c.suggest {
		t.Errorf("Decide(%q).Suggest = %q, want %q", c.cmd, v.Suggest, c.suggest)
	}
	if v.Reason == "" {
		t.Errorf("Decide(%q): empty reason", c.cmd)
	}
}

func TestBashPrefixAndExactRules(t *testing.T) {
	for _, c := range []bashCase{
		{name: "prefix alone", cmd: "git status", want: Allow, rule: "Bash(git status:*)"},
		{name: "prefix with args", cmd: "git status -s --branch", want: Allow},
		{name: "extra whitespace", cmd: "  git \t  status   -s  ", want: Allow},
		{name: "line continuation", cmd: "git \\\n  status", want: Allow},
		{name: "longer first word", cmd: "git statusx", want: Ask},
		{name: "other subcommand", cmd: "git log", want: Ask, suggest: "Bash(git log:*)"},
		{name: "shorter than prefix", cmd: "git", want: Ask, suggest: "Bash(git:*)"},
		{name: "quoted words are the same words", cmd: `"git" 'status'`, want: Allow},
		{name: "split quoting", cmd: `g'i't stat""us`, want: Allow},
		{name: "escaped name", cmd: `\git status`, want: Allow},
		{name: "a quoted space is not two words", cmd: `"git status"`, want: Ask},
		{name: "exact rule", cmd: "npm test", want: Allow, rule: "Bash(npm test)"},
		{name: "exact rule whitespace", cmd: "npm    test", want: Allow},
		{name: "exact rule extra arg", cmd: "npm test --watch", want: Ask},
		{name: "exact rule fewer args", cmd: "npm", want: Ask},
		{name: "dynamic word in prefix", deny: []string{}, cmd: "git $SUB", want: Ask, suggest: "Bash(git:*)"},
		{name: "dynamic word after prefix", cmd: "ls $HOME/src", want: Allow},
		{name: "glob after prefix", cmd: "ls *.go", want: Allow},
		{name: "glob as command name", cmd: "l? -la", want: Ask},
		{name: "path of an allowed command is another command", cmd: "/tmp/ls", want: Ask},
		{name: "suggest first two words", cmd: "go vet ./...", want: Ask, suggest: "Bash(go vet:*)"},
		{name: "suggest skips options", cmd: "grep -rn foo .", want: Ask, suggest: "Bash(grep:*)"},
		{name: "suggest skips file names", cmd: "head main.go", want: Ask, suggest: "Bash(head:*)"},
		{name: "suggest names the unapproved part", cmd: "git status && make build", want: Ask, suggest: "Bash(make build:*)"},
		{name: "reason names the command and mode", cmd: "make", want: Ask, rule: "mode:default", reason: `Bash command "make" needs the user's approval: no allow rule matches "make"; permission mode default asks before running shell commands.`},
	} {
		t.Run(c.name, c.run)
	}
}

func TestBashCompoundCommands(t *testing.T) {
	for _, c := range []bashCase{
		{name: "and, both allowed", cmd: "ls && git status", want: Allow, rule: "Bash(ls:*), Bash(git status:*)"},
		{name: "and, one denied", cmd: "ls && rm -rf x", want: Deny, rule: "Bash(rm:*)", reason: `Bash command "rm -rf x" (in "ls && rm -rf x") is denied by the permission rule Bash(rm:*)`},
		{name: "and, one unknown", cmd: "ls && touch x", want: Ask, reason: `"touch x"`},
		{name: "or", cmd: "ls || touch x", want: Ask},
		{name: "semicolon", cmd: "ls; touch x", want: Ask},
		{name: "newline", cmd: "ls\ntouch x", want: Ask},
		{name: "newline allowed", cmd: "ls\ngit status\n", want: Allow},
		{name: "pipe", cmd: "ls | touch x", want: Ask},
		{name: "pipe allowed", cmd: "cat go.mod | ls", want: Allow},
		{name: "pipe denied", cmd: "ls | rm x", want: Deny},
		{name: "pipe stderr", cmd: "ls |& cat", want: Allow},
		{name: "background", cmd: "ls & touch x", want: Ask},
		{name: "background allowed", cmd: "ls &", want: Allow},
		{name: "negation", cmd: "! ls", want: Allow},
		{name: "subshell", cmd: "(ls; touch x)", want: Ask},
		{name: "subshell denied", cmd: "(cd /; rm -rf x)", want: Deny},
		{name: "group", cmd: "{ ls; rm x; }", want: Deny},
		{name: "command substitution", cmd: "echo $(touch x)", want: Ask, reason: `"touch x"`},
		{name: "command substitution denied", cmd: `echo "$(rm -rf /)"`, want: Deny},
		{name: "backticks", cmd: "echo `touch x`", want: Ask},
		{name: "backticks denied", cmd: "echo `rm x`", want: Deny},
		{name: "nested substitution", cmd: "echo $(echo $(rm x))", want: Deny},
		{name: "substitution in assignment", cmd: "X=$(rm x) ls", want: Deny},
		{name: "substitution in parameter default", cmd: "echo ${X:-$(rm x)}", want: Deny},
		{name: "substitution in arithmetic", cmd: "echo $(( $(rm x) + 1 ))", want: Deny},
		{name: "substitution in test", cmd: "[[ -n $(rm x) ]] && ls", want: Deny},
		{name: "if body", cmd: "if ls; then touch x; fi", want: Ask},
		{name: "if all allowed", cmd: "if ls; then echo yes; else echo no; fi", want: Allow},
		{name: "else body denied", cmd: "if ls; then echo; else rm x; fi", want: Deny},
		{name: "for body", cmd: "for f in a b; do rm $f; done", want: Deny},
		{name: "for items", cmd: "for f in $(rm x); do echo $f; done", want: Deny},
		{name: "for allowed", cmd: "for f in *.go; do cat \"$f\"; done", want: Allow},
		{name: "c-style for", cmd: "for ((i=0; i<3; i++)); do echo $i; done", want: Allow},
		{name: "while", cmd: "while ls; do rm x; done", want: Deny},
		{name: "until", cmd: "until ls; do touch x; done", want: Ask},
		{name: "case", cmd: "case $x in a) rm x;; *) echo;; esac", want: Deny},
		{name: "function body", cmd: "f() { rm x; }; f", want: Deny},
		{name: "function body not allowed", cmd: "f() { touch x; }", want: Ask},
		{name: "function call needs its own rule", cmd: "f() { ls; }; f", want: Ask, reason: `"f"`},
		{name: "time", cmd: "time rm x", want: Deny},
		{name: "coproc", cmd: "coproc rm x", want: Deny},
		{name: "test clause alone runs no command", cmd: "[[ -f go.mod ]]", want: Ask, reason: "runs no simple command"},
		{name: "test clause and command", cmd: "[[ -f go.mod ]] && cat go.mod", want: Allow},
		{name: "arithmetic only", cmd: "(( 1 + 1 ))", want: Ask},
		{name: "same command twice", cmd: "git status; git status", want: Allow, rule: "Bash(git status:*)"},
		{name: "allowed then denied", cmd: "git status; git push origin", want: Deny, rule: "Bash(git push:*)"},
		{name: "all suggestions", cmd: "make && touch x && make", want: Ask, suggest: "Bash(make:*)"},
	} {
		t.Run(c.name, c.run)
	}
}

func TestBashQuotingCommentsAndHeredocs(t *testing.T) {
	for _, c := range []bashCase{
		{name: "quoted and", cmd: "echo 'a && rm -rf x'", want: Allow},
		{name: "double quoted semicolon", cmd: `echo "a; rm -rf x"`, want: Allow},
		{name: "escaped semicolon", cmd: `echo a \; rm x`, want: Allow},
		{name: "quoted pipe", cmd: `echo "|" rm`, want: Allow},
		{name: "comment", cmd: "ls # && rm -rf x", want: Allow},
		{name: "comment line", cmd: "# rm -rf x\nls", want: Allow},
		{name: "hash inside a word", cmd: "echo a#b; touch x", want: Ask},
		{name: "heredoc", cmd: "cat <<EOF\nhello && rm x\nEOF", want: Allow},
		{name: "heredoc substitution", cmd: "cat <<EOF\n$(rm -rf x)\nEOF", want: Deny},
		{name: "heredoc quoted delimiter is literal", cmd: "cat <<'EOF'\n$(rm -rf x)\nEOF", want: Allow},
		{name: "heredoc then command", cmd: "cat <<EOF\nhi\nEOF\ntouch x", want: Ask},
		{name: "heredoc dash", cmd: "cat <<-EOF\n\thi\n\tEOF\nls", want: Allow},
		{name: "herestring", cmd: "cat <<< \"$(rm x)\"", want: Deny},
		{name: "redirect to a file needs the write allowed", cmd: "ls > out.txt 2>&1", want: Ask, reason: `writes "out.txt"`, suggest: "Edit(out.txt)"},
		{name: "redirect to a file an Edit rule allows", allow: append([]string{"Edit(out/**)"}, stdAllow...), cmd: "ls > out/ls.txt 2>&1", want: Allow},
		{name: "redirect in accept-edits", mode: ModeAcceptEdits, cmd: "echo hi >> notes.txt", want: Allow},
		{name: "redirect to /dev/null", cmd: "ls > /dev/null 2>&1; cat x 2>/dev/null >&2", want: Allow},
		{name: "input redirect", cmd: "cat < go.mod", want: Allow},
		{name: "redirect target substitution", cmd: "ls > $(rm x)", want: Deny},
		{name: "ansi-c quoting is not decoded", cmd: `$'\x72m' -rf x`, want: Ask},
		{name: "ansi-c plain", cmd: `$'ls' -la`, want: Allow},
		{name: "unterminated quote", cmd: "echo 'oops", want: Ask, reason: "could not be parsed"},
		{name: "dangling and", cmd: "ls &&", want: Ask, reason: "could not be parsed"},
		{name: "unbalanced paren", cmd: "(ls", want: Ask, reason: "could not be parsed"},
		{name: "empty", cmd: "", want: Ask},
		{name: "only a comment", cmd: "# nothing", want: Ask},
	} {
		t.Run(c.name, c.run)
	}
}

func TestBashEnvironmentAndWrappers(t *testing.T) {
	for _, c := range []bashCase{
		{name: "assignment prefix is not the allowed command", cmd: "FOO=1 git status", want: Ask, suggest: "Bash(FOO=1 git status:*)"},
		{name: "rule with the assignment", allow: []string{"Bash(CGO_ENABLED=0 go build:*)"}, cmd: "CGO_ENABLED=0 go build ./...", want: Allow},
		{name: "rule with the assignment, other value", allow: []string{"Bash(CGO_ENABLED=0 go build:*)"}, cmd: "CGO_ENABLED=1 go build ./...", want: Ask},
		{name: "quoted assignment-looking name is a command", allow: []string{"Bash(FOO=1 ls:*)"}, cmd: "'FOO=1' ls", want: Ask},
		{name: "PATH prefix", cmd: "PATH=/tmp/evil git status", want: Ask},
		{name: "assignment prefix does not hide a denied command", cmd: "FOO=1 rm -rf x", want: Deny},
		{name: "two assignments", cmd: "A=1 B=2 rm x", want: Deny},
		{name: "plain assignment needs approval", cmd: "x=1", want: Ask},
		{name: "assignment then allowed", cmd: "PATH=/tmp/evil; git status", want: Ask, reason: `"PATH=/tmp/evil"`},
		{name: "export", cmd: "export PATH=/tmp/evil:$PATH && git status", want: Ask},
		{name: "declare substitution", cmd: "declare x=$(rm y)", want: Deny},
		{name: "env-style loop variable", cmd: "for PATH in /tmp/evil; do git status; done", want: Ask, reason: "assigns PATH"},
		{name: "proxy loop variable", cmd: "for http_proxy in x; do ls; done", want: Ask},
		{name: "sudo", cmd: "sudo rm -rf /", want: Deny},
		{name: "sudo with option values", cmd: "sudo -u root -g wheel rm x", want: Deny},
		{name: "sudo of an allowed command is not allowed", cmd: "sudo ls", want: Ask, suggest: "Bash(sudo ls:*)"},
		{name: "sudo rule", allow: []string{"Bash(sudo ls:*)"}, cmd: "sudo ls /root", want: Allow},
		{name: "env", cmd: "env -i FOO=1 rm x", want: Deny},
		{name: "nested wrappers", cmd: "sudo env FOO=1 nice -n 5 timeout 10 rm x", want: Deny},
		{name: "command builtin", cmd: "command rm x", want: Deny},
		{name: "nohup", cmd: "nohup rm x &", want: Deny},
		{name: "xargs", cmd: "ls | xargs rm", want: Deny},
		{name: "xargs options", cmd: "ls | xargs -n 1 -I {} rm {}", want: Deny},
		{name: "find exec", cmd: `find . -name '*.tmp' -exec rm {} \;`, want: Deny},
		{name: "find execdir", cmd: `find . -execdir rm {} +`, want: Deny},
		{name: "absolute path of denied command", cmd: "/bin/rm -rf x", want: Deny},
		{name: "relative path of denied command", cmd: "./rm x", want: Deny},
		{name: "quoted denied command", cmd: `'rm' x`, want: Deny},
		{name: "split-quoted denied command", cmd: `r''m x`, want: Deny},
		{name: "escaped denied command", cmd: `\rm x`, want: Deny},
		{name: "denied subcommand after quoting", cmd: `git "push" origin`, want: Deny},
		{name: "denied subcommand with dynamic word", cmd: "git $OP origin", want: Ask, reason: "cannot rule out the deny rule Bash(git push:*)"},
		{name: "rm is not git rm", deny: []string{"Bash(rm:*)"}, allow: []string{"Bash(git rm:*)"}, cmd: "git rm x", want: Allow},
		{name: "echo rm is not rm", cmd: "echo rm", want: Allow},
		{name: "brace expansion of a denied command", mode: ModeBypass, cmd: "{rm,-rf,x}", want: Ask, reason: "cannot rule out the deny rule Bash(rm:*)"},
		{name: "brace expansion is not an allowed command", allow: []string{"Bash(ls:*)"}, deny: []string{}, cmd: "{ls,-la}", want: Ask},
		{name: "brace expansion in the name", mode: ModeBypass, cmd: "r{m,} x", want: Ask},
		{name: "glob as a denied command", mode: ModeBypass, cmd: "/bin/r? x", want: Ask},
		{name: "tilde command", mode: ModeBypass, cmd: "~/bin/rm x", want: Ask},
		{name: "glob where an exact deny rule has a word", mode: ModeBypass, deny: []string{"Bash(git reset --hard)"}, cmd: "git reset --ha*", want: Ask},
		{name: "glob after a denied prefix", mode: ModeBypass, deny: []string{"Bash(git reset --hard)"}, cmd: "git reset *.go", want: Ask},
		{name: "test command is not a glob", mode: ModeBypass, cmd: "[ -f go.mod ] && ls", want: Allow},
		{name: "test command rule", allow: []string{"Bash([ -f:*)", "Bash(ls:*)"}, cmd: "[ -f go.mod ] && ls", want: Allow},
		{name: "find braces are not brace expansion", allow: []string{`Bash(find . -exec cat {} \;)`}, deny: []string{}, cmd: `find . -exec cat {} \;`, want: Allow},
		{name: "deny rule with an assignment", deny: []string{"Bash(GIT_SSH_COMMAND=x git:*)"}, mode: ModeBypass, cmd: "GIT_SSH_COMMAND=x git fetch", want: Deny},
		{name: "arithmetic subscript substitution", cmd: "echo $(( a[$(rm x)] ))", want: Deny},
		{name: "arithmetic command substitution", cmd: "(( a[$(rm x)] )) ; ls", want: Deny},
	} {
		t.Run(c.name, c.run)
	}
}

func TestBashUnresolvableCommands(t *testing.T) {
	for _, c := range []bashCase{
		{name: "variable as command name", cmd: "$CMD args", want: Ask},
		{name: "variable as command name, no deny rules", deny: []string{}, cmd: "$CMD args", want: Ask, reason: "command name is only known when the shell runs"},
		{name: "substitution as command name", deny: []string{}, cmd: "$(which ls) -la", want: Ask},
		{name: "eval of a static string is checked", cmd: "eval 'rm -rf x'", want: Deny},
		{name: "eval of allowed code still asks", cmd: "eval ls", want: Ask, reason: "eval runs its arguments as shell code"},
		{name: "eval dynamic", cmd: `eval "$X"`, want: Ask},
		{name: "eval rule does not approve", allow: []string{"Bash(eval:*)"}, cmd: "eval ls", want: Ask},
		{name: "bash -c checked", cmd: "bash -c 'rm -rf x'", want: Deny},
		{name: "sh -c allowed code still asks", cmd: "sh -c 'ls'", want: Ask, reason: "sh -c runs a string as shell code"},
		{name: "bash -lc", cmd: `bash -lc "git status"`, want: Ask},
		{name: "bash -e -c", cmd: `bash -e -c "rm x"`, want: Deny},
		{name: "bash -o opt -c", cmd: `bash -o pipefail -c "rm x"`, want: Deny},
		{name: "absolute shell", cmd: `/bin/sh -c "rm x"`, want: Deny},
		{name: "shell -c via env", cmd: `env sh -c "rm x"`, want: Deny},
		{name: "nested shells", cmd: `bash -c "sh -c 'rm x'"`, want: Deny},
		{name: "shell -c dynamic", cmd: `bash -c "$X"`, want: Ask},
		{name: "shell -c under xargs is templated", deny: []string{"Bash(rm:*)"}, allow: []string{"Bash(xargs:*)"}, cmd: `ls | xargs -I{} sh -c 'echo {}'`, want: Ask},
		{name: "script file is not -c", allow: []string{"Bash(bash build.sh)"}, cmd: "bash build.sh", want: Allow},
		{name: "source", cmd: "source env.sh && ls", want: Ask, reason: "source runs the commands in a file"},
		{name: "dot", cmd: ". ./env.sh", want: Ask},
		{name: "exec", cmd: "exec ls", want: Ask, reason: "exec replaces the shell"},
		{name: "exec denied", cmd: "exec rm x", want: Deny},
		{name: "trap", cmd: "trap 'rm -rf x' EXIT; ls", want: Deny},
		{name: "trap asks", deny: []string{}, allow: []string{"Bash(trap:*)", "Bash(ls:*)"}, cmd: "trap 'ls' EXIT", want: Ask, reason: "trap runs a string"},
		{name: "watch", cmd: "watch -n 5 'rm x'", want: Deny},
		{name: "su -c", cmd: "su root -c 'rm x'", want: Deny},
		{name: "process substitution", allow: []string{"Bash(diff:*)", "Bash(ls:*)"}, cmd: "diff <(ls a) <(ls b)", want: Ask, reason: "process substitution"},
		{name: "process substitution denied inside", cmd: "cat <(rm x)", want: Deny},
		{name: "output process substitution", allow: []string{"Bash(ls:*)", "Bash(tee:*)"}, cmd: "ls | tee >(cat)", want: Ask},
	} {
		t.Run(c.name, c.run)
	}
}

func TestBashModesAndRulePrecedence(t *testing.T) {
	for _, c := range []bashCase{
		{name: "default asks", allow: []string{}, deny: []string{}, cmd: "ls", want: Ask},
		{name: "accept-edits still asks", mode: ModeAcceptEdits, allow: []string{}, deny: []string{}, cmd: "ls", want: Ask, rule: "mode:accept-edits"},
		{name: "plan denies even allowed commands", mode: ModePlan, cmd: "ls", want: Deny, rule: "mode:plan", reason: "permission mode plan is read-only"},
		{name: "bypass allows", mode: ModeBypass, cmd: "touch x", want: Allow, rule: "mode:bypass"},
		{name: "bypass keeps deny rules", mode: ModeBypass, cmd: "ls && rm x", want: Deny},
		{name: "bypass keeps ask rules", mode: ModeBypass, ask: []string{"Bash(git commit:*)"}, cmd: "git commit -m x", want: Ask, rule: "Bash(git commit:*)"},
		{name: "bypass asks when a deny rule cannot be checked", mode: ModeBypass, cmd: "$CMD -rf x", want: Ask},
		{name: "bypass asks about eval of unknown code with deny rules", mode: ModeBypass, cmd: `eval "$X"`, want: Ask},
		{name: "bypass checks eval of known code", mode: ModeBypass, cmd: `eval "touch x"`, want: Allow},
		{name: "bypass asks about unparseable with deny rules", mode: ModeBypass, cmd: "rm x &&", want: Ask, reason: "could not be parsed"},
		{name: "bypass without deny rules allows unknown code", mode: ModeBypass, deny: []string{}, cmd: "$CMD x", want: Allow},
		{name: "bypass without deny rules allows unparseable", mode: ModeBypass, deny: []string{}, cmd: "ls &&", want: Allow},
		{name: "tool-wide allow", allow: []string{"Bash"}, deny: []string{}, cmd: "eval \"$X\"", want: Allow, rule: "Bash"},
		{name: "tool-wide allow star", allow: []string{"Bash(*)"}, deny: []string{}, cmd: "touch x", want: Allow, rule: "Bash(*)"},
		{name: "tool-wide allow keeps deny", allow: []string{"Bash"}, cmd: "rm x", want: Deny},
		{name: "tool-wide deny", allow: []string{"Bash(ls:*)"}, deny: []string{"Bash"}, cmd: "ls", want: Deny, rule: "Bash"},
		{name: "tool-wide ask", ask: []string{"Bash"}, cmd: "ls", want: Ask, rule: "Bash"},
		{name: "ask beats allow", allow: []string{"Bash(git:*)"}, ask: []string{"Bash(git push:*)"}, deny: []string{}, cmd: "git push", want: Ask, rule: "Bash(git push:*)"},
		{name: "allow where ask does not match", allow: []string{"Bash(git:*)"}, ask: []string{"Bash(git push:*)"}, deny: []string{}, cmd: "git status", want: Allow},
		{name: "ask on a dynamic word", allow: []string{"Bash(git:*)"}, ask: []string{"Bash(git push:*)"}, deny: []string{}, cmd: "git $OP", want: Ask, reason: "may match the ask rule"},
		{name: "deny beats ask and allow", allow: []string{"Bash(git:*)"}, ask: []string{"Bash(git push:*)"}, deny: []string{"Bash(git push:*)"}, cmd: "git push", want: Deny},
		{name: "exact deny", deny: []string{"Bash(git reset --hard)"}, allow: []string{"Bash(git:*)"}, cmd: "git  reset  --hard", want: Deny},
		{name: "exact deny, other args", deny: []string{"Bash(git reset --hard)"}, allow: []string{"Bash(git:*)"}, cmd: "git reset --soft", want: Allow},
		{name: "exact deny, dynamic args", deny: []string{"Bash(git reset --hard)"}, allow: []string{"Bash(git:*)"}, cmd: "git reset $MODE", want: Ask},
		{name: "verbatim rule", allow: []string{`Bash(foo "bar)`}, deny: []string{}, cmd: `foo   "bar`, want: Allow},
		{name: "empty prefix rule is tool-wide", allow: []string{"Bash(:*)"}, deny: []string{}, cmd: "touch x", want: Allow},
	} {
		t.Run(c.name, c.run)
	}
}

func TestBashProtectedPaths(t *testing.T) {
	for _, c := range []bashCase{
		{name: "redirect into settings", mode: ModeBypass, cmd: "echo '{}' > .orca/settings.json", want: Deny, rule: "protected", reason: `names ".orca/settings.json", a protected path`},
		{name: "append to local settings", mode: ModeBypass, cmd: "echo x >> .orca/settings.local.json", want: Deny},
		{name: "tee into hooks", mode: ModeBypass, cmd: "echo x | tee .orca/hooks/pre.sh", want: Deny},
		{name: "copy into hooks", mode: ModeBypass, cmd: "cp evil.sh .orca/hooks/", want: Deny},
		{name: "remove hooks", mode: ModeBypass, cmd: "rm -rf .orca/hooks", want: Deny, rule: "protected"},
		{name: "remove the folder", mode: ModeBypass, cmd: "rm -rf .orca", want: Deny},
		{name: "move the folder", mode: ModeBypass, cmd: "mv ./.orca /tmp/x", want: Deny},
		{name: "trust file", mode: ModeBypass, cmd: "touch .orca/trust.json", want: Deny},
		{name: "glob reaching settings", mode: ModeBypass, cmd: "sed -i s/a/b/ .orca/*", want: Deny},
		{name: "glob in file name", mode: ModeBypass, cmd: "cat .orca/sett*.json", want: Deny},
		{name: "dot-dot path", mode: ModeBypass, cmd: "sed -i s/a/b/ sub/../.orca/settings.json", want: Deny},
		{name: "absolute path", mode: ModeBypass, cmd: "chmod +x /work/ws/.orca/hooks/x", want: Deny},
		{name: "upper case", mode: ModeBypass, cmd: "echo x > .ORCA/Settings.json", want: Deny},
		{name: "option value", mode: ModeBypass, cmd: "curl --output=.orca/settings.json x", want: Deny},
		{name: "short option value", mode: ModeBypass, cmd: "curl -o.orca/settings.json x", want: Deny},
		{name: "variable file name", mode: ModeBypass, cmd: "echo x > .orca/$F", want: Deny},
		{name: "variable folder", mode: ModeBypass, cmd: "echo x > $DIR/.orca/trust", want: Deny},
		{name: "quoted", mode: ModeBypass, cmd: `echo x > ".orca/settings.json"`, want: Deny},
		{name: "inside eval", mode: ModeBypass, cmd: `eval 'echo x > .orca/settings.json'`, want: Deny},
		{name: "inside bash -c", mode: ModeBypass, cmd: `bash -c "rm .orca/hooks/x"`, want: Deny},
		{name: "reading is denied too", cmd: "cat .orca/settings.json", want: Deny, reason: "use Read"},
		{name: "other files in .orca are fine", cmd: "ls .orca/notes", want: Allow},
		{name: "a star does not match dot files", cmd: "ls *", want: Allow},
		{name: "similar names are fine", mode: ModeBypass, cmd: "touch orca/settings.json .orcas/hooks/x", want: Allow},
		{name: "input redirect from settings is reading", cmd: "cat < .orca/settings.json", want: Allow},
		// Skills' scripts are read and run; Claude Code's settings, hooks
		// and agents are protected as orca's are.
		{name: "list a skill", cmd: "ls .orca/skills/pdf", want: Allow},
		{name: "run a skill's script", mode: ModeBypass, cmd: "python3 .orca/skills/pdf/scripts/fill_form.py in.pdf out.pdf", want: Allow},
		{name: "run a Claude skill's script", mode: ModeBypass, cmd: "sh .claude/skills/greet/scripts/hello.sh ada", want: Allow},
		{name: "Claude settings", mode: ModeBypass, cmd: "echo '{}' > .claude/settings.json", want: Deny, rule: "protected"},
		{name: "Claude local settings", mode: ModeBypass, cmd: "sed -i s/deny/allow/ .claude/settings.local.json", want: Deny},
		{name: "Claude hooks", mode: ModeBypass, cmd: "cp evil.sh .claude/hooks/guard.sh", want: Deny},
		{name: "Claude agents", mode: ModeBypass, cmd: "rm .claude/agents/reviewer.md", want: Deny},
	} {
		t.Run(c.name, c.run)
	}
}

func TestBashUserConfigDir(t *testing.T) {
	home, cfg, opts := testOptions(t)
	p, err := New(ModeBypass, Rules{}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{
		"echo x > ~/.config/orca/settings.json",
		"echo x > $HOME/.config/orca/settings.json",
		`echo x > "${HOME}/.config/orca/settings.json"`,
		"rm -rf $XDG_CONFIG_HOME/orca",
		"cp x " + cfg + "/orca/hooks/h",
		"rm -rf " + cfg + "/orca",
		"sed -i s/a/b/ " + home + "/.config/orca/*",
	} {
		v := p.Decide(declared(Request{ToolName: "Bash", Input: bashInput(t, cmd)}))
		if v.Decision != Deny || v.Rule != "protected" {
			t.Errorf("Decide(%q) = %s (%s), want deny by protection", cmd, v.Decision, v.Reason)
		}
	}
	for _, cmd := range []string{"ls ~/.config", "cat " + cfg + "/other/x", "echo ~/orca"} {
		if v := p.Decide(declared(Request{ToolName: "Bash", Input: bashInput(t, cmd)})); v.Decision != Allow {
			t.Errorf("Decide(%q) = %s (%s), want allow", cmd, v.Decision, v.Reason)
		}
	}
}

// Every suggestion must be a rule that, once added, allows the command.
func TestBashSuggestionsAllow(t *testing.T) {
	_, _, opts := testOptions(t)
	base, err := New(ModeDefault, Rules{}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{
		"go test ./...",
		"git log --oneline",
		"make",
		"FOO=1 git status",
		"FOO='a b' make build",
		"grep -rn 'x y' .",
		"ls && touch x | wc -l",
		"echo $(date) > out",
		`"my tool" run`,
		"sudo apt-get install x",
		"cat <<EOF\nhi\nEOF",
	} {
		v := base.Decide(declared(Request{ToolName: "Bash", Input: bashInput(t, cmd)}))
		if v.Decision != Ask || len(v.Suggestions) == 0 || v.Suggest != v.Suggestions[0] {
			t.Errorf("Decide(%q) = %s, suggestions %q; want ask with suggestions", cmd, v.Decision, v.Suggestions)
			continue
		}
		rules, err := ParseRules(v.Suggestions, nil, nil)
		if err != nil {
			t.Errorf("suggestions %q for %q do not parse: %v", v.Suggestions, cmd, err)
			continue
		}
		p, err := base.With(rules)
		if err != nil {
			t.Fatal(err)
		}
		if v2 := p.Decide(declared(Request{ToolName: "Bash", Input: bashInput(t, cmd)})); v2.Decision != Allow {
			t.Errorf("with %q, Decide(%q) = %s (%s), want allow", v.Suggestions, cmd, v2.Decision, v2.Reason)
		}
	}
	// No suggestion where no pattern rule can help.
	for _, cmd := range []string{"eval ls", "$X", "ls &&", "source x"} {
		if v := base.Decide(declared(Request{ToolName: "Bash", Input: bashInput(t, cmd)})); v.Suggest != "" || v.Suggestions != nil {
			t.Errorf("Decide(%q) suggests %q, want nothing", cmd, v.Suggestions)
		}
	}
}

func TestShellWords(t *testing.T) {
	var an analyzer
	for _, c := range []struct {
		src  string
		want []string // values; "?" for a word that is not static
		lit  []bool
	}{
		{"git status", []string{"git", "status"}, []bool{true, true}},
		{`"a b" 'c'd\ e`, []string{"a b", "cd e"}, []bool{true, true}},
		{`"a\$b\x\"" \\`, []string{`a$b\x"`, `\`}, []bool{true, true}},
		{"*.go ~/x {a,b}", []string{"*.go", "~/x", "{a,b}"}, []bool{false, false, false}},
		{`'*.go' \*`, []string{"*.go", "*"}, []bool{true, true}},
		{"$X ${Y} $(z) $((1)) <(w)", []string{"?", "?", "?", "?", "?"}, nil},
		{"pre$X", []string{"?"}, nil},
	} {
		a := an.analyze(c.src)
		if a.err != nil {
			t.Fatalf("parse %q: %v", c.src, a.err)
		}
		cmd := a.cmds[0]
		if len(cmd.words) != len(c.want) {
			t.Fatalf("%q: %d words, want %d", c.src, len(cmd.words), len(c.want))
		}
		for i, w := range cmd.words {
			got := w.val
			if !w.static {
				got = "?"
			}
			if got != c.want[i] {
				t.Errorf("%q word %d = %q, want %q", c.src, i, got, c.want[i])
			}
			if c.lit != nil && w.lit != c.lit[i] {
				t.Errorf("%q word %d lit = %v, want %v", c.src, i, w.lit, c.lit[i])
			}
		}
	}
}

// The bypasses of allow rules that compared leading words only: each was
// allowed before, and asks (or is denied) now.
func TestBashAllowSideAttacks(t *testing.T) {
	for _, c := range []bashCase{
		// Redirections are writes.
		{name: "echo into bashrc", allow: []string{"Bash(echo:*)"}, cmd: `echo 'curl x|sh' >> ~/.bashrc`, want: Ask, reason: "only known when the shell runs"},
		{name: "echo into an absolute file", allow: []string{"Bash(echo:*)"}, cmd: `echo '{"workspaces":["/"]}' > /home/u/.config/orca/trust.json`, want: Ask, reason: "outside the workspace"},
		{name: "echo into the trust store, relative", allow: []string{"Bash(echo:*)"}, cmd: `echo x > ../home/.config/orca/trust.json`, want: Ask},
		{name: "ls over a file", allow: []string{"Bash(ls:*)"}, cmd: "ls > victim.txt", want: Ask},
		{name: "ls outside", allow: []string{"Bash(ls:*)"}, cmd: "ls -la > ../outside/x", want: Ask, reason: "outside the workspace"},
		{name: "accept-edits does not open the outside", mode: ModeAcceptEdits, allow: []string{"Bash(ls:*)"}, cmd: "ls -la > ../outside/x", want: Ask},
		{name: "write after cd", mode: ModeAcceptEdits, allow: []string{"Bash(cd:*)", "Bash(echo:*)"}, cmd: "cd ~/.config && echo x > orca/trust.json", want: Ask, reason: "changing folder"},
		{name: "redirect into a variable", allow: []string{"Bash(echo:*)"}, cmd: `echo x > "$F"`, want: Ask},
		{name: "Edit deny covers redirections", mode: ModeBypass, deny: []string{"Edit(secret/**)"}, cmd: "echo x > secret/key", want: Deny},
		{name: "Edit deny on an unknown target asks", mode: ModeBypass, deny: []string{"Edit(secret/**)"}, cmd: `echo x > "$F"`, want: Ask},
		// find -exec and xargs run the commands they name.
		{name: "find -exec rm", allow: []string{"Bash(find:*)"}, deny: []string{}, cmd: "find . -name '*.go' -exec rm {} +", want: Ask, reason: `"rm '{}'"`},
		{name: "find -exec allowed command", allow: []string{"Bash(find:*)", "Bash(grep:*)"}, deny: []string{}, cmd: `find . -name '*.go' -exec grep -l TODO {} \;`, want: Allow},
		{name: "find -execdir denied", mode: ModeBypass, cmd: `find . -execdir rm -f {} \;`, want: Deny},
		{name: "find -ok sh -c", allow: []string{"Bash(find:*)", "Bash(sh:*)"}, deny: []string{}, cmd: `find . -ok sh -c 'rm "$1"' _ {} \;`, want: Ask},
		{name: "find -delete", allow: []string{"Bash(find:*)"}, deny: []string{}, cmd: "find . -name '*.tmp' -delete", want: Ask, reason: "-delete"},
		{name: "find -fprint", allow: []string{"Bash(find:*)"}, deny: []string{}, cmd: "find . -fprint ~/.bashrc", want: Ask},
		{name: "xargs rm", allow: []string{"Bash(ls:*)", "Bash(xargs:*)"}, deny: []string{}, cmd: "ls | xargs rm", want: Ask, reason: `"xargs rm"`},
		{name: "xargs of an allowed command", allow: []string{"Bash(ls:*)", "Bash(grep:*)"}, deny: []string{}, cmd: "ls | xargs -n1 grep -l TODO", want: Allow},
		{name: "xargs and an exact rule", allow: []string{"Bash(ls:*)", "Bash(wc -l)"}, deny: []string{}, cmd: "ls | xargs wc -l", want: Ask},
		// Wrappers are judged as what they run.
		{name: "timeout of an allowed command", allow: []string{"Bash(go test:*)"}, cmd: "timeout 600 go test ./...", want: Allow},
		{name: "timeout rule approves nothing", allow: []string{"Bash(timeout:*)"}, deny: []string{}, cmd: "timeout 5 rm -rf x", want: Ask},
		{name: "nice nohup chain", allow: []string{"Bash(go test:*)"}, cmd: "nice -n 5 nohup go test ./...", want: Allow},
		{name: "sudo rule approves nothing", allow: []string{"Bash(sudo:*)"}, deny: []string{}, cmd: "sudo rm -rf /", want: Ask},
		{name: "sudo with the command named", allow: []string{"Bash(sudo apt update:*)"}, deny: []string{}, cmd: "sudo apt update -y", want: Allow},
		{name: "sudo of an allowed command is not allowed", allow: []string{"Bash(ls:*)"}, deny: []string{}, cmd: "sudo ls /root", want: Ask},
		{name: "env with an assignment", allow: []string{"Bash(git status:*)"}, cmd: "env GIT_DIR=/x git status", want: Ask},
		{name: "plain env", allow: []string{"Bash(git status:*)"}, cmd: "env git status", want: Allow},
		{name: "env -S denied", mode: ModeBypass, cmd: "env -S 'rm x'", want: Deny},
		{name: "env -S glued", mode: ModeBypass, cmd: "env '-Srm -rf x'", want: Deny},
		{name: "env -u then -S", mode: ModeBypass, cmd: "env -u HOME -S 'rm x'", want: Deny},
		{name: "env -S never allowed by a rule", allow: []string{"Bash(env:*)", "Bash(ls:*)"}, deny: []string{}, cmd: "env -S 'ls -la'", want: Ask},
		{name: "flock", mode: ModeBypass, cmd: "flock /tmp/l rm -rf x", want: Deny},
		{name: "flock -c", mode: ModeBypass, cmd: "flock /tmp/l -c 'rm -rf x'", want: Deny},
		{name: "taskset", mode: ModeBypass, cmd: "taskset 0x1 rm -rf x", want: Deny},
		{name: "taskset -c", mode: ModeBypass, cmd: "taskset -c 0,1 rm -rf x", want: Deny},
		{name: "chrt", mode: ModeBypass, cmd: "chrt -f 10 rm -rf x", want: Deny},
		{name: "setpriv", mode: ModeBypass, cmd: "setpriv --reuid 1000 rm -rf x", want: Deny},
		{name: "prlimit", mode: ModeBypass, cmd: "prlimit --nofile=1024 rm -rf x", want: Deny},
		{name: "script -c", mode: ModeBypass, cmd: "script -qc 'rm -rf x' /dev/null", want: Ask},
		{name: "script -c split", mode: ModeBypass, cmd: "script -q -c 'rm -rf x' /dev/null", want: Deny},
		{name: "an opaque wrapper asks where a deny rule may match", mode: ModeBypass, cmd: "unshare -r rm -rf x", want: Ask, reason: "does not analyse"},
		{name: "an opaque wrapper is not allowed by its rule", allow: []string{"Bash(parallel:*)"}, deny: []string{}, cmd: "parallel rm ::: a b", want: Ask},
		{name: "taskset of an allowed command", allow: []string{"Bash(go test:*)"}, cmd: "taskset -c 0 go test ./...", want: Allow},
	} {
		t.Run(c.name, c.run)
	}
}

// A suggested rule keeps the second word only of a command that has
// subcommands (git status, npm test) or runs the next one (sudo ls): the
// second word of sleep 30 or echo made is an argument, and a rule with it
// would allow that one call only.
func TestBashSuggestionsGeneralise(t *testing.T) {
	_, _, opts := testOptions(t)
	p, err := New(ModeDefault, Rules{}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for cmd, want := range map[string]string{
		"sleep 30":             "Bash(sleep:*)",
		"echo made x":          "Bash(echo:*)",
		"python3 manage.py":    "Bash(python3:*)",
		"git status --short":   "Bash(git status:*)",
		"npm test":             "Bash(npm test:*)",
		"go build ./...":       "Bash(go build:*)",
		"sudo ls":              "Bash(sudo ls:*)",
		"npx prettier --check": "Bash(npx prettier:*)",
		"make":                 "Bash(make:*)",
	} {
		if v := p.Decide(declared(Request{ToolName: "Bash", Input: bashInput(t, cmd)})); v.Suggest != want {
			t.Errorf("Decide(%q).Suggest = %q, want %q", cmd, v.Suggest, want)
		}
	}
}
