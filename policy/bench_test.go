package policy

import (
	"testing"
)

func BenchmarkDecide(b *testing.B) {
	p := mustNew(b, ModeDefault, append(stdAllow, "Bash(wc:*)", "Bash(grep:*)", "Edit(src/**)"), append(stdDeny, "Read(secrets/**)"), []string{"Bash(git commit:*)"})
	for _, c := range []struct {
		name string
		req  Request
		want Decision
	}{
		{"Read", declared(Request{ToolName: "Read", Input: input(b, "file_path", "src/policy/policy.go")}), Allow},
		{"Bash/compound", declared(Request{ToolName: "Bash", Input: bashInput(b, `git status -s && go test ./... 2>&1 | grep -v "^ok" | wc -l; ls "$HOME"/src`)}), Allow},
	} {
		b.Run(c.name, func(b *testing.B) {
			if v := p.Decide(c.req); v.Decision != c.want {
				b.Fatalf("Decide = %s, want %s: %s", v.Decision, c.want, v.Reason)
			}
			b.ReportAllocs()
			for b.Loop() {
				p.Decide(c.req)
			}
		})
	}
}
