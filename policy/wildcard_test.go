package policy

import "testing"

// Claude Code's wildcard rules, as its permission docs write them: "*"
// matches any run of characters, spaces included; "cmd *" is the words of
// cmd then anything or nothing (the legacy "cmd:*"); the space before a
// wildcard is a word boundary. Each simple command of a compound one is
// judged alone, as the older rules are.
func TestClaudeCodeWildcardRules(t *testing.T) {
	ws := openWorkspace(t)
	allow := map[string]map[string]bool{
		"Bash(npm run *)":   {"npm run test": true, "npm run": true, "npm runtime": false, "npm  run   build": true, "npm run test && rm -rf /": false},
		"Bash(npm*)":        {"npm run": true, "npmrc": true, "npx npm": false},
		"Bash(ls *)":        {"ls -la": true, "ls": true, "lsof": false},
		"Bash(* --version)": {"go --version": true, "timeout 5 go --version": true, "sudo rm -rf / --version": false, "go version": false},
		"Bash(git * main)":  {"git checkout main": true, "git merge origin main": true, "git checkout dev": false, "git main": false},
		`Bash(echo \*)`:     {"echo '*'": true, "echo hi": false},
	}
	for rule, cmds := range allow {
		p := mustNew(t, ModeDefault, []string{rule}, nil, nil)
		for cmd, want := range cmds {
			v := p.Decide(declared(Request{ToolName: "Bash", Input: input(t, "command", cmd), FS: ws}))
			if got := v.Decision == Allow; got != want {
				t.Errorf("allow %s, %q: %s (%s)", rule, cmd, v.Decision, v.Reason)
			}
		}
	}
	// A word known only when the shell runs makes a wildcard deny rule
	// ask, unless the words known already rule it out.
	w := mustNew(t, ModeBypass, nil, []string{"Bash(npm*)", "Bash(git * main)"}, nil)
	for cmd, want := range map[string]Decision{
		"ls $HOME":             Allow,
		"git log $REF x":       Allow, // git … main needs main last
		"$CMD install":         Ask,
		"git checkout $B main": Ask,
		"npm run $SCRIPT":      Deny, // npm* matches npm run, whatever follows
	} {
		if v := w.Decide(declared(Request{ToolName: "Bash", Input: input(t, "command", cmd), FS: ws})); v.Decision != want {
			t.Errorf("wildcard deny rules, %q: %s by %q, want %s (%s)", cmd, v.Decision, v.Rule, want, v.Reason)
		}
	}
	// The legacy form over a wildcard, as published "safest settings"
	// write it: the wildcard, then anything or nothing.
	l := mustNew(t, ModeBypass, nil, []string{"Bash(python*-c:*)", "Bash(*find*-delete*:*)", "Bash(node*-e:*)"}, nil)
	for cmd, want := range map[string]Decision{
		"python3 -c 'import os'":       Deny,
		"python -c x":                  Deny,
		"find . -name '*.tmp' -delete": Deny,
		"node -e 'process.exit(1)'":    Deny,
		"python3 script.py":            Allow,
		"find . -name x":               Allow,
	} {
		if v := l.Decide(declared(Request{ToolName: "Bash", Input: input(t, "command", cmd), FS: ws})); v.Decision != want {
			t.Errorf("legacy wildcard rules, %q: %s by %q, want %s (%s)", cmd, v.Decision, v.Rule, want, v.Reason)
		}
	}
	// A deny rule holds in every mode, however the command is written.
	p := mustNew(t, ModeBypass, nil, []string{"Bash(curl *)", "Bash(git push *)", "Bash(* --force)"}, nil)
	for cmd, want := range map[string]Decision{
		"curl https://example.com":   Deny,
		`cu""rl https://example.com`: Deny,
		"/usr/bin/curl x":            Deny,
		"echo ok && git push":        Deny,
		"git push origin main":       Deny,
		"timeout 9 curl x":           Deny,
		"sudo curl x":                Deny,
		"git commit --force":         Deny,
		"sh -c 'curl x'":             Deny,
		"find . -exec curl {} \\;":   Deny,
		"eval 'curl x'":              Deny,
		"echo `curl x`":              Deny,
		"$CMD https://example.com":   Ask, // it may be curl
		"git status":                 Allow,
		"curlie x":                   Allow,
	} {
		if v := p.Decide(declared(Request{ToolName: "Bash", Input: input(t, "command", cmd), FS: ws})); v.Decision != want {
			t.Errorf("deny rules, %q: %s by %q, want %s (%s)", cmd, v.Decision, v.Rule, want, v.Reason)
		}
	}
}
