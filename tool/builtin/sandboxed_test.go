package builtin

import (
	"strings"
	"testing"
)

// The refusal notes name the paths and hosts of the errors real programs
// print.
func TestRefusals(t *testing.T) {
	for out, want := range map[string]string{
		"/usr/bin/bash: line 1: .bashrc: Permission denied\n":                                               `"\.bashrc"`,
		"sh: 1: cannot create .orca/settings.json: Read-only file system\n":                                 `".orca/settings.json"`,
		"OSError: [Errno 30] Read-only file system: '.orca/settings.local.json'\n":                          `".orca/settings.local.json"`,
		"touch: cannot touch '/etc/passwd': Permission denied\n":                                            `"/etc/passwd"`,
		"mv: cannot move '.git' to '.git-old': Device or resource busy\n.git/config: Read-only file system": `".git/config"`,
		"curl: (6) Could not resolve host: example.com\n":                                                   `"example.com" could not be reached`,
		"all good\n": "",
	} {
		got := refusals(out)
		if want == "" {
			if got != "" {
				t.Errorf("%q: %q, want nothing", out, got)
			}
			continue
		}
		if !strings.Contains(got, strings.ReplaceAll(want, `\`, "")) {
			t.Errorf("%q:\n got %q\nwant it to name %s", out, got, want)
		}
		if strings.Contains(got, "/usr/bin/bash") {
			t.Errorf("%q: names the shell: %q", out, got)
		}
	}
}
