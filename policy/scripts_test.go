package policy

import (
	"slices"
	"testing"
)

func TestScripts(t *testing.T) {
	vars := map[string]string{"CLAUDE_PROJECT_DIR": "/ws", "HOME": "/home/u", "CLAUDE_PLUGIN_ROOT": "/p"}
	for cmd, want := range map[string][]string{
		`"$CLAUDE_PROJECT_DIR"/.claude/hooks/check.sh`:     {"/ws/.claude/hooks/check.sh"},
		`bash scripts/check.sh --fast`:                     {"/ws/scripts/check.sh"},
		`node "${CLAUDE_PLUGIN_ROOT}/hooks/x.js"`:          {"/p/hooks/x.js"},
		`python3 -u tools/x.py arg`:                        {"/ws/tools/x.py"},
		`./lint && jq . settings.json`:                     {"/ws/lint"},
		`sh -c 'python3 a.py; ./b'`:                        {"/ws/a.py", "/ws/b"},
		`env FOO=1 ~/bin/hook`:                             {"/home/u/bin/hook"},
		`deno run hooks/h.ts`:                              {"/ws/hooks/h.ts"},
		`python3 -m mypkg.hook`:                            nil,
		`node -e 'console.log(1)'`:                         nil,
		`npm run lint`:                                     nil,
		`$(which python3) x.py`:                            nil,
		`bash "$SCRIPT"`:                                   nil,
		`echo '{"decision":"approve"}'`:                    nil,
		`cat | python3 "$CLAUDE_PROJECT_DIR/.claude/h.py"`: {"/ws/.claude/h.py"},
		`if true; then ./a.sh; fi`:                         {"/ws/a.sh"},
		`exec /usr/bin/env python3 scripts/run.py`:         {"/ws/scripts/run.py"},
		`timeout 30 ./hooks/x.sh`:                          {"/ws/hooks/x.sh"},
		`nice -n 5 bash hooks/y.sh`:                        {"/ws/hooks/y.sh"},
		`sudo -u me node h.js`:                             {"/ws/h.js"},
		`(((`:                                              nil,
	} {
		got := Scripts(cmd, "/ws", vars)
		if !slices.Equal(got, want) {
			t.Errorf("Scripts(%q) = %q, want %q", cmd, got, want)
		}
	}
	if got := Argv([]string{"node", "server.js", "--port", "1"}, "/ws", nil); !slices.Equal(got, []string{"/ws/server.js"}) {
		t.Errorf("Argv = %q", got)
	}
}
